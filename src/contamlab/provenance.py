"""What a results.json records about the run itself: the code's commit, the packages, the machine.

Numbers are only comparable when their provenance is: the same commit and package versions give the same samples,
and the machine explains the timings.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = (
    "contamlab",
    "torch",
    "transformers",
    "peft",
    "lightning",
    "hydra-core",
    "numpy",
    "scikit-learn",
    "rapidfuzz",
    "rouge-score",
    "vllm",
)


def _git(root: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def run_metadata() -> dict[str, Any]:
    """Commit of the code that ran (and whether its tree had changes), package versions, Python, machine, accelerator.

    The commit is read from the checkout the ``contamlab`` package is imported from (None for an installed wheel).
    """
    import torch

    root = Path(__file__).resolve().parent
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    accelerator = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "git_commit": _git(root, "rev-parse", "HEAD"),
        "git_dirty": None if status is None else bool(status),
        "packages": {p: v for p in PACKAGES if (v := _version(p)) is not None},
        "python": sys.version.split()[0],
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "accelerator": accelerator,
        },
    }
