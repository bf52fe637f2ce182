"""Sample sets for a model, a list of questions and a strategy: greedy pass, strategy sampling, cache.

The greedy pass of a model is computed once and cached (every strategy that needs the greedy trajectory, and the
Figure-1 diagnostics, reuse it). Sampling runs in chunks of questions; each chunk is cached as soon as it is done,
with its own seed, so an interrupted run resumes at the first missing chunk with identical results.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from contamlab import stopping
from contamlab.data.domain import Domain
from contamlab.data.prompts import PROMPT_VERSION
from contamlab.data.question import Question
from contamlab.decoding.sampler import Sampler
from contamlab.decoding.samples import QuestionSamples, SampleCache
from contamlab.decoding.strategy import Strategy, WrapContext
from contamlab.decoding.streams import stream_seed
from contamlab.errors import ContamlabError
from contamlab.io import content_hash
from contamlab.models.store import ModelStore

log = logging.getLogger("contamlab")


def _chunks(items: Sequence, size: int):
    for index, start in enumerate(range(0, len(items), size)):
        yield index, items[start : start + size]


def _open(sampler, domain, questions, model_key, cache_root, chunk_questions, **fields):
    """The cache of one sample set, keyed by everything that determines it, and the prompts' token ids.

    Also sets the sampler's shared prefix from all prompts, so every chunk reuses one prefix KV cache.
    """
    key = {
        "model": model_key,
        "domain": domain.eval_fingerprint(),
        "prompt": PROMPT_VERSION,
        "max_new_tokens": sampler.max_new_tokens,
        "ids": content_hash([q.id for q in questions]),
        "chunk": chunk_questions,
        # The HF sampler draws every row from one random stream, so how rows are batched and compacted changes the
        # samples: it is part of their identity (vLLM seeds each request and returns {}).
        "batching": sampler.cache_fields(),
        **fields,
    }
    all_ids = sampler.encode([domain.prompt(q) for q in questions])
    sampler.set_prefix(all_ids)
    return SampleCache(cache_root, content_hash(key), key), all_ids


def greedy_set(
    sampler: Sampler,
    domain: Domain,
    questions: Sequence[Question],
    model_key: dict,
    cache_root: str,
    chunk_questions: int = 50,
    progress: bool = True,
    label: str = "",
) -> list[QuestionSamples]:
    """Greedy response (with its mean entropy) of every question, cached per model.

    ``label`` names the model in the progress bar (``greedy clean``).
    """
    cache, all_ids = _open(sampler, domain, questions, model_key, cache_root, chunk_questions, kind="greedy")
    out: list[QuestionSamples] = []
    bar = tqdm(total=len(questions), desc=f"greedy {label}".rstrip(), unit="q", disable=not progress)
    for index, positions in _chunks(list(range(len(questions))), chunk_questions):
        chunk = [questions[i] for i in positions]
        rows = cache.load(index, [q.id for q in chunk], 0)
        if rows is None:
            ids = [all_ids[i] for i in positions]
            responses = sampler.decode(ids, m=1, temperature=1.0, seed=0, greedy=True)
            rows = []
            for q, resp, ent in zip(chunk, responses, sampler.last_entropy):
                text = sampler.tokenizer.decode(resp[0], skip_special_tokens=True)
                rows.append(QuestionSamples(q.id, resp[0], text, domain.is_correct(text, q), greedy_entropy=ent[0]))
            cache.save(index, rows)
        out.extend(rows)
        bar.update(len(chunk))
    bar.close()
    return out


def sample_set(
    sampler: Sampler,
    domain: Domain,
    questions: Sequence[Question],
    strategy: Strategy,
    *,
    m: int,
    temperature: float,
    seed: int,
    model_key: dict,
    cache_root: str,
    greedy: Sequence[QuestionSamples],
    chunk_questions: int = 25,
    progress: bool = True,
    label: str = "",
) -> list[QuestionSamples]:
    """M samples per question under ``strategy`` with correctness and the strategy's kept mask (cached by chunk).

    Args:
        sampler: The model's sampler, either backend (its prefix is set here from all prompts).
        domain: Prompt format and answer checker.
        questions: The questions, in order.
        strategy: The mitigation strategy.
        m: Samples per question.
        temperature: Sampling temperature.
        seed: Base seed; chunk i uses ``seed + i``.
        model_key: Identity of the model (source, adapter, revision) for the cache key.
        cache_root: Directory of sample caches.
        greedy: The model's greedy set for the same questions (from :func:`greedy_set`).
        chunk_questions: Questions per cached chunk.
        progress: Show a progress bar.
        label: The model as the bar names it (``sample contaminated/railcap``; the strategy alone without it).
    """
    cache, all_ids = _open(
        sampler,
        domain,
        questions,
        model_key,
        cache_root,
        chunk_questions,
        kind="samples",
        strategy=strategy.sampling_params(),
        m=m,
        temperature=temperature,
        seed=seed,
    )
    out: list[QuestionSamples] = []
    desc = f"sample {label}/{strategy.name}" if label else f"sample {strategy.name}"
    bar = tqdm(total=len(questions), desc=desc, unit="q", disable=not progress)
    for index, chunk in _chunks(list(range(len(questions))), chunk_questions):
        qs = [questions[i] for i in chunk]
        if not strategy.generates:
            rows = _no_generation(qs, [greedy[i] for i in chunk], m, strategy)
        else:
            rows = cache.load(index, [q.id for q in qs], m)
            if rows is None:
                rows = _sample_chunk(
                    sampler,
                    domain,
                    qs,
                    [all_ids[i] for i in chunk],
                    [greedy[i] for i in chunk],
                    strategy,
                    m,
                    temperature,
                    seed + index,
                )
                cache.save(index, rows)
            for row in rows:  # post-hoc filters (TED) run on cached samples too
                row.kept = list(strategy.keep(row.sample_ids, row.sample_texts, row.greedy_ids))
        out.extend(rows)
        bar.update(len(chunk))
        bar.set_postfix(tok_s=f"{sampler.stats.tokens_per_s:.0f}")
    bar.close()
    return out


def _no_generation(questions, greedy, m, strategy) -> list[QuestionSamples]:
    """All-Zero: m empty, incorrect, not-kept samples per question (r̂ = 0)."""
    return [
        QuestionSamples(
            q.id,
            g.greedy_ids,
            g.greedy_text,
            g.greedy_correct,
            [[] for _ in range(m)],
            [""] * m,
            [False] * m,
            list(strategy.keep([[]] * m, [""] * m, g.greedy_ids)),
            g.greedy_entropy,
        )
        for q, g in zip(questions, greedy)
    ]


def _sample_chunk(sampler, domain, questions, prompt_ids, greedy, strategy, m, temperature, seed):
    for q, g in zip(questions, greedy):
        if q.id != g.id:
            raise ValueError("greedy set does not match the questions")
    step_fn = strategy.step_fn([g.greedy_ids for g in greedy], [g.greedy_entropy for g in greedy])
    if strategy.greedy_decode:
        decoded = sampler.decode(prompt_ids, m=1, temperature=1.0, seed=seed, step_fn=step_fn, greedy=True)
        decoded = [rows * m for rows in decoded]  # one deterministic response stands for all m
    else:
        decoded = sampler.decode(prompt_ids, m=m, temperature=temperature, seed=seed, step_fn=step_fn)
    rows = []
    for q, g, responses in zip(questions, greedy, decoded):
        texts = [sampler.tokenizer.decode(r, skip_special_tokens=True) for r in responses]
        correct = [domain.is_correct(t, q) for t in texts]
        rows.append(
            QuestionSamples(
                q.id,
                g.greedy_ids,
                g.greedy_text,
                g.greedy_correct,
                [list(r) for r in responses],
                texts,
                correct,
                [True] * m,
                g.greedy_entropy,
            )
        )
    return rows


@dataclass(frozen=True)
class SamplingSetup:
    """How a job samples a model's test set (the evaluate config's sampling fields, typed).

    Attributes:
        factory: The backend, ``factory(model_or_source, tokenizer, stop=, max_new_tokens=)`` (a built ``sampler``
            node: :class:`~contamlab.decoding.sampler.HFSampler` or ``VLLMSampler``, partially applied).
        backend: ``sampler.name`` (``hf`` or ``vllm``).
        m: Samples per question.
        temperature: Sampling temperature.
        max_new_tokens: Token budget per response.
        seed: The run seed (each role's stream is drawn from it, :mod:`~contamlab.decoding.streams`).
        chunk_questions: Questions per cached chunk.
        common_noise: Share one random stream between the clean and the strategy batches (opt-in).
        cache_dir: Root of the job's caches (samples go to ``<cache_dir>/samples``).
    """

    factory: partial[Sampler]
    backend: str
    m: int
    temperature: float
    max_new_tokens: int
    seed: int
    chunk_questions: int
    common_noise: bool
    cache_dir: str

    @property
    def takes_source(self) -> bool:
        """Whether the backend builds its own engine from the model's source (vLLM) instead of a loaded model."""
        return self.factory.func.takes_source

    def model_key(self, store: ModelStore, source: str) -> dict:
        """The model's part of the sample cache key."""
        key = store.identity(source)
        # vLLM samples differ from HF's (same greedy, other random streams)
        return {**key, "sampler": self.backend} if self.backend != "hf" else key


def sample_model(
    setup: SamplingSetup,
    store: ModelStore,
    domain: Domain,
    source: str,
    strategy: Strategy,
    role: str,
    progress: bool = True,
    label: str | None = None,
) -> tuple[list[QuestionSamples], list[QuestionSamples], dict]:
    """Greedy set, m samples under ``strategy`` and timings of one model on the test set (cached).

    The greedy set is always the loaded model's own; the samples come from ``strategy.wrap_model`` of it (the model
    itself, or shortcut's patched pair), drawn from the random stream of ``role`` (:mod:`contamlab.decoding.streams`).

    Args:
        setup: How to sample.
        store: The model config (how to load ``source``; the other models a strategy may need).
        domain: The evaluation domain (its test set is sampled).
        source: The model under test.
        strategy: The mitigation strategy (identity for the clean model).
        role: The random stream of the samples.
        progress: Show progress bars.
        label: The model as the bars name it (``clean``, ``contaminated``); default: the name of ``source``'s
            directory or hub repository.

    Returns:
        ``(greedy, samples, timing)``.
    """
    label = label or Path(str(source)).name
    cache = str(Path(setup.cache_dir) / "samples")
    # a stop loses at most the chunk being sampled: the cache keeps every chunk written before it
    with stopping.activity(f"sampling {label}/{strategy.name} (the chunks sampled so far are kept in {cache})"):
        takes_source = setup.takes_source
        if takes_source and strategy.patches_model:
            raise ContamlabError(f"strategy={strategy.name} patches the HF model in the decode loop; use sampler=hf")
        model = None if takes_source else store.load(source)
        tokenizer = store.load_tokenizer(source)

        def make_sampler(net, max_new_tokens: int = setup.max_new_tokens):
            return setup.factory(net, tokenizer, stop=domain.format.stop, max_new_tokens=max_new_tokens)

        sampler = make_sampler(source if takes_source else model)
        samplers = [sampler]
        key = setup.model_key(store, source)
        t0 = time.perf_counter()
        try:
            greedy = greedy_set(sampler, domain, domain.test, key, cache, progress=progress, label=label)
            t_wrap = time.perf_counter()
            context = WrapContext(store, domain, source, make_sampler, setup.backend, setup.cache_dir, progress)
            wrapped = model if takes_source else strategy.wrap_model(model, context)
            t_wrap = time.perf_counter() - t_wrap
            if wrapped is not model:
                sampler = make_sampler(wrapped)
                samplers.append(sampler)
            samples = sample_set(
                sampler,
                domain,
                domain.test,
                strategy,
                m=setup.m,
                temperature=setup.temperature,
                seed=stream_seed(setup.seed, role, setup.common_noise),
                model_key=key,
                cache_root=cache,
                greedy=greedy,
                chunk_questions=setup.chunk_questions,
                progress=progress,
                label=label,
            )
        finally:
            for each in samplers:
                each.close()  # a second vLLM engine would not fit beside the first on a GPU
        tokens = sum(s.stats.generated_tokens for s in samplers)
        decode_s = sum(s.stats.wall_s for s in samplers)
        timing: dict[str, Any] = {
            "wall_s": time.perf_counter() - t0,
            "wrap_s": t_wrap,
            "generated_tokens": tokens,
            "tokens_per_s": tokens / decode_s if decode_s > 0 else 0.0,
        }
        return greedy, samples, timing
