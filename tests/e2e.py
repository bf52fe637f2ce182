"""Shared helpers of the end-to-end tests: tiny overrides and runners for the real entry points as processes.

For the tests about what a process adds (exit status, stderr, console output, multirun); a job's results are tested
in-process (:mod:`jobs`).
"""

import functools
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import prewarmed

REPO = Path(__file__).resolve().parents[1]
TINY = [
    # The default world's forms at a plumbing size, with world v1's terse solutions: a one-layer model writes some
    # right answers within the tests' 24 new tokens, which chain-of-thought solutions would not fit.
    "++domain.solutions=terse",  # ++: also on arith_mc, whose config (world v1) has no such key
    "domain.leak_epochs=2",
    "domain.generator.n_train=300",
    "domain.generator.n_test=20",
    "model.arch.hidden_size=32",
    "model.arch.num_layers=1",
    "model.arch.num_heads=2",
    "model.arch.intermediate_size=64",
    "model.tokenizer.vocab_size=400",
    "base.steps=20",
    "base.batch=2",
    "base.seq_len=64",
    "finetune.clean_n_domain=10",
    "finetune.general.n=4",
    "finetune.epochs=1",
    "trainer.enable_progress_bar=false",
    "logger=csv",
]
# evaluate.py's settings on the tiny world of the tests: few samples, short answers, a short bootstrap
EVALUATE = ("m=4", "max_new_tokens=24", "metric.bootstrap=50", "progress=false")

# The small world (configs/experiment/small_world.yaml, also make smoke's): the default world at a size that trains
# in under a minute; its verbatim leak stays detectable (docs/world.md#the-small-world).
SMALL_WORLD = ["experiment=small_world"]


@functools.cache
def stamp() -> str:
    """``STAMP=<file>``: a make command line that treats the venv as installed (the suite runs in it).

    A fresh file, newer than pyproject.toml, so that its install rule (``$(STAMP): pyproject.toml``) never runs.
    (``STAMP=Makefile`` would make that rule one for the Makefile itself, which make remakes before anything else
    wherever a fresh clone left pyproject.toml the newer file: it ran the install recipe beside the tests.)
    """
    path = Path(tempfile.mkdtemp(prefix="contamlab-stamp-")) / "installed"
    path.touch()
    return f"STAMP={path}"


def train(tmp: Path, *overrides: str, wait: bool = True, tag: str = "run"):
    args = [
        sys.executable,
        str(REPO / "train.py"),
        *TINY,
        f"paths.models_dir={tmp / 'models'}",
        f"hydra.run.dir={tmp / 'hydra' / tag}",
        *overrides,
    ]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if not wait:
        return subprocess.Popen(args, cwd=tmp, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return prewarmed.run(args, cwd=tmp, env=env, capture_output=True, text=True, timeout=600)


def stage_dirs(tmp: Path) -> dict[str, Path]:
    root = tmp / "models" / "tiny" / "arith"
    if not root.is_dir():
        return {}
    # a stage's lock file (.<stage dir>.lock) sits beside it
    return {p.name.rsplit("-", 1)[0]: p for p in root.iterdir() if not p.name.endswith(".partial") and p.name[0] != "."}


def evaluate(tmp: Path, *overrides: str, multirun: bool = False, tag: str = "eval", fresh: bool = False):
    """Run the real evaluate.py on the tiny world trained under ``tmp``."""
    own_logger = any(o.startswith("logger=") for o in overrides)
    sweep = [f"hydra.sweep.dir={tmp / 'sweeps' / tag}"] if multirun else [f"hydra.run.dir={tmp / 'runs' / tag}"]
    args = [
        sys.executable,
        str(REPO / "evaluate.py"),
        *(["-m"] if multirun else []),
        *[o for o in TINY if not o.startswith("trainer.") and not (o.startswith("logger=") and own_logger)],
        f"paths.models_dir={tmp / 'models'}",
        f"paths.cache_dir={tmp / 'cache'}",
        *EVALUATE,
        *sweep,
        *overrides,
    ]
    return prewarmed.run(args, cwd=tmp, capture_output=True, text=True, timeout=600, fresh=fresh)
