"""The headline table of a sweep (`make smoke`, the README): strategies and detector, with how to read them.

Usage: ``python -m contamlab.analysis.headline <sweep dir>``
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from contamlab.analysis.results import FLOOR, FLOOR_LABEL, is_main_row, load_results, metric_rows, strategy_order

HOW_TO_READ = """\
How to read it (docs/methods/metrics.md): SA-PPG is the mean per-question distance between the clean model's solve
probability and the mitigated contaminated model's, stratified by the clean one's; G-AP compares accuracies only,
so a strategy can score G-AP 0 without restoring anything. Lower is better for both; "Clean, 2nd batch" (a second
sample of the clean model) is the floor that sampling noise alone reaches. The loss detector's AUROC separates
leaked from unleaked questions: 0.5 is chance, 1.0 perfect; the clean model is the control."""


def headline_table(sweep_dir: str | Path) -> str:
    """SA-PPG [95 % CI], G-AP, Δ⁺ and Δ⁻ per strategy plus the noise floor, and the detector's AUROCs.

    The rows are the report's main table (:func:`contamlab.analysis.results.metric_rows`): a job repeated across
    sweeps counts once, and RailCap's ablation variants stay out (Table 4 of the report has them), so a whole
    ``make reproduce-real`` tree gives one row per strategy. One block per (model, domain).
    """
    results = load_results(sweep_dir)
    rows = [r for r in metric_rows(results) if is_main_row(r)]
    if not rows:
        raise SystemExit(f"no finished job with metrics below {sweep_dir}")
    blocks = []
    for model, domain in sorted({(r["model"], r["domain"]) for r in rows}):
        here = sorted((r for r in rows if (r["model"], r["domain"]) == (model, domain)), key=strategy_order)
        lines = [f"model={model} domain={domain}, m={here[0]['m']}", ""]
        lines += ["| strategy | SA-PPG [95 % CI] | G-AP | Δ⁺ | Δ⁻ |", "|---|---|---|---|---|"]
        for r in here:
            name = FLOOR_LABEL if r["strategy_name"] == FLOOR else r["strategy_name"]
            low, high = r.get("all/sa_ppg_lo", float("nan")), r.get("all/sa_ppg_hi", float("nan"))
            lines.append(
                f"| {name} | {r['all/sa_ppg']:.3f} [{low:.3f}, {high:.3f}] | {r['all/g_ap']:.3f} | "
                f"{r['all/delta_plus']:.3f} | {r['all/delta_minus']:.3f} |"
            )
        blocks.append("\n".join(lines))
    detected = next((r for _, r in results if r.get("detection") and "metrics" in r), None)
    if detected:
        detection, name = detected["detection"], detected["config"]["detector"].get("name", "detector")

        def auroc(entry: dict[str, Any]) -> str:  # none below the minimum of items per side: say so instead
            return f"{entry['auroc']:.3f}" if entry.get("auroc") is not None else str(entry.get("too_few") or "n/a")

        blocks.append(
            f"{name}: AUROC leaked vs unleaked, contaminated model {auroc(detection['contaminated'])}, "
            f"clean model (control) {auroc(detection['clean'])} ({detection['counts']['questions']} questions)"
        )
    return "\n\n".join([*blocks, HOW_TO_READ])


def main() -> None:
    """Print :func:`headline_table` of the sweep directory given on the command line."""
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m contamlab.analysis.headline <sweep dir>")
    print(headline_table(sys.argv[1]))


if __name__ == "__main__":
    main()
