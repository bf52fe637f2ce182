"""A study run's job files, kept as a committed artifact folder: the one copy step the studies share.

A Hydra multirun leaves one folder per job (``results.json``, CSVs, logs, figures, ``.hydra/``). :func:`keep_jobs`
copies, of each job under a run folder, the files a study's tables are computed from into ``results/<study>/<name>/``
and writes ``run.json`` beside them: the study's command, its wall time and each job's own command line (from the
job's ``.hydra/overrides.yaml``). Each ``results.json`` keeps its job's config, commit, machine and timings.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from contamlab.analysis.results import load_results
from contamlab.io import atomic_write_json


def overrides_of(job: Path) -> dict[str, str]:
    """A Hydra job's command-line overrides (``.hydra/overrides.yaml``) as ``{key: value}``."""
    lines = yaml.safe_load((job / ".hydra" / "overrides.yaml").read_text()) or []
    return dict(line.split("=", 1) for line in lines)


def keep_jobs(
    jobs: Iterable[Path],
    run_dir: Path,
    dest: Path,
    script: str,
    files: tuple[str, ...],
    record: dict[str, Any],
) -> Path:
    """Copy each job's ``results.json`` and ``files`` from ``run_dir`` to ``dest`` (same relative paths).

    Args:
        jobs: The jobs' folders, each below ``run_dir``.
        run_dir: The run's folder.
        dest: The artifact folder; replaced as a whole (written beside it, then renamed), so an interrupted copy
            leaves the old one.
        script: The entry point the jobs ran (``evaluate.py``), for their command lines.
        files: The other files of a job to keep, where it has them (CSV files).
        record: What ``run.json`` says besides the jobs (the study's command, its wall time ...).

    Returns:
        ``dest``.
    """
    partial, old = dest.with_name(f".{dest.name}.partial"), dest.with_name(f".{dest.name}.old")
    shutil.rmtree(partial, ignore_errors=True)
    commands = {}
    for job in sorted(jobs):
        rel = job.relative_to(run_dir)
        (partial / rel).mkdir(parents=True)
        # results.json without indentation (BenBench's per-item lists triple an indented file); the CSVs as they are
        atomic_write_json(partial / rel / "results.json", json.loads((job / "results.json").read_text()), indent=None)
        for name in files:
            if (job / name).is_file():
                shutil.copyfile(job / name, partial / rel / name)
        over = overrides_of(job)
        commands[rel.as_posix()] = f"python {script} " + " ".join(f"{k}={v}" for k, v in over.items())
    atomic_write_json(partial / "run.json", {**record, "jobs": commands})
    shutil.rmtree(old, ignore_errors=True)
    if dest.exists():
        dest.rename(old)
    partial.rename(dest)
    shutil.rmtree(old, ignore_errors=True)
    return dest


def load_kept(folder: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every ``results.json`` of a kept folder, in path order.

    Not :func:`load_results`' newest-first order: a checkout's file times are those of the checkout, not of the run,
    and a table read from the folder must come out the same on every clone.
    """
    return sorted(load_results(folder), key=lambda item: str(item[0]))
