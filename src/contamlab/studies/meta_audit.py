"""The meta-audit of the default world as a committed artifact, and docs/results_audit.md's table from it.

``make meta-audit`` audits the default world's simulated models as if they were released: the contaminated model of
each leak (``arith``, ``arith_pq``) and the clean model, at seeds 0 and 1, each against fresh generated non-members
and the other seed's clean model as the reference, with every detector. The simulation knows which model leaked, so
each reading's verdicts count as false alarms (on a clean model) or power (on a contaminated one).
``collect`` keeps each audit's ``results.json`` and ``audit_scores.csv`` under ``results/meta_audit/`` with
``run.json`` (the command, the wall time, each audit's command line); ``tables`` writes docs/results_audit.md's
generated block from them alone (:func:`contamlab.analysis.audit.meta_audit`, the report's table).

    python -m contamlab.studies.meta_audit collect outputs/meta_audit --wall-s 1500
    python -m contamlab.studies.meta_audit tables
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from contamlab.analysis.audit import audit_results, meta_audit, target_label
from contamlab.analysis.results import load_results
from contamlab.io import atomic_write_text
from contamlab.studies.blocks import with_block
from contamlab.studies.run_files import keep_jobs, load_kept

ARTIFACTS = Path("results/meta_audit")
PAGE = Path("docs/results_audit.md")
COMMAND = "python -m contamlab.studies.meta_audit tables"
BEGIN, END = f"<!-- meta_audit:begin (generated: {COMMAND}) -->", "<!-- meta_audit:end -->"


def collect(run_dir: Path, out: Path = ARTIFACTS, wall_s: float | None = None) -> Path:
    """Keep every audit of a ``make meta-audit`` run in ``out``; return it."""
    jobs = [path.parent for path, result in load_results(run_dir) if "audit" in result]
    if not jobs:
        raise SystemExit(f"{run_dir}: no audit below it; run make meta-audit first")
    return keep_jobs(
        jobs, run_dir, out, "audit.py", ("audit_scores.csv",), {"command": "make meta-audit", "wall_s": wall_s}
    )


def block(folder: Path = ARTIFACTS) -> str:
    """The page's block: the audited models, then each reading's false alarms and power (flagged / models)."""
    audits = audit_results(load_kept(folder))
    if not audits:
        raise SystemExit(f"no audits in {folder}: run make meta-audit first")
    models = ", ".join(sorted({f"{target_label(r)} on {r['audit']['benchmark']}" for r in audits}))
    return f"{len(audits)} audits: {models}.\n\n{meta_audit(audits)}"


def tables(folder: Path = ARTIFACTS) -> None:
    """Write docs/results_audit.md's generated block."""
    atomic_write_text(PAGE, with_block(PAGE.read_text(), block(folder), BEGIN, END))


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: ``collect RUN_DIR [--out DIR] [--wall-s S]`` or ``tables``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="a make meta-audit run -> results/meta_audit/")
    c.add_argument("run_dir", type=Path)
    c.add_argument("--out", type=Path, default=ARTIFACTS)
    c.add_argument("--wall-s", type=float, default=None, help="the run's wall time, as make meta-audit measured it")
    sub.add_parser("tables", help=f"the artifacts -> {PAGE}'s generated block")
    args = parser.parse_args(argv)
    if args.command == "collect":
        print(collect(args.run_dir, args.out, args.wall_s))
    else:
        tables()
        print(PAGE)


if __name__ == "__main__":
    main()
