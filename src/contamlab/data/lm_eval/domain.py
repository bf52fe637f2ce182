"""The domain adapter: an lm-eval task's documents as contamlab's items, its prompts, targets and checker.

The package's docstring (:mod:`contamlab.data.lm_eval`) says what the domain takes from the task and how.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from contamlab.data.checkers import LETTERS, with_options
from contamlab.data.domain import Domain
from contamlab.data.lm_eval.compat import (
    fewshot_target,
    lm_eval_version,
    load_yaml,
    require_lm_eval,
    templates_compiled_once,
)
from contamlab.data.lm_eval.grading import choose, filter_names, grade
from contamlab.data.lm_eval.local_data import file_overrides, local_files, needed_splits
from contamlab.data.lm_eval.tasks import OUTPUT_TYPES, check_task, task_yaml
from contamlab.data.prompts import PromptFormat
from contamlab.data.question import Question
from contamlab.errors import ContamlabError
from contamlab.io import content_hash

__all__ = ["FEWSHOT_SEED", "LmEvalDomain"]

log = logging.getLogger("contamlab")

#: lm-eval's default seed of the few-shot sampler (``lm_eval.defaults.DEFAULT_OTHER_SEED``, ``--seed``'s fourth).
FEWSHOT_SEED = 1234


def _one_line(err: BaseException) -> str:
    first = (str(err).strip().splitlines() or [""])[0]
    return f"{type(err).__name__}: {first[:200]}"


class LmEvalDomain(Domain):
    """A task of lm-evaluation-harness (lm-eval 0.4.13) as a domain.

    Args:
        task: The lm-eval task (``gsm8k_cot``, ``gsm8k``, ``arc_easy`` …); one task, not a group or a tag.
        data_files: Local copies of the task's dataset, ``{split: file}`` with the split names the task uses
            (``test``, ``train``, ``validation``), each a ``.jsonl``, ``.json``, ``.csv`` or ``.parquet`` file of the
            dataset's own fields; relative paths resolve under ``data_dir``. None: a known local copy
            (:data:`~contamlab.data.lm_eval.local_data.LOCAL_COPIES`), else the hub. Splits the task names but the
            files lack are left out, except the one it evaluates and the one its few-shot examples come from.
        data_dir: Root of relative paths and of the known local copies (None = ``CONTAMLAB_DATA_DIR``).
        include_path: A folder (or list) of your own task YAMLs, as ``lm_eval --include_path``.
        num_fewshot: Few-shot examples per prompt, as ``lm_eval --num_fewshot`` (None = the task's own; a task that
            sets 0 keeps 0, as in the harness).
        fewshot_seed: Seed of the few-shot sampler (lm-eval's default: 1234).
        filter: The filter ensemble that extracts the answer (None = the task's first: ``strict-match`` for
            ``gsm8k_cot``).
        metric: The metric that judges the extracted answer; it must give 0 or 1 (None = the task's first).
        **kwargs: The fields every domain has (:class:`~contamlab.data.domain.Domain`); ``prompt`` is the task's.

    Raises:
        ContamlabError: lm-eval not installed, an unknown task, a task contamlab cannot read as items (output types
            other than generate_until and multiple_choice, one context per choice, code execution, repeats), missing
            local files, or a dataset only the unreachable hub has.
    """

    def __init__(
        self,
        task: str,
        data_files: Mapping[str, str] | None = None,
        data_dir: str | None = None,
        include_path: str | Sequence[str] | None = None,
        num_fewshot: int | None = None,
        fewshot_seed: int = FEWSHOT_SEED,
        filter: str | None = None,
        metric: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        require_lm_eval()
        self.task_name = str(task)
        self.data_dir = data_dir
        self.include_path = include_path
        self.fewshot_seed = int(fewshot_seed)
        if num_fewshot is not None and int(num_fewshot) < 0:
            raise ContamlabError(f"domain.num_fewshot={num_fewshot}: must be >= 0, or null for the task's own")
        with templates_compiled_once():
            self.task = self._load_task(data_files, num_fewshot)
            check_task(self.task, self.task_name)
            self.generative = self.task.OUTPUT_TYPE == "generate_until"
            self.filter_name = choose("filter", filter, filter_names(self.task), self.task_name)
            self.metric_name = choose("metric", metric, list(self.task.aggregation()), self.task_name)
            self._read_docs()
        until = self.task.config.generation_kwargs.get("until") if self.generative else None
        until = [until] if isinstance(until, str) else list(until or [])
        self.until = [u for u in until if u]  # lm-eval ignores an empty stop string
        self.format = PromptFormat(
            question_prefix=self._frame[0],
            answer_prefix=self._frame[1],
            separator=self.task.config.fewshot_delimiter,
            n_shot=0,  # the few-shot prefix is the harness's (prefix, prompt)
            solution_style="gsm8k",  # unused: targets are the task's (target)
            stop=tuple(self.until),
        )
        max_gen_toks = self.generative and self.task.config.generation_kwargs.get("max_gen_toks")
        if max_gen_toks and int(max_gen_toks) != self.max_new_tokens:
            log.warning(
                "lm-eval task %s generates up to %s tokens; domain.max_new_tokens=%d (set it to match the harness)",
                self.task_name,
                max_gen_toks,
                self.max_new_tokens,
            )

    # -- loading the task ------------------------------------------------------------------------------------------
    def _load_task(self, data_files: Mapping[str, str] | None, num_fewshot: int | None) -> Any:
        from lm_eval.tasks import TaskManager

        path = task_yaml(self.task_name, self.include_path)
        cfg = load_yaml(path, resolve_func=True)  # includes and !function resolved, as TaskManager reads it
        if cfg.get("output_type", "generate_until") not in OUTPUT_TYPES:
            raise ContamlabError(
                f"domain.task={self.task_name}: an lm-eval {cfg['output_type']} task; contamlab reads "
                f"{' and '.join(OUTPUT_TYPES)} tasks (questions with answers)"
            )
        shots = cfg.get("num_fewshot")
        # simple_evaluate: --num_fewshot overrides the task's value, except a 0 the task sets itself; none is 0
        self.num_fewshot = int(shots or 0) if num_fewshot is None or shots == 0 else int(num_fewshot)
        self.data_files = local_files(cfg, data_files, self.data_dir)
        overrides: dict[str, Any] = {"num_fewshot": self.num_fewshot}
        if self.data_files:
            overrides |= file_overrides(cfg, self.data_files, self.num_fewshot, self.task_name)
        try:
            return TaskManager(include_defaults=False).load({**cfg, **overrides})["tasks"][self.task_name]
        except ContamlabError:
            raise
        except Exception as err:  # datasets raises many types for a missing or malformed dataset
            if self.data_files:
                files = ", ".join(f"{k}={v}" for k, v in self.data_files.items())
                raise ContamlabError(
                    f"lm-eval task {self.task_name} could not read its local files ({files}): {_one_line(err)}"
                ) from None
            dataset = f"{cfg.get('dataset_path')}" + (f" ({cfg['dataset_name']})" if cfg.get("dataset_name") else "")
            splits = ", ".join(f"{s}: <file>" for s in needed_splits(cfg, self.num_fewshot))
            raise ContamlabError(
                f"lm-eval task {self.task_name} could not load its dataset {dataset} from the Hugging Face hub or its "
                f"cache ({_one_line(err)}); offline, give local copies of its splits: domain.data_files='{{{splits}}}' "
                "(.jsonl, .json, .csv or .parquet files of the dataset's fields; relative paths under "
                "CONTAMLAB_DATA_DIR)"
            ) from None

    # -- the items ---------------------------------------------------------------------------------------------------
    def _read_docs(self) -> None:
        task = self.task
        self.eval_split = task.config.test_split or task.config.validation_split
        eval_docs = list(task.eval_docs)
        self.train_split: str | None = task.config.training_split
        if task.has_training_docs():
            train_docs = list(task.training_docs())
        elif "train" in task.dataset and self.eval_split != "train":
            # a task evaluated without a train split (GSM8K-CoT: fixed exemplars) still has its dataset's, which the
            # simulation's clean stage and base pre-training read
            self.train_split = "train"
            split = task.dataset["train"]
            train_docs = list(task.config.process_docs(split) if task.config.process_docs else split)
        else:
            self.train_split, train_docs = None, []
        texts = {}
        for kind, docs in (("eval", eval_docs), ("train", train_docs)):
            texts[kind] = [task.doc_to_text(doc) for doc in docs]
            if any(not isinstance(t, str) for t in texts[kind]):
                raise ContamlabError(f"domain.task={self.task_name}: doc_to_text does not give text")
        if not eval_docs:
            raise ContamlabError(f"lm-eval task {self.task_name}: no documents in its {self.eval_split!r} split")
        frame = _frame(task, eval_docs + train_docs, texts["eval"] + texts["train"])
        self._frame = (frame[1], frame[2]) if frame else ("", "")
        self._field = frame[0] if frame else None
        self._items: dict[str, tuple[dict, str, Question, str]] = {}
        self._eval_questions: list[Question] = []
        self._train_questions: list[Question] = []
        for docs, split, kind, out in (
            (eval_docs, self.eval_split, "eval", self._eval_questions),
            (train_docs, self.train_split, "train", self._train_questions),
        ):
            width = max(4, len(str(len(docs) - 1)))
            for index, (doc, text) in enumerate(zip(docs, texts[kind])):
                qid = f"{self.task_name}-{split}-{index:0{width}d}"
                question, target = self._question(qid, doc, text)
                self._items[qid] = (doc, text, question, target)
                out.append(question)

    def _question(self, qid: str, doc: dict, text: str) -> tuple[Question, str]:
        """The item of a document and its training target (the text a few-shot example puts after the question)."""
        task = self.task
        choices = task.doc_to_choice(doc) if task.config.doc_to_choice is not None else None
        target = fewshot_target(task, doc, text, choices)
        gold = task.doc_to_target(doc)
        gold = gold[0] if isinstance(gold, list) else gold
        shown = doc[self._field] if self._field else text
        if self._field and text != self._frame[0] + shown + self._frame[1]:
            shown = shown.strip()  # a template that strips the field ({{question.strip()}})
        if self.generative:
            answer = str(choices[gold] if choices and isinstance(gold, int) else gold)
            return Question(qid, shown, target.strip(), answer), target
        index = gold if isinstance(gold, int) else choices.index(gold) if gold in choices else -1
        if not 0 <= index < len(choices):
            raise ContamlabError(f"lm-eval task {self.task_name}, {qid}: gold {gold!r} is not one of its choices")
        # the options follow the question unless the task's own rendering lists them (MMLU)
        listed = all(str(c) in text for c in choices)
        item = shown if listed else with_options(shown, [str(c) for c in choices])
        return Question(qid, item, str(choices[index]), LETTERS[index], tuple(str(c) for c in choices)), target

    def _load_test(self) -> list[Question]:
        return list(self._eval_questions)

    def _load_train(self) -> list[Question]:
        if not self._train_questions:
            raise ContamlabError(
                f"lm-eval task {self.task_name} has no train split here (domain.data_files.train): training and "
                "BenBench's train side need one"
            )
        return list(self._train_questions)

    @property
    def generates_answers(self) -> bool:
        """A generate_until task; a multiple_choice one is read as text only (the harness scores its choices)."""
        return self.generative

    @property
    def has_train(self) -> bool:
        """Whether the task's dataset has a train split (its ``training_split``, else a split named ``train``)."""
        return bool(self._train_questions)

    def _train_size(self) -> int:
        return len(self.train) if self.has_train else 0

    def _item(self, question: Question) -> tuple[dict, str, Question, str] | None:
        """The document behind ``question``: None for an item that is not the task's (a non-member, a rewrite)."""
        item = self._items.get(question.id)
        return item if item is not None and item[2].question == question.question else None

    # -- prompts -----------------------------------------------------------------------------------------------------
    def _no_solve_probability(self) -> ContamlabError:
        return ContamlabError(
            f"domain.task={self.task_name} is a multiple_choice task: lm-eval scores it by the log-likelihood of each "
            "choice, not by a generated answer, so it has no solve probability here; use it for detection or an audit "
            "without mitigation (audit.mitigate=[]), or a generate_until variant of the task (e.g. arc_challenge_chat)"
        )

    @cached_property
    def contexts(self) -> dict[str, str]:
        """The harness's prompt of each test item, by id: the contexts of ``task.build_all_requests()``.

        ``num_fewshot`` and the sampler's seed are set as ``simple_evaluate`` sets them; ``max_test`` builds the
        first items only, as ``--limit``.
        """
        if not self.generative:
            raise self._no_solve_probability()
        with templates_compiled_once():
            self.task.set_fewshot_seed(seed=self.fewshot_seed)  # the sampler draws in document order
            self.task.build_all_requests(limit=self.max_test)
        ids = [q.id for q in self._eval_questions]
        return {ids[inst.doc_id]: inst.args[0] for inst in self.task.instances}

    @cached_property
    def _around(self) -> tuple[str, str]:
        """What the harness puts before and after the first test item's rendering: few-shot prefix, gen_prefix."""
        context, text = self.contexts[self._eval_questions[0].id], self._items[self._eval_questions[0].id][1]
        at = context.rfind(text)
        return (context[:at], context[at + len(text) :]) if at >= 0 else ("", "")

    @property
    def prefix(self) -> str:
        """The few-shot prefix (description and examples) of the first test item's prompt."""
        return self._around[0]

    def prompt(self, question: Question) -> str:
        """The harness's prompt of a test item; any other item in the first test item's frame (its few-shot prefix).

        Raises:
            ContamlabError: A multiple_choice task (no generated answers to judge).
        """
        item = self._item(question)
        if item is not None and question.id in self.contexts:
            return self.contexts[question.id]
        return self._around[0] + self.format.question_block(question.question) + self._around[1]

    def target(self, question: Question) -> str:
        """The text a few-shot example of the task puts after the item (target delimiter + ``doc_to_target``)."""
        item = self._item(question)
        if item is not None:
            return item[3]
        delimiter = self.task.fewshot_cfg.target_delimiter
        return delimiter + (question.solution or self.checker.display(question.answer, question.choices))

    # -- the checker -------------------------------------------------------------------------------------------------
    def graded(self, response: str, question: Question, filter: str | None = None) -> tuple[Any, bool]:
        """The task's answer in a response and whether the task's metric counts it correct, as the harness does.

        The response is cut at the task's ``until`` strings (``postprocess_generated_text``, as lm-eval's models do),
        passed through the filter ensemble (``apply`` on an :class:`~lm_eval.api.instance.Instance`) and judged by
        ``task.process_results`` with the filtered answer.

        Args:
            response: A generated response.
            question: A test or train item of the task.
            filter: The filter ensemble (None = ``domain.filter``).

        Returns:
            ``(extracted answer, correct)``.

        Raises:
            ContamlabError: A multiple_choice task, an item that is not the task's, an unknown filter, or a metric
                that gives other values than 0 and 1.
        """
        if not self.generative:
            raise self._no_solve_probability()
        item = self._item(question)
        if item is None:
            raise ContamlabError(
                f"item {question.id} is not a document of lm-eval task {self.task_name}: the task's filters cannot "
                "judge it"
            )
        name = choose("filter", filter or self.filter_name, filter_names(self.task), self.task_name)
        return grade(self.task, self.task_name, item[0], response, self.until, name, self.metric_name, question.id)

    def is_correct(self, response: str, question: Question) -> bool:
        """Whether the task's filter and metric count a response correct (:meth:`graded`)."""
        return self.graded(response, question)[1]

    def check_data(self, train: bool = True) -> None:
        """Read everything up front (:meth:`Domain.check_data`) and build the harness's prompts (generate_until)."""
        super().check_data(train=train and self.has_train)
        if self.generative:
            _ = self.contexts

    @cached_property
    def _file_digests(self) -> dict[str, str]:
        # the content names the data: the same files moved keep their models and samples, edited ones do not
        return {split: hashlib.sha256(Path(f).read_bytes()).hexdigest()[:16] for split, f in self.data_files.items()}

    def fingerprint(self) -> dict[str, Any]:
        """The common fields, plus the task, its lm-eval version, its settings and data, and the prompts' digest.

        The test data and the test prompts are ``test_data``: the base and clean stages never see them (the model
        store leaves that key out of their keys), the sample cache keys on it.
        """
        files = self._file_digests
        dataset = files or {"dataset": self.task.config.dataset_path, "name": self.task.config.dataset_name}
        prompts = [self.prompt(q) for q in self.test] if self.generative else []
        return {
            **super().fingerprint(),
            "test_data": {"data": dataset, "prompts": content_hash(prompts)},
            "lm_eval": {
                "version": lm_eval_version(),
                "task": self.task_name,
                "task_version": (self.task.config.metadata or {}).get("version"),
                "num_fewshot": self.num_fewshot,
                "fewshot_seed": self.fewshot_seed,
                "prefix": content_hash(self.prefix if self.generative else ""),
                "filter": self.filter_name,
                "metric": self.metric_name,
                "train_data": files.get(self.train_split or ""),
            },
        }


def _frame(task: Any, docs: list[dict], texts: list[str]) -> tuple[str, str, str] | None:
    """``(field, before, after)`` with ``doc_to_text(doc) == before + doc[field] + after`` for every document.

    The field is found by rendering the first document with each text field replaced by a marker; the frame holds
    only if every document renders that way (with the field as it is, or stripped). None: no such frame (the
    rendering uses several fields, or transforms one).
    """
    first = docs[0]
    probe = {k: (f"\x00{k}\x00" if isinstance(v, str) else v) for k, v in first.items()}
    try:
        rendered = task.doc_to_text(probe)
    except Exception:  # a template or function that needs real values
        return None
    if not isinstance(rendered, str):
        return None
    fields = [k for k in probe if isinstance(first[k], str) and f"\x00{k}\x00" in rendered]
    if len(fields) != 1 or rendered.count(f"\x00{fields[0]}\x00") != 1:
        return None
    before, after = rendered.split(f"\x00{fields[0]}\x00")
    for doc, text in zip(docs, texts):
        value = doc.get(fields[0])
        if not isinstance(value, str) or text not in (before + value + after, before + value.strip() + after):
            return None
    return fields[0], before, after
