"""The results loader: every job's ``results.json`` below a folder, and the restoration jobs as flat metric rows.

The report (:mod:`.report`), the headline table (:mod:`.headline`), the multirun summary (:mod:`.summary`) and the
real-LM world's report (:mod:`.real_world`) all read runs through this module, so that they agree on which jobs count
(the newest of repeated jobs), on the noise-floor rows and on the order of strategies.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path
from typing import Any

__all__ = [
    "FLOOR",
    "FLOOR_LABEL",
    "JOB",
    "METRICS",
    "NOISE_FLOOR",
    "RAILCAP_DEFAULT",
    "STRATEGY_ORDER",
    "is_main_row",
    "label_rows",
    "load_results",
    "metric_rows",
    "strategy_label",
    "strategy_order",
]

log = logging.getLogger("contamlab")
METRICS = ("sa_ppg", "a_ppg", "g_app", "g_ap", "delta_plus", "delta_minus", "s_delta_plus", "s_delta_minus")
FLOOR = "clean_2nd"  # the noise-floor reference row
FLOOR_LABEL = "Clean, 2nd batch"
JOB, NOISE_FLOOR = "job", "noise_floor"  # the ``row_kind`` of a job's row and of a setting's noise-floor row
STRATEGY_ORDER = ("identity", "ted", "lne", "shortcut", "railcap", "all_zero", FLOOR)
RAILCAP_DEFAULT = {"n": 4, "mode": "cap", "duplicates": "all"}


def load_results(root: str | Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every results.json below ``root`` (path, parsed), newest first; unreadable files are skipped with a warning."""
    found = []
    for path in Path(root).rglob("results.json"):
        try:
            found.append((path, json.loads(path.read_text())))
        except (OSError, json.JSONDecodeError) as err:
            log.warning("skipping unreadable %s: %s", path, err)
    return sorted(found, key=lambda item: os.path.getmtime(item[0]), reverse=True)


def strategy_label(strategy: dict) -> str:
    """``railcap(n=4, mode=cap, duplicates=all)``: the strategy and its parameters."""
    params = ", ".join(f"{k}={v}" for k, v in strategy.items() if k != "name")
    return f"{strategy['name']}({params})" if params else strategy["name"]


def _flatten(row: dict[str, Any], metrics: dict[str, Any]) -> dict[str, Any]:
    for group, entry in metrics.items():
        for name in METRICS:
            row[f"{group}/{name}"] = entry["values"][name]
            if "ci" in entry and name in entry["ci"]:
                row[f"{group}/{name}_lo"], row[f"{group}/{name}_hi"] = entry["ci"][name]
    return row


def metric_rows(
    results: list[tuple[Path, dict[str, Any]]], dropped: list[tuple[Path, Path]] | None = None
) -> list[dict[str, Any]]:
    """One flat row per restoration job, then one noise-floor row per setting.

    A job's row (``row_kind`` ``job``) has its directory, model, domain, strategy + its parameters and every metric
    per group. A job that repeats an earlier one in ``results`` (same model, domain, strategy, m, questions, sampling
    and model sources; ``load_results`` lists the newest first) is dropped; ``dropped`` collects ``(dropped, kept)``
    paths.

    Each (model, domain, sampling setting, clean model) also gets one noise-floor row (``row_kind`` ``noise_floor``,
    ``strategy_name`` ``clean_2nd``, label "Clean, 2nd batch"), read from the newest job that measured it. Every job of
    a setting scores the same two clean batches against each other, so the floor belongs to the setting, not to the
    job it was read from: its ``job`` is empty, and the floor rows come after the job rows.
    """
    rows, floors, seen = [], [], {}
    for path, result in results:
        if "metrics" not in result:
            continue  # detection-only job
        cfg, strategy = result["config"], result["strategy"]
        sampling = str([cfg.get(k) for k in ("temperature", "seed", "max_new_tokens")])
        sources = result.get("models") or {}
        if "floor" in result:
            floor = _job_row(path, result, FLOOR, FLOOR)
            floor.update(row_kind=NOISE_FLOOR, job="")
            key = (floor["model"], floor["domain"], floor["m"], floor["questions"], sampling, sources.get("clean"))
            if key not in seen:  # every job of a setting measures its floor: not a duplicate run
                seen[key] = path
                floors.append(_flatten(floor, result["floor"]["metrics"]))
        row = _job_row(path, result, strategy_label(strategy), strategy["name"])
        row.update({k: v for k, v in strategy.items() if k in ("n", "mode", "duplicates")})
        key = (
            row["model"],
            row["domain"],
            row["strategy"],
            row["m"],
            row["questions"],
            sampling,
            str(sorted(sources.items())),
        )
        if key in seen:
            if dropped is not None:
                dropped.append((path, seen[key]))
            continue
        seen[key] = path
        rows.append(_flatten(row, result["metrics"]))
    return rows + floors


def _job_row(path: Path, result: dict[str, Any], strategy: str, name: str) -> dict[str, Any]:
    """The identifying columns of one job's row: its kind, directory, model, domain, strategy (label, name), m, N."""
    cfg = result["config"]
    return {
        "row_kind": JOB,
        "job": str(path.parent),
        "model": cfg["model"]["name"],
        "domain": cfg["domain"]["name"],
        "strategy": strategy,
        "strategy_name": name,
        "m": result["counts"]["m"],
        "questions": result["counts"]["questions"],
    }


def label_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Set ``label``: the strategy's name, or its full label where one setting holds several variants of it."""
    count: dict[tuple, int] = {}
    for r in rows:
        k = (r["model"], r["domain"], r["strategy_name"])
        count[k] = count.get(k, 0) + 1
    for r in rows:
        r["label"] = r["strategy_name"] if count[(r["model"], r["domain"], r["strategy_name"])] == 1 else r["strategy"]
        if r["strategy_name"] == FLOOR:
            r["label"] = FLOOR_LABEL
    return rows


def is_main_row(row: dict[str, Any]) -> bool:
    """A strategy at its main-table setting (RailCap ablation variants go to Table 4 only)."""
    return row["strategy_name"] != "railcap" or all(row.get(k) == v for k, v in RAILCAP_DEFAULT.items())


def strategy_order(row: dict[str, Any]) -> tuple[int, str]:
    """Sort key of a result row: the paper's order of strategies (Table 1), then the strategy's label."""
    name = row["strategy_name"]
    return (STRATEGY_ORDER.index(name) if name in STRATEGY_ORDER else len(STRATEGY_ORDER), row["strategy"])
