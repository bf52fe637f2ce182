"""The detector table of the report (the meta-experiment): one row per detection job of a grid."""

from __future__ import annotations

from typing import Any

COLUMNS = (
    "detector",
    "model",
    "domain",
    "AUROC contaminated",
    "AUROC clean",
    "TPR@5%FPR",
    "FPR@95%TPR",
    "dataset score contaminated",
    "dataset score clean",
)


def _fmt(value: Any) -> str:
    return "" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def detector_row(result: dict[str, Any]) -> dict[str, Any]:
    """The table cells of one results.json dict (with a ``detection`` key)."""
    det, cfg = result["detection"], result.get("config", {})
    co, cl = det.get("contaminated", {}), det.get("clean", {})
    return {
        "detector": det.get("detector", {}).get("name", "?"),
        "model": cfg.get("model", {}).get("name", "?"),
        "domain": cfg.get("domain", {}).get("name", "?"),
        "AUROC contaminated": co.get("auroc"),
        "AUROC clean": cl.get("auroc"),
        "TPR@5%FPR": co.get("tpr_at_5fpr"),
        "FPR@95%TPR": co.get("fpr_at_95tpr"),
        "dataset score contaminated": co.get("dataset_score"),
        "dataset score clean": cl.get("dataset_score"),
    }


def detector_table(results: list[dict[str, Any]]) -> str:
    """Markdown table of detection results, best AUROC on the contaminated model first.

    Args:
        results: results.json dicts; those without a ``detection`` key are skipped.

    Returns:
        The table ('' when no result has detection).
    """
    rows = [detector_row(r) for r in results if r.get("detection")]
    if not rows:
        return ""
    rows.sort(key=lambda r: (r["model"], r["domain"], -(r["AUROC contaminated"] or 0.0), r["detector"]))
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_fmt(row[c]) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines)
