r"""An lm-evaluation-harness task as a domain: its items, few-shot prompts, targets and answer filter, from lm-eval.

``domain=lm_eval domain.task=<name>`` reads a task of the installed ``lm-eval`` (``pip install 'contamlab[lm-eval]'``)
and follows the harness's own protocol (``lm_eval.evaluator.simple_evaluate`` of lm-eval 0.4.13) with lm-eval's
objects, not a copy of them:

- the task is its YAML loaded as ``TaskManager`` loads it, with the task's dataset replaced by local files when
  ``domain.data_files`` names them (or a known local copy exists: GSM8K's under ``CONTAMLAB_DATA_DIR``);
- the prompts are the contexts of ``task.build_all_requests()`` after ``num_fewshot`` is set as ``--num_fewshot``
  sets it and the few-shot sampler is seeded as ``--seed`` seeds it (1234 by default);
- a response is cut at the task's ``until`` strings (``postprocess_generated_text``), passed through one of the
  task's filter ensembles (``strict-match``, ``flexible-extract`` …) and judged by ``task.process_results``: correct
  when the task's metric (``exact_match`` …) gives 1.

An item's text is the task's rendering of it (``doc_to_text``) split into a constant frame and the item's own field
when every document renders that way (GSM8K-CoT: ``Q: `` + the question + ``\nA:``), so that the question reads as
the benchmark's question and the frame becomes the prompt format; otherwise the whole rendering is the question.
The training target is the text a few-shot example puts after it (target delimiter + ``doc_to_target``).

``generate_until`` tasks serve every job. ``multiple_choice`` tasks serve detection and the audit: an item is the
question with its options (``A. …``), its solution the correct option, its answer that option's letter. The harness
scores them by the log-likelihood of each option, not by a generated answer, so they have no solve probability:
a prompt or a check of a response stops with a one-line error (an audit runs with ``audit.mitigate=[]``).
"""

from __future__ import annotations

import difflib
import hashlib
import importlib.util
import logging
import numbers
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path
from typing import Any

from contamlab.data.checkers import LETTERS, with_options
from contamlab.data.domain import Domain
from contamlab.data.prompts import PromptFormat
from contamlab.data.question import Question
from contamlab.errors import ContamlabError
from contamlab.io import content_hash

__all__ = ["LOCAL_COPIES", "LmEvalDomain", "task_yaml"]

log = logging.getLogger("contamlab")

INSTALL_HINT = "pip install 'contamlab[lm-eval]'"
#: lm-eval's default seed of the few-shot sampler (``lm_eval.defaults.DEFAULT_OTHER_SEED``, ``--seed``'s fourth).
FEWSHOT_SEED = 1234
#: Local copies of task datasets under ``CONTAMLAB_DATA_DIR``, by ``(dataset_path, dataset_name)``: used when
#: ``domain.data_files`` is null, so that every GSM8K task (gsm8k, gsm8k_cot, gsm8k_cot_zeroshot …) runs offline.
LOCAL_COPIES: dict[tuple[str, str | None], dict[str, str]] = {
    ("openai/gsm8k", "main"): {"train": "gsm8k/train.jsonl", "test": "gsm8k/test.jsonl"},
}
#: ``datasets`` builders of local data files, by suffix.
_BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}
_OUTPUT_TYPES = ("generate_until", "multiple_choice")
# A task name as a YAML file states it (only for suggestions: the lookup itself parses the YAML).
_TASK_LINE = re.compile(rb"^task:\s*['\"]?([\w.\-]+)", re.MULTILINE)


def _require_lm_eval() -> None:
    if importlib.util.find_spec("lm_eval") is None:
        raise ContamlabError(f"domain=lm_eval needs lm-evaluation-harness, which is not installed: {INSTALL_HINT}")


def _one_line(err: BaseException) -> str:
    first = (str(err).strip().splitlines() or [""])[0]
    return f"{type(err).__name__}: {first[:200]}"


# lm-eval renders every template with ``env.from_string(template).render(doc)`` (lm_eval.utils.apply_template), which
# compiles the template anew for each document: 2-3 ms a template, 30 s for GSM8K-CoT's 8-shot prompts on a 2-core
# CPU, and a check of a response compiles doc_to_target again. A compiled template renders the same text, so the
# templates are compiled once per process while contamlab calls lm-eval.
_COMPILED: dict[str, Any] = {}


@contextmanager
def _templates_compiled_once() -> Iterator[None]:
    from lm_eval import utils

    env = utils.env
    if "from_string" in vars(env):  # already inside (a nested call)
        yield
        return
    compile_template = env.from_string

    def from_string(source: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or not isinstance(source, str):
            return compile_template(source, *args, **kwargs)
        if source not in _COMPILED:
            _COMPILED[source] = compile_template(source)
        return _COMPILED[source]

    env.from_string = from_string
    try:
        yield
    finally:
        del env.from_string  # the Environment's own method again


def _roots(include_path: str | Sequence[str] | None) -> list[Path]:
    """The folders of task YAMLs by lm-eval's precedence: the last ``include_path`` first, the built-in tasks last."""
    import lm_eval

    extra = [include_path] if isinstance(include_path, str) else list(include_path or [])
    return [*(Path(p).expanduser() for p in reversed(extra)), Path(lm_eval.__file__).parent / "tasks"]


def _yaml_files(root: Path) -> list[Path]:
    """A folder's task YAMLs in the order of lm-eval's task index (``TaskIndex._iter_yaml_files``)."""
    if not root.is_dir():
        raise ContamlabError(f"domain.include_path={root}: folder not found")
    found = (p for p in root.glob("**/*.yaml") if not {"__pycache__", ".ipynb_checkpoints"} & set(p.parts))
    return sorted(found, key=lambda p: p.as_posix())


def task_yaml(name: str, include_path: str | Sequence[str] | None = None) -> Path:
    """The YAML file that defines lm-eval task ``name``, chosen as lm-eval's task index chooses it.

    ``TaskManager()`` parses all 14,000 YAML files of the installed tasks before it loads one (10-20 s on a 2-core
    CPU). A task's file states its name (``task: <name>``), so only the files that hold the name are parsed, in the
    index's order: the ``include_path`` folders first (lm-eval lets them override the built-in tasks), each folder's
    files sorted by path, the first definition kept.

    Raises:
        ContamlabError: No task of that name (with the closest names), or ``name`` is a group or a tag.
    """
    from lm_eval.tasks._yaml_loader import load_yaml

    wanted, other = name.encode(), None
    roots = _roots(include_path)
    for root in roots:
        for path in _yaml_files(root):
            if wanted not in path.read_bytes():
                continue
            try:
                cfg = load_yaml(path, resolve_func=False)
            except Exception:  # the index skips a file it cannot parse, and so does this lookup
                continue
            if "class" in cfg or "group" not in cfg:
                if cfg.get("task") == name:
                    return path
                tags = cfg.get("tag") or []
                if name in ([tags] if isinstance(tags, str) else tags):
                    other = other or "a tag of several lm-eval tasks"
            elif cfg.get("group") == name:
                other = other or f"a group of lm-eval tasks ({path})"
    if other:
        raise ContamlabError(f"domain.task={name}: {other}; give one of its tasks")
    names = {n.decode() for root in roots for p in _yaml_files(root) for n in _TASK_LINE.findall(p.read_bytes())}
    close = difflib.get_close_matches(name, sorted(names), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise ContamlabError(f"domain.task={name}: no such lm-eval task{hint}; `lm_eval ls tasks` lists them")


class LmEvalDomain(Domain):
    """A task of lm-evaluation-harness (lm-eval 0.4.13) as a domain.

    Args:
        task: The lm-eval task (``gsm8k_cot``, ``gsm8k``, ``arc_easy`` …); one task, not a group or a tag.
        data_files: Local copies of the task's dataset, ``{split: file}`` with the split names the task uses
            (``test``, ``train``, ``validation``), each a ``.jsonl``, ``.json``, ``.csv`` or ``.parquet`` file of the
            dataset's own fields; relative paths resolve under ``data_dir``. None: a known local copy
            (:data:`LOCAL_COPIES`), else the hub. Splits the task names but the files lack are left out, except the
            one it evaluates and the one its few-shot examples come from.
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
        _require_lm_eval()
        self.task_name = str(task)
        self.data_dir = data_dir
        self.include_path = include_path
        self.fewshot_seed = int(fewshot_seed)
        if num_fewshot is not None and int(num_fewshot) < 0:
            raise ContamlabError(f"domain.num_fewshot={num_fewshot}: must be >= 0, or null for the task's own")
        with _templates_compiled_once():
            self.task = self._load_task(data_files, num_fewshot)
            self._check_task()
            # the task's filter ensembles, built from its filter_list by lm-eval; apply_filters applies each of them
            self.filter_name = self._choose("filter", filter, [f.name for f in self.task._filters])
            self.metric_name = self._choose("metric", metric, list(self.task.aggregation()))
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
        from lm_eval.tasks._yaml_loader import load_yaml

        path = task_yaml(self.task_name, self.include_path)
        cfg = load_yaml(path, resolve_func=True)  # includes and !function resolved, as TaskManager reads it
        if cfg.get("output_type", "generate_until") not in _OUTPUT_TYPES:
            raise ContamlabError(
                f"domain.task={self.task_name}: an lm-eval {cfg['output_type']} task; contamlab reads "
                f"{' and '.join(_OUTPUT_TYPES)} tasks (questions with answers)"
            )
        shots = cfg.get("num_fewshot")
        # simple_evaluate: --num_fewshot overrides the task's value, except a 0 the task sets itself; none is 0
        self.num_fewshot = int(shots or 0) if num_fewshot is None or shots == 0 else int(num_fewshot)
        self.data_files = self._local_files(cfg, data_files)
        overrides: dict[str, Any] = {"num_fewshot": self.num_fewshot}
        if self.data_files:
            overrides |= self._file_overrides(cfg, self.data_files)
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
            splits = ", ".join(f"{s}: <file>" for s in self._needed_splits(cfg))
            raise ContamlabError(
                f"lm-eval task {self.task_name} could not load its dataset {dataset} from the Hugging Face hub or its "
                f"cache ({_one_line(err)}); offline, give local copies of its splits: domain.data_files='{{{splits}}}' "
                "(.jsonl, .json, .csv or .parquet files of the dataset's fields; relative paths under "
                "CONTAMLAB_DATA_DIR)"
            ) from None

    def _local_files(self, cfg: dict, data_files: Mapping[str, str] | None) -> dict[str, str]:
        root = self.data_dir or os.environ.get("CONTAMLAB_DATA_DIR")
        if data_files is None:
            known = LOCAL_COPIES.get((str(cfg.get("dataset_path")), cfg.get("dataset_name")))
            if not known or not root or not all((Path(root) / f).is_file() for f in known.values()):
                return {}
            data_files = known
        resolved = {}
        for split, file in dict(data_files).items():
            path = Path(os.path.expanduser(str(file)))
            if not path.is_absolute() and root:
                path = Path(root) / path
            if not path.is_file():
                raise ContamlabError(f"domain.data_files.{split}={file}: file not found ({path})")
            resolved[str(split)] = str(path)
        return resolved

    def _file_overrides(self, cfg: dict, files: dict[str, str]) -> dict[str, Any]:
        """The task's dataset as ``datasets`` builds it from local files, and the task's splits that they lack."""
        builders = {_BUILDERS.get(Path(f).suffix.lower()) for f in files.values()}
        if None in builders or len(builders) != 1:
            raise ContamlabError(
                f"domain.data_files: give files of one format, .jsonl/.json, .csv or .parquet (got "
                f"{', '.join(Path(f).name for f in files.values())})"
            )
        evaluated = cfg.get("test_split") or cfg.get("validation_split")
        for split in self._needed_splits(cfg):
            if split not in files:
                why = "evaluates" if split == evaluated else f"draws its {self.num_fewshot} few-shot examples from"
                raise ContamlabError(
                    f"domain.data_files: lm-eval task {self.task_name} {why} its {split!r} split; give "
                    f"domain.data_files.{split}" + ("" if split == evaluated else " (or domain.num_fewshot=0)")
                )
        overrides: dict[str, Any] = {
            "dataset_path": builders.pop(),
            "dataset_name": None,
            "dataset_kwargs": {"data_files": {split: [file] for split, file in files.items()}},
        }
        for key in ("training_split", "validation_split", "test_split"):
            if cfg.get(key) and cfg[key] not in files:  # a split it never reads here: none to load
                overrides[key] = None
        return overrides

    def _needed_splits(self, cfg: dict) -> list[str]:
        """The splits local files must hold: the one the task evaluates, and the few-shot examples' if it draws some."""
        source = _fewshot_source(cfg) if self.num_fewshot > 0 else None
        return list(dict.fromkeys(s for s in (cfg.get("test_split") or cfg.get("validation_split"), source) if s))

    def _check_task(self) -> None:
        from lm_eval.api.task import ConfigurableTask

        task, name = self.task, self.task_name
        if not isinstance(task, ConfigurableTask):
            raise ContamlabError(
                f"domain.task={name}: a Python-class lm-eval task; contamlab reads YAML-configured ones"
            )
        self.generative = task.OUTPUT_TYPE == "generate_until"
        if task.config.unsafe_code:
            raise ContamlabError(f"domain.task={name}: the task runs the model's code to score it; contamlab does not")
        if task.multiple_input:
            raise ContamlabError(f"domain.task={name}: one context per choice (Winogrande-style) is not supported")
        if (task.config.repeats or 1) > 1:
            raise ContamlabError(
                f"domain.task={name}: the task votes over {task.config.repeats} responses per question; contamlab "
                "judges each response alone (use the task without repeats)"
            )

    def _choose(self, what: str, value: str | None, options: list[str]) -> str:
        if not options:
            raise ContamlabError(f"lm-eval task {self.task_name} has no {what}")
        if value is None:
            return options[0]
        if value not in options:
            raise ContamlabError(f"domain.{what}={value}: lm-eval task {self.task_name} has {', '.join(options)}")
        return value

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
        self._test: list[Question] = []
        self._train: list[Question] = []
        for docs, split, kind, out in (
            (eval_docs, self.eval_split, "eval", self._test),
            (train_docs, self.train_split, "train", self._train),
        ):
            width = max(4, len(str(len(docs) - 1)))
            for index, (doc, text) in enumerate(zip(docs, texts[kind])):
                qid = f"{self.task_name}-{split}-{index:0{width}d}"
                question, target = self._question(qid, doc, text)
                self._items[qid] = (doc, text, question, target)
                out.append(question)

    def _question(self, qid: str, doc: dict, text: str) -> tuple[Question, str]:
        """The item of a document and its training target (the text a few-shot example puts after the question)."""
        task, shots = self.task, self.task.fewshot_cfg
        choices = task.doc_to_choice(doc) if task.config.doc_to_choice is not None else None
        # the target as a few-shot example renders it (ConfigurableTask.fewshot_context)
        turn = task.build_qa_turn(
            q=text,
            c=task.doc_to_choice(doc, shots.doc_to_choice) if shots.doc_to_choice else choices,
            a=task.doc_to_target(doc, shots.doc_to_target),
            gen_prefix=task.resolve_field(doc, shots.gen_prefix),
            tgt_delim=shots.target_delimiter,
            few_delim="",
        )
        target = "".join(m.to_text() for m in turn)[len(text) :]
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
        return list(self._test)

    def _load_train(self) -> list[Question]:
        if not self._train:
            raise ContamlabError(
                f"lm-eval task {self.task_name} has no train split here (domain.data_files.train): training and "
                "BenBench's train side need one"
            )
        return list(self._train)

    @property
    def generates_answers(self) -> bool:
        """A generate_until task; a multiple_choice one is read as text only (the harness scores its choices)."""
        return self.generative

    @property
    def has_train(self) -> bool:
        """Whether the task's dataset has a train split (its ``training_split``, else a split named ``train``)."""
        return bool(self._train)

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
        with _templates_compiled_once():
            self.task.set_fewshot_seed(seed=self.fewshot_seed)  # the sampler draws in document order
            self.task.build_all_requests(limit=self.max_test)
        ids = [q.id for q in self._test]
        return {ids[inst.doc_id]: inst.args[0] for inst in self.task.instances}

    @cached_property
    def _around(self) -> tuple[str, str]:
        """What the harness puts before and after the first test item's rendering: few-shot prefix, gen_prefix."""
        context, text = self.contexts[self._test[0].id], self._items[self._test[0].id][1]
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
        from lm_eval.api.instance import Instance
        from lm_eval.models.utils import postprocess_generated_text

        if not self.generative:
            raise self._no_solve_probability()
        item = self._item(question)
        if item is None:
            raise ContamlabError(
                f"item {question.id} is not a document of lm-eval task {self.task_name}: the task's filters cannot "
                "judge it"
            )
        name = self._choose("filter", filter or self.filter_name, [f.name for f in self.task._filters])
        ensemble = next(f for f in self.task._filters if f.name == name)
        doc = item[0]
        gen_kwargs = dict(self.task.config.generation_kwargs)
        instance = Instance("generate_until", doc, ("", gen_kwargs), 0, (self.task_name, 0, 1))
        instance.resps = [postprocess_generated_text(response, list(self.until), None)]
        ensemble.apply([instance])
        extracted = instance.filtered_resps[name]
        with _templates_compiled_once():
            value = self.task.process_results(doc, [extracted]).get(self.metric_name)
        if isinstance(value, numbers.Real) and value in (0, 1):  # bools and numpy floats too
            return extracted, bool(value)
        raise ContamlabError(
            f"domain.metric={self.metric_name}: lm-eval task {self.task_name} gives {value!r}, not 0 or 1, for "
            f"{question.id}; choose a metric that says right or wrong"
        )

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
        from lm_eval import __version__

        files = self._file_digests
        dataset = files or {"dataset": self.task.config.dataset_path, "name": self.task.config.dataset_name}
        prompts = [self.prompt(q) for q in self.test] if self.generative else []
        return {
            **super().fingerprint(),
            "test_data": {"data": dataset, "prompts": content_hash(prompts)},
            "lm_eval": {
                "version": __version__,
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


def _fewshot_source(cfg: dict) -> str | None:
    """The split the harness draws few-shot examples from (ConfigurableTask.fewshot_docs); None: the task's list."""
    shots = cfg.get("fewshot_config") or {}
    if shots.get("split") or cfg.get("fewshot_split"):
        return shots.get("split") or cfg.get("fewshot_split")
    if shots.get("samples") is not None:
        return None
    return cfg.get("training_split") or cfg.get("validation_split") or cfg.get("test_split")


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
