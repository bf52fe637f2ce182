"""One command, one model: the same train.py command gives a byte-identical model on an idle and a busy machine.

The thread count changes the float rounding of every step (the test first shows it does, so that it can fail), so
the base stage trains on a fixed count, not on the idle cores. The trainings are train.py's job run in-process
(:mod:`jobs`); the busy machine is real: one spinning process per core.
"""

import hashlib
import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest
from jobs import job_config, run_job

# 8 steps: enough for one thread and two to give other weights (asserted below)
BASE = ["experiment=small_world", "stage=base", "base.steps=8", "logger=csv", "trainer.enable_progress_bar=false"]
BUSY = "import time\nend = time.monotonic() + 600\nwhile time.monotonic() < end: pass"


def _train(tmp: Path, tag: str, *overrides: str) -> Path:
    run_job("train", job_config("train", tmp / "h" / tag, *BASE, f"paths.models_dir={tmp / tag}", *overrides))
    (stage,) = (tmp / tag / "tiny" / "arith").glob("base-*")
    return stage


def _sha1(stage: Path) -> str:
    return hashlib.sha1((stage / "model.safetensors").read_bytes()).hexdigest()


@pytest.mark.xdist_group("cpu_heavy")
def test_one_command_gives_one_model_on_a_busy_machine(tmp_path, caplog):
    one = _train(tmp_path, "one-thread", "base.num_threads=1")
    idle = _train(tmp_path, "idle")
    assert one.name == idle.name  # the same key ...
    assert _sha1(one) != _sha1(idle)  # ... and other weights: the thread count matters, so the test below can fail
    busy = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(os.cpu_count() or 1)]
    caplog.set_level(logging.INFO, logger="contamlab")
    try:
        starved = _train(tmp_path, "busy")
    finally:
        for proc in busy:
            proc.kill()
    assert _sha1(starved) == _sha1(idle)
    summary = json.loads((starved / "train_summary.json").read_text())
    assert summary["run"]["machine"]["torch_threads"] == 2
    assert "cores are busy with other work; it trains on 2 threads all the same" in caplog.text


SPIN = """
import os, sys
import contamlab.config as config
config.busy_cores = lambda window_s=0.5: float(sys.argv[1])
print(config.spin_less_when_busy(), os.environ.get("OMP_WAIT_POLICY"))
"""


@pytest.mark.parametrize(
    ("busy", "env", "expected"),
    [("1.5", {}, "True PASSIVE"), ("0.2", {}, "False None"), ("1.5", {"OMP_WAIT_POLICY": "ACTIVE"}, "False ACTIVE")],
)
def test_waiting_threads_sleep_only_on_a_busy_machine(busy, env, expected):
    clean = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
    done = subprocess.run(
        [sys.executable, "-c", SPIN, busy], env={**clean, **env}, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == expected
