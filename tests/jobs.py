"""In-process job runs: compose a config as the entry point would, validate it, call the job's ``run(cfg)``.

The lightning-hydra-template pattern: a job's behaviour is tested without a process around it, so a test pays for
the work, not for starting Python, torch and transformers again. What only a process adds (exit codes, the one-line
errors on stderr, console output, signals, Hydra's multirun launcher) stays in the process-level tests (:mod:`e2e`,
``prewarmed``).

A job run here leaves the test process as a process of its own would leave the machine: what a job sets for the rest
of its process (Lightning's ``seed_everything`` writes ``PL_GLOBAL_SEED`` into the environment, train.py sets each
stage's torch thread count) is undone when it returns, so that a later test, or a later process a test starts from
the prewarmed server (whose environment must match), sees the environment it would have seen.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from e2e import EVALUATE, TINY

from contamlab.config import compose
from contamlab.validation import validate


def job_config(task: str, out: Path, *overrides: str) -> Any:
    """The config ``<task>.py <overrides>`` composes, writing into ``out``, validated as ``run_safely`` does first."""
    cfg = compose(task, [*overrides, f"paths.output_dir={out}"])
    validate(cfg)  # what run_safely does before the job: a test config must be a valid one
    return cfg


@contextlib.contextmanager
def _own_process() -> Iterator[None]:
    """Undo what a job leaves in its process: environment variables and torch's thread count."""
    import torch

    env, threads = dict(os.environ), torch.get_num_threads()
    try:
        yield
    finally:
        if dict(os.environ) != env:
            os.environ.clear()
            os.environ.update(env)
        torch.set_num_threads(threads)


def run_job(task: str, cfg: Any) -> Any:
    """The job ``contamlab.jobs.<task>:run`` on ``cfg``, in this process."""
    run = importlib.import_module(f"contamlab.jobs.{task}").run
    Path(cfg.paths.output_dir).mkdir(parents=True, exist_ok=True)  # as Hydra does before the job
    with _own_process():
        return run(cfg)


# -- train.py ---------------------------------------------------------------------------------------------------------
def train_config(tmp: Path, *overrides: str) -> Any:
    """The config ``train.py`` builds for the tiny world under ``tmp`` (``tmp/models``)."""
    return job_config("train", tmp / "runs" / "train", *TINY, f"paths.models_dir={tmp / 'models'}", *overrides)


def run_train(tmp: Path, *overrides: str) -> dict[str, Path]:
    """``python train.py <overrides>`` on the tiny world, in-process; returns the stage directories."""
    return run_job("train", train_config(tmp, *overrides))


def make_trained(tmp_path_factory) -> tuple[Path, dict[str, Path], float]:
    """A tiny default world, trained in-process: its folder, its stage directories and the seconds it took."""
    tmp = tmp_path_factory.mktemp("train")
    t0 = time.perf_counter()
    stages = run_train(tmp)
    return tmp, stages, time.perf_counter() - t0


# -- evaluate.py ------------------------------------------------------------------------------------------------------
def evaluate_config(tmp: Path, out: Path, *overrides: str) -> Any:
    """The config ``evaluate.py`` builds on the tiny world trained under ``tmp``, writing into ``out``."""
    return job_config(
        "evaluate",
        out,
        *[o for o in TINY if not o.startswith("trainer.")],
        f"paths.models_dir={tmp / 'models'}",
        f"paths.cache_dir={tmp / 'cache'}",
        *EVALUATE,
        *overrides,
    )


def run_evaluate(tmp: Path, out: Path, *overrides: str) -> dict[str, Any]:
    """``python evaluate.py <overrides>`` in-process; returns the job's results (also in ``out/results.json``)."""
    return run_job("evaluate", evaluate_config(tmp, out, *overrides))


# -- audit.py ---------------------------------------------------------------------------------------------------------
def run_audit(out: Path, *overrides: str) -> dict[str, Any]:
    """``python audit.py <overrides>`` in-process, writing into ``out``; returns the job's results."""
    return run_job("audit", job_config("audit", out, *overrides))
