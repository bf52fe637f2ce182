"""Markdown cells and tables of the reports and the generated docs: one format for every table.

A metric cell is a row's value at three decimals with its 95 % interval (``0.287 [0.254, 0.316]``), a paired
difference is signed (``+0.012 [-0.022, +0.043]``), and a value that did not run is an en dash.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

MISSING = "–"


def table(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    """A Markdown table: the header, the rule, one line per row of ``body``."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in body])


def metric_cell(row: dict[str, Any] | None, key: str, ci: bool = True) -> str:
    """``row``'s ``all/<key>`` at three decimals, with its interval where ``ci`` and the row has one."""
    value = None if row is None else row.get(f"all/{key}")
    if value is None:
        return MISSING
    lo, hi = row.get(f"all/{key}_lo"), row.get(f"all/{key}_hi")
    return f"{value:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if ci and lo is not None else "")


def difference_cell(d: tuple[float, float, float] | None) -> str:
    """A paired difference ``(point, low, high)``, signed, or :data:`MISSING` where none was computed."""
    return MISSING if d is None else f"{d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}]"
