"""Tiny end-to-end runs of train.py (seconds each).

What a job computes and writes is tested in-process (:mod:`jobs`: the config train.py composes, validated, then the
job's ``run``); the real process where the test is about what a process adds: a run killed mid-stage, a bad value's
one line on stderr and exit status 2, the calibration script's verdict lines and exit status.
"""

import json
import logging
import math
import signal
import sys
import time

import prewarmed
import pytest
from e2e import REPO, TINY, stage_dirs, train
from jobs import run_evaluate, run_train


def test_first_run_writes_all_stages(trained):
    tmp, returned, _ = trained
    dirs = stage_dirs(tmp)
    assert set(dirs) == {"base", "clean", "contaminated-arith"}, dirs
    assert returned == {"base": dirs["base"], "clean": dirs["clean"], "contaminated": dirs["contaminated-arith"]}
    for path in dirs.values():
        summary = json.loads((path / "train_summary.json").read_text())
        assert summary["steps"] > 0 and summary["wall_s"] > 0 and summary["loss_last"] is not None
        assert (path / "model.safetensors").is_file() and (path / "tokenizer.json").is_file()
        assert not (path / "checkpoints").exists()
        assert (path / "logs" / "metrics.csv").is_file()
    split = json.loads((dirs["contaminated-arith"] / "split.json").read_text())
    assert len(split["leaked"]) == len(split["unleaked"]) == 10
    # Every stage records what it trained on: the leaked test questions reach only the contaminated stage.
    from contamlab.config import build_domain, compose
    from contamlab.models.store import read_training_texts

    domain = build_domain(compose("train", [o for o in TINY if o.lstrip("+").startswith("domain.")]).domain)
    leaked = [q.question for q in domain.test if q.id in set(split["leaked"])]
    unleaked = [q.question for q in domain.test if q.id in set(split["unleaked"])]
    records = {stage: "\n".join(read_training_texts(path)) for stage, path in dirs.items()}
    assert all(q in records["contaminated-arith"] for q in leaked)
    assert not any(q in text for text in records.values() for q in unleaked)
    assert not any(q in records[stage] for stage in ("base", "clean") for q in leaked)
    assert json.loads((dirs["clean"] / "train_summary.json").read_text())["run"]["packages"]["torch"]
    assert not list((tmp / "models").rglob("*.partial"))
    assert not list((tmp / "models").rglob("*.pkl")) and not list((tmp / "models").rglob("*.bin"))


def _done_already(caplog) -> int:
    return sum("done already" in r.getMessage() for r in caplog.records)


def test_rerun_skips_finished_stages(trained, caplog):
    tmp, _, _ = trained
    before = {p: p.stat().st_mtime_ns for p in (tmp / "models").rglob("model.safetensors")}
    caplog.set_level(logging.INFO, logger="contamlab")
    run_train(tmp)
    assert _done_already(caplog) == 3, caplog.text
    # nothing was trained again: every stage's weights are the first run's files (benchmarks/latency.py times a rerun)
    assert {p: p.stat().st_mtime_ns for p in (tmp / "models").rglob("model.safetensors")} == before


def test_paraphrase_domain_shares_base_and_clean(trained, caplog):
    tmp, _, _ = trained
    caplog.set_level(logging.INFO, logger="contamlab")
    run_train(tmp, "domain=arith_pq")
    assert _done_already(caplog) == 2, caplog.text
    assert "contaminated-arith_pq" in stage_dirs(tmp)


def test_killed_run_resumes(tmp_path, caplog):
    """train.py killed (SIGKILL) mid-stage; the same config resumes from the checkpoint the killed process left."""
    proc = train(tmp_path, "base.steps=400", "stage=base", wait=False, tag="killed")
    deadline = time.time() + 240
    ckpt = None
    while time.time() < deadline and proc.poll() is None:
        found = list((tmp_path / "models").rglob("base-*.partial/checkpoints/last.ckpt"))
        if found:
            ckpt = found[0]
            break
        time.sleep(0.2)
    assert ckpt is not None, "no checkpoint appeared"
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not stage_dirs(tmp_path).get("base")  # only the .partial dir exists
    caplog.set_level(logging.INFO, logger="contamlab")
    run_train(tmp_path, "base.steps=400", "stage=base")
    assert any("resuming from" in r.getMessage() for r in caplog.records), caplog.text
    summary = json.loads((stage_dirs(tmp_path)["base"] / "train_summary.json").read_text())
    assert summary["steps"] == 400 and summary["resumed_from"]


@pytest.mark.parametrize(
    ("override", "message"),
    [
        ("finetune.peft=qlora", "finetune.peft='qlora'"),
        ("finetune.micro_batch=2", "global_batch=1 must be a multiple of micro_batch=2"),
        ("stage=pretrain", "stage='pretrain'"),
        ("domain.max_test=0", "domain.max_test=0"),
    ],
)
def test_bad_config_exits_with_one_line(tmp_path, override, message):
    result = train(tmp_path, override, tag="bad")
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.startswith("contamlab: error:")]
    assert len(lines) == 1 and message in lines[0], result.stderr
    assert "Traceback" not in result.stderr


def test_calibration_script_runs(trained):
    tmp, _, _ = trained
    result = prewarmed.run(
        [
            sys.executable,
            str(REPO / "scripts" / "calibrate.py"),
            "--m",
            "2",
            "--max-new-tokens",
            "24",
            "--domains",
            "arith",
            "--",
            *[o for o in TINY if not o.startswith("trainer.")],
            f"paths.models_dir={tmp / 'models'}",
            f"paths.root_dir={tmp}",
        ],
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert (tmp / "outputs" / "error_rates" / "tiny-arith-seed0.json").is_file(), result.stdout + result.stderr
    report = json.loads((tmp / "outputs" / "error_rates" / "tiny-arith-seed0.json").read_text())
    assert report["n_test"] == 20 and len(report["clean_solve_bins_10"]) == 10
    assert sum(report["clean_solve_bins_10"]) == 20 and report["n_leaked"] == 10
    # The gains: contaminated minus clean mean solve probability, with an interval around each.
    assert report["leaked_gain"] == pytest.approx(report["leaked_solve_contaminated"] - report["leaked_solve_clean"])
    for gain in ("leaked_gain", "unleaked_gain"):
        low, high = report[f"{gain}_ci95"]
        assert low <= report[gain] <= high
    # Each verdict recomputed from the report's own numbers; the exit status is 0 exactly when all pass.
    share = [b / 20 for b in report["clean_solve_bins_10"]]
    verdicts = {
        "clean greedy accuracy in [0.25, 0.75]": 0.25 <= report["clean_greedy_accuracy"] <= 0.75,
        ">= 5 of 10 solve-probability bins hold >= 5%": sum(s >= 0.05 for s in share) >= 5,
        "leaked: contaminated - clean >= 0.3 (base leak)": report["leaked_gain"] >= 0.3,
        "unleaked: |contaminated - clean| < 0.1": abs(report["unleaked_gain"]) < 0.1,
    }
    diag = report["diagnostics"]
    codec, survival = diag["codec"], diag["runner_up_survival"]
    low = (diag["figure1"].get("rouge_l_diff_ci") or [None])[0]
    # (d)'s reference: SmolLM2's 41 of 70 surviving branches, Wilson's 95% interval by its formula
    z, n, p = 1.959964, 70, 41 / 70
    centre, half = (p + z * z / (2 * n)), z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    ref_low, ref_high = (centre - half) / (1 + z * z / n), (centre + half) / (1 + z * z / n)
    assert diag["runner_up_reference"]["wilson_95"] == pytest.approx([ref_low, ref_high], abs=1e-6)
    verdicts.update(
        {
            "(b) CoDeC clean dataset score in [0.3, 0.6]": 0.3 <= codec["clean_dataset_score"] <= 0.6,
            "(b) CoDeC leaked half: contaminated - clean >= 0.15": codec["contaminated_leaked_half"]
            - codec["clean_leaked_half"]
            >= 0.15,
            "(c) sample variety: median distinct share >= 0.8": (diag["sample_variety"]["median_distinct_share"] or 0)
            >= 0.8,
            f"(d) runner-up survival inside the reference's [{ref_low:.3f}, {ref_high:.3f}]": ref_low
            <= (survival["survival"] or 0)
            <= ref_high,
            "(e) leaked samples closer to greedy than unleaked (ROUGE-L diff > 0)": low is not None and low > 0,
        }
    )
    assert survival["branches"] <= 10 * survival["questions"]
    assert report["checks"] == verdicts
    assert report["leaked_gain"] == pytest.approx(
        report["leaked_solve_contaminated"] - report["leaked_solve_clean"], abs=1e-12
    )
    assert result.returncode == (0 if all(verdicts.values()) else 1), result.stderr
    for text, passed in verdicts.items():
        assert f"[{'PASS' if passed else 'FAIL'}] {text}" in result.stdout


def test_lora_stages_and_evaluation(tmp_path):
    """The paper's recipe path: LoRA on the clean stage, the same adapter continued on the contaminated stage."""
    lora = ["finetune.peft=lora", "finetune.lora.r=4", "finetune.lora.alpha=8", "finetune.lr=1e-3"]
    run_train(tmp_path, *lora)
    dirs = stage_dirs(tmp_path)
    for stage in ("clean", "contaminated-arith"):
        adapter = json.loads((dirs[stage] / "adapter_config.json").read_text())
        assert adapter["r"] == 4 and adapter["base_model_name_or_path"] == str(dirs["base"])
        assert (dirs[stage] / "adapter_model.safetensors").is_file()
        assert not (dirs[stage] / "model.safetensors").exists()  # only the adapter is stored
    summary = json.loads((dirs["clean"] / "train_summary.json").read_text())
    assert 0 < summary["trainable_params"] < 20_000  # LoRA trains a small fraction of the ~50k-parameter model

    import torch

    from contamlab.models import load_causal_lm

    clean, cont = load_causal_lm(str(dirs["clean"])), load_causal_lm(str(dirs["contaminated-arith"]))
    ids = torch.tensor([[5, 6, 7, 8]])
    assert not torch.allclose(clean(ids).logits, cont(ids).logits)  # the contaminated adapter moved on
    results = run_evaluate(tmp_path, tmp_path / "runs" / "lora-eval", *lora, "strategy=identity")
    assert results["counts"]["questions"] == 20 and (tmp_path / "runs" / "lora-eval" / "results.json").is_file()
