"""Tiny end-to-end runs of the real evaluate.py on a tiny trained world."""

import csv
import json

import pytest
from e2e import evaluate


def test_single_job_writes_results(trained):
    tmp, _, _ = trained
    result = evaluate(tmp, "strategy=railcap", tag="railcap")
    assert result.returncode == 0, result.stdout + result.stderr
    out = tmp / "runs" / "railcap"
    results = json.loads((out / "results.json").read_text())
    values = results["metrics"]["all"]["values"]
    for key in ("g_ap", "g_app", "a_ppg", "sa_ppg", "delta_plus", "delta_minus", "s_delta_plus", "s_delta_minus"):
        assert 0.0 <= values[key] <= 1.0
    assert values["g_app"] <= values["a_ppg"] + 1e-12
    assert abs(values["s_delta_plus"] + values["s_delta_minus"] - values["sa_ppg"]) < 1e-9
    assert set(results["metrics"]) == {"all", "leaked", "unleaked"}
    lo, hi = results["metrics"]["all"]["ci"]["sa_ppg"]
    assert lo <= values["sa_ppg"] <= hi
    assert results["strategy"]["name"] == "railcap" and results["counts"]["questions"] == 20
    rows = list(csv.DictReader((out / "per_question.csv").open()))
    assert len(rows) == 20 and sum(int(r["leaked"]) for r in rows) == 10
    assert all(int(r["clean_m"]) == 4 for r in rows)


def test_grid_reuses_clean_samples(trained):
    tmp, _, _ = trained
    result = evaluate(tmp, "strategy=identity,all_zero,ted,lne", multirun=True, tag="grid")
    assert result.returncode == 0, result.stdout + result.stderr
    files = sorted((tmp / "sweeps" / "grid").glob("*/results.json"))
    assert len(files) == 4
    by_name = {json.loads(f.read_text())["strategy"]["name"]: json.loads(f.read_text()) for f in files}
    zero = by_name["all_zero"]["metrics"]["all"]["values"]
    assert zero["mean_r_strategy"] == 0.0 and zero["a_ppg"] == pytest.approx(zero["mean_r_clean"])
    # the clean model was sampled once for the whole grid: every job read the same cached clean samples
    clean = {json.dumps(r["metrics"]["all"]["values"]["mean_r_clean"]) for r in by_name.values()}
    assert len(clean) == 1
    # the multirun-end callback aggregated every job
    summary = list(csv.DictReader((tmp / "sweeps" / "grid" / "summary.csv").open()))
    assert sorted(r["strategy"].split("(")[0] for r in summary) == ["all_zero", "identity", "lne", "ted"]
    assert "all/sa_ppg" in summary[0] and "leaked/sa_ppg" in summary[0]
    report = (tmp / "sweeps" / "grid" / "report.md").read_text()
    assert "### Table 1" in report and "### Table 2" in report and "| lne |" in report


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("strategy.n=0", "strategy.n=0"),
        ("m=0", "m=0"),
        ("+detector._target_=contamlab.placeholder.not_implemented", "detector config"),
        ("model.contaminated=/nonexistent/model", "not found"),
    ],
)
def test_bad_input_is_one_line(trained, override, message):
    tmp, _, _ = trained
    result = evaluate(tmp, "strategy=railcap", override, tag="bad")
    assert result.returncode == 2, result.stdout + result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("contamlab: error:")]
    assert len(lines) == 1 and message in lines[0], result.stderr


def test_wandb_offline_run_is_written(trained, monkeypatch):
    tmp, _, _ = trained
    monkeypatch.setenv("WANDB_MODE", "offline")
    result = evaluate(tmp, "strategy=identity", "logger=wandb", tag="wandb")
    assert result.returncode == 0, result.stdout + result.stderr
    runs = list((tmp / "runs" / "wandb").rglob("offline-run-*"))
    assert runs, "no offline W&B run directory"
    assert list(runs[0].rglob("*.wandb"))
