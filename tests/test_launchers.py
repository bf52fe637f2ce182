"""Cluster path: a 2-job grid through Hydra's submitit_local launcher (the same plugin as submitit_slurm)."""

import json

from e2e import evaluate

from contamlab.config import compose


def test_submitit_local_runs_a_two_job_grid(trained):
    tmp, _, _ = trained
    result = evaluate(
        tmp,
        "strategy=identity,all_zero",
        "hydra/launcher=submitit_local",
        "hydra.launcher.timeout_min=10",
        "hydra.launcher.cpus_per_task=1",
        multirun=True,
        tag="submitit",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    sweep = tmp / "sweeps" / "submitit"
    names = sorted(json.loads(p.read_text())["strategy"]["name"] for p in sweep.glob("*/results.json"))
    assert names == ["all_zero", "identity"]
    assert list((sweep / ".submitit").rglob("*_result.pkl")), "the jobs did not run through submitit"
    assert (sweep / "summary.csv").exists()


def test_submitit_slurm_config_composes_for_the_paper_grid():
    cfg = compose(
        "evaluate",
        ["hydra/launcher=submitit_slurm", "hydra.launcher.partition=gpu", "hydra.launcher.gpus_per_node=1"],
        return_hydra_config=True,
    )
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher") and launcher.partition == "gpu" and launcher.gpus_per_node == 1
