"""Tiny end-to-end runs of evaluate.py on a tiny trained world.

A job's results are tested in-process (:mod:`jobs`); the real evaluate.py process where the test is about what a
process adds: a multirun grid and its end-of-sweep report, a bad input's one line and exit status 2, the console's
last line.
"""

import csv
import json

import pytest
from e2e import evaluate, stage_dirs
from jobs import run_evaluate


def test_single_job_writes_results(trained):
    tmp, _, _ = trained
    out = tmp / "runs" / "railcap"
    returned = run_evaluate(tmp, out, "strategy=railcap")
    results = json.loads((out / "results.json").read_text())
    assert results["metrics"] == json.loads(json.dumps(returned["metrics"]))
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
    # G-AP and SA-PPG's ingredients recomputed from the per-question table.
    r01 = [(int(r["r01_strategy"]), int(r["r01_clean"])) for r in rows]
    assert values["g_ap"] == pytest.approx(abs(sum(a for a, _ in r01) - sum(c for _, c in r01)) / 20)
    assert values["a_ppg"] == pytest.approx(sum(abs(float(r["r_strategy"]) - float(r["r_clean"])) for r in rows) / 20)
    # ... and the noise floor's, from the second clean batch's columns
    floor = results["floor"]["metrics"]["all"]["values"]
    assert floor["a_ppg"] == pytest.approx(sum(abs(float(r["r_clean_2"]) - float(r["r_clean"])) for r in rows) / 20)
    assert floor["g_ap"] == pytest.approx(abs(sum(int(r["r01_clean_2"]) - int(r["r01_clean"]) for r in rows)) / 20)
    assert all(float(r["r_clean_2"]) == int(r["clean_2_correct"]) / 4 for r in rows)


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
    names = sorted(r["strategy"].split("(")[0] for r in summary)
    assert names == ["all_zero", "clean_2nd", "identity", "lne", "ted"]  # with the noise-floor row
    assert "all/sa_ppg" in summary[0] and "leaked/sa_ppg" in summary[0]
    report = (tmp / "sweeps" / "grid" / "report.md").read_text()
    assert "### Table 1" in report and "### Table 2" in report and "| lne |" in report


def test_clean_and_strategy_batches_are_independent(trained):
    """The clean model scored against itself: independent streams give per-question gaps, common noise none."""
    tmp, _, _ = trained
    clean_dir = str(stage_dirs(tmp)["clean"])
    runs = {}
    for tag, extra in (("self-indep", []), ("self-common", ["sampler.common_noise=true"])):
        run_evaluate(tmp, tmp / "runs" / tag, "strategy=identity", f"model.contaminated={clean_dir}", *extra)
        runs[tag] = json.loads((tmp / "runs" / tag / "results.json").read_text())
    indep, common = runs["self-indep"], runs["self-common"]
    assert indep["sampling"]["common_noise"] is False and common["sampling"]["common_noise"] is True
    streams = indep["sampling"]["streams"]
    assert len(set(streams.values())) == 3  # clean, contaminated/identity, clean-2: three different seeds
    # Common random numbers: the same model on the same stream draws the same samples, so every gap is 0.
    assert common["metrics"]["all"]["values"]["a_ppg"] == 0.0
    # Independent: sampling noise alone leaves per-question gaps, as large as the noise floor's on average.
    a_ppg, floor = indep["metrics"]["all"]["values"]["a_ppg"], indep["floor"]["metrics"]["all"]["values"]["a_ppg"]
    assert a_ppg > 0.0 and floor > 0.0 and abs(a_ppg - floor) < 0.15
    rows = list(csv.DictReader((tmp / "runs" / "self-indep" / "per_question.csv").open()))
    assert any(r["clean_correct"] != r["strategy_correct"] for r in rows)


def test_report_has_the_noise_floor_row(trained):
    tmp, _, _ = trained
    result = evaluate(tmp, "strategy=identity,all_zero", multirun=True, tag="floor-grid")
    assert result.returncode == 0, result.stdout + result.stderr
    report = (tmp / "sweeps" / "floor-grid" / "report.md").read_text()
    floor_lines = [line for line in report.splitlines() if line.startswith("| Clean, 2nd batch |")]
    assert len(floor_lines) >= 3  # Tables 1, 2 and 3 (and the leaked / unleaked split)
    files = sorted((tmp / "sweeps" / "floor-grid").glob("*/results.json"))
    floor = json.loads(files[0].read_text())["floor"]["metrics"]["all"]["values"]
    assert f"{floor['sa_ppg']:.4f}" in floor_lines[0]  # Table 1's SA-PPG cell is the floor's
    assert floor_lines[0].split("|")[3].strip() == "–"  # reference row: not ranked


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("strategy.n=0", "strategy.n=0"),
        ("m=0", "m=0"),
        ("+detector._target_=contamlab.errors.ContamlabError", "detector config"),  # a target that fails when built
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
    # Figure 1 and 2 too: every results block (floor, stability, figure1 with its interval) goes to W&B.
    result = evaluate(
        tmp, "strategy=identity", "logger=wandb", "experiment=figure2", "analysis.figure1=true", tag="wandb"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    runs = list((tmp / "runs" / "wandb").rglob("offline-run-*"))
    assert runs, "no offline W&B run directory"
    assert list(runs[0].rglob("*.wandb"))
    # progress=false: none of W&B's own lines; the job's last line names the folder its run is in
    assert "wandb:" not in result.stdout + result.stderr, result.stderr[-3000:]
    assert result.stdout.splitlines()[-1].endswith(f"wandb sync {tmp / 'runs' / 'wandb' / 'wandb'}"), result.stdout
