"""The detector tables of the report: one row per detection job, and the leaderboard (detector × contamination form).

The leaderboard puts every detector's AUROC (95 % stratified bootstrap interval), TPR at 5 % and 1 % FPR, the clean
control's AUROC and its cost side by side for the verbatim leak (``arith``, GSM8K) and the paraphrased leak
(``arith_pq``, PQ), sorted by AUROC on the verbatim form: the simulation knows which items leaked, so every method
is scored on the same items against the truth.
"""

from __future__ import annotations

import json
from typing import Any

COLUMNS = (
    "detector",
    "model",
    "domain",
    "AUROC contaminated",
    "AUROC clean",
    "TPR@5%FPR",
    "TPR@1%FPR",
    "FPR@95%TPR",
    "dataset score contaminated",
    "dataset score clean",
)


def _fmt(value: Any) -> str:
    return "" if value is None else f"{value:.3f}" if isinstance(value, float) else str(value)


def unique_detections(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The results with a ``detection``, one per detector (with its settings) × model × domain.

    Every job of a grid carries the detection of its model and domain (computed once, read from the cache by the
    others): listed once per job it would fill the tables and the ROC legend with copies.
    """
    seen: dict[str, dict[str, Any]] = {}
    for result in results:
        det, cfg = result.get("detection"), result.get("config", {})
        if not det:
            continue
        key = json.dumps(
            [det.get("detector"), cfg.get("model", {}).get("name"), cfg.get("domain", {}).get("name")],
            sort_keys=True,
            default=str,
        )
        seen.setdefault(key, result)
    return list(seen.values())


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
        "TPR@1%FPR": co.get("tpr_at_1fpr"),
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
    rows = [detector_row(r) for r in unique_detections(results)]
    if not rows:
        return ""
    rows.sort(key=lambda r: (r["model"], r["domain"], -(r["AUROC contaminated"] or 0.0), r["detector"]))
    lines = ["| " + " | ".join(COLUMNS) + " |", "|" + "---|" * len(COLUMNS)]
    lines += ["| " + " | ".join(_fmt(row[c]) for c in COLUMNS) + " |" for row in rows]
    return "\n".join(lines)


FORMS = ("verbatim", "paraphrased")


def leak_form(result: dict[str, Any]) -> str:
    """``paraphrased`` when the leak reached the model reworded (``arith_pq``, ``pq``), else ``verbatim``."""
    domain = result.get("config", {}).get("domain", {})
    return "paraphrased" if domain.get("leak_style") == "pq" or domain.get("name") == "pq" else "verbatim"


def _cost(det: dict[str, Any]) -> float | None:
    walls = [det.get(stage, {}).get("wall_s") for stage in ("contaminated", "clean")]
    return None if any(w is None for w in walls) else float(sum(walls))


def _auroc_cell(entry: dict[str, Any]) -> str:
    auroc, ci = entry.get("auroc"), entry.get("auroc_ci")
    if auroc is None:
        return str(entry.get("too_few") or "")  # below the minimum of items per side: the reason, not a blank
    return f"{auroc:.3f} [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else f"{auroc:.3f}"


def leaderboard(results: list[dict[str, Any]]) -> str:
    """Markdown leaderboard: detector × form, sorted by AUROC on the verbatim form ('' without detection results).

    Per form: AUROC [95 % CI], TPR@5%FPR, TPR@1%FPR, the clean control's AUROC, and the cost in seconds (both
    models' scoring; a detector that reuses the shared cached pass of an earlier one pays only its own part).
    """
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    for result in results:
        det = result.get("detection")
        if not det:
            continue
        name = det.get("detector", {}).get("name", "?")
        cells.setdefault(name, {})[leak_form(result)] = det
    if not cells:
        return ""
    forms = [f for f in FORMS if any(f in by_form for by_form in cells.values())]
    header = ["detector"]
    for form in forms:
        header += [f"AUROC {form} [95% CI]", "TPR@5%FPR", "TPR@1%FPR", "clean control", "cost s"]

    def order(name: str) -> tuple[float, str]:
        first = cells[name].get(forms[0], {}).get("contaminated", {}).get("auroc")
        return (-(first if first is not None else -1.0), name)

    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for name in sorted(cells, key=order):
        row = [name]
        for form in forms:
            det = cells[name].get(form)
            if det is None:
                row += [""] * 5
                continue
            co, cl = det.get("contaminated", {}), det.get("clean", {})
            cost = _cost(det)
            row += [
                _auroc_cell(co),
                _fmt(co.get("tpr_at_5fpr")),
                _fmt(co.get("tpr_at_1fpr")),
                _fmt(cl.get("auroc")),
                "" if cost is None else f"{cost:.1f}",
            ]
        lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def comparison_lines(results: list[dict[str, Any]]) -> list[str]:
    """One line per model-comparison test (ConStat): p-value and the estimated uncontaminated score vs the truth."""
    out = []
    for result in unique_detections(results):
        cmp = (result.get("detection") or {}).get("comparison")
        if not cmp:
            continue
        low, high = cmp["estimated_clean_ci"]
        truth = cmp.get("truth_clean_score")
        covers = {True: "covers it", False: "misses it", None: "no truth"}[cmp.get("covers_truth")]
        out.append(
            f"- {result['detection']['detector']['name']} on {result['config']['domain']['name']} "
            f"({leak_form(result)}): contaminated model {cmp['score_original']:.3f} on the original benchmark, "
            f"{cmp['score_rephrased']:.3f} on the rephrased one; estimated uncontaminated score "
            f"{cmp['estimated_clean']:.3f} [{low:.3f}, {high:.3f}] against the clean model's measured "
            f"{_fmt(truth)} ({covers}); effect {cmp['effect']:+.3f} "
            f"[{cmp['effect_ci'][0]:+.3f}, {cmp['effect_ci'][1]:+.3f}], p = {cmp['p_value']:.4f}"
        )
    return out


def roc_figure(results: list[dict[str, Any]], path, title: str = ""):
    """ROC curves of every detector, one panel per form: contaminated model solid, clean control dashed.

    Returns:
        The PNG's path, or None when no result carries ROC points.
    """
    from contamlab.analysis.figures import roc_panels

    curves: dict[str, list[tuple[str, dict, dict | None]]] = {}
    for result in unique_detections(results):
        det = result.get("detection")
        if not det or not det.get("contaminated", {}).get("roc"):
            continue
        curves.setdefault(leak_form(result), []).append(
            (det["detector"]["name"], det["contaminated"]["roc"], det.get("clean", {}).get("roc"))
        )
    if not curves:
        return None
    return roc_panels({f: sorted(curves[f], key=lambda c: c[0]) for f in FORMS if f in curves}, path, title)
