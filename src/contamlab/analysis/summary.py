"""Aggregating a multirun: every job's results.json → summary.csv and a Markdown table (report.md).

Runs at the end of a Hydra multirun (:class:`AggregateCallback`) or by hand: ``python -m contamlab.analysis.summary
<sweep dir>``.
"""

from __future__ import annotations

import csv
import io
import json
import logging
import sys
from pathlib import Path
from typing import Any

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from contamlab.io import atomic_write_text

log = logging.getLogger("contamlab")
METRICS = ("sa_ppg", "a_ppg", "g_app", "g_ap", "delta_plus", "delta_minus", "s_delta_plus", "s_delta_minus")


def _label(strategy: dict) -> str:
    params = ", ".join(f"{k}={v}" for k, v in strategy.items() if k != "name")
    return f"{strategy['name']}({params})" if params else strategy["name"]


def collect(sweep_dir: str | Path) -> list[dict[str, Any]]:
    """One flat row per job: model, domain, strategy, then every metric per group (all / leaked / unleaked)."""
    rows = []
    for path in sorted(Path(sweep_dir).glob("*/results.json")):
        result = json.loads(path.read_text())
        cfg = result["config"]
        row: dict[str, Any] = {
            "job": path.parent.name,
            "model": cfg["model"]["name"],
            "domain": cfg["domain"]["name"],
            "strategy": _label(result["strategy"]),
            "m": result["counts"]["m"],
            "questions": result["counts"]["questions"],
        }
        for group, entry in result["metrics"].items():
            for key in METRICS:
                row[f"{group}/{key}"] = entry["values"][key]
                if "ci" in entry and key in entry["ci"]:
                    row[f"{group}/{key}_lo"], row[f"{group}/{key}_hi"] = entry["ci"][key]
        rows.append(row)
    return rows


def markdown_table(rows: list[dict[str, Any]], group: str = "all") -> str:
    """SA-PPG and its decompositions per job, best (lowest SA-PPG) first, intervals in brackets."""
    header = ["model", "domain", "strategy", *METRICS]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for row in sorted(rows, key=lambda r: r.get(f"{group}/sa_ppg", 1.0)):
        cells = [row["model"], row["domain"], row["strategy"]]
        for key in METRICS:
            value = row.get(f"{group}/{key}")
            lo, hi = row.get(f"{group}/{key}_lo"), row.get(f"{group}/{key}_hi")
            cells.append("" if value is None else f"{value:.4f}" + (f" [{lo:.3f}, {hi:.3f}]" if lo is not None else ""))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_summary(sweep_dir: str | Path) -> Path | None:
    """Write summary.csv and report.md into ``sweep_dir``; returns the CSV path (None when no job finished)."""
    sweep_dir = Path(sweep_dir)
    rows = collect(sweep_dir)
    if not rows:
        log.warning("no results.json under %s; nothing to aggregate", sweep_dir)
        return None
    fields = list(dict.fromkeys(k for row in rows for k in row))
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    writer.writerows(rows)
    atomic_write_text(sweep_dir / "summary.csv", buffer.getvalue())
    report = ["# contamlab grid summary", "", f"{len(rows)} jobs in `{sweep_dir}`.", ""]
    for group in ("all", "leaked", "unleaked"):
        if any(f"{group}/sa_ppg" in r for r in rows):
            report += [f"## {group} questions", "", markdown_table(rows, group), ""]
    atomic_write_text(sweep_dir / "report.md", "\n".join(report))
    log.info("aggregated %d jobs into %s", len(rows), sweep_dir / "summary.csv")
    return sweep_dir / "summary.csv"


class AggregateCallback(Callback):
    """Hydra callback: aggregate the sweep's results once every job of a multirun has finished."""

    def on_multirun_end(self, config: DictConfig, **kwargs: Any) -> None:
        """Write summary.csv and report.md into the sweep directory."""
        write_summary(config.hydra.sweep.dir)


if __name__ == "__main__":
    write_summary(sys.argv[1])
