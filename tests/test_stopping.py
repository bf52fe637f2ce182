"""Stopping a job by a signal: one line with where it stopped and the command that resumes it, exit 128 + signal."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from e2e import REPO, TINY

from contamlab import stopping


def test_exit_codes_are_the_shells():
    assert stopping.exit_code(signal.SIGINT) == 130
    assert stopping.exit_code(signal.SIGTERM) == 143
    assert stopping.signal_number(KeyboardInterrupt()) == signal.SIGINT
    assert stopping.signal_number(stopping.Stopped(signal.SIGTERM)) == signal.SIGTERM


def test_the_message_names_the_innermost_activity_at_the_stop(monkeypatch):
    monkeypatch.setattr(stopping, "_STOPPED_AT", [])
    monkeypatch.setattr(sys, "argv", ["train.py", "domain=arith pq", "seed=1"])
    step = {"n": 3}
    assert stopping.where().startswith("starting up")
    inner = stopping.activity(lambda: f"training at step {step['n']}")
    with pytest.raises(KeyboardInterrupt), stopping.activity("running the job"), inner:
        step["n"] = 7  # read when the stop is reported, not when the activity was named
        raise KeyboardInterrupt
    # the stop was recorded inside the innermost activity, though both have been left since
    assert stopping.stop_message(signal.SIGINT) == (
        "stopped by SIGINT while training at step 7; run the same command to resume: "
        "python train.py 'domain=arith pq' seed=1"
    )


def test_sigterm_raises_stopped_inside_the_block_only():
    with stopping.sigterm_raises(), pytest.raises(stopping.Stopped) as caught:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(1)  # the handler runs at the next bytecode boundary
    assert caught.value.signum == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def _start(tmp: Path, script: str, *overrides: str) -> subprocess.Popen:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = [sys.executable, str(REPO / script), *overrides]
    # stdout (Hydra's log) and stderr (the stop message) in one stream, in the order they were written. SIGINT back
    # to its default in the child: a suite started in the background of a non-interactive shell inherits it ignored,
    # and Python then never raises KeyboardInterrupt.
    return subprocess.Popen(
        args,
        cwd=tmp,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )


def _stop_when(proc: subprocess.Popen, marker: str, signum: int) -> tuple[int, list[str]]:
    """Send ``signum`` once an output line contains ``marker``; the exit code and every output line."""
    lines = []
    try:
        for line in proc.stdout:
            lines.append(line.rstrip("\n"))
            if marker in line:
                proc.send_signal(signum)
                break
        lines += proc.stdout.read().splitlines()
        return proc.wait(timeout=120), lines
    finally:
        proc.kill()  # never left running by a failing test


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_training_says_where_and_how_to_resume(tmp_path, signum):
    overrides = [
        *TINY,
        "base.steps=100000",  # far more than the test waits for
        "trainer.progress_every_n_steps=50",
        f"paths.models_dir={tmp_path / 'models'}",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    proc = _start(tmp_path, "train.py", *overrides)
    # Step 150: after the checkpoint of step 100 (every 100 steps on this stage); the stop lands a few steps later.
    code, lines = _stop_when(proc, "stage base: step 150/", signum)
    assert code == 128 + signum, "\n".join(lines)
    last = lines[-1]
    name = signal.Signals(signum).name
    assert last.startswith(f"contamlab: stopped by {name} while training stage base at step "), last
    assert "it resumes from its checkpoint at step " in last
    assert last.endswith("run the same command to resume: python " + " ".join([str(REPO / "train.py"), *overrides]))
    assert not any("Traceback" in line for line in lines), "\n".join(lines)
    # the checkpoint named in the message is the one the same command resumes from
    saved = int(last.split("checkpoint at step ")[1].split(")")[0])
    (partial,) = (tmp_path / "models" / "tiny" / "arith").glob("base-*.partial")
    from contamlab.training.checkpoints import checkpoint_step

    assert checkpoint_step(partial / "checkpoints" / "last.ckpt") == saved


def _chunks(cache: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in cache.glob("samples/*/chunk-*.parquet")}


@pytest.mark.xdist_group("small_world")
def test_a_stopped_evaluation_keeps_its_chunks_and_says_how_to_resume(small_world, tmp_path):
    overrides = [
        "experiment=small_world",
        f"paths.models_dir={small_world / 'models'}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        f"hydra.run.dir={tmp_path / 'run'}",
        "logger=csv",
        "m=32",
        "chunk_questions=10",
        "progress=false",
    ]
    proc = _start(tmp_path, "evaluate.py", *overrides)
    try:
        deadline = time.monotonic() + 300
        while not _chunks(tmp_path / "cache") and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)  # sampling has written its first chunk and goes on with the next
        kept = _chunks(tmp_path / "cache")
        assert kept, "no sample chunk was written"
        lines = proc.stdout.read().splitlines()
        assert proc.wait(timeout=120) == 143, "\n".join(lines)
    finally:
        proc.kill()
    assert lines[-1].startswith("contamlab: stopped by SIGTERM while sampling "), lines[-1]
    assert f"(the chunks sampled so far are kept in {tmp_path / 'cache' / 'samples'})" in lines[-1]
    command = " ".join([str(REPO / "evaluate.py"), *overrides])
    assert lines[-1].endswith(f"run the same command to resume: python {command}"), lines[-1]
    assert not any("Traceback" in line for line in lines), "\n".join(lines)
    after = _chunks(tmp_path / "cache")
    assert all(after[path] == data for path, data in kept.items())  # what was written before the stop is intact
