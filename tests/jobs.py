"""In-process job runs: compose a config as the entry point would, validate it, call the job's ``run(cfg)``.

The lightning-hydra-template pattern: a job's behaviour is tested without a process around it, so a test pays for
the work, not for starting Python, torch and transformers again. What only a process adds (exit codes, the one-line
errors on stderr, signals, Hydra's multirun launcher) stays in the process-level tests (:mod:`e2e`, ``prewarmed``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from e2e import TINY

from contamlab.config import compose
from contamlab.validation import validate


def evaluate_config(tmp: Path, out: Path, *overrides: str) -> Any:
    """The config ``evaluate.py`` builds on the tiny world trained under ``tmp``, writing into ``out``."""
    cfg = compose(
        "evaluate",
        [
            *[o for o in TINY if not o.startswith("trainer.")],
            f"paths.models_dir={tmp / 'models'}",
            f"paths.cache_dir={tmp / 'cache'}",
            f"paths.output_dir={out}",
            "m=4",
            "max_new_tokens=24",
            "metric.bootstrap=50",
            "progress=false",
            *overrides,
        ],
    )
    validate(cfg)  # what run_safely does before the job: a test config must be a valid one
    return cfg


def run_evaluate(tmp: Path, out: Path, *overrides: str) -> dict[str, Any]:
    """``python evaluate.py <overrides>`` in-process; returns the job's results (also in ``out/results.json``)."""
    from contamlab.jobs.evaluate import run

    out.mkdir(parents=True, exist_ok=True)
    return run(evaluate_config(tmp, out, *overrides))
