"""Aggregating a multirun: every job's results.json → summary.csv and report.md (:mod:`.report`).

Runs at the end of a Hydra multirun (:class:`AggregateCallback`) or by hand: ``python -m contamlab.analysis.summary
<sweep dir>``.
"""

from __future__ import annotations

import csv
import io
import logging
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from contamlab.analysis.report import load_results, metric_rows, write_report
from contamlab.io import atomic_write_text

log = logging.getLogger("contamlab")


def collect(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """One flat row per restoration job below ``sweep_dir``: model, domain, strategy, every metric per group."""
    return metric_rows(load_results(sweep_dir))


def write_summary(sweep_dir: str | Path) -> Path | None:
    """Write summary.csv and report.md into ``sweep_dir``; returns the CSV path (None when no job finished)."""
    sweep_dir = Path(sweep_dir)
    rows = collect(sweep_dir)
    if rows:
        fields = list(dict.fromkeys(k for row in rows for k in row))
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
        atomic_write_text(sweep_dir / "summary.csv", buffer.getvalue())
        log.info("aggregated %d jobs into %s", len(rows), sweep_dir / "summary.csv")
    report = write_report(sweep_dir)
    return sweep_dir / "summary.csv" if rows else report


class AggregateCallback(Callback):
    """Hydra callback: aggregate the sweep's results once every job of a multirun has finished."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Write summary.csv and report.md into the sweep directory."""
        write_summary(config.hydra.sweep.dir)


if __name__ == "__main__":
    write_summary(sys.argv[1])
