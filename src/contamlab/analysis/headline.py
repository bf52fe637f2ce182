"""The headline table of a sweep (`make smoke`, the README): strategies and detector, with how to read them.

Usage: ``python -m contamlab.analysis.headline <sweep dir>``
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from contamlab.analysis.report import STRATEGY_ORDER, load_results

HOW_TO_READ = """\
How to read it (docs/methods/metrics.md): SA-PPG is the mean per-question distance between the clean model's solve
probability and the mitigated contaminated model's, stratified by the clean one's; G-AP compares accuracies only,
so a strategy can score G-AP 0 without restoring anything. Lower is better for both; "Clean, 2nd batch" (a second
sample of the clean model) is the floor that sampling noise alone reaches. The loss detector's AUROC separates
leaked from unleaked questions: 0.5 is chance, 1.0 perfect; the clean model is the control."""


def headline_table(sweep_dir: str | Path) -> str:
    """SA-PPG [95 % CI], G-AP, Δ⁺ and Δ⁻ per strategy plus the noise floor, and the detector's AUROCs."""
    jobs = [results for _, results in load_results(sweep_dir) if "metrics" in results]
    if not jobs:
        raise SystemExit(f"no finished job with metrics below {sweep_dir}")
    order = {name: i for i, name in enumerate(STRATEGY_ORDER)}
    jobs.sort(key=lambda r: (order.get(r["config"]["strategy"]["name"], len(order)), r["config"]["strategy"]["name"]))
    lines = ["| strategy | SA-PPG [95 % CI] | G-AP | Δ⁺ | Δ⁻ |", "|---|---|---|---|---|"]

    def row(name: str, metrics: dict) -> str:
        v, ci = metrics["all"]["values"], metrics["all"].get("ci", {})
        low, high = ci.get("sa_ppg", (float("nan"), float("nan")))
        return (
            f"| {name} | {v['sa_ppg']:.3f} [{low:.3f}, {high:.3f}] | {v['g_ap']:.3f} | {v['delta_plus']:.3f} | "
            f"{v['delta_minus']:.3f} |"
        )

    lines += [row(r["config"]["strategy"]["name"], r["metrics"]) for r in jobs]
    floor = next((r["floor"] for r in jobs if r.get("floor")), None)
    if floor:
        lines.append(row("Clean, 2nd batch", floor["metrics"]))
    detected = next((r for r in jobs if r.get("detection")), None)
    if detected:
        detection, name = detected["detection"], detected["config"]["detector"].get("name", "detector")

        def auroc(entry: dict[str, Any]) -> str:  # none below the minimum of items per side: say so instead
            return f"{entry['auroc']:.3f}" if entry.get("auroc") is not None else str(entry.get("too_few") or "n/a")

        lines += [
            "",
            f"{name}: AUROC leaked vs unleaked, contaminated model {auroc(detection['contaminated'])}, "
            f"clean model (control) {auroc(detection['clean'])} ({detection['counts']['questions']} questions)",
        ]
    config = jobs[0]["config"]
    head = f"model={config['model']['name']} domain={config['domain']['name']}, m={config['m']}"
    return "\n".join([head, "", *lines, "", HOW_TO_READ])


def main() -> None:
    """Print :func:`headline_table` of the sweep directory given on the command line."""
    if len(sys.argv) != 2:
        raise SystemExit("usage: python -m contamlab.analysis.headline <sweep dir>")
    print(headline_table(sys.argv[1]))


if __name__ == "__main__":
    main()
