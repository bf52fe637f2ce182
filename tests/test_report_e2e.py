"""Tiny end-to-end runs of the paper's diagnostics and the report.

The diagnostics job runs in-process (:mod:`jobs`); the ablation grid through the real evaluate.py ``-m`` (the sweep's
end-of-run report is Hydra's multirun callback), and the report of a tree through ``python -m
contamlab.analysis.report``.
"""

import csv
import json
import shutil
import sys

import prewarmed
from e2e import REPO, evaluate
from jobs import run_evaluate


def test_figure1_and_stability_job(trained):
    tmp, _, _ = trained
    out = tmp / "runs" / "diag"
    returned = run_evaluate(tmp, out, "experiment=figure2", "analysis.figure1=true")
    results = json.loads((out / "results.json").read_text())
    assert results["stability"] == json.loads(json.dumps(returned["stability"]))
    stability = results["stability"]
    assert stability["m"] == 4 and 0.0 <= stability["gap_rhat"] <= 1.0 and 0.0 <= stability["gap_r01"] <= 1.0
    assert stability["seeds"][0] != stability["seeds"][1]
    for group in ("leaked", "unleaked"):
        summary = results["figure1"][group]
        assert summary["questions"] == 10 and 0.0 <= summary["rouge_l_mean"] <= 1.0
    for name in ("per_bin", "figure1", "figure2"):
        assert (out / "figures" / f"{name}.png").stat().st_size > 1000


def test_ablation_grid_and_report(trained):
    tmp, _, _ = trained
    result = evaluate(
        tmp, "strategy=railcap", "railcap_ablation=n1,ban", "analysis.figures=false", multirun=True, tag="abl"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    sweep = tmp / "sweeps" / "abl"
    params = sorted(
        (json.loads(p.read_text())["strategy"]["n"], json.loads(p.read_text())["strategy"]["mode"])
        for p in sweep.glob("*/results.json")
    )
    assert params == [(1, "cap"), (4, "ban")]
    text = (sweep / "report.md").read_text()
    assert "### Table 4: RailCap ablation" in text
    # Two jobs and their setting's noise floor, a row of its own that no job claims.
    rows = list(csv.DictReader((sweep / "summary.csv").open()))
    assert [(r["row_kind"], r["strategy_name"]) for r in rows] == [
        ("job", "railcap"),
        ("job", "railcap"),
        ("noise_floor", "clean_2nd"),
    ]
    jobs = {str(path.parent) for path in sweep.glob("*/results.json")}
    assert rows[2]["job"] == "" and {r["job"] for r in rows[:2]} == jobs
    # Claims this grid cannot test are one line, not a table of "not testable here" rows.
    assert "not testable here" not in text and text.count("Not testable with these jobs (") == 1
    # a tree of several sweeps and runs reported together, as `make reproduce` does
    run_evaluate(tmp, tmp / "runs" / "tree" / "identity", "strategy=identity", "analysis.figures=false")
    root = tmp / "tree_report"
    shutil.copytree(sweep, root / "sweep")
    shutil.copytree(tmp / "runs" / "tree", root / "run")
    done = prewarmed.run(
        [sys.executable, "-m", "contamlab.analysis.report", str(root)], capture_output=True, text=True, cwd=REPO
    )
    assert done.returncode == 0, done.stderr
    text = (root / "report.md").read_text()
    assert "3 job results" in text and "### Table 1" in text and "### Table 4" in text
