"""Any benchmark as data: a domain declared in YAML over JSONL files or a ``datasets`` dataset.

The domain maps the records' fields to questions (question, answer, optional choices, id and reference solution),
normalises the gold answers with the configured checker (:mod:`contamlab.data.checkers`), renders prompts with a
:class:`~contamlab.data.prompts.PromptFormat` (few-shot exemplars from the train split, a file, or none) and can pair
each test question with a paraphrase (a PQ-style twin: the contaminated model then trains on the paraphrases, and
BenBench and ConStat use them as references). ``docs/benchmarks.md`` shows a 20-line YAML.

Every record is read and checked when the domain is first used, which the jobs do before any model loads; an
unreadable gold answer, a missing field, a choice question without choices or an empty split stops with the file,
line and field.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from contamlab.data.checkers import Checker, with_options
from contamlab.data.checkers import checker as make_checker
from contamlab.data.domain import Domain
from contamlab.data.jsonl import numbered, read_jsonl
from contamlab.data.question import Question
from contamlab.errors import ContamlabError

__all__ = ["BenchmarkDomain"]

_FIELDS = ("question", "answer", "choices", "id", "solution")


class BenchmarkDomain(Domain):
    """A benchmark read from JSONL files or a dataset, with an answer checker chosen in its YAML.

    Args:
        test: JSONL of the test split (relative paths resolve under ``data_dir``, else ``CONTAMLAB_DATA_DIR``).
        train: JSONL of the train split (training renderings, few-shot exemplars, BenBench's train side); optional.
        dataset: Instead of files, a ``datasets`` dataset: ``{path, name, test_split, train_split, revision}``.
        data_dir: Root of relative paths.
        fields: The record keys of ``question``, ``answer`` and optionally ``choices``, ``id``, ``solution``.
        checker: ``numeric``, ``exact``, ``choice`` or ``math``.
        answer_pattern: A regular expression whose first group is the gold answer inside the answer field
            (GSM8K: ``.*####(.*)``, the text after the last ``####``); None = the whole field.
        choice_format: How each option follows the question (``{label}``, ``{text}``).
        paraphrase_file: JSONL of rephrased test questions in test order (the field of ``fields.question``, or
            ``paraphrase_field``): the PQ-style twin.
        paraphrase_field: The paraphrase file's question key (None = ``fields.question``).
        shots: Few-shot exemplars: ``train`` (the first ``prompt.n_shot`` train questions), ``wei2022`` (the GSM8K
            exemplars of Wei et al.) or a JSONL path with the benchmark's fields.
        id_prefix: Ids are ``<id_prefix>-<split>-<index>`` when the records have no id field (None = ``name``).
        **kwargs: The fields every domain has (:class:`~contamlab.data.domain.Domain`).
    """

    def __init__(
        self,
        test: str | None = None,
        train: str | None = None,
        dataset: Mapping[str, Any] | None = None,
        data_dir: str | None = None,
        fields: Mapping[str, str | None] | None = None,
        checker: str = "numeric",
        answer_pattern: str | None = None,
        choice_format: str = "\n{label}. {text}",
        paraphrase_file: str | None = None,
        paraphrase_field: str | None = None,
        shots: str = "train",
        id_prefix: str | None = None,
        **kwargs: Any,
    ) -> None:
        self.checker: Checker = make_checker(checker)
        self.checker_name = checker
        self.fields = {"question": "question", "answer": "answer", **dict(fields or {})}
        unknown = sorted(set(self.fields) - set(_FIELDS))
        if unknown:
            raise ContamlabError(f"domain.fields: unknown key(s) {', '.join(unknown)}; use {', '.join(_FIELDS)}")
        if checker == "choice" and not self.fields.get("choices"):
            raise ContamlabError("domain.checker=choice needs domain.fields.choices (the record key of the options)")
        if (test is None) == (dataset is None):
            raise ContamlabError("domain: give either domain.test (a JSONL path) or domain.dataset (a datasets id)")
        self.test_file, self.train_file, self.dataset = test, train, dict(dataset) if dataset else None
        self.data_dir = data_dir
        try:
            self.answer_pattern = re.compile(answer_pattern, re.DOTALL) if answer_pattern else None
        except re.error as err:
            raise ContamlabError(
                f"domain.answer_pattern={answer_pattern!r}: not a regular expression ({err})"
            ) from None
        self.choice_format = choice_format
        self.paraphrase_file, self.paraphrase_field = paraphrase_file, paraphrase_field
        self.shots_source = shots
        self.id_prefix = id_prefix
        super().__init__(**kwargs)
        if self.dataset is not None:
            _check_dataset_spec(self.dataset)
        # exemplars from the train split or a file are built once the data is read (_resolve_shots)
        self._shots_pending = self.format.exemplars is None and shots != "wei2022" and self.format.n_shot > 0

    # -- reading -------------------------------------------------------------------------------------------------
    def _path(self, value: str) -> Path:
        path = Path(os.path.expanduser(value))
        if path.is_absolute():
            return path
        root = self.data_dir or os.environ.get("CONTAMLAB_DATA_DIR")
        return Path(root) / path if root else path

    def _records(self, split: str) -> list[tuple[str, int, dict]] | None:
        """``(where, line, record)`` of a split (None when the benchmark has no such split)."""
        if self.dataset is not None:
            name = self.dataset.get(f"{split}_split", split if split == "test" else None)
            return None if name is None else _dataset_records(self.dataset, str(name))
        file = self.test_file if split == "test" else self.train_file
        if file is None:
            return None
        path = self._path(file)
        return [(str(path), line, r) for line, r in numbered(path)]

    def _question(self, where: str, line: int, index: int, record: dict, split: str) -> Question:
        def field(key: str, required: bool = True) -> Any:
            name = self.fields.get(key)
            if not name:
                return None
            if name not in record:
                if required:
                    raise ContamlabError(f"{where}:{line}: missing field {name!r} (domain.fields.{key})")
                return None
            return record[name]

        text = field("question")
        if not isinstance(text, str) or not text.strip():
            raise ContamlabError(f"{where}:{line}: field {self.fields['question']!r} must be a non-empty string")
        choices: tuple[str, ...] = ()
        if self.fields.get("choices"):
            raw_choices = field("choices")
            if not isinstance(raw_choices, list) or len(raw_choices) < 2:
                raise ContamlabError(
                    f"{where}:{line}: field {self.fields['choices']!r} must be a list of at least two options"
                )
            choices = tuple(str(c) for c in raw_choices)
        raw = field("answer")
        raw = "" if raw is None else str(raw)
        if self.answer_pattern is not None:
            match = self.answer_pattern.search(raw)
            if match is None:
                raise ContamlabError(
                    f"{where}:{line}: field {self.fields['answer']!r} does not match domain.answer_pattern"
                )
            raw = match.group(1) if match.groups() else match.group(0)
        gold = self.checker.gold(raw.strip(), choices)
        if gold is None:
            raise ContamlabError(
                f"{where}:{line}: field {self.fields['answer']!r}: the {self.checker_name} checker cannot read the "
                f"gold answer {raw.strip()[:60]!r}"
            )
        solution = field("solution", required=False)
        qid = field("id", required=False)
        qid = str(qid) if qid is not None else f"{self.id_prefix or self.name}-{split}-{index:04d}"
        return Question(
            qid, self._render(text.strip(), choices), "" if solution is None else str(solution), gold, choices
        )

    def _render(self, text: str, choices: Sequence[str]) -> str:
        return with_options(text, choices, self.choice_format)

    def _load(self, split: str) -> list[Question]:
        records = self._records(split)
        if records is None:
            return []
        questions = [self._question(where, line, i, r, split) for i, (where, line, r) in enumerate(records)]
        _check_unique_ids(questions, records)
        return questions

    def _load_test(self) -> list[Question]:
        return self._load("test")

    def _load_train(self) -> list[Question]:
        questions = self._load("train")
        if not questions:  # a test-only benchmark: training renders general text and the leak only
            raise ContamlabError(
                f"domain={self.name} has no train split (domain.train or domain.dataset.train_split): training, "
                "BenBench's train side and few-shot exemplars from the train split need one"
            )
        return questions

    @property
    def has_train(self) -> bool:
        """Whether the benchmark has a train split."""
        return self.train_file is not None or bool(self.dataset and self.dataset.get("train_split"))

    # -- prompts and answers -------------------------------------------------------------------------------------
    @property
    def prefix(self) -> str:
        """The few-shot prefix (exemplars from the train split or a file, resolved on first use)."""
        self._resolve_shots()
        return self.format.prefix()

    def prompt(self, question: Question) -> str:
        """The evaluation prompt of a question."""
        self._resolve_shots()
        return self.format.prompt(question.question)

    def _resolve_shots(self) -> None:
        if not self._shots_pending:
            return
        from dataclasses import replace

        if self.shots_source == "train":
            pool = self.train
        else:
            path = self._path(self.shots_source)
            pool = [self._question(str(path), line, i, r, "shot") for i, (line, r) in enumerate(numbered(path))]
        if len(pool) < self.format.n_shot:
            raise ContamlabError(f"domain.prompt.n_shot={self.format.n_shot}: only {len(pool)} exemplars available")
        shots = tuple((q.question, self.target(q).strip()) for q in pool[: self.format.n_shot])
        self.format = replace(self.format, exemplars=shots)
        self._shots_pending = False

    def target(self, question: Question) -> str:
        """The reference response: the solution field in the prompt's style, else "The answer is …"."""
        if question.solution:
            return self.format.target(question)
        return f" The answer is {self.checker.display(question.answer, question.choices)}."

    # -- the paraphrased twin ------------------------------------------------------------------------------------
    def _paraphrases(self, test: list[Question]) -> list[Question]:
        if self.paraphrase_file is None:
            raise ContamlabError(f"domain={self.name}: no domain.paraphrase_file for the paraphrased form")
        path = self._path(self.paraphrase_file)
        key = self.paraphrase_field or self.fields["question"]
        records = read_jsonl(path, required=(key,))
        if len(records) < len(test):
            raise ContamlabError(f"{path}: only {len(records)} paraphrases for {len(test)} test questions")
        return [
            Question(q.id, self._render(str(r[key]).strip(), q.choices), q.solution, q.answer, q.choices)
            for q, r in zip(test, records)
        ]

    def _load_leak_texts(self, test: list[Question]) -> list[Question]:
        return self._paraphrases(test) if self.paraphrase_file else test

    @property
    def leak_wording(self) -> str:
        """``paraphrased`` when a paraphrase file renders the leak, else ``verbatim``."""
        return "paraphrased" if self.paraphrase_file else "verbatim"

    def rephrased_questions(self, questions: list[Question], split: str) -> list[Question] | None:
        """The paraphrases of test questions (BenBench's and ConStat's references); None without a file."""
        if split != "test" or self.paraphrase_file is None:
            return None
        return self._paraphrases(list(questions))

    def check_data(self, train: bool = True) -> None:
        """Read everything up front (:meth:`Domain.check_data`); a test-only benchmark skips the train split."""
        super().check_data(train=train and self.has_train)
        if self.paraphrase_file:
            self._paraphrases(self.test)
        self._resolve_shots()

    def fingerprint(self) -> dict[str, Any]:
        """The common fields, plus what this benchmark reads and how it checks answers.

        The test file's digest is ``test_data`` and the paraphrase file's ``paraphrase_file``: the base and clean
        stages never see either (the model store leaves both out of their keys), and a benchmark and its paraphrased
        twin share the clean model's samples (``paraphrase_file`` is a leak field).
        """
        self._resolve_shots()
        if self.dataset:
            test_data, train_data = {"dataset": self.dataset, "split": "test"}, {"dataset": self.dataset}
        else:
            test_data = _file_digest(self._path(self.test_file))
            train_data = _file_digest(self._path(self.train_file)) if self.train_file else None
        return {
            **super().fingerprint(),
            "test_data": test_data,
            "benchmark": {
                "train": train_data,
                "fields": self.fields,
                "checker": self.checker_name,
                "answer_pattern": self.answer_pattern.pattern if self.answer_pattern else None,
                "choice_format": self.choice_format,
            },
            **({"paraphrase_file": _file_digest(self._path(self.paraphrase_file))} if self.paraphrase_file else {}),
        }

    def _train_size(self) -> int:
        return len(self.train) if self.has_train else 0


def _check_unique_ids(questions: Sequence[Question], records: Sequence[tuple[str, int, dict]]) -> None:
    """Stop at the first id seen twice, naming the file and both lines.

    The domain checks ids again after ``max_test``, but by then the file and lines are gone; a duplicate past the
    cut is as much a data error as one before it, so the whole file is checked here.
    """
    first: dict[str, int] = {}
    for q, (where, line, _) in zip(questions, records):
        if q.id in first:
            raise ContamlabError(
                f"{where}:{line}: duplicate question id {q.id!r} (first at line {first[q.id]}); ids must be unique"
            )
        first[q.id] = line


def _file_digest(path: Path) -> str:
    # The content names the data: the same file moved keeps its models, an edited one does not.
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16] if path.is_file() else str(path)


def _check_dataset_spec(spec: dict) -> None:
    unknown = sorted(set(spec) - {"path", "name", "test_split", "train_split", "revision"})
    if unknown or not spec.get("path"):
        raise ContamlabError(
            "domain.dataset: give path (a datasets id) and optionally name, test_split, train_split, revision"
            + (f" (unknown: {', '.join(unknown)})" if unknown else "")
        )


def _offline() -> bool:
    flags = (os.environ.get(k, "0").strip().lower() for k in ("HF_HUB_OFFLINE", "HF_DATASETS_OFFLINE"))
    return any(f not in ("0", "", "false", "no", "off") for f in flags)


def _dataset_records(spec: dict, split: str) -> list[tuple[str, int, dict]]:
    where = f"{spec['path']}[{split}]"
    try:
        from datasets import load_dataset

        rows = load_dataset(spec["path"], spec.get("name"), split=split, revision=spec.get("revision"))
    except Exception as err:  # the hub client raises many types when offline or when an id is wrong
        hint = " (the hub is off: HF_HUB_OFFLINE / HF_DATASETS_OFFLINE; give JSONL files as domain.test)"
        raise ContamlabError(
            f"cannot load dataset {where}: {type(err).__name__}: {str(err).splitlines()[0][:160]}"
            + (hint if _offline() else "")
        ) from None
    return [(where, i + 1, dict(r)) for i, r in enumerate(rows)]
