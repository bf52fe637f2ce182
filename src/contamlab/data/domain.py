"""A benchmark domain: questions, prompt format, answer checker, training examples and the leaked/unleaked split.

Domains are built by Hydra from ``configs/domain/<name>.yaml``; :func:`load_domain` does the same from Python.
"""

from __future__ import annotations

import copy
import logging
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from contamlab.data.checkers import Checker, NumericChecker
from contamlab.data.prompts import PromptFormat
from contamlab.data.question import Question
from contamlab.data.split import Split, draw_split
from contamlab.errors import ContamlabError
from contamlab.io import content_hash

log = logging.getLogger("contamlab")
#: The shift conditions of :meth:`Domain.shift_sides`, in words: how the non-members differ from the benchmark side.
SHIFTS = {
    "none": "no shift (non-members drawn and rendered as the benchmark's items)",
    "style": "style (the benchmark's own items, the question reworded and the solution kept, as GSM8K-PQ)",
    "source": "source (another number range of the same generator)",
}


@dataclass(frozen=True)
class ShiftSides:
    """One null audit's items: the benchmark side, and the non-members under each shift (:data:`SHIFTS`).

    Attributes:
        members: The benchmark side.
        nonmembers: Shift condition -> its non-member side. A ``style`` non-member rewords the member of the same
            position (their ids differ; they share a group, as an item and its rewrite do in the blind baseline).
    """

    members: list[Question]
    nonmembers: dict[str, list[Question]]


# Fingerprint fields that say how the leak reaches the contaminated model, not what is evaluated: the base and clean
# models and the evaluation prompts do not depend on them.
LEAK_FIELDS = (
    "name",
    "leak_style",
    "paraphrase_file",
    "split_seed",
    "leak_fraction",
    "leak_repeats",
    "leak_variants",
    "leak_epochs",
    "leak_general",
    "leak_lr",
    "leak_schedule",
)

#: The leak forms' keys in results (``Domain.leak_wording``) -> what each leaks, in words. "paraphrased" keeps its key
#: from before the forms were named: GSM8K → PQ and ``arith_pq`` reword the question and keep the solution.
LEAK_NAMES = {
    "verbatim": "verbatim",
    "paraphrased": "question reworded, solution verbatim",
    "reworded": "fully reworded",
}

#: Schedules of the contaminated stage (``domain.leak_schedule``): null = the fine-tune recipe's (warm-up, decay);
#: ``constant`` = the peak rate from the first step, so that the model after e epochs of a longer run is the e-epoch
#: run itself (the dose curve's snapshots, :func:`contamlab.stages.train_stage`).
LEAK_SCHEDULES = ("constant",)


class Domain:
    """Base class of every domain; subclasses load the questions.

    ``checker`` judges responses (:mod:`~contamlab.data.checkers`): GSM8K's numeric rule unless a subclass or a
    benchmark's YAML chooses another.

    Args:
        name: Domain name (``gsm8k``, ``pq``, ``arith``, ``arith_pq``).
        family: Domains of one family share the base and clean models (``pq`` belongs to ``gsm8k``); only the
            contaminated model differs, because it trains on the domain's rendering of the leaked questions.
        prompt: The prompt format (a :class:`PromptFormat` or its fields as a mapping).
        split_seed: Seed of the leaked/unleaked split.
        leak_fraction: Share of the test set that leaks (0.5 in the paper).
        max_test: Evaluate on the first ``max_test`` test questions only (None = all).
        max_train: Use the first ``max_train`` training questions only (None = all).
        leak_repeats: Copies of each leaked question per fine-tuning epoch of the contaminated stage (the
            contamination's strength; 1 in the paper).
        leak_epochs: Epochs of the contaminated stage over the leak mix; None = the fine-tune recipe's
            ``finetune.epochs`` (5 in the paper).
        leak_general: General examples mixed into the contaminated stage's data; None = ``finetune.general.n``,
            the clean stage's (a leak is a small part of a larger fine-tune; more general data dilutes it).
        leak_lr: Peak learning rate of the contaminated stage; None = ``finetune.lr``, the clean stage's (a leak
            reaches a model in a later fine-tune of its own, whose recipe need not be the clean one's).
        leak_schedule: The contaminated stage's learning-rate schedule: None = ``finetune.scheduler`` with its
            warm-up; ``constant`` = ``leak_lr`` from the first step to the last (:data:`LEAK_SCHEDULES`).
        max_new_tokens: Token budget of one response (evaluate.py's ``max_new_tokens`` defaults to it): room
            for the longest reference solution, so that a rambling sample stops where no correct one still runs.
    """

    checker: Checker = NumericChecker()
    #: Set on a copy made by :meth:`over`: what its other items are (part of the fingerprint).
    items: dict[str, str] | None = None
    #: Set on a copy made by :meth:`over`: the domain it was made from (models are trained on that one).
    origin: Domain | None = None
    # The loaded test items and split: None until first read, or what :meth:`over` gave a view. Class defaults, so
    # that a subclass whose __init__ does not reach Domain's still reads them.
    _test: list[Question] | None = None
    _split: Split | None = None

    def __init__(
        self,
        name: str,
        family: str,
        prompt: PromptFormat | dict[str, Any] | None = None,
        split_seed: int = 0,
        leak_fraction: float = 0.5,
        max_test: int | None = None,
        max_train: int | None = None,
        leak_repeats: int = 1,
        leak_epochs: int | None = None,
        leak_general: int | None = None,
        leak_lr: float | None = None,
        leak_schedule: str | None = None,
        max_new_tokens: int = 256,
    ) -> None:
        self.name = name
        self.family = family
        if prompt is None:
            prompt = PromptFormat()
        elif not isinstance(prompt, PromptFormat):
            fields = dict(prompt)
            if "stop" in fields:
                fields["stop"] = tuple(fields["stop"])
            if fields.get("exemplars") is not None:
                fields["exemplars"] = tuple((str(q), str(a)) for q, a in fields["exemplars"])
            prompt = PromptFormat(**fields)
        self.format = prompt
        self.split_seed = int(split_seed)
        self.leak_fraction = float(leak_fraction)  # checked by validation.py (a config) and draw_split (Python)
        for field, value in (("max_test", max_test), ("max_train", max_train)):
            if value is not None and int(value) <= 0:
                raise ContamlabError(f"domain.{field}={value}: must be a positive number of questions or null")
        self.max_test = max_test
        self.max_train = max_train
        if int(leak_repeats) < 1:
            raise ContamlabError(f"domain.leak_repeats={leak_repeats}: must be >= 1")
        self.leak_repeats = int(leak_repeats)
        if leak_epochs is not None and int(leak_epochs) < 1:
            raise ContamlabError(f"domain.leak_epochs={leak_epochs}: must be >= 1, or null for finetune.epochs")
        self.leak_epochs = None if leak_epochs is None else int(leak_epochs)
        if leak_general is not None and int(leak_general) < 0:
            raise ContamlabError(f"domain.leak_general={leak_general}: must be >= 0, or null for finetune.general.n")
        self.leak_general = None if leak_general is None else int(leak_general)
        self.leak_lr = None if leak_lr is None else float(leak_lr)  # checked by validation.py
        if leak_schedule is not None and leak_schedule not in LEAK_SCHEDULES:
            raise ContamlabError(
                f"domain.leak_schedule={leak_schedule!r}: use {', '.join(LEAK_SCHEDULES)}, "
                "or null for finetune.scheduler"
            )
        self.leak_schedule = leak_schedule
        if int(max_new_tokens) < 1:
            raise ContamlabError(f"domain.max_new_tokens={max_new_tokens}: must be a positive number of tokens")
        self.max_new_tokens = int(max_new_tokens)

    # -- to be provided by subclasses -------------------------------------------------------------------------
    def _load_train(self) -> list[Question]:
        raise NotImplementedError

    def _load_test(self) -> list[Question]:
        raise NotImplementedError

    def _load_leak_texts(self, test: list[Question]) -> list[Question]:
        """The test questions as they appear in leaked training data (same ids); default: verbatim."""
        return test

    # -- optional capabilities: a subclass overrides what it can provide; the defaults say "not available" ---------
    @property
    def has_train(self) -> bool:
        """Whether the domain has a train split (a test-only benchmark has none)."""
        return True

    @property
    def generates_answers(self) -> bool:
        """Whether a model answers the items by generation, checked against the answer.

        Solve probabilities, the mitigation strategies, CDD and ConStat need it. A multiple-choice benchmark read as
        text (question, choices and answer) serves detection and the audit's other readings only.
        """
        return True

    @property
    def leak_wording(self) -> str:
        """How the leaked questions read in the contaminated stage's data: ``verbatim`` or ``paraphrased``."""
        return "verbatim"

    @property
    def generated(self) -> bool:
        """Whether the items come from a generator run here, so that no model released elsewhere can have read them."""
        return False

    def nonmember_questions(self, n: int, seed: int = 1) -> list[Question] | None:
        """``n`` fresh items of the benchmark's own generator that no model trained on; None without a generator.

        They are the audit's cleanest non-members and ReCaLL's prefixes.
        """
        return None

    def sham_training_questions(self) -> list[Question] | None:
        """The sham model's in-domain items: fresh items in no benchmark, as many as the leak, in its form.

        The sham stage (:mod:`contamlab.stages`) trains on them with the contaminated stage's recipe, so that the sham
        model differs from the contaminated one in membership alone. None without a generator.
        """
        return None

    def shift_sides(self, n: int, draw: int) -> ShiftSides | None:
        """One null audit's items under each shift condition: a benchmark side and its non-members, all unseen.

        The shift null (:mod:`contamlab.studies.shift`) reads a model that saw none of these items, so every flag is
        a false alarm. None without a generator of fresh items.

        Args:
            n: Items a side.
            draw: The null audit's index: each draw has items of its own.
        """
        return None

    def reference_versions(self, questions: list[Question], n: int = 3) -> list[list[Question]] | None:
        """``n`` full rewrites (question and solution) of each of ``questions``; None if the domain cannot rewrite.

        They are BenBench's and ConStat's references.
        """
        return None

    def rephrased_questions(self, questions: list[Question], split: str) -> list[Question] | None:
        """A rephrasing of each of ``questions`` of ``split`` (``test`` or ``train``); None when there is none.

        The original solutions are kept (GSM8K's PQ file).
        """
        return None

    def paraphrased_train(self) -> list[Question]:
        """Training questions in a paraphrased wording, mixed into the tiny base model's pretraining (none here)."""
        return []

    def web_documents(self, questions: list[Question], seed: int) -> list[str] | None:
        """Pretraining documents laid out as web text from training ``questions``.

        None: plain question-answer documents.
        """
        return None

    # -- public API ----------------------------------------------------------------------------------------------
    @cached_property
    def train(self) -> list[Question]:
        """Training-split questions (never includes test questions)."""
        questions = self._load_train()
        return _checked(questions[: self.max_train], f"{self.name} train")

    @property
    def test(self) -> list[Question]:
        """Test-split questions, original wording (evaluation always uses these); a view's own items (:meth:`over`)."""
        if self._test is None:
            questions = self._load_test()
            if self.max_test is not None and self.max_test > len(questions):
                log.warning(
                    "domain.max_test=%d is above the %d test questions of %s: all %d are used",
                    self.max_test,
                    len(questions),
                    self.name,
                    len(questions),
                )
            self._test = _checked(questions[: self.max_test], f"{self.name} test")
        return self._test

    def over(self, questions: list[Question], what: str, split: Split | None = None) -> Domain:
        """A copy of the domain (prompt format, checker, train split) over other test items: the audit's non-members.

        The original is left as it is: the copy holds its own items and split.

        Args:
            questions: The items, in place of the test set (ids unique).
            what: What they are (``generated``, ``rewrites``, a file), recorded in the fingerprint with their digest,
                so that caches keyed by the fingerprint never mix them up with the test set.
            split: The items' leaked / unleaked split (it must cover exactly their ids); None draws it as
                :attr:`split` draws the test set's, from ``split_seed`` and ``leak_fraction``.

        Raises:
            ContamlabError: Duplicate ids among ``questions``, or a ``split`` of other ids.
        """
        items = _checked(list(questions), f"{self.name} {what}")
        if split is not None and sorted((*split.leaked, *split.unleaked)) != sorted(q.id for q in items):
            raise ContamlabError(f"{self.name} {what}: the split given does not cover exactly the items' ids")
        view = copy.copy(self)
        view._test, view._split = items, split
        texts = [(q.id, q.question, q.solution, q.answer) for q in items]
        view.items = {"what": what, "digest": content_hash(texts)}
        view.origin = self.trained_on
        return view

    @property
    def trained_on(self) -> Domain:
        """The domain whose data trained the models (itself, or what a copy made by :meth:`over` came from)."""
        return self.origin or self

    def check_data(self, train: bool = True) -> None:
        """Read and check everything the domain will read later: test and train files, the split, the leak texts.

        The jobs call it before any model loads, so a missing, empty, non-UTF-8 or malformed file (or a bad leak
        setting) is reported in one line instead of after a model has loaded or training has started.

        Args:
            train: Also read the training split (train.py; evaluation reads it only for few-shot exemplars).
        """
        _ = self.test, self.split
        if train:
            _ = self.train
            self.leaked_training_questions()

    @property
    def split(self) -> Split:
        """The seeded leaked/unleaked split of :attr:`test` (a view's given split, :meth:`over`)."""
        if self._split is None:
            self._split = draw_split([q.id for q in self.test], self.split_seed, self.leak_fraction)
        return self._split

    def leaked_training_questions(self, split: Split | None = None) -> list[Question]:
        """The leaked questions in the wording the contaminated model trains on (PQ domains: paraphrased)."""
        split = split or self.split
        leaked = set(split.leaked)
        return [q for q in self._load_leak_texts(self.test) if q.id in leaked]

    @property
    def prefix(self) -> str:
        """The few-shot prefix shared by all prompts of this domain."""
        return self.format.prefix()

    def prompt(self, question: Question) -> str:
        """The evaluation prompt of a question."""
        return self.format.prompt(question.question)

    def target(self, question: Question) -> str:
        """The reference response used as a training target."""
        return self.format.target(question)

    def is_correct(self, response: str, question: Question) -> bool:
        """Whether a generated response (cut at the stop markers) answers the question, by the domain's checker."""
        return self.checker.is_correct(self.format.truncate(response), question.answer, question.choices)

    def fingerprint(self) -> dict[str, Any]:
        """What identifies this domain's data for cache keys."""
        return {
            "name": self.name,
            "family": self.family,
            "prompt": self.format.key(),
            "split_seed": self.split_seed,
            "leak_fraction": self.leak_fraction,
            "max_test": self.max_test,
            "max_train": self.max_train,
            "n_test": len(self.test),
            "n_train": self._train_size(),
            # Knobs added later enter the key only away from their default, so existing models stay valid.
            **({"leak_repeats": self.leak_repeats} if self.leak_repeats != 1 else {}),
            **({"leak_epochs": self.leak_epochs} if self.leak_epochs is not None else {}),
            **({"leak_general": self.leak_general} if self.leak_general is not None else {}),
            **({"leak_lr": self.leak_lr} if self.leak_lr is not None else {}),
            **({"leak_schedule": self.leak_schedule} if self.leak_schedule is not None else {}),
            **({"items": self.items} if self.items is not None else {}),
        }

    def _train_size(self) -> int:
        return len(self.train)

    def eval_fingerprint(self) -> dict[str, Any]:
        """What determines the evaluation prompts and answers, not how the leak was rendered.

        It keys the sample cache, so ``arith`` and ``arith_pq`` share the clean model's samples.
        """
        return {k: v for k, v in self.fingerprint().items() if k not in LEAK_FIELDS}


def _checked(questions: list[Question], what: str) -> list[Question]:
    if not questions:
        raise ContamlabError(f"{what}: no questions (empty dataset)")
    seen: set[str] = set()
    for q in questions:
        if q.id in seen:
            raise ContamlabError(f"{what}: duplicate question id {q.id!r}")
        seen.add(q.id)
    return questions
