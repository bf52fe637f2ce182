"""One detector's readings on an audited model: its scores, read as the detector's base type says.

Every score is computed first, one model at a time (:func:`score_all`: each model loads once, and only if a score is
new), then each detector's readings are read from the cached outputs (:func:`read_detector`): the membership reading
of a per-item score, or the readings a detector declares of its own
(:meth:`~contamlab.detectors.base.Detector.audit_readings`).
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from typing import Any

from contamlab.audit.models import AuditedModel
from contamlab.data.domain import Domain
from contamlab.detectors.base import AuditScores, Detector
from contamlab.errors import ContamlabError
from contamlab.metrics import verdicts as V

log = logging.getLogger("contamlab")


@dataclass(frozen=True)
class ItemScore:
    """One item's membership score behind an AUROC (a row of ``audit_scores.csv``).

    Attributes:
        detector: The detector's name.
        items: ``benchmark`` or ``reference`` (a non-member item).
        id: The item's id.
        score: Its score (NaN where the detector could not score it).
    """

    detector: str
    items: str
    id: str
    score: float


@dataclass
class DetectorReadings:
    """What one detector says about the audited model.

    Attributes:
        verdicts: Its readings.
        extra: ``wall_s`` (the target's scoring seconds when first computed), ``cached`` (whether this run read every
            score from the cache), ``dataset_score``, and the numbers the detector's report shows.
        items: The per-item scores behind a membership reading (empty for readings of a detector's own).
    """

    verdicts: list[V.Verdict]
    extra: dict[str, Any]
    items: list[ItemScore] = field(default_factory=list)


def score_all(
    model: AuditedModel, detectors: dict[str, Detector], domain: Domain, nonmembers: Domain | None, progress: bool
) -> dict[str, str]:
    """Every score an audit reads from ``model``, then unload it: each model loads once, and only if a score is new.

    Each detector logs when it starts (with the item count) and when it ends (with its wall time), so that a long
    audit says where it is between its progress bars.

    Returns:
        The detectors that cannot run, with the reason (e.g. a corpus-side method without a corpus).
    """
    failed = {}
    moments = any(d.reads_moments for d in detectors.values())  # else the shared token pass skips them
    for name, detector in detectors.items():
        sets = [domain] + ([nonmembers] if detector.scores_nonmembers and nonmembers is not None else [])
        size = " + ".join(f"{len(s.test)} {'benchmark' if s is domain else 'non-member'}" for s in sets)
        log.info("audit: %s on %s: scoring %s items", name, model.spec, size)
        started, cached = time.perf_counter(), True
        try:
            for items in sets:
                cached &= model.score(items, detector, progress, moments)[2]
        except ContamlabError as err:
            failed[name] = str(err)
            continue
        log.info(
            "audit: %s on %s: scored in %.1f s%s", name, model.spec, time.perf_counter() - started,
            " (from the cache)" if cached else "",
        )  # fmt: skip
    model.release()
    return failed


def read_detector(
    detector: Detector,
    target: AuditedModel,
    references: list[AuditedModel],
    domain: Domain,
    nonmembers: Domain | None,
    settings: V.Settings,
    progress: bool,
) -> DetectorReadings:
    """Every reading of one detector on the target (and the references it compares with), from its cached scores."""
    out, wall, cached = target.score(domain, detector, progress)
    extra: dict[str, Any] = {"wall_s": round(wall, 3), "cached": cached, "dataset_score": out.dataset_score}
    scores = AuditScores(out, [r.score(domain, detector, progress)[0] for r in references])
    if nonmembers is not None and detector.scores_nonmembers:
        non, wall_non, cached_non = target.score(nonmembers, detector, progress)
        extra.update(wall_s=round(wall + wall_non, 3), cached=cached and cached_non)
        scores.nonmembers = non
        scores.reference_nonmembers = [r.score(nonmembers, detector, progress)[0] for r in references]
    verdicts, own = detector.audit_readings(scores, settings)
    extra.update(own)
    items = []
    if detector.membership_reading and scores.nonmembers is not None:
        items = [ItemScore(detector.name, "benchmark", q.id, s) for q, s in zip(domain.test, out.scores)]
        items += [ItemScore(detector.name, "reference", q.id, s) for q, s in zip(nonmembers.test, non.scores)]
    return DetectorReadings(verdicts, extra, items)
