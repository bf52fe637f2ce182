"""The detector interface: a method turns a model and a list of questions into per-question scores.

Every detector orients its per-question score so that *higher = more likely seen* (docs/methods/detectors.md),
marks questions it could not score with NaN (and counts them), and reports its own dataset-level score.
:mod:`contamlab.detection` runs a detector on the clean and the contaminated model and turns the scores into
AUROC / TPR@FPR.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, fields
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from contamlab.data.domain import Domain
from contamlab.data.jsonl import read_jsonl
from contamlab.data.question import Question
from contamlab.errors import ContamlabError
from contamlab.metrics import verdicts as V

if TYPE_CHECKING:
    import numpy as np

TEXT_MODES = ("question", "answer", "document")


def read_texts(path: str, setting: str) -> list[str]:
    """The ``text`` field of every line of a JSONL file a detector setting names (a corpus, non-member texts).

    Args:
        path: The file (``~`` expanded).
        setting: The setting that named it (``detector.corpus`` …), for the error message.

    Raises:
        ContamlabError: No such file, or a line that is not a JSON object with ``text``.
    """
    file = Path(path).expanduser()
    if not file.is_file():
        raise ContamlabError(f"{setting}={path}: file not found")
    return [str(r["text"]) for r in read_jsonl(file, required=("text",))]


def check_text_mode(mode: str) -> None:
    """Raise a ContamlabError naming ``detector.text`` unless ``mode`` is one of :data:`TEXT_MODES`."""
    if mode not in TEXT_MODES:
        raise ContamlabError(f"detector.text={mode!r}: use one of {', '.join(TEXT_MODES)}")


def question_text(domain: Domain, question: Question, mode: str) -> str:
    """The text of a question a detector scores.

    Args:
        domain: The domain (its prompt format renders the training document).
        question: The question.
        mode: ``question`` (the question alone, as CoDeC scores QA benchmarks), ``answer`` (the reference response)
            or ``document`` (question block + reference response without any few-shot prefix: the form the
            contaminated model trains on).

    Raises:
        ContamlabError: An unknown mode.
    """
    if mode == "question":
        return question.question
    if mode == "answer":
        return domain.target(question).strip()
    check_text_mode(mode)
    return domain.format.question_block(question.question) + domain.target(question)


@dataclass
class DetectionContext:
    """What a detector may use to score one model.

    Attributes:
        domain: The benchmark domain.
        questions: The questions to score, in order (the domain's test set).
        source: Where the model comes from (hub id or directory), for cache keys.
        load: Returns ``(model, tokenizer)``; called lazily, at most once.
        cache_dir: Directory for the detector's intermediate caches (``None`` = no caching).
        model_key: Identity of the model for cache keys.
        samples: Returns the model's cached greedy and sampled responses (CDD); ``None`` when unavailable.
        lineage: Returns the texts the model was trained on, by stage (``base``, ``clean``, ``contaminated``: the
            records train.py writes, the model's own stage and its parents); ``None`` for a model not trained here.
        progress: Show progress bars.
        moments: Whether the shared token pass (:func:`~contamlab.detectors.membership.token_stats`) also computes
            the vocabulary moments: True unless the job knows that none of its detectors reads them (an audit).
    """

    domain: Domain
    questions: Sequence[Question]
    source: str
    load: Callable[[], tuple[Any, Any]]
    cache_dir: str | None = None
    model_key: dict = field(default_factory=dict)
    samples: Callable[[], tuple[list, list, dict]] | None = None
    lineage: Callable[[], dict[str, list[str]]] | None = None
    progress: bool = False
    moments: bool = True

    @cached_property
    def _loaded(self) -> tuple[Any, Any]:
        return self.load()

    @property
    def model(self) -> Any:
        """The causal LM (eval mode), loaded on first use."""
        return self._loaded[0]

    @property
    def tokenizer(self) -> Any:
        """The model's tokenizer, loaded on first use."""
        return self._loaded[1]


@dataclass
class DetectorOutput:
    """Scores of one model.

    Attributes:
        scores: One score per question, higher = more likely seen; NaN where the question could not be scored.
        dataset_score: The method's own dataset-level score (CoDeC fraction, mean Peak, mean score …).
        columns: Extra per-question columns for ``detection_per_question.csv`` (same length as ``scores``).
        extra: Further dataset-level numbers (JSON-able).
    """

    scores: list[float]
    dataset_score: float | None
    columns: dict[str, list[Any]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form (NaN stored as None)."""
        return {
            "scores": [_nan_to_none(s) for s in self.scores],
            "dataset_score": self.dataset_score,
            "columns": {k: [_nan_to_none(v) for v in vs] for k, vs in self.columns.items()},
            "extra": self.extra,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DetectorOutput:
        """Inverse of :meth:`to_dict`."""
        return cls(
            [float("nan") if s is None else float(s) for s in data["scores"]],
            data["dataset_score"],
            dict(data.get("columns", {})),
            dict(data.get("extra", {})),
        )


def _nan_to_none(value: Any) -> Any:
    if isinstance(value, float) and value != value:
        return None
    return value


@dataclass
class AuditScores:
    """The outputs of one detector that an audit reads (:meth:`Detector.audit_readings`).

    Attributes:
        target: The audited model's output on the benchmark's items.
        references: Each reference model's output on the benchmark (the order of ``audit.references``).
        nonmembers: The audited model's output on the non-member items; None when the audit has none or the detector
            reads none (:attr:`Detector.scores_nonmembers`).
        reference_nonmembers: Each reference model's output on the non-member items (empty when ``nonmembers`` is).
    """

    target: DetectorOutput
    references: list[DetectorOutput] = field(default_factory=list)
    nonmembers: DetectorOutput | None = None
    reference_nonmembers: list[DetectorOutput] = field(default_factory=list)


#: ``field(metadata=RUNTIME)`` marks a setting that changes how fast, not what, a detector scores: left out of
#: :meth:`Detector.params` (the cache key and results.json).
RUNTIME = {"in_key": False}


@dataclass(frozen=True)
class Detector:
    """Base of the detectors: a frozen dataclass built by Hydra from ``configs/detector/<name>.yaml``.

    Subclasses add their settings as fields (checked in ``__post_init__``) and implement :meth:`score`.

    Attributes:
        name: The config name (``codec``, ``loss`` …).
    """

    name: str = ""

    #: Bump in a subclass when its scores change for the same parameters (part of the cache key).
    version: ClassVar[int] = 1
    #: Whether the detector reads the model's sampled responses (``DetectionContext.samples``, CDD): then the
    #: samples' settings are part of its cache key.
    needs_samples: ClassVar[bool] = False

    def params(self) -> dict[str, Any]:
        """The parameters that determine the scores (cache key and results.json): every field but the runtime ones."""
        return {f.name: getattr(self, f.name) for f in fields(self) if f.metadata.get("in_key", True)}

    #: Whether the detector's test compares the tested model with reference models (ConStat): the detection job
    #: then scores the clean model and :meth:`reference_models` too and calls :meth:`compare`.
    compares_models: ClassVar[bool] = False

    #: Whether the detector reads the vocabulary moments of the shared token pass (Min-K%++'s μ_t, σ_t): a job whose
    #: detectors all leave them computes the log-probs alone.
    reads_moments: ClassVar[bool] = False
    #: Whether readings of the detector's own (an overridden :meth:`audit_readings`) read the non-member items too
    #: (the n-gram overlap compares the benchmark's hits with theirs). The membership reading always reads them;
    #: a detector that needs none leaves this False, and the audit spends nothing on them.
    reads_nonmembers: ClassVar[bool] = False

    @property
    def membership_reading(self) -> bool:
        """Whether the audit reads the per-item score as a membership score.

        True unless :meth:`audit_readings` is overridden with readings of the detector's own: it follows from what the
        detector overrides, so the two cannot disagree. The error-rate audit measures exactly these readings.
        """
        return type(self).audit_readings is Detector.audit_readings

    @property
    def scores_nonmembers(self) -> bool:
        """Whether an audit scores the non-member items with this detector (the membership reading, or its own)."""
        return self.membership_reading or self.reads_nonmembers

    def score(self, ctx: DetectionContext) -> DetectorOutput:
        """Score every question of ``ctx`` for one model."""
        raise NotImplementedError

    def reference_models(self) -> list[str]:
        """Reference models (hub ids or paths) a comparing detector reads beside the clean model (none here)."""
        return []

    def compare(self, tested: DetectorOutput, references: Sequence[DetectorOutput]) -> dict[str, Any]:
        """A comparing detector's test of the tested model's output against the references' (clean model first)."""
        raise NotImplementedError(f"detector={self.name} compares no models")

    def split_summary(self, out: DetectorOutput, leaked: np.ndarray) -> dict[str, Any]:
        """Numbers of ``out`` that read the benchmark's leaked/unleaked split (BenBench's leaked and unleaked Δ).

        The detection job merges them into ``out.extra`` after the cache: a model's output depends on the evaluated
        items alone, so it is cached once for every split and leak form of them (an audit's reference model, scored
        under another seed's split, and the clean model that ``arith`` and ``arith_pq`` share are scored once).

        Args:
            out: One model's output on the benchmark's test items.
            leaked: ``[N]`` bool, whether each test item leaked.

        Returns:
            Entries to add to ``out.extra`` (none by default).
        """
        return {}

    def audit_readings(self, scores: AuditScores, settings: V.Settings) -> tuple[list[V.Verdict], dict[str, Any]]:
        """The detector's verdicts on an audited model, and the extra numbers its report shows.

        The default is the membership reading every per-item score gets: the benchmark's items against the non-member
        items by AUROC and a one-sided Mann-Whitney test (:func:`~contamlab.metrics.verdicts.membership_test`), and
        that AUROC against the reference models' (:func:`~contamlab.metrics.verdicts.membership_vs_references`). A
        detector with readings of its own overrides it (CoDeC's bands, BenBench's Δ, ConStat's test, the n-gram
        overlap); :attr:`membership_reading` then turns False by itself.

        Args:
            scores: The outputs the audit read (the target's and the references', on the benchmark and the
                non-members).
            settings: The audit's level and bootstrap.

        Returns:
            ``(verdicts, extra)``: the readings, and numbers for the report (JSON-able).
        """
        if scores.nonmembers is None:
            why = "no non-member items to compare with (give audit.nonmembers=<a .jsonl file>)"
            return [V.Verdict(self.name, "AUROC benchmark vs reference items", None, None, None, why, None)], {}
        target, non = scores.target.scores, scores.nonmembers.scores
        pairs = [(r.scores, n.scores) for r, n in zip(scores.references, scores.reference_nonmembers)]
        return [
            V.membership_test(target, non, settings, name=self.name),
            V.membership_vs_references((target, non), pairs, settings, name=f"{self.name}/reference"),
        ], {}
