"""A new detector with a verdict of its own is one module plus one YAML: this module is both, and no file under
``jobs/`` knows it.

Its toy statistic (the largest per-item score) and its reading ("flag above 0.9") are not a paper method; the test
shows that the audit job reads them through :meth:`Detector.audit_readings` and that a detector without a reading
of its own gets the membership test every per-item score gets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import pytest
from omegaconf import OmegaConf

from contamlab.audit.readings import audit_detector
from contamlab.config import build, load_domain
from contamlab.detectors.base import DetectionContext, Detector, DetectorOutput
from contamlab.metrics import verdicts as V

# What would be configs/detector/peak.yaml (``python audit.py audit.detectors=[peak]``).
YAML = f"""
_target_: {__name__}.PeakDetector
name: peak
threshold: 0.9
"""


@dataclass(frozen=True)
class PeakDetector(Detector):
    """Scores each item by its position in the test set, scaled to [0, 1] (a stand-in for a model's score)."""

    name: str = "peak"
    threshold: float = 0.9
    reads_nonmembers: ClassVar[bool] = False  # its reading compares no non-member items: the audit scores none

    def score(self, ctx: DetectionContext) -> DetectorOutput:
        n = len(ctx.questions)
        scores = [i / max(n - 1, 1) for i in range(n)]
        return DetectorOutput(scores, max(scores))

    def audit_readings(self, out, references, settings):
        peak = max(out.scores)
        flagged = peak > self.threshold
        verdict = V.Verdict(self.name, "largest item score", peak, None, None, f"peak {peak:.2f}", flagged)
        return [verdict], {"peak_of_references": [max(r.scores) for r in references]}


@dataclass(frozen=True)
class PlainDetector(Detector):
    """A per-item score with no reading of its own: the audit's membership test reads it."""

    name: str = "plain"

    def score(self, ctx: DetectionContext) -> DetectorOutput:
        # the benchmark items score 1 + a little, non-members 0 + a little: perfectly separated
        base = 0.0 if ctx.questions[0].id.startswith("nonmember") else 1.0
        return DetectorOutput([base + 0.01 * i for i in range(len(ctx.questions))], None)


class _Model:
    """An audited model that scores with the detector itself (no model to load)."""

    def score(self, domain, detector, progress):
        ctx = DetectionContext(domain, list(domain.test), "x", lambda: (None, None))
        return detector.score(ctx), 0.0, False


@pytest.fixture(scope="module")
def domain():
    return load_domain("arith", generator={"n_train": 20, "n_test": 24})


def test_a_new_detectors_own_verdict_reaches_the_audit(domain):
    detector = build(OmegaConf.create(YAML), "detectors.peak")
    verdicts, extra = audit_detector(detector, _Model(), [_Model()], domain, None, V.Settings(), progress=False)
    assert [v.name for v in verdicts] == ["peak"]
    assert verdicts[0].flagged is True and verdicts[0].value == pytest.approx(1.0)
    assert extra["peak_of_references"] == [1.0] and extra["dataset_score"] == 1.0


def test_a_detector_without_a_reading_gets_the_membership_test(domain):
    nonmembers = domain.over(domain.nonmember_questions(24, 1), "generated")
    verdicts, _ = audit_detector(PlainDetector(), _Model(), [], domain, nonmembers, V.Settings(), progress=False)
    names = [v.name for v in verdicts]
    assert names == ["plain", "plain/reference"]
    assert verdicts[0].value == pytest.approx(1.0) and verdicts[0].flagged is True  # AUROC of separated scores
