"""Detection jobs (strategy=none and a detector) on the tiny trained world.

Every detector runs in-process (:mod:`jobs`: the config evaluate.py composes, validated, then the job's ``run``);
one detector also runs through the real evaluate.py process, for what a process adds.
"""

import csv
import json

import pytest
from e2e import evaluate
from jobs import run_evaluate

from contamlab.analysis.detectors import detector_table


@pytest.mark.parametrize(
    ("detector", "extra"),
    [
        ("loss", []),
        ("minkpp", []),
        ("codec", ["detector.seeds=[0,1]", "detector.skip_first=2"]),
        ("cdd", []),
        ("benbench", ["detector.max_samples=10", "detector.ngram=[5]"]),
        ("ngram", []),
        ("recall", ["detector.n_shots=1"]),
        ("dcpdd", []),
        ("constat", ["detector.n_boot=50"]),
    ],
)
def test_detection_only_job(trained, detector, extra):
    tmp, _, _ = trained
    out = tmp / "runs" / f"detect-{detector}"
    results = run_evaluate(tmp, out, "strategy=none", f"detector={detector}", *extra)
    assert json.loads((out / "results.json").read_text())["detection"] == json.loads(json.dumps(results["detection"]))
    det = results["detection"]
    assert det["detector"]["name"] == detector
    assert det["counts"] == {**det["counts"], "questions": 20, "leaked": 10, "unleaked": 10}
    for stage in ("contaminated", "clean"):
        entry = det[stage]
        assert entry["n_scored"] > 0 and "dataset_score" in entry
        if entry["auroc"] is not None:
            assert 0.0 <= entry["auroc"] <= 1.0 and 0.0 <= entry["tpr_at_5fpr"] <= 1.0
    if detector in ("loss", "minkpp", "cdd", "ngram", "recall", "dcpdd"):
        assert det["contaminated"]["auroc"] is not None and det["contaminated"]["n_scored"] == 20
    if detector == "ngram":  # reads the recorded training data: the leaked items are there verbatim
        assert det["contaminated"]["auroc"] == 1.0 and det["contaminated"]["mean_score_leaked"] == 1.0
    if detector == "constat":
        cmp = det["comparison"]
        assert cmp["truth_clean_score"] is not None and 0.0 <= cmp["p_value"] <= 1.0
    assert results["run"]["git_commit"] and "torch" in results["run"]["packages"]
    rows = list(csv.DictReader((out / "detection_per_question.csv").open()))
    assert len(rows) == 20 and {"id", "leaked", "score_contaminated", "score_clean"} <= set(rows[0])
    assert f"| {detector} | tiny | arith |" in detector_table([results])
    # a second run reads the cached scores
    cached = run_evaluate(tmp, out.with_name(out.name + "-again"), "strategy=none", f"detector={detector}", *extra)
    cached = cached["detection"]
    assert cached["contaminated"]["cached"] and cached["contaminated"]["auroc"] == det["contaminated"]["auroc"]


def test_detection_through_the_entry_point(trained):
    """The real evaluate.py process: its exit status, and the same results.json the in-process job writes."""
    tmp, _, _ = trained
    result = evaluate(tmp, "strategy=none", "detector=zlib", tag="detect-process")
    assert result.returncode == 0, result.stdout + result.stderr
    det = json.loads((tmp / "runs" / "detect-process" / "results.json").read_text())["detection"]
    assert det["detector"]["name"] == "zlib" and det["counts"]["questions"] == 20
    assert det["contaminated"]["auroc"] is not None


def test_detector_with_strategy_adds_detection(trained):
    tmp, _, _ = trained
    run_evaluate(tmp, tmp / "runs" / "detect-with-strategy", "strategy=identity", "detector=zlib")
    results = json.loads((tmp / "runs" / "detect-with-strategy" / "results.json").read_text())
    assert "metrics" in results and results["detection"]["detector"]["name"] == "zlib"
