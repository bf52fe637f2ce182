"""The default world's study as committed artifacts, and the tables generated from them (``make reproduce``).

``make reproduce`` runs "Zero Gap Is Not Restoration"'s study on a simulated world: Tables 1–4 (every strategy with
the noise floor, the RailCap ablation), Figures 1–2 and the detector leaderboard, on the verbatim leak (``arith``)
and the paraphrased one (``arith_pq``). ``collect`` keeps, of every job the report counts (a job repeated in another
sweep counts once, as in :func:`contamlab.analysis.results.metric_rows`), the files the tables are computed from —
``results.json``, ``per_question.csv`` and ``detection_per_question.csv`` — under ``results/reproduce/<world>/``,
with ``run.json``: the study's command and wall time, and each job's evaluate.py command. Each ``results.json``
keeps its job's config, commit, machine and timings. ``python -m contamlab.analysis.report
results/reproduce/<world>`` rebuilds the whole report (figures included) from them.

``tables`` writes the generated blocks of ``docs/results.md`` (per world: the strategies with paired differences
against Identity, the RailCap ablation, the paper's claims, Figures 1–2, the detectors) and the README's table, from
those files alone; ``tests/test_reproduce_artifacts.py`` fails when a block differs from what the files give, and
recomputes the metrics with plain loops.

    python -m contamlab.studies.reproduce collect outputs/reproduce --world arith
    python -m contamlab.studies.reproduce tables
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contamlab.analysis.claims import claims, paired_sappg
from contamlab.analysis.detectors import comparison_lines, leaderboard, leak_form, unique_detections
from contamlab.analysis.markdown import difference_cell, metric_cell, table
from contamlab.analysis.report import table4
from contamlab.analysis.results import (
    FLOOR,
    FLOOR_LABEL,
    is_main_row,
    label_rows,
    load_results,
    metric_rows,
    strategy_order,
)
from contamlab.io import atomic_write_text
from contamlab.studies.blocks import with_block
from contamlab.studies.run_files import keep_jobs, load_kept

ARTIFACTS = Path("results/reproduce")
RESULTS = Path("docs/results.md")
README = Path("README.md")
#: The files of a job that the tables read.
KEEP = ("results.json", "per_question.csv", "detection_per_question.csv")
#: The world whose table the README shows (the default world, v2).
DEFAULT_WORLD = "arith"
#: The generated blocks of docs/results.md, per world, in page order.
BLOCKS = ("strategies", "ablation", "claims", "figures", "detectors")
COMMAND = "python -m contamlab.studies.reproduce tables"


def markers(world: str, block: str) -> tuple[str, str]:
    """The begin and end markers of one generated block (``block`` ``readme``: the README's)."""
    tag = f"reproduce:{world}:{block}"
    return f"<!-- {tag}:begin (generated: {COMMAND}) -->", f"<!-- {tag}:end -->"


# -- collect ----------------------------------------------------------------------------------------------------------
def collect(run_dir: Path, world: str, out: Path = ARTIFACTS, wall_s: float | None = None) -> Path:
    """Keep the counted jobs' files of a ``make reproduce`` run in ``out/<world>``; return that folder."""
    results = load_results(run_dir)
    if not results:
        raise SystemExit(f"{run_dir}: no results.json below it; run make reproduce first")
    dropped: list[tuple[Path, Path]] = []
    metric_rows(results, dropped)
    # a repeated job that also drew Figure 1 or 2 stays: the figures live in its results.json only
    figures = {path for path, result in results if "figure1" in result or "stability" in result}
    repeats = {old for old, _ in dropped} - figures
    record = {
        "command": "make reproduce" if world == DEFAULT_WORLD else f"make reproduce ARITH={world} (see Makefile)",
        "world": world,
        "wall_s": wall_s,
        "repeats_dropped": sorted(old.parent.relative_to(run_dir).as_posix() for old in repeats),
    }
    jobs = [path.parent for path, _ in results if path not in repeats]
    return keep_jobs(jobs, run_dir, out / world, "evaluate.py", KEEP[1:], record)


# -- reading the artifacts --------------------------------------------------------------------------------------------
class World:
    """One world's committed jobs, read as the report reads a run: rows per (domain), main rows, detections."""

    def __init__(self, folder: Path):
        self.results = load_kept(folder)
        if not self.results:
            raise SystemExit(f"{folder}: no results.json; run make reproduce, then collect")
        self.rows = metric_rows(self.results)
        self.run = json.loads((folder / "run.json").read_text())
        domains = sorted({r["domain"] for r in self.rows})
        forms = {r["config"]["domain"]["name"]: leak_form(r) for _, r in self.results}
        #: The domains, the verbatim leak first.
        self.domains = sorted(domains, key=lambda d: (forms[d] != "verbatim", d))

    def main(self, domain: str) -> list[dict[str, Any]]:
        """The domain's main-table rows (every strategy at its main setting, All-Zero, the floor), paper order."""
        rows = label_rows([r for r in self.rows if is_main_row(r) and r["domain"] == domain])
        return sorted(rows, key=strategy_order)

    def railcap(self, domain: str) -> list[dict[str, Any]]:
        """The domain's RailCap rows (Table 4's ablation, the main setting among them)."""
        return [r for r in self.rows if r["domain"] == domain and r["strategy_name"] == "railcap"]

    def block(self, domain: str, name: str) -> dict[str, Any] | None:
        """The ``figure1`` or ``stability`` block of the domain's job that ran it."""
        return next((r[name] for _, r in self.results if name in r and r["config"]["domain"]["name"] == domain), None)


# -- the blocks -------------------------------------------------------------------------------------------------------
def strategies(world: World) -> str:
    """Tables 1–2 in one: each strategy's metrics on the verbatim leak, SA-PPG on each leak, paired vs Identity."""
    first = world.domains[0]
    by = {d: {r["label"]: r for r in world.main(d)} for d in world.domains}
    labels = [r["label"] for r in world.main(first)]
    keys = ("g_ap", "g_app", "delta_plus", "delta_minus", "a_ppg")
    wall = world.run["wall_s"]
    header = ["strategy", "G-AP", "G-APP", "Δ⁺", "Δ⁻", "A-PPG", *(f"SA-PPG {d}" for d in world.domains)]
    body = [
        [label, *(metric_cell(by[first][label], k, ci=False) for k in keys)]
        + [metric_cell(by[d].get(label), "sa_ppg") for d in by]
        for label in labels
    ]
    # the floor and All-Zero are references, not strategies (and the floor has no job of its own to pair with)
    compared = [n for n in labels if n not in ("identity", "all_zero", FLOOR_LABEL)]
    paired = [
        [n, *(difference_cell(paired_sappg(by[d]["identity"], by[d][n])) if n in by[d] else "" for d in by)]
        for n in compared
    ]
    split = [[r["label"], f"{r['leaked/sa_ppg']:.3f}", f"{r['unleaked/sa_ppg']:.3f}"] for r in world.main(first)]
    return "\n".join(
        [
            f"{len(world.run['jobs'])} jobs; the study's wall time {wall // 60:.0f} min {wall % 60:.0f} s.",
            "",
            table(header, body),
            "",
            f"(G-AP to A-PPG on {first}.) Identity − strategy on SA-PPG, paired (same questions, same clean batch; "
            "95 % stratified paired bootstrap):",
            "",
            table(["strategy", *(f"Identity − strategy, {d}" for d in world.domains)], paired),
            "",
            f"SA-PPG on the leaked and the unleaked questions ({first}):",
            "",
            table(["strategy", "leaked", "unleaked"], split),
        ]
    )


def ablation(world: World) -> str:
    """Table 4 on the verbatim leak: RailCap's n sweep and the ban, All-Zero and the floor as references."""
    first = world.domains[0]
    by = {r["strategy_name"]: r for r in world.main(first)}
    return table4(world.railcap(first), by.get("all_zero"), by.get(FLOOR))


def claims_block(world: World) -> str:
    """The paper's claims on each leak: the setting's evidence and the verdict, a column pair per domain."""
    per_domain = [
        claims(world.main(d), world.railcap(d), world.block(d, "figure1"), world.block(d, "stability"))
        for d in world.domains
    ]
    header = ["claim (verdict rule)", "paper (Llama-2 × GSM8K)"]
    for d in world.domains:
        header += [f"{d} (95 % interval)", "verdict"]
    body = []
    for rows in zip(*per_domain):
        cells = [rows[0][0], rows[0][1]]
        for row in rows:
            cells += [row[2], row[3]]
        body.append(cells)
    return table(header, body)


def figures(world: World) -> str:
    """Figure 1 (collapse onto greedy; the clean token's rank where the models first disagree) and Figure 2."""
    body = []
    for d in world.domains:
        fig1 = world.block(d, "figure1")
        for group in ("leaked", "unleaked") if fig1 else ():
            s = fig1[group]
            body.append([d, group, f"{s['rouge_l_mean']:.3f}", str(s["divergence_steps"]), f"{s['rank2_share']:.2f}"])
    lines = [table(["domain", "group", "ROUGE-L to greedy", "divergence steps", "runner-up share"], body)]
    for d in world.domains:
        st = world.block(d, "stability")
        if st:
            lines += [
                "",
                f"Figure 2 ({d}): two independent clean batches differ per question by {st['gap_r01']:.3f} under "
                f"r⁰¹ and {st['gap_rhat']:.3f} under r̂ (m = {st['m']}).",
            ]
    return "\n".join(lines)


def detectors(world: World) -> str:
    """The leaderboard (AUROC leaked vs unleaked, both leaks; the clean model is the control) and ConStat's test."""
    detection = unique_detections([r for _, r in world.results])
    return "\n".join([leaderboard(detection), "", *comparison_lines(detection)]).rstrip()


def readme_block(world: World) -> str:
    """The README's table: SA-PPG with its interval and Δ⁺ / Δ⁻ per strategy, on the verbatim leak."""
    rows = [r for r in world.main(world.domains[0]) if r["strategy_name"] != "all_zero"]  # a reference, 0.500
    body = [
        [
            r["label"],
            metric_cell(r, "sa_ppg"),
            f"{metric_cell(r, 'delta_plus', False)} / {metric_cell(r, 'delta_minus', False)}",
        ]
        for r in rows
    ]
    for row in body:
        if row[0] == "Clean, 2nd batch":
            row[0] += " (noise floor)"
    return table(["strategy", "SA-PPG", "Δ⁺ / Δ⁻"], body)


BUILDERS = {
    "strategies": strategies,
    "ablation": ablation,
    "claims": claims_block,
    "figures": figures,
    "detectors": detectors,
}


def worlds(folder: Path = ARTIFACTS) -> dict[str, World]:
    """Every collected world under ``folder``, by name."""
    return {p.name: World(p) for p in sorted(folder.iterdir()) if (p / "run.json").is_file()}


def with_blocks(text: str, found: dict[str, World]) -> str:
    """``text`` with every generated block of docs/results.md whose markers it holds replaced."""
    for name, world in found.items():
        for block in BLOCKS:
            begin, end = markers(name, block)
            if begin in text:
                text = with_block(text, BUILDERS[block](world), begin, end)
    return text


def tables(folder: Path = ARTIFACTS) -> None:
    """Write docs/results.md's generated blocks and the README's table from the artifacts."""
    found = worlds(folder)
    if DEFAULT_WORLD not in found:
        raise SystemExit(f"no {folder / DEFAULT_WORLD}: run make reproduce first")
    atomic_write_text(RESULTS, with_blocks(RESULTS.read_text(), found))
    begin, end = markers(DEFAULT_WORLD, "readme")
    atomic_write_text(README, with_block(README.read_text(), readme_block(found[DEFAULT_WORLD]), begin, end))


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: ``collect RUN_DIR --world NAME [--out DIR] [--wall-s S]`` or ``tables``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="a make reproduce run -> results/reproduce/<world>/")
    c.add_argument("run_dir", type=Path)
    c.add_argument("--world", default=DEFAULT_WORLD, help="the world's name (its verbatim domain: arith, arith_v1)")
    c.add_argument("--out", type=Path, default=ARTIFACTS)
    c.add_argument("--wall-s", type=float, default=None, help="the study's wall time, as make reproduce measured it")
    sub.add_parser("tables", help=f"the artifacts in {ARTIFACTS} -> {RESULTS}'s blocks and the README's table")
    args = parser.parse_args(argv)
    if args.command == "collect":
        print(collect(args.run_dir, args.world, args.out, args.wall_s))
    else:
        tables()
        print(RESULTS)


if __name__ == "__main__":
    main()
