"""One training process per stage: a second waits with one line; a lock left by a killed process blocks nothing."""

import logging
import os
import signal
import subprocess
import sys

from contamlab.training.stage_lock import lock_path, stage_lock

HOLD = """
import sys, time
from pathlib import Path
from contamlab.training.stage_lock import stage_lock
with stage_lock(Path(sys.argv[1]), "base"):
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _holder(stage_dir, seconds):
    args = [sys.executable, "-c", HOLD, str(stage_dir), str(seconds)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def _waited(caplog) -> list[str]:
    """The waiting messages logged: stage_lock logs one exactly when the lock was held and it had to wait."""
    return [r.getMessage() for r in caplog.records if "being trained" in r.getMessage()]


def test_a_second_process_waits_for_the_first_and_says_so(tmp_path, caplog):
    stage_dir = tmp_path / "models" / "base-abc"
    holder = _holder(stage_dir, 2.0)
    caplog.set_level(logging.WARNING, logger="contamlab")
    with stage_lock(stage_dir, "base"):
        assert lock_path(stage_dir).read_text() == f"pid {os.getpid()} on {os.uname().nodename}"
    assert holder.wait(timeout=30) == 0
    # it found the lock held and waited for the holder's 2 s: the one waiting message says so (not the wall clock,
    # which a loaded machine stretches or a late start shortens; benchmarks/latency.py times the wait)
    (message,) = _waited(caplog)
    assert message.startswith(f"stage base is being trained by pid {holder.pid} on ")
    assert "waiting for it to finish" in message


def test_a_lock_left_by_a_killed_process_does_not_block(tmp_path, caplog):
    stage_dir = tmp_path / "base-abc"
    holder = _holder(stage_dir, 600)
    os.kill(holder.pid, signal.SIGKILL)
    holder.wait(timeout=30)
    assert lock_path(stage_dir).read_text().startswith(f"pid {holder.pid}")  # the file stays behind
    caplog.set_level(logging.WARNING, logger="contamlab")
    with stage_lock(stage_dir, "base"):
        # taken at once (no waiting message; benchmarks/latency.py times it), and by this process
        assert _waited(caplog) == []
        assert lock_path(stage_dir).read_text() == f"pid {os.getpid()} on {os.uname().nodename}"


def test_only_rank_0_takes_the_lock(tmp_path, monkeypatch, caplog):
    # Lightning's DDP re-runs train.py for rank 1 while rank 0 holds the lock: rank 1 must not wait for it
    stage_dir = tmp_path / "base-abc"
    holder = _holder(stage_dir, 600)
    caplog.set_level(logging.WARNING, logger="contamlab")
    try:
        monkeypatch.setenv("LOCAL_RANK", "1")
        with stage_lock(stage_dir, "base"):
            # rank 1 neither waited (a wait would last the holder's 600 s) nor took the lock: rank 0 still holds it
            assert _waited(caplog) == []
            assert lock_path(stage_dir).read_text().startswith(f"pid {holder.pid} ")
    finally:
        holder.kill()
        holder.wait(timeout=30)
