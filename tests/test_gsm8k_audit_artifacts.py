"""The committed GSM8K audits of the packaged models (results/audit_shift/) and docs/audit.md's tables from them.

The tables must be exactly what the artifacts give, and the artifacts' readings are read again without the project's
code: each reading's AUROC (scikit-learn) and one-sided Mann–Whitney p (scipy) from the audit's own per-item scores,
and each shift-null rate's interval (scipy's exact binomial interval) from its counts.
"""

from __future__ import annotations

import csv
import json
import statistics
from pathlib import Path

import pytest
from scipy.stats import binomtest, mannwhitneyu
from sklearn.metrics import roc_auc_score

from contamlab.studies import gsm8k_audit

REPO = Path(__file__).resolve().parents[1]
FILES = sorted((REPO / gsm8k_audit.ARTIFACTS).glob("*-gsm8k-*.json"))


def test_the_four_audits_are_committed():
    names = {p.stem for p in FILES}
    assert names == {f"{m}-gsm8k-{n}" for m in ("smollm2", "gemma3") for n in ("pq", "train")}


def test_the_pages_blocks_are_what_the_artifacts_give(monkeypatch):
    monkeypatch.chdir(REPO)  # the blind baseline's artifacts are read from their committed paths
    page = (REPO / gsm8k_audit.AUDIT_PAGE).read_text()
    blocks = gsm8k_audit.blocks()
    for name in blocks:
        assert gsm8k_audit.markers(name)[0] in page, f"docs/audit.md lacks the {name} block"
    assert gsm8k_audit.with_blocks(page, blocks) == page


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_reading_is_its_scores_read_again(path):
    result = json.loads(path.read_text())
    assert result["run"]["git_commit"] and result["run"]["git_dirty"] is False
    with path.with_suffix(".scores.csv").open() as f:
        rows = list(csv.DictReader(f))
    for verdict in result["audit"]["verdicts"]:
        if verdict["name"] not in gsm8k_audit.READINGS:
            continue
        scores = {
            side: [float(r["score"]) for r in rows if r["detector"] == verdict["name"] and r["items"] == side]
            for side in ("benchmark", "reference")
        }
        pos, neg = scores["benchmark"], scores["reference"]
        assert len(pos) == len(neg) == 100
        auroc = roc_auc_score([1] * len(pos) + [0] * len(neg), pos + neg)
        assert auroc == pytest.approx(verdict["value"], abs=1e-4), verdict["name"]
        p = mannwhitneyu(pos, neg, alternative="greater").pvalue
        assert p == pytest.approx(verdict["p_value"], rel=1e-3), verdict["name"]
        null = verdict["detail"]["shift_null"]
        ci = binomtest(null["flagged"], null["total"]).proportion_ci(0.95, method="exact")
        assert null["interval"] == pytest.approx([ci.low, ci.high], abs=1e-9)
        assert null["rate"] == null["flagged"] / null["total"]


def test_the_blind_intervals_coverage_is_counted_again():
    """results/blind/coverage.json: each side's count of intervals covering 0.5 and the spreads, recomputed."""
    artifact = json.loads((REPO / "results/blind/coverage.json").read_text())
    z = statistics.NormalDist().inv_cdf(0.975)
    for n, side in artifact["sides"].items():
        draws = side["draws"]
        assert len(draws) == artifact["draws"] and len({d["auroc"] for d in draws}) > len(draws) // 2
        assert side["covered"] == sum(1 for d in draws if d["ci"][0] <= 0.5 <= d["ci"][1]), n
        over_draws = statistics.stdev(d["auroc"] for d in draws)
        of_interval = statistics.fmean((d["ci"][1] - d["ci"][0]) / (2 * z) for d in draws)
        assert side["sd_over_draws"] == pytest.approx(over_draws, abs=1e-4)
        assert side["ratio"] == pytest.approx(over_draws / of_interval, abs=0.01)


WITH_TWINS = [p for p in FILES if json.loads(p.read_text())["audit"]["error_rates"]]


def test_smollm2s_audits_carry_their_power():
    assert {p.stem for p in WITH_TWINS} >= {"smollm2-gsm8k-pq", "smollm2-gsm8k-train"}


@pytest.mark.parametrize("path", WITH_TWINS, ids=lambda p: p.stem)
def test_each_power_is_its_twins_scores_counted_again(path):
    """Each dose's power: the twins whose own scores give a one-sided Mann-Whitney p below α (scipy), recounted."""
    result = json.loads(path.read_text())
    record, alpha = result["audit"]["error_rates"], result["config"]["audit"]["alpha"]
    assert record["twin_pools"] == "own" and len(record["doses"]) >= 2
    for reading, rates in record["readings"].items():
        if "/" in reading:  # the /reference form reads the audited model's scores too (not written)
            continue
        for dose, rate in rates["power"].items():
            twins = [t for t in record["twins"] if t["reading"] == reading and t["dose"] == dose]
            assert len(twins) == rate["total"] == record["twins_per_dose"]
            flagged = 0
            for t in twins:
                pos, neg = t["benchmark_scores"], t["nonmember_scores"]
                assert len(pos) == len(neg) == 100 and None not in pos + neg
                p = mannwhitneyu(pos, neg, alternative="greater").pvalue
                assert p == pytest.approx(t["p"], rel=1e-6)
                flagged += p < alpha
            assert flagged == rate["flagged"], (reading, dose)
        # the detection dose: the weakest (listed first) whose power reaches min_power
        reached = [d for d, r in rates["power"].items() if r["flagged"] / r["total"] >= record["min_power"]]
        assert rates["detection_dose"] == (reached[0] if reached else None)
