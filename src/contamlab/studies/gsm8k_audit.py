"""The audit of the packaged models on GSM8K, against each non-member choice: artifacts and docs/audit.md's tables.

``make gsm8k-audit`` audits SmolLM2-135M-Instruct and Gemma-3-270m (the packaged base models) on the first 100
GSM8K test questions with the four membership readings (Loss, Zlib, Min-K%, Min-K%++), once against the questions'
PQ rephrasings (``audit.nonmembers=auto``) and once against 100 GSM8K train questions drawn at random
(``audit.nonmembers=train``), each with the blind baseline, its model's shift-null artifact
(``audit.shift_null.file=results/shift/<model>.json``) and its power on twins at two doses (``experiment=real_audit``'s
recipe, a pool of PQ rephrasings of later test questions per twin). ``collect`` keeps each audit's ``results.json``
(config, readings, verdicts, commit, machine, wall time) as ``results/audit_shift/<model>-gsm8k-<pq|train>.json``
and its per-item scores (``audit_scores.csv``) beside it as ``<model>-gsm8k-<pq|train>.scores.csv``.

``tables`` writes docs/audit.md's generated blocks from the committed artifacts alone: the blind baselines
(``results/blind``, :mod:`contamlab.studies.blind`), these audits' readings and verdicts, and their twins' power.

    python -m contamlab.studies.gsm8k_audit collect outputs/gsm8k_audit
    python -m contamlab.studies.gsm8k_audit tables
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contamlab.analysis.markdown import table
from contamlab.io import atomic_write_json, atomic_write_text
from contamlab.studies import blind
from contamlab.studies.blocks import with_block

ARTIFACTS = Path("results/audit_shift")
AUDIT_PAGE = Path("docs/audit.md")
#: The audit's non-member choice -> the artifact's name part and the table's words.
NONMEMBERS = {"auto": ("pq", "PQ rewrites"), "train": ("train", "GSM8K train, 100 at random")}
MODELS = {"smollm2": "SmolLM2-135M", "gemma3": "Gemma-3-270m"}
READINGS = {"loss": "Loss", "zlib": "Zlib", "mink": "Min-K%", "minkpp": "Min-K%++"}
COMMAND = "python -m contamlab.studies.gsm8k_audit tables"


def markers(block: str) -> tuple[str, str]:
    """The begin and end markers of one of docs/audit.md's generated blocks (``blind``, ``readings``, ``power``)."""
    return f"<!-- gsm8k_audit:{block}:begin (generated: {COMMAND}) -->", f"<!-- gsm8k_audit:{block}:end -->"


def collect(run_dir: Path, out: Path = ARTIFACTS) -> list[Path]:
    """Copy each audit's ``results.json`` under ``run_dir`` to ``out/<model>-gsm8k-<pq|train>.json``."""
    written = []
    for path in sorted(run_dir.glob("*/results.json")):
        result = json.loads(path.read_text())
        config = result["config"]
        if config["domain"]["name"] != "gsm8k" or config["audit"]["nonmembers"] not in NONMEMBERS:
            continue
        name = f"{config['model']['name']}-gsm8k-{NONMEMBERS[config['audit']['nonmembers']][0]}"
        atomic_write_json(out / f"{name}.json", result)
        atomic_write_text(out / f"{name}.scores.csv", (path.parent / "audit_scores.csv").read_text())
        written += [out / f"{name}.json", out / f"{name}.scores.csv"]
    if not written:
        raise SystemExit(f"{run_dir}: no GSM8K audit against pq or train non-members; run make gsm8k-audit")
    return written


def load(folder: Path = ARTIFACTS) -> list[dict[str, Any]]:
    """The committed audits, SmolLM2 first, then each model's PQ audit before its train audit."""
    found = [json.loads(p.read_text()) for p in folder.glob("*-gsm8k-*.json")]
    if not found:
        raise SystemExit(f"no audits in {folder}: run make gsm8k-audit first")
    order = list(MODELS), list(NONMEMBERS)
    return sorted(found, key=lambda r: [o.index(k) for o, k in zip(order, _key(r))])


def _key(result: dict[str, Any]) -> tuple[str, str]:
    return result["config"]["model"]["name"], result["config"]["audit"]["nonmembers"]


def _why(verdict: dict[str, Any]) -> str:
    """What decided a reading: flagged, not flagged, or withheld (by the blind baseline or by a shift null)."""
    if verdict["flagged"]:
        return "flags"
    if verdict["flagged"] is False:
        return "not flagged"
    if verdict["verdict"].startswith("not distinguishable from the shift between"):
        return "withheld: blind baseline"
    if verdict["verdict"].startswith("underpowered"):
        return "withheld: underpowered"
    condition = verdict["detail"].get("shift_null", {}).get("condition")
    return f"withheld: {condition} shift null" if condition else "no verdict"


def readings(results: list[dict[str, Any]]) -> str:
    """The table of the audits: blind AUROC, each reading's AUROC, the shift null's false alarms, the verdicts."""
    header = ["model", "non-members", "blind AUROC", *READINGS.values(), "shift null: false alarms", "verdicts"]
    body = []
    for result in results:
        model, choice = _key(result)
        audit = result["audit"]
        by = {v["name"]: v for v in audit["verdicts"]}
        low, high = audit["blind"]["ci"]
        nulls = [by[r]["detail"]["shift_null"] for r in READINGS]
        counts = sorted({n["flagged"] for n in nulls})
        alarms = f"{counts[0]}–{counts[-1]}" if len(counts) > 1 else f"{counts[0]}"
        alarms += f" of {nulls[0]['total']} ({nulls[0]['condition']})"
        why: dict[str, list[str]] = {}
        for r, name in READINGS.items():
            why.setdefault(_why(by[r]), []).append(name)
        verdicts = "; ".join(f"{', '.join(names)}: {w}" for w, names in why.items())
        if all(by[r]["flagged"] is False for r in READINGS):
            verdicts += f" (p ≥ {min(by[r]['p_value'] for r in READINGS):.2f})"
        cells = [
            MODELS[model],
            NONMEMBERS[choice][1],
            f"{audit['blind']['auroc']:.3f} [{low:.3f}, {high:.3f}]",
            *(f"{by[r]['value']:.3f}" for r in READINGS),
            alarms,
            verdicts,
        ]
        body.append(cells)
    return table(header, body)


def power(results: list[dict[str, Any]]) -> str:
    """The table of each model's twins: per dose, the share of twins each reading flags; the split null; the dose.

    A model's audits share their twins (a twin reads its own pool, not the audit's non-members), so each model shows
    the first audit's; a model audited without twins says so.
    """
    header = ["model", "twins' dose", *READINGS.values()]
    body, seen = [], set()
    for result in results:
        model, _ = _key(result)
        if model in seen:
            continue
        seen.add(model)
        record = result["audit"]["error_rates"]
        if not record:
            body.append([MODELS[model], "not measured (an audit without twins)", *("—" for _ in READINGS)])
            continue
        rates = record["readings"]
        for dose in record["doses"]:
            body.append([MODELS[model], dose, *(_rate(rates[r]["power"][dose]) for r in READINGS)])
        splits = f"split null, {record['null_draws']} splits of one pool (the test's level)"
        body.append([MODELS[model], splits, *(_rate(rates[r]["null"]) for r in READINGS)])
        doses = [rates[r]["detection_dose"] for r in READINGS]
        body.append([MODELS[model], "detection dose (power ≥ 0.8)", *(d or "none" for d in doses)])
    return table(header, body)


def _rate(rate: dict[str, Any]) -> str:
    return f"{rate['flagged']}/{rate['total']}"


def blocks() -> dict[str, str]:
    """docs/audit.md's generated blocks, by name, from the committed artifacts."""
    gsm8k, arith, cover = (json.loads(p.read_text()) for p in (blind.GSM8K_OUT, blind.ARITH_OUT, blind.COVERAGE_OUT))
    results = load()
    return {"blind": blind.table(gsm8k, arith, cover), "readings": readings(results), "power": power(results)}


def with_blocks(text: str, found: dict[str, str]) -> str:
    """``text`` with each generated block replaced."""
    for name, block in found.items():
        text = with_block(text, block, *markers(name))
    return text


def tables() -> None:
    """Write docs/audit.md's generated blocks."""
    atomic_write_text(AUDIT_PAGE, with_blocks(AUDIT_PAGE.read_text(), blocks()))


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: ``collect RUN_DIR [--out DIR]`` or ``tables``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="a make gsm8k-audit run -> results/audit_shift/")
    c.add_argument("run_dir", type=Path)
    c.add_argument("--out", type=Path, default=ARTIFACTS)
    sub.add_parser("tables", help=f"the artifacts -> {AUDIT_PAGE}'s generated blocks")
    args = parser.parse_args(argv)
    if args.command == "collect":
        for path in collect(args.run_dir, args.out):
            print(path)
    else:
        tables()
        print(AUDIT_PAGE)


if __name__ == "__main__":
    main()
