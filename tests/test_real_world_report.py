"""The real-LM world's report: the seed-averaged AUROC against sklearn, and the tables built from job folders."""

import csv
import json

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from contamlab.analysis.real_world import detection_table, detections, seed_average, write_report
from contamlab.analysis.results import load_results


def _seeds(rng: np.random.Generator, shift: float, n: int = 40, seeds: int = 3) -> list[tuple[np.ndarray, np.ndarray]]:
    out = []
    for _ in range(seeds):
        leaked = np.arange(n) % 2 == 0
        out.append((rng.normal(size=n) + shift * leaked, leaked))
    return out


def test_seed_average_is_the_mean_of_sklearn_aurocs_with_an_interval_around_it():
    rng = np.random.default_rng(1)
    seeds = _seeds(rng, 1.0)
    seeds[1][0][3] = np.nan  # an unscored question is left out, as sklearn is given only the scored ones
    got = seed_average(seeds)
    keep = [np.isfinite(s) for s, _ in seeds]
    want = [roc_auc_score(y[k], s[k]) for (s, y), k in zip(seeds, keep)]
    assert got["per_seed"] == pytest.approx(want)
    assert got["auroc"] == pytest.approx(np.mean(want))
    low, high = got["ci"]
    assert low < got["auroc"] < high and high - low < 0.3
    assert got["n"] == [40, 39, 40]
    # no separation: the interval covers 0.5; one empty class: no value
    null = seed_average(_seeds(np.random.default_rng(2), 0.0))
    assert null["ci"][0] < 0.5 < null["ci"][1]
    assert seed_average([(np.array([1.0, 2.0]), np.array([True, True]))]) is None


def _job(root, name, model, domain, detector, seed, scores_c, scores_k, leaked):
    job = root / name
    job.mkdir(parents=True)
    result = {
        "config": {"model": {"name": model}, "domain": {"name": domain}, "seed": seed},
        "detection": {"detector": {"name": detector}},
    }
    (job / "results.json").write_text(json.dumps(result))
    with (job / "detection_per_question.csv").open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["id", "leaked", "score_contaminated", "score_clean"])
        for i, (c, k, y) in enumerate(zip(scores_c, scores_k, leaked)):
            w.writerow([f"q{i}", int(y), c, k])


def test_the_detection_table_reads_job_folders_and_sets_the_tiny_world_beside(tmp_path):
    leaked = [True] * 12 + [False] * 12
    perfect = [1.0] * 12 + [0.0] * 12  # AUROC 1 on the contaminated model
    flat = list(np.linspace(0, 1, 24))[::2] + list(np.linspace(0, 1, 24))[1::2]  # clean: 66 of 144 pairs, 0.458
    for seed in (0, 1, 2):
        _job(tmp_path / "real", f"s{seed}", "smollm2", "arith", "loss", seed, perfect, flat, leaked)
    _job(tmp_path / "tiny", "t0", "tiny", "arith", "loss", 0, perfect, flat, leaked)
    found = detections(load_results(tmp_path / "real"))
    assert set(found) == {("smollm2", "arith", "loss")} and len(found[("smollm2", "arith", "loss")]["clean"]) == 3
    table = detection_table(found, detections(load_results(tmp_path / "tiny")))
    row = next(line for line in table.splitlines() if line.startswith("| loss"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:3] == ["loss", "verbatim", "1.00 [1.00, 1.00]"]
    assert cells[3].startswith("0.46 ") and cells[4] == "1.00 [1.00, 1.00]" and cells[5] == "yes"
    report = write_report(tmp_path / "real", tmp_path / "tiny")
    assert "| loss | verbatim |" in report.read_text() and "No audits found." in report.read_text()
    from contamlab.analysis.real_world import main

    main([str(tmp_path / "real"), "--tiny", str(tmp_path / "tiny"), "--out", str(tmp_path / "elsewhere.md")])
    assert (tmp_path / "elsewhere.md").read_text() == report.read_text()


def test_the_training_table_sums_twins_per_model_and_benchmark(tmp_path):
    from contamlab.analysis.real_world import training_table

    def summary(where, domain, stage, wall, seed=0):
        folder = tmp_path / where
        folder.mkdir(parents=True)
        fields = {"model": "smollm2", "domain": domain, "stage": stage, "steps": 8, "tokens_per_epoch": 100}
        record = {**fields, "tokens_per_s": 50.0, "wall_s": wall, "key_fields": {"seed": seed}}
        (folder / "train_summary.json").write_text(json.dumps(record))

    summary("smollm2/arith/clean-a", "arith", "clean", 60.0)
    summary("smollm2/arith/contaminated-arith-b.partial", "arith", "contaminated", 999.0)  # killed: left out
    summary("smollm2/twins/twin-1", "arith", "contaminated", 120.0)
    summary("smollm2/twins/twin-2", "arith", "contaminated", 180.0)
    summary("smollm2/twins/twin-3", "gsm8k", "contaminated", 240.0)
    table = training_table(tmp_path)
    assert table.count("| smollm2 |") == 1 and "| smollm2 | arith | clean | 0 | 8 | 100 | 50 | 60 |" in table
    assert "the stages' own wall times summed: smollm2 1.0 min." in table
    assert "smollm2 on arith 2 twins, 5.0 min; smollm2 on gsm8k 1 twin, 4.0 min." in table


def test_the_calibrated_verdicts_are_counted_per_model_family(tmp_path):
    """Two families' error-rate audits in one folder (as `make real-world-error-rates` writes them): not pooled."""

    def audit(name, model, target, seed, contaminated, flagged, null_flagged):
        cal = {"null": {"flagged": null_flagged, "total": 200}, "power": {"2 epochs": {"flagged": 3, "total": 3}}}
        verdict = {"name": "loss", "flagged": flagged, "verdict": "…", "detail": {"error_rates": cal}}
        truth = {"contaminated": contaminated, "leak": "verbatim" if contaminated else None}
        result = {
            "config": {"model": {"name": model}, "seed": seed},
            "audit": {
                "benchmark": "arith",
                "target": {"spec": target},
                "references": [],
                "truth": truth,
                "error_rates": {"pool": "auto"},
                "verdicts": [verdict],
                "detectors": {"loss": {"wall_s": 1.0}},
            },
            "timings": {"wall_s": 2.0},
        }
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(result))

    audit("a", "smollm2", "clean", 0, False, False, 10)
    audit("b", "smollm2", "contaminated", 0, True, True, 12)
    audit("c", "gemma3", "clean", 0, False, True, 30)  # a false alarm on Gemma-3 alone
    audit("d", "gemma3", "clean", 1, False, False, 5)
    text = write_report(tmp_path).read_text()
    section = text.split("## Error-rate audits against the truth")[1]
    gemma, smollm = section.split("### gemma3")[1].split("### smollm2")
    assert "| loss | 1/2 | — | — | 5–30 of 200 (2 audits) | 6/6 |" in gemma  # per audit, not summed
    assert "| loss | 0/1 | 1/1 | — | 10–12 of 200 (2 audits) | 6/6 |" in smollm
