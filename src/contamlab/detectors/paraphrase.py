"""Paraphrased reference versions of a benchmark split, for BenBench's Δ (Xu et al. 2024, arXiv 2404.18824, §3.2).

BenBench compares a model's metrics on the original benchmark with those on rewritten versions of it (same numbers,
same answers, other wording). Sources, in order of preference:

- ``arith`` / ``arith_pq`` (both splits): three independent full rewrites of question and solution (three fresh
  draws of the ``pq`` templates), as BenBench's three rewrites of each item.
- GSM8K test: the PQ file (``gsm8k-pq/rephrase_gsm8k_test.jsonl``: rephrased question, paired with the original
  solution, as the ``pq`` domain does). The only offline reference: one version, and the solution is *not*
  rewritten, so answer perplexity scores identical text there. A configured paraphraser makes full rewrites.
- Anything else: a pluggable :class:`Paraphraser`, e.g. :class:`OpenAIParaphraser` (an OpenAI-compatible chat
  endpoint; the key comes from the environment and is never logged). Its rewrites are checked to keep every number
  and the final answer, and cached as JSON.
"""

from __future__ import annotations

import json
import logging
import os
import re
import time
import urllib.request
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from contamlab.data.domain import Domain
from contamlab.data.question import Question
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_json, content_hash

log = logging.getLogger("contamlab")
PROMPT_VERSION = 1
# Our wording of the instruction of BenBench's Appendix (Tables 1-2: rewrite a GSM8K item's question and solution
# without changing numbers, reasoning or answer). The paper's exact text was not available to us.
REWRITE_PROMPT = (
    "Rewrite the following math word problem and its solution in different words. Keep the same meaning, the same "
    "numbers, the same reasoning steps and the same final answer; keep the solution's format: one step per line, "
    "calculator annotations like <<3*4=12>> and the last line '#### <answer>'. Only paraphrase the wording; do not "
    "add or remove information.\n\nReply exactly in this format:\nQuestion: <rewritten question>\n"
    "Answer: <rewritten solution>\n\nQuestion: {question}\nAnswer: {solution}"
)
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_REPLY = re.compile(r"Question:\s*(?P<question>.*?)\s*\nAnswer:\s*(?P<solution>.*)", re.DOTALL)


def numbers(text: str) -> set[str]:
    """The numbers of a text, thousands separators removed (for the preservation check)."""
    return {n.replace(",", "") for n in _NUMBER.findall(text)}


def preserves_numbers(original: Question, rewrite: Question) -> bool:
    """Whether a rewrite keeps every number of the question and the final ``#### N`` answer."""
    if not numbers(original.question) <= numbers(rewrite.question):
        return False
    tail = rewrite.solution.split("####")
    return len(tail) > 1 and tail[-1].strip().replace(",", "") == original.answer


class Paraphraser:
    """Interface: rewrite a question (and its solution), or return None when no valid rewrite could be made."""

    n_versions = 1

    def paraphrase(self, question: Question, version: int) -> Question | None:
        """Rewrite version ``version`` (0-based) of ``question``."""
        raise NotImplementedError

    def identity(self) -> dict[str, Any]:
        """What determines the rewrites (for cache keys)."""
        return {"class": type(self).__name__}

    def default_cache(self, cache_dir: str | None) -> None:
        """Cache rewrites under ``cache_dir`` unless the config chose a place (the job's ``paths.cache_dir``).

        A paraphraser whose rewrites cost nothing to redo (a template, a test double) keeps nothing: the default.
        """


class OpenAIParaphraser(Paraphraser):
    """Rewrites through an OpenAI-compatible ``/chat/completions`` endpoint, cached per (item, version).

    Args:
        url: Base URL of the API (e.g. ``https://api.openai.com/v1`` or a local vLLM server).
        model: Model name sent to the endpoint (the paper used gpt-3.5-turbo-0125).
        api_key_env: Environment variable holding the key (may be unset for a local server).
        n_versions: Reference versions per item (the paper: 3).
        temperature: Sampling temperature (the paper: 0.7).
        top_p: Nucleus mass (the paper: 0.9).
        max_tries: Attempts per item before giving up on it (a rewrite that drops a number is retried).
        timeout_s: HTTP timeout.
        cache_dir: Where rewrites are cached (the detector sets it from ``paths.cache_dir`` when None).
        post: Replacement for the HTTP call ``(url, payload, headers) -> response dict`` (tests).
    """

    def __init__(
        self,
        url: str,
        model: str,
        api_key_env: str = "OPENAI_API_KEY",
        n_versions: int = 3,
        temperature: float = 0.7,
        top_p: float = 0.9,
        max_tries: int = 3,
        timeout_s: float = 60.0,
        cache_dir: str | None = None,
        post: Callable[[str, dict, dict], dict] | None = None,
    ) -> None:
        if not url or not model:
            raise ContamlabError("detector.paraphraser: set both url and model")
        self.url, self.model, self.api_key_env = url.rstrip("/"), model, api_key_env
        self.n_versions, self.temperature, self.top_p = int(n_versions), float(temperature), float(top_p)
        self.max_tries, self.timeout_s, self.cache_dir = int(max_tries), float(timeout_s), cache_dir
        self._post = post or self._http_post

    def identity(self) -> dict[str, Any]:
        """Endpoint, model, sampling and prompt version (never the key)."""
        return {
            "url": self.url,
            "model": self.model,
            "temperature": self.temperature,
            "top_p": self.top_p,
            "prompt": PROMPT_VERSION,
        }

    def _http_post(self, url: str, payload: dict, headers: dict) -> dict:
        request = urllib.request.Request(url, json.dumps(payload).encode(), headers, method="POST")
        with urllib.request.urlopen(request, timeout=self.timeout_s) as response:  # noqa: S310 (configured URL)
            return json.loads(response.read().decode())

    def default_cache(self, cache_dir: str | None) -> None:
        """Cache rewrites under ``cache_dir`` when ``cache_dir`` was left None in the config."""
        if self.cache_dir is None:
            self.cache_dir = cache_dir

    def _cache_path(self, question: Question, version: int) -> Path | None:
        if not self.cache_dir:
            return None
        key = {**self.identity(), "q": question.question, "s": question.solution, "version": version}
        return Path(self.cache_dir) / "paraphrases" / f"{content_hash(key, 20)}.json"

    def paraphrase(self, question: Question, version: int) -> Question | None:
        """One checked rewrite (cached), or None after ``max_tries`` invalid replies."""
        path = self._cache_path(question, version)
        if path is not None and path.is_file():
            data = json.loads(path.read_text())
            return Question(question.id, data["question"], data["solution"], question.answer)
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(self.api_key_env)
        if key:
            headers["Authorization"] = f"Bearer {key}"
        prompt = REWRITE_PROMPT.format(question=question.question, solution=question.solution)
        for attempt in range(self.max_tries):
            payload = {
                "model": self.model,
                "messages": [{"role": "user", "content": prompt}],
                "temperature": self.temperature,
                "top_p": self.top_p,
                "seed": version * 1000 + attempt,
            }
            try:
                reply = self._post(f"{self.url}/chat/completions", payload, headers)
                content = reply["choices"][0]["message"]["content"]
            except (OSError, KeyError, IndexError, TypeError, ValueError) as err:
                log.warning("paraphraser: %s failed (%s); retrying", question.id, type(err).__name__)
                time.sleep(min(2**attempt, 10) if self._post == self._http_post else 0)
                continue
            match = _REPLY.search(content or "")
            if match is None:
                continue
            rewrite = Question(question.id, match["question"].strip(), match["solution"].strip(), question.answer)
            if preserves_numbers(question, rewrite):
                if path is not None:
                    atomic_write_json(path, {"question": rewrite.question, "solution": rewrite.solution})
                return rewrite
        log.warning("paraphraser: no valid rewrite of %s after %d tries", question.id, self.max_tries)
        return None


FULL_REWRITE = "full rewrite (question and solution)"
QUESTION_ONLY = "question rephrased, original solution kept"


def reference_versions(
    domain: Domain, split: str, questions: Sequence[Question], paraphraser: Paraphraser | None
) -> tuple[list[list[Question | None]], dict[str, Any]]:
    """Paraphrased versions of ``questions`` (aligned 1:1; None where no rewrite exists) and what they are.

    Args:
        domain: The domain the questions come from.
        split: ``test`` or ``train``.
        questions: The original questions (for GSM8K test: the test set from its start, as the PQ file is aligned).
        paraphraser: Rewriter for domains without a built-in source (also the only source of *full* GSM8K
            rewrites); None = no reference where the domain has none.

    Returns:
        ``(versions, about)`` with ``about`` = ``{"source", "n", "kind"}``; no versions when nothing is available.
    """
    versions = domain.reference_versions(list(questions))
    if versions is not None:  # the synthetic domains rewrite their own problems
        return versions, {"source": f"{domain.name} pq templates", "n": len(versions), "kind": FULL_REWRITE}
    if paraphraser is not None:
        versions = [[paraphraser.paraphrase(q, v) for q in questions] for v in range(paraphraser.n_versions)]
        name = paraphraser.identity().get("model", type(paraphraser).__name__)
        return versions, {"source": f"paraphraser:{name}", "n": len(versions), "kind": FULL_REWRITE}
    rephrased = domain.rephrased_questions(list(questions), split)  # GSM8K / PQ: the rephrased test questions
    if rephrased is not None:
        return [rephrased], {"source": "gsm8k-pq", "n": 1, "kind": QUESTION_ONLY}
    return [], {"source": "none", "n": 0, "kind": None}
