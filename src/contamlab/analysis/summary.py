"""Aggregating a multirun: every job's results.json → summary.csv and report.md (:mod:`.report`).

Runs at the end of a Hydra multirun (:class:`AggregateCallback`) or by hand: ``python -m contamlab.analysis.summary
<sweep dir>``.

summary.csv has two kinds of rows, told apart by its first column, ``row_kind``:

- ``job``: one per restoration job (a repeated job counts once, the newest kept), with its directory in ``job``, its
  model, domain, strategy label and name, the strategy's parameters and every metric per group (``all/sa_ppg``,
  ``leaked/sa_ppg``, …, with ``_lo`` / ``_hi`` bootstrap bounds);
- ``noise_floor``: one per setting (model, domain, m, questions, sampling, clean model): a second clean batch scored
  against the first ("Clean, 2nd batch", ``strategy`` ``clean_2nd``), the score a perfect strategy would reach. Every
  job of the setting scores the same two clean batches, so this row belongs to none of them: its ``job`` is empty,
  and it comes after the job rows.

Within each kind, rows follow the report: by model, domain, then strategy (Identity first, the RailCap ablation
variants by their labels).

The log line counts jobs, not rows: a grid of two strategies aggregates 2 jobs and 1 noise-floor row.
Detection-only jobs have no restoration metrics and no row; the report lists their detectors.
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

from contamlab.analysis.report import write_report
from contamlab.analysis.results import JOB, STRATEGY_ORDER, load_results, metric_rows
from contamlab.io import atomic_write_text

log = logging.getLogger("contamlab")


def collect(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """summary.csv's rows: one per restoration job below ``sweep_dir``, then one noise-floor row per setting.

    Rows are in the report's order (setting, then strategy as in :data:`STRATEGY_ORDER`), not in the newest-first
    order that :func:`metric_rows` needs to keep the newest of repeated jobs.
    """

    def order(row: dict[str, Any]) -> tuple:
        name = row["strategy_name"]
        rank = STRATEGY_ORDER.index(name) if name in STRATEGY_ORDER else len(STRATEGY_ORDER)
        return row["row_kind"] != JOB, row["model"], row["domain"], rank, row["strategy"]

    return sorted(metric_rows(load_results(sweep_dir)), key=order)


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
        jobs = sum(row["row_kind"] == JOB for row in rows)
        floors = len(rows) - jobs
        log.info(
            "aggregated %d job%s and %d noise-floor row%s into %s",
            jobs,
            "" if jobs == 1 else "s",
            floors,
            "" if floors == 1 else "s",
            sweep_dir / "summary.csv",
        )
    report = write_report(sweep_dir)
    return sweep_dir / "summary.csv" if rows else report


class AggregateCallback(Callback):
    """Hydra callback: aggregate the sweep's results once every job of a multirun has finished."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Write summary.csv and report.md into the sweep directory."""
        write_summary(config.hydra.sweep.dir)


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    write_summary(sys.argv[1])
