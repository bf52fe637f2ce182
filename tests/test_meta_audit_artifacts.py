"""The committed meta-audit of the default world (results/meta_audit/) and docs/results_audit.md's table from it.

The table must be exactly what the artifacts give. Each plain membership reading is read again without the project's
code, from the audit's own per-item scores: its AUROC (scikit-learn) and its one-sided Mann–Whitney p (scipy); and
each flag is its p against the audit's α.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import pytest
from scipy.stats import mannwhitneyu
from sklearn.metrics import roc_auc_score

from contamlab.studies import meta_audit

REPO = Path(__file__).resolve().parents[1]
FOLDER = REPO / meta_audit.ARTIFACTS
AUDITS = sorted(FOLDER.glob("*/*/results.json"))


def test_the_run_is_committed_with_its_command():
    run = json.loads((FOLDER / "run.json").read_text())
    assert run["command"] == "make meta-audit" and run["wall_s"] > 0
    assert sorted(run["jobs"]) == sorted(p.parent.relative_to(FOLDER).as_posix() for p in AUDITS)
    assert all(c.startswith("python audit.py ") for c in run["jobs"].values())
    assert len(AUDITS) == 6  # two seeds: each leak's contaminated model and the clean model


def test_the_pages_block_is_what_the_artifacts_give():
    page = (REPO / meta_audit.PAGE).read_text()
    assert meta_audit.BEGIN in page
    assert meta_audit.with_block(page, meta_audit.block(FOLDER), meta_audit.BEGIN, meta_audit.END) == page


@pytest.mark.parametrize("path", AUDITS, ids=lambda p: "/".join(p.parts[-3:-1]))
def test_each_membership_reading_is_its_scores_read_again(path):
    result = json.loads(path.read_text())
    assert result["run"]["git_commit"] and result["run"]["git_dirty"] is False
    with (path.parent / "audit_scores.csv").open() as f:
        rows = list(csv.DictReader(f))
    alpha, checked = result["config"]["audit"]["alpha"], 0
    for v in result["audit"]["verdicts"]:
        if v["statistic"] != "AUROC benchmark vs reference items" or v["value"] is None:
            continue
        pos = [float(r["score"]) for r in rows if r["detector"] == v["name"] and r["items"] == "benchmark"]
        neg = [float(r["score"]) for r in rows if r["detector"] == v["name"] and r["items"] == "reference"]
        assert pos and neg and all(math.isfinite(x) for x in pos + neg), v["name"]
        assert roc_auc_score([1] * len(pos) + [0] * len(neg), pos + neg) == pytest.approx(v["value"], abs=1e-4)
        p = mannwhitneyu(pos, neg, alternative="greater").pvalue
        assert p == pytest.approx(v["p_value"], rel=1e-3, abs=1e-12), v["name"]
        if v["flagged"] is not None:
            assert v["flagged"] == (v["p_value"] < alpha), v["name"]
        checked += 1
    assert checked >= 4, "fewer membership readings than the four of one pass"
