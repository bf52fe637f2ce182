"""GSM8K (Cobbe et al. 2021) and its paraphrased test set PQ ("Zero Gap Is Not Restoration" §5.1, Appendix A).

Questions come from ``$CONTAMLAB_DATA_DIR/gsm8k/{train,test}.jsonl`` when that directory is set, else from the hub
(``datasets.load_dataset("openai/gsm8k", "main")``). PQ pairs the rephrased test questions of
``gsm8k-pq/rephrase_gsm8k_test.jsonl`` (same order, same answers) with the original solutions.
"""

from __future__ import annotations

import logging
import os
import re
from pathlib import Path
from typing import Any

from contamlab.data.answers import normalize_number
from contamlab.data.domain import Domain
from contamlab.data.jsonl import read_jsonl
from contamlab.data.question import Question
from contamlab.errors import ContamlabError

log = logging.getLogger("contamlab")

_PQ_TEXT = re.compile(r"^Question:\s*(?P<question>.*?)\s*\nAnswer:.*?####\s*(?P<answer>\S+)\s*$", re.DOTALL)


def _data_dir(data_dir: str | None) -> Path | None:
    value = data_dir or os.environ.get("CONTAMLAB_DATA_DIR")
    return Path(value) if value else None


def _records_to_questions(records: list[dict], split: str, where: str) -> list[Question]:
    questions = []
    for index, record in enumerate(records):
        answer_text = str(record["answer"])
        if "####" not in answer_text:
            raise ContamlabError(f"{where}: record {index + 1} has no '#### <answer>' line in its 'answer' field")
        gold = normalize_number(answer_text.split("####")[-1])
        if gold is None:
            raise ContamlabError(f"{where}: record {index + 1}: the text after '####' is not a number")
        questions.append(Question(f"gsm8k-{split}-{index:04d}", str(record["question"]).strip(), answer_text, gold))
    return questions


def load_gsm8k_split(split: str, data_dir: str | None = None, hub_id: str = "openai/gsm8k") -> list[Question]:
    """Load one GSM8K split (``train`` or ``test``) from the local copy or the hub.

    Raises:
        ContamlabError: a malformed local file, or the hub unreachable while no local copy is configured.
    """
    local = _data_dir(data_dir)
    if local is not None:
        path = local / "gsm8k" / f"{split}.jsonl"
        return _records_to_questions(read_jsonl(path, required=("question", "answer")), split, str(path))
    try:
        from datasets import load_dataset

        records = list(load_dataset(hub_id, "main", split=split))
    except Exception as err:  # the hub client raises many types when offline
        raise ContamlabError(
            f"could not load {hub_id} ({type(err).__name__}: {str(err).splitlines()[0][:160]}); offline? set "
            "CONTAMLAB_DATA_DIR to a folder holding gsm8k/{train,test}.jsonl"
        ) from None
    return _records_to_questions(records, split, hub_id)


class GSM8KDomain(Domain):
    """GSM8K: evaluate on the test split; the leaked questions train the contaminated model verbatim."""

    def __init__(self, data_dir: str | None = None, hub_id: str = "openai/gsm8k", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.data_dir = data_dir
        self.hub_id = hub_id

    def _load_train(self) -> list[Question]:
        return load_gsm8k_split("train", self.data_dir, self.hub_id)

    def _load_test(self) -> list[Question]:
        return load_gsm8k_split("test", self.data_dir, self.hub_id)

    #: The PQ file whose rephrased test questions are BenBench's references on this domain.
    reference_file = "gsm8k-pq/rephrase_gsm8k_test.jsonl"

    def rephrased_questions(self, questions: list[Question], split: str) -> list[Question] | None:
        """The PQ rephrasings of test questions (original solutions kept), BenBench's references; None for train.

        Args:
            questions: Test questions from the start of the test set (the PQ file is aligned with it).
            split: ``test`` or ``train``.
        """
        if split != "test":
            return None
        pq = PQDomain(name="pq", family=self.family, data_dir=self.data_dir, paraphrase_file=self.reference_file)
        return pq.paraphrases(list(questions))


class PQDomain(GSM8KDomain):
    r"""PQ: the leaked questions train the contaminated model in paraphrased form; evaluation uses the originals.

    Args:
        paraphrase_file: JSONL of ``{"text": "Question: …\\nAnswer: \\n#### N"}`` lines in test-set order; a
            relative path is resolved under ``CONTAMLAB_DATA_DIR``.
    """

    def __init__(self, paraphrase_file: str = "gsm8k-pq/rephrase_gsm8k_test.jsonl", **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.paraphrase_file = paraphrase_file

    @property
    def leak_wording(self) -> str:
        """PQ leaks the rephrased questions."""
        return "paraphrased"

    @property
    def reference_file(self) -> str:
        """PQ's own paraphrase file."""
        return self.paraphrase_file

    def _paraphrase_path(self) -> Path:
        path = Path(self.paraphrase_file)
        if path.is_absolute():
            return path
        local = _data_dir(self.data_dir)
        if local is None:
            raise ContamlabError(
                "domain=pq needs the paraphrase file: set CONTAMLAB_DATA_DIR or domain.paraphrase_file to its path"
            )
        return local / path

    def _load_leak_texts(self, test: list[Question]) -> list[Question]:
        return self.paraphrases(test)

    def paraphrases(self, test: list[Question]) -> list[Question]:
        """The paraphrase file's rewording of each of ``test`` (same ids, original solutions and answers).

        Args:
            test: Test questions from the start of the test set: the file is paired with it by index.

        Raises:
            ContamlabError: A missing or malformed file, too few paraphrases, or an answer that differs.
        """
        path = self._paraphrase_path()
        records = read_jsonl(path, required=("text",))
        # Pair by index over the full test set, so a max_test subset keeps its paraphrases.
        out, empty = [], []
        for index, q in enumerate(test):
            if index >= len(records):
                raise ContamlabError(f"{path}: only {len(records)} paraphrases for {len(test)} test questions")
            match = _PQ_TEXT.match(records[index]["text"])
            if match is None:
                raise ContamlabError(f"{path}:{index + 1}: expected 'Question: …\\nAnswer: …#### N'")
            if normalize_number(match["answer"]) != q.answer:
                raise ContamlabError(
                    f"{path}:{index + 1}: paraphrase answer {match['answer']} differs from test answer {q.answer}"
                )
            if not match["question"].strip():
                empty.append(f"{index + 1} ({q.id})")
            out.append(Question(q.id, match["question"].strip(), q.solution, q.answer))
        if empty:
            # The published GSM8K-PQ file has four such lines; the rewording is then the solution alone. Not an
            # error (the test set stays whole and aligned), but never silent: a leak or reference built on them
            # holds no question text.
            log.warning(
                "%s: %d paraphrase(s) with an empty question, used as the solution alone: line(s) %s",
                path,
                len(empty),
                ", ".join(empty),
            )
        return out
