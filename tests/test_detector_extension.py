"""docs/extending.md's new detector, run as written: its module and its YAML, with a verdict of its own.

The two code blocks of the page's "Adding a detector" section are written out as a module and a YAML, built the way
Hydra builds a detector, and read by the audit's service (:func:`contamlab.audit.readings.read_detector`). No file
under ``jobs/`` or ``audit/`` knows the detector. A detector without a reading of its own gets the membership test
every per-item score gets; which of the two a detector is follows from what it overrides.
"""

from __future__ import annotations

import importlib
import re
import sys
from dataclasses import dataclass

import pytest
from e2e import REPO
from omegaconf import OmegaConf

from contamlab.audit.readings import read_detector
from contamlab.config import build, load_domain
from contamlab.detectors.base import DetectionContext, Detector, DetectorOutput
from contamlab.metrics import verdicts as V


def doc_blocks() -> tuple[str, str]:
    """The python and yaml blocks of docs/extending.md's "Adding a detector" section."""
    text = (REPO / "docs" / "extending.md").read_text()
    section = text.split("## Adding a detector", 1)[1].split("\n## ", 1)[0]
    (python,) = re.findall(r"```python\n(.*?)```", section, re.S)
    (yaml,) = re.findall(r"```yaml\n(.*?)```", section, re.S)
    return python, yaml


@pytest.fixture(scope="module")
def peak(tmp_path_factory):
    """The page's detector, its module importable as ``docs_peak`` and its YAML pointing there."""
    python, yaml = doc_blocks()
    root = tmp_path_factory.mktemp("docs_detector")
    (root / "docs_peak.py").write_text(python)
    sys.path.insert(0, str(root))
    try:
        module = importlib.import_module("docs_peak")
        node = OmegaConf.create(yaml.replace("contamlab.detectors.peak.", "docs_peak."))
        yield module, build(node, "detectors.peak")
    finally:
        sys.path.remove(str(root))
        sys.modules.pop("docs_peak", None)


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

    spec = "x"

    def score(self, domain, detector, progress, moments=True):
        ctx = DetectionContext(domain, list(domain.test), "x", lambda: (None, None))
        return detector.score(ctx), 0.0, False


@pytest.fixture(scope="module")
def domain():
    return load_domain("arith", generator={"n_train": 20, "n_test": 24})


def test_the_docs_detector_builds_from_its_yaml_with_its_settings(peak):
    module, detector = peak
    assert isinstance(detector, module.PeakDetector) and detector.threshold == 0.9 and detector.name == "peak"
    assert detector.membership_reading is False and detector.scores_nonmembers is False


def test_the_docs_detectors_own_verdict_reaches_the_audit(peak, domain):
    _, detector = peak
    read = read_detector(detector, _Model(), [_Model()], domain, None, V.Settings(), progress=False)
    assert [v.name for v in read.verdicts] == ["peak"]
    # 24 items scored i / 23: the largest is 1.0, above 0.9, so flagged; the reference peaks the same way
    assert read.verdicts[0].flagged is True and read.verdicts[0].value == pytest.approx(1.0)
    assert read.extra["reference_peaks"] == [1.0] and read.extra["dataset_score"] == 1.0
    assert read.items == []  # no membership scores behind it


def test_the_docs_verdict_reads_its_threshold(peak, domain):
    module, _ = peak
    strict = module.PeakDetector(threshold=1.5)
    read = read_detector(strict, _Model(), [], domain, None, V.Settings(), progress=False)
    assert read.verdicts[0].flagged is False and "references: none" in read.verdicts[0].verdict


def test_a_detector_without_a_reading_gets_the_membership_test(domain):
    nonmembers = domain.over(domain.nonmember_questions(24, 1), "generated")
    plain = PlainDetector()
    assert plain.membership_reading is True and plain.scores_nonmembers is True
    read = read_detector(plain, _Model(), [], domain, nonmembers, V.Settings(), progress=False)
    assert [v.name for v in read.verdicts] == ["plain", "plain/reference"]
    assert read.verdicts[0].value == pytest.approx(1.0) and read.verdicts[0].flagged is True  # separated scores
    assert len(read.items) == 48 and {i.items for i in read.items} == {"benchmark", "reference"}


def test_overriding_the_reading_is_what_turns_the_membership_reading_off():
    """The flag cannot disagree with the override: the shipped detectors with readings of their own, and only those."""
    from contamlab.detectors.benbench import BenBenchDetector
    from contamlab.detectors.codec import CoDeCDetector
    from contamlab.detectors.constat import ConStatDetector
    from contamlab.detectors.loss import LossDetector
    from contamlab.detectors.ngram import NgramOverlapDetector

    own = {BenBenchDetector, CoDeCDetector, ConStatDetector, NgramOverlapDetector}
    for cls in (*own, LossDetector):
        assert ("audit_readings" in vars(cls)) is (cls in own)
        assert object.__new__(cls).membership_reading is (cls not in own)
    assert object.__new__(NgramOverlapDetector).scores_nonmembers is True  # its chance-rate reading
    assert object.__new__(CoDeCDetector).scores_nonmembers is False
