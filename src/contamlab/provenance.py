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


#: Tracked paths whose changes cannot change what a run computes: prose and the committed results. A study's last step
#: rewrites its pages and artifacts, and the next study's runs in the same checkout then still count as clean.
NOT_CODE = ("README.md", "CHANGELOG.md", "docs/", "results/")


def changed_paths(status: str) -> list[str]:
    """The paths of ``git status --porcelain`` output (a rename's new path), whatever the status letters' padding."""
    return [line.split(maxsplit=1)[1].split(" -> ")[-1] for line in status.splitlines() if line.strip()]


def changed_code(status: str) -> list[str]:
    """The changed tracked paths of ``git status --porcelain`` output that can change a run: not :data:`NOT_CODE`."""
    return [p for p in changed_paths(status) if not p.startswith(NOT_CODE)]


#: The CPU features that choose torch's matrix-multiply kernels (and so a trained model's last bits): AVX-512 and AMX.
KERNEL_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_tile", "amx_bf16")


def cpu_description(cpuinfo: Path = Path("/proc/cpuinfo")) -> dict[str, Any]:
    """The CPU's model name and the features that decide which kernels torch runs (Linux; empty elsewhere).

    Two CPUs of one architecture string (``x86_64``) can run different matrix-multiply kernels: oneDNN takes AMX
    tiles where a Xeon has them, AVX-512 or AVX2 otherwise, and the sums round differently. A model trained by the same
    command is then the same model on one machine but not bit for bit across machines, so a run records which.

    Args:
        cpuinfo: The kernel's CPU description (its first processor's fields are read).
    """
    import torch

    fields: dict[str, str] = {}
    try:
        for line in cpuinfo.read_text().splitlines():
            key, _, value = line.partition(":")
            fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    flags = set(fields.get("flags", "").split())
    return {
        "model": fields.get("model name"),
        "kernel_flags": [f for f in KERNEL_FLAGS if f in flags],
        "torch_capability": torch.backends.cpu.get_cpu_capability(),
    }


def run_metadata() -> dict[str, Any]:
    """Commit of the code that ran (and whether its tree had changes), package versions, Python, machine, accelerator.

    The commit is read from the checkout the ``contamlab`` package is imported from (None for an installed wheel).
    ``git_dirty`` is whether a tracked file that can change the run's numbers differs from the commit (docs, the
    README, the changelog and ``results/`` cannot: :data:`NOT_CODE`); ``git_changed`` lists every changed tracked path.
    """
    import torch

    root = Path(__file__).resolve().parent
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    accelerator = torch.cuda.get_device_name(0) if torch.cuda.is_available() else None
    return {
        "git_commit": _git(root, "rev-parse", "HEAD"),
        "git_dirty": None if status is None else bool(changed_code(status)),
        "git_changed": None if status is None else changed_paths(status),
        "packages": {p: v for p in PACKAGES if (v := _version(p)) is not None},
        "python": sys.version.split()[0],
        "machine": {
            "platform": platform.platform(),
            "processor": platform.processor() or platform.machine(),
            "cpu": cpu_description(),
            "cpus": os.cpu_count(),
            "torch_threads": torch.get_num_threads(),
            "accelerator": accelerator,
        },
    }
