"""Where a study's time went: the wall time of every evaluate.py job under a directory, from its results.json.

    python -m contamlab.analysis.profile outputs/reproduce      # make reproduce-profile

Prints one row per job (sweep, strategy or detector, wall seconds, its phases and sampling rates) and each sweep's
total, slowest sweep first. The numbers are the jobs' own ``timings`` records; nothing is re-run.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def job_rows(root: Path) -> list[dict]:
    """One row per ``results.json`` below ``root``: its sweep, job name, wall seconds and timing details."""
    rows = []

    def order(path: Path) -> tuple[str, int, str]:  # Hydra numbers a sweep's jobs: 0_..., 1_..., 10_...
        number = path.parent.name.split("_", 1)[0]
        return path.parts[-3], int(number) if number.isdigit() else -1, path.parent.name

    for path in sorted(root.glob("*/*/results.json"), key=order):
        try:
            result = json.loads(path.read_text())
        except (OSError, ValueError) as err:  # a job still running or a damaged file: say so, keep the rest
            rows.append(
                {"sweep": path.parts[-3], "job": path.parent.name, "wall_s": None, "detail": f"unreadable: {err}"}
            )
            continue
        timings, config = result.get("timings", {}), result.get("config", {})
        detector = (config.get("detector") or {}).get("name")
        strategy = config.get("strategy") or {}
        name = detector if detector not in (None, "none") else strategy.get("name", path.parent.name)
        if strategy.get("name") == "railcap":  # the Table 4 ablation varies these
            name += f" (n = {strategy.get('n')}, {strategy.get('mode')})"
        detail = [f"{phase} {seconds:.0f} s" for phase, seconds in timings.get("phases", {}).items()]
        for model in ("clean", "contaminated"):
            sampled = timings.get(model) or {}
            if sampled.get("generated_tokens"):
                detail.append(f"{model} {sampled['generated_tokens']:,} tok at {sampled['tokens_per_s']:,.0f} tok/s")
            if sampled.get("wrap_s", 0) >= 1:  # the strategy's own setup (shortcut: locating the neurons)
                detail.append(f"{model} strategy setup {sampled['wrap_s']:.0f} s")
        rows.append(
            {"sweep": path.parts[-3], "job": name, "wall_s": timings.get("wall_s"), "detail": ", ".join(detail)}
        )
    return rows


def render(rows: list[dict]) -> str:
    """The rows as a Markdown table, sweeps ordered by their total time, then each sweep's total."""
    totals: dict[str, float] = {}
    for row in rows:
        totals[row["sweep"]] = totals.get(row["sweep"], 0.0) + (row["wall_s"] or 0.0)
    order = sorted(totals, key=lambda sweep: -totals[sweep])
    lines = ["| sweep | job | wall (s) | where |", "|---|---|---|---|"]
    for sweep in order:
        for row in (r for r in rows if r["sweep"] == sweep):
            wall = "?" if row["wall_s"] is None else f"{row['wall_s']:.1f}"
            lines.append(f"| {sweep} | {row['job']} | {wall} | {row['detail']} |")
    lines += ["", "| sweep | total (s) |", "|---|---|"]
    lines += [f"| {sweep} | {totals[sweep]:.1f} |" for sweep in order]
    lines.append(f"| all jobs | {sum(totals.values()):.1f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    """Print the profile of the directory given on the command line."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="a study directory (e.g. outputs/reproduce)")
    args = parser.parse_args(argv)
    if not args.root.is_dir():
        raise SystemExit(f"{args.root}: no such directory (run make reproduce first)")
    rows = job_rows(args.root)
    if not rows:
        raise SystemExit(f"{args.root}: no results.json below it")
    print(render(rows))


if __name__ == "__main__":
    main()
