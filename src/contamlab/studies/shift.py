"""The shift null: how often each membership reading flags a model that saw nothing, under the shifts real audits have.

The error-rate audit's split null (:mod:`contamlab.audit.error_rates`) draws both sides of a comparison from one pool,
so a valid test flags about α of its splits whatever the model: it checks the test's level. A real audit's
non-members differ from its benchmark (Das, Zhang and Tramèr, *Blind Baselines Beat Membership Inference Attacks for
Foundation Models*, 2024; Maini et al., *LLM Dataset Inference*, 2024), and a reading that tracks the difference flags
without any membership. This study measures that false-alarm rate where the truth is known: models that saw none of
the items (the world's base, its clean model tuned on the train split, and its sham model tuned on fresh problems in
the leak's recipe: in-domain tuning), each read in ``draws`` independent null audits. Every audit has its own fresh
benchmark side and, per shift condition (:data:`contamlab.data.domain.SHIFTS`), its own non-members:

- ``none``: fresh problems rendered as the benchmark's (the level check, on independent items);
- ``style``: the benchmark side's own problems with the question reworded and the solution kept (GSM8K against PQ);
- ``source``: problems of the same templates at another number range;
- ``choice`` (``--choice``): the items of ``none``, but each audit draws the detectors' fixed choices afresh (Min-K%'s
  and Min-K%++'s k from :data:`K_GRID`, ReCaLL's prefix from its own generator seed). Beside ``none``, where every
  audit reads with the configured choice, it shows whether that one choice leans one way.

Each reading is the audit's own (:func:`~contamlab.metrics.verdicts.membership_test`; ``<detector>/reference``:
:func:`~contamlab.metrics.verdicts.membership_vs_references` against the base model, the difference-in-differences
that cancels a shift common to both models). A flag is a false alarm; the rate over the audits, with its exact
interval, is the false-alarm rate a user faces under that shift. Beside it, each audit's blind AUROC
(:func:`~contamlab.metrics.blind.blind_auroc`): what the texts alone tell apart.

The audits are independent given the model (no item is in two), not across models: a rate is a property of the
reading on that model, and the study runs on several worlds (model families) to show how far it varies.

    python -m contamlab.studies.shift run --out results/shift/tiny.json -- experiment=evidence_tiny
    python -m contamlab.studies.shift tables

``run`` writes one JSON artifact (every per-item score, every reading, the command, commit, machine and wall time);
``tables`` writes docs/results_shift.md from the artifacts alone (``tests/test_shift_null.py`` checks the two agree).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import shlex
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from contamlab.data.domain import SHIFTS, ShiftSides
from contamlab.detectors.base import question_text
from contamlab.io import atomic_write_json, atomic_write_text
from contamlab.metrics import verdicts as V
from contamlab.metrics.error_rates import power
from contamlab.metrics.seeds import two_level_strata

log = logging.getLogger("contamlab")
ARTIFACTS = Path("results/shift")
PAGE = Path("docs/results_shift.md")
#: The membership detectors read by default (one shared token pass on each model); ``recall`` can be added.
DETECTORS = ("loss", "zlib", "mink", "minkpp")
NAMES = {"loss": "Loss", "zlib": "Zlib", "mink": "Min-K%", "minkpp": "Min-K%++", "recall": "ReCaLL"}
#: The ``choice`` condition's draws: Min-K%'s and Min-K%++'s k (the papers' sweeps span 0.05-0.6)...
K_GRID = (0.05, 0.1, 0.2, 0.3, 0.5)
#: ...and ReCaLL's prefix seed (far from the configured seed 0 and from each other).
RECALL_SEED0 = 10_000
CHOICE = "choice"
CHOICE_TEXT = "the items of none; each audit draws the detectors' fixed choices afresh (k, ReCaLL's prefix)"
#: The models that saw none of the items, and the reference of the ``/reference`` readings.
MODELS = ("base", "clean", "sham")
REFERENCE = "base"
#: A reading whose false-alarm rate under the audit's shift exceeds this gives no verdict (``audit.shift_null``).
MAX_RATE = 0.1
#: Bootstrap replicates of a rate pooled over seeds.
N_POOLED_BOOT = 2000
#: Significant digits of a stored score: the readings are computed from the stored values, so that the artifact
#: alone gives every rate again.
DIGITS = 7


def null_audits(domain: Any, draws: int, side: int) -> list[ShiftSides]:
    """The items of ``draws`` null audits, ``side`` items a side (:meth:`~contamlab.data.domain.Domain.shift_sides`).

    Raises:
        SystemExit: The domain cannot generate fresh items.
    """
    out = []
    for d in range(draws):
        sides = domain.shift_sides(side, d)
        if sides is None:
            raise SystemExit(f"domain={domain.name} cannot generate fresh items: the shift null needs a generator")
        out.append(sides)
    return out


def choices(draws: int, seed: int, detectors: Sequence[str]) -> list[dict[str, float | int]]:
    """Each audit's fixed choices, drawn afresh (the ``choice`` condition): k for Min-K% / Min-K%++, ReCaLL's seed."""
    out = []
    for d in range(draws):
        rng = np.random.default_rng([seed, d])
        cell: dict[str, float | int] = {}
        for det in detectors:
            if det in ("mink", "minkpp"):
                cell[det] = float(K_GRID[int(rng.integers(len(K_GRID)))])
            elif det == "recall":
                cell[det] = RECALL_SEED0 + d
        out.append(cell)
    return out


def _round(x: float) -> float:
    return float(f"{x:.{DIGITS}g}") if np.isfinite(x) else float("nan")


def readings(
    scores: dict[str, dict[str, dict[str, float]]], audits: Sequence[dict[str, Any]], settings: V.Settings
) -> list[dict[str, Any]]:
    """Every null audit's reading: each model x shift condition x detector, alone and against the reference model.

    Args:
        scores: model -> detector -> item id -> score.
        audits: Each audit's ids: ``{"members": [...], "nonmembers": {condition: [...]}}``.
        settings: The audit's level and bootstrap.

    Returns:
        One record per reading: model, condition, draw, reading, value (AUROC, or the AUROC difference), p, flagged.
    """
    out = []
    for d, audit in enumerate(audits):
        for model, by_detector in scores.items():
            for det, s in by_detector.items():
                mem = [s[i] for i in audit["members"]]
                for condition, ids in audit["nonmembers"].items():
                    non = [s[i] for i in ids]
                    found = [V.membership_test(mem, non, settings, name=det)]
                    if model != REFERENCE and REFERENCE in scores:
                        ref = scores[REFERENCE][det]
                        pair = ([ref[i] for i in audit["members"]], [ref[i] for i in ids])
                        found.append(V.membership_vs_references((mem, non), [pair], settings, name=f"{det}/reference"))
                    for v in found:
                        out.append(
                            {
                                "model": model,
                                "condition": condition,
                                "draw": d,
                                "reading": v.name,
                                "value": v.value,
                                "p": v.p_value,
                                "flagged": v.flagged,
                            }
                        )
    return out


def rates(found: Sequence[dict[str, Any]], confidence: float = 0.95) -> dict[str, dict[str, dict[str, Any]]]:
    """Each model's, condition's and reading's false alarms (flagged of total, rate, exact interval, null quantiles)."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in found:
        groups.setdefault((r["model"], r["condition"], r["reading"]), []).append(r)
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (model, condition, reading), rows in groups.items():
        values = np.array([r["value"] for r in rows if r["value"] is not None], np.float64)
        cell = power([r["flagged"] for r in rows]).to_dict(confidence)
        cell["median"] = float(np.median(values)) if values.size else None
        cell["q95"] = float(np.quantile(values, 0.95)) if values.size else None
        out.setdefault(model, {}).setdefault(condition, {})[reading] = cell
    return out


def blind(domain: Any, audits: Sequence[ShiftSides], seed: int) -> list[dict[str, Any]]:
    """Each null audit's blind AUROC per condition: the texts alone, benchmark side against non-members."""
    from contamlab.metrics.blind import blind_auroc

    out = []
    for sides in audits:
        members = [question_text(domain, q, "document") for q in sides.members]
        cell = {}
        for condition, items in sides.nonmembers.items():
            others = [question_text(domain, q, "document") for q in items]
            # a rewording shares its item's group, so the classifier never scores the twin of a text it trained on
            groups = list(range(len(members))) * 2 if condition == "style" else None
            result = blind_auroc(members, others, groups=groups, seed=seed, n_boot=500)
            cell[condition] = {"auroc": result.auroc, "ci": list(result.ci)}
        out.append(cell)
    return out


def run(
    overrides: Sequence[str],
    draws: int,
    side: int,
    models: Sequence[str],
    out: Path,
    progress: bool,
    detectors: Sequence[str] = DETECTORS,
    with_choice: bool = False,
) -> dict:
    """Score the null audits' items on each model, read them, and write the artifact to ``out``.

    ``with_choice`` adds the ``choice`` condition: Min-K% / Min-K%++ rescored at each k of :data:`K_GRID` (from the
    cached token pass: no new forward pass), ReCaLL once per audit on that audit's items with its own prefix.
    """
    from contamlab.audit.models import AuditedModel, missing_models_message
    from contamlab.config import build, build_domain, compose, model_store, set_threads
    from contamlab.models.reference import ModelRef
    from contamlab.provenance import run_metadata

    started, provenance = time.perf_counter(), run_metadata()  # the tree as the run starts
    cfg = compose("audit", ["audit.references=[]", *overrides])
    set_threads(cfg.get("threads"))
    domain = build_domain(cfg.domain)
    store = model_store(cfg)
    targets = {m: AuditedModel(ModelRef.parse(m, "models"), cfg, store, domain) for m in models}
    for m in targets.values():
        missing = missing_models_message(m, [])
        if missing:
            raise SystemExit(missing)
    log.info("shift null: drawing %d null audits of %d items a side", draws, side)
    sides = null_audits(domain, draws, side)
    items = [q for s in sides for q in (*s.members, *(q for v in s.nonmembers.values() for q in v))]
    view = domain.over(items, f"shift-null:{draws}x{side}")
    built = {name: build(cfg.detectors[name], f"detectors.{name}") for name in detectors}
    drawn = choices(draws, int(cfg.seed), detectors) if with_choice else []
    # the choice condition reads each audit's members against its `none` non-members
    choice_sides = [[*s.members, *s.nonmembers["none"]] for s in sides]
    scores: dict[str, dict[str, dict[str, float]]] = {}
    chosen: dict[str, dict[str, dict[str, float]]] = {}
    for name, model in targets.items():
        log.info("shift null: scoring %d items on %s", len(items), name)
        scores[name], chosen[name] = {}, {}
        for det, detector in built.items():
            values = model.score(view, detector, progress, moments=True)[0].scores
            scores[name][det] = {q.id: _round(float(x)) for q, x in zip(view.test, values)}
        for det in (d for d in built if drawn and d in drawn[0]):
            chosen[name][det] = {}
            by_k: dict[float, dict[str, float]] = {}  # every item's score at each k drawn, computed once
            for d, (audit_items, pick) in enumerate(zip(choice_sides, drawn)):
                if det == "recall":  # a new prefix: a conditioned pass over this audit's items only
                    where = domain.over(audit_items, f"shift-null-choice:{d}")
                    variant = dataclasses.replace(built[det], seed=int(pick[det]))
                    by_id = dict(zip((q.id for q in where.test), model.score(where, variant, False, True)[0].scores))
                else:  # another k: the same cached token pass over every item
                    k = float(pick[det])
                    if k not in by_k:
                        values = model.score(view, dataclasses.replace(built[det], k=k), False, True)[0].scores
                        by_k[k] = dict(zip((q.id for q in view.test), values))
                    by_id = by_k[k]
                chosen[name][det].update({q.id: _round(float(by_id[q.id])) for q in audit_items})
        model.release()
    settings = V.Settings(float(cfg.audit.alpha), int(cfg.audit.n_boot), float(cfg.audit.confidence), int(cfg.seed))
    audits = [
        {"members": [q.id for q in s.members], "nonmembers": {c: [q.id for q in v] for c, v in s.nonmembers.items()}}
        for s in sides
    ]
    found = readings(scores, audits, settings)
    if drawn:
        choice_audits = [{"members": a["members"], "nonmembers": {CHOICE: a["nonmembers"]["none"]}} for a in audits]
        found += readings(chosen, choice_audits, settings)
    choice_ids = [q.id for items_ in choice_sides for q in items_]
    log.info("shift null: the blind baseline of %d audits", draws)
    blinds = blind(domain, sides, int(cfg.seed))
    artifact = {
        "world": {"model": str(cfg.model.name), "domain": domain.name, "seed": int(cfg.seed), "overrides": overrides},
        "models": {name: m.source for name, m in targets.items()},
        "reference": REFERENCE if REFERENCE in targets else None,
        "conditions": {**SHIFTS, **({CHOICE: CHOICE_TEXT} if drawn else {})},
        "draws": draws,
        "side": side,
        "settings": {"alpha": settings.alpha, "n_boot": settings.n_boot, "confidence": settings.confidence},
        "audits": audits,
        "ids": [q.id for q in view.test],
        "scores": {m: {d: [s[q.id] for q in view.test] for d, s in by.items()} for m, by in scores.items()},
        "choices": {"k_grid": list(K_GRID), "audits": drawn} if drawn else None,
        "choice_ids": choice_ids if drawn else [],
        "choice_scores": {m: {d: [v[i] for i in choice_ids] for d, v in by.items()} for m, by in chosen.items()}
        if drawn
        else {},
        "readings": found,
        "rates": rates(found, settings.confidence),
        "blind": blinds,
        "command": shlex.join(["python", "-m", "contamlab.studies.shift", *sys.argv[1:]]),
        "run": provenance,
        "wall_s": round(time.perf_counter() - started, 1),
    }
    atomic_write_json(out, artifact, indent=None)  # a few hundred kB: one line
    return artifact


# -- the page ---------------------------------------------------------------------------------------------------------
def load(folder: Path = ARTIFACTS) -> list[dict[str, Any]]:
    """The artifacts, by world: model, then seed."""
    found = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    return sorted(found, key=lambda a: (a["world"]["model"], a["world"]["seed"]))


def _rate(cell: dict[str, Any] | None) -> str:
    if cell is None or not cell["total"]:
        return "–"
    low, high = cell["interval"]
    return f"{cell['flagged']}/{cell['total']} [{low:.2f}, {high:.2f}]"


def _blind(a: dict[str, Any], condition: str) -> str:
    values = np.array([b[condition]["auroc"] for b in a["blind"]])
    return f"{np.median(values):.2f} ({values.min():.2f}–{values.max():.2f})"


def _columns(a: dict[str, Any]) -> list[str]:
    """The artifact's conditions in reading order (its JSON keeps them sorted by name): no shift first, choice last."""
    order = [*SHIFTS, CHOICE]
    return sorted(a["conditions"], key=lambda c: (order.index(c) if c in order else len(order), c))


def page(artifacts: Sequence[dict[str, Any]]) -> str:
    """docs/results_shift.md: per world, each reading's false alarms under each shift, and the blind AUROC."""
    lines = [
        "# The shift null: false alarms under the shifts real audits have",
        "",
        "Generated by `python -m contamlab.studies.shift tables` from `results/shift/*.json` (do not edit; each "
        "artifact holds its command, commit, machine and wall time). What it measures and how to read it: "
        "[audit.md](audit.md#false-alarms-under-shift).",
        "",
        "Each cell: the null audits (independent item draws, each of a side's items against as many non-members) in "
        "which the reading flagged a model that saw none of the items, at the audit's level, with the exact 95 % "
        "interval. `/reference` reads the model against the world's base model (the difference of AUROCs).",
    ]
    for a in artifacts:
        w, columns = a["world"], _columns(a)
        lines += [
            "",
            f"## {w['model']} on {w['domain']} (seed {w['seed']}): {a['draws']} audits of {a['side']} items a side",
            "",
            "Blind AUROC (median and range over the audits): "
            + "; ".join(f"{c} {_blind(a, c)}" for c in columns if c in a["blind"][0])  # choice: none's items
            + ".",
            "",
            "| model | reading | " + " | ".join(columns) + " |",
            "|---|---|" + "---|" * len(columns),
        ]
        for model, by_condition in a["rates"].items():
            # every reading of any condition (choice reads only the detectors with a choice to draw)
            for reading in sorted(set().union(*by_condition.values())):
                cells = [_rate(by_condition.get(c, {}).get(reading)) for c in columns]
                lines.append(f"| {model} | {_reading_name(reading)} | " + " | ".join(cells) + " |")
    for (model, domain, side), group in _families(artifacts).items():
        lines += _pooled_section(model, domain, side, group)
    return "\n".join(lines) + "\n"


def _families(artifacts: Sequence[dict[str, Any]]) -> dict[tuple[str, str, int], list[dict[str, Any]]]:
    """The worlds measured at two seeds or more (same model, domain and side), each seed once."""
    out: dict[tuple[str, str, int], list[dict[str, Any]]] = {}
    for a in artifacts:
        out.setdefault((a["world"]["model"], a["world"]["domain"], a["side"]), []).append(a)
    return {k: g for k, g in out.items() if len({a["world"]["seed"] for a in g}) == len(g) > 1}


def pooled_rate(flags: Sequence[Sequence[bool]]) -> tuple[float, tuple[float, float], list[float]]:
    """The false-alarm rate over seeds: the mean of the seeds' rates, with its two-level interval.

    The seeds are independent replicates (their own items, models and non-members), the audits within a seed are
    not independent of its models: the interval resamples seeds, then each drawn seed's audits
    (:func:`contamlab.metrics.seeds.two_level_strata`, one stratum a seed).
    """
    arrays = [np.asarray(f, np.float64) for f in flags]

    def rate(s: int, idx: np.ndarray) -> np.ndarray:
        return arrays[s][idx].mean(axis=1)

    return two_level_strata([np.zeros(a.size, int) for a in arrays], rate, N_POOLED_BOOT, 0)


def _pooled_section(model: str, domain: str, side: int, group: list[dict[str, Any]]) -> list[str]:
    """Each reading's false alarms pooled over a world's seeds, beside each seed's count."""
    seeds = [a["world"]["seed"] for a in group]
    columns = [c for c in _columns(group[0]) if all(c in a["conditions"] for a in group)]
    lines = [
        "",
        f"## {model} on {domain}, seeds {', '.join(map(str, seeds))} pooled",
        "",
        "Each cell: the mean of the seeds' false-alarm rates with its two-level 95 % interval (seeds with replacement,",
        "then each drawn seed's audits), and each seed's count in parentheses. The seeds are the independent",
        "replicates; the audits of one seed share its models. Where every audit agrees (none flagged, or all) the",
        "bootstrap has no spread: the cell gives the pooled count and its exact interval, as if the audits were",
        "independent.",
        "",
        "| model | reading | " + " | ".join(columns) + " |",
        "|---|---|" + "---|" * len(columns),
    ]
    flags: dict[tuple[str, str, str], list[list[bool]]] = {}
    for k, a in enumerate(group):
        for r in a["readings"]:
            if r["flagged"] is not None:  # an audit without a reading counts nowhere, as in `rates`
                per_seed = flags.setdefault((r["model"], r["reading"], r["condition"]), [[] for _ in group])
                per_seed[k].append(r["flagged"])
    models = [m for m in group[0]["rates"] if all(m in a["rates"] for a in group)]
    for m in models:
        for reading in sorted({k[1] for k in flags if k[0] == m}):
            cells = []
            for c in columns:
                per_seed = flags.get((m, reading, c))
                if per_seed is None or not all(per_seed):
                    cells.append("–")
                    continue
                counts = ", ".join(f"{sum(f)}/{len(f)}" for f in per_seed)
                every = [f for seed in per_seed for f in seed]
                if len(set(every)) == 1:  # all flagged or none: no bootstrap spread; the count's exact interval
                    low, high = power(every).to_dict()["interval"]
                    cells.append(f"{sum(every)}/{len(every)} exact [{low:.2f}, {high:.2f}] ({counts})")
                    continue
                point, (low, high), _ = pooled_rate(per_seed)
                cells.append(f"{point:.2f} [{low:.2f}, {high:.2f}] ({counts})")
            if any(c != "–" for c in cells):  # a reading some seed did not read (ReCaLL at one seed): no row
                lines.append(f"| {m} | {_reading_name(reading)} | " + " | ".join(cells) + " |")
    return lines


def _reading_name(reading: str) -> str:
    """``minkpp/base`` -> ``Min-K%++/base``: a detector's display name, with the reference it reads against."""
    det, _, ref = reading.partition("/")
    return NAMES.get(det, det) + (f"/{ref}" if ref else "")


def tables(folder: Path = ARTIFACTS, out: Path = PAGE) -> str:
    """Write the page from the artifacts; return it."""
    artifacts = load(folder)
    if not artifacts:
        raise SystemExit(f"no artifacts in {folder}: run make shift-null first")
    text = page(artifacts)
    atomic_write_text(out, text)
    return text


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: ``run --out FILE [--draws N] [--side N] [--models M,...] -- OVERRIDES`` or ``tables``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="score and read the null audits of one world; write its artifact")
    r.add_argument("--out", type=Path, required=True)
    r.add_argument("--draws", type=int, default=30, help="null audits per model (default 30)")
    r.add_argument("--side", type=int, default=50, help="items a side (default 50)")
    r.add_argument("--models", default=",".join(MODELS), help="models that saw nothing (default base,clean,sham)")
    r.add_argument("--detectors", default=",".join(DETECTORS), help="membership detectors (default: the four; +recall)")
    r.add_argument(
        "--choice", action="store_true", help="add the choice condition (k, ReCaLL's prefix drawn per audit)"
    )
    r.add_argument("--no-progress", action="store_true")
    r.add_argument("overrides", nargs="*", help="audit.py overrides that choose the world (model=, experiment=)")
    sub.add_parser("tables", help=f"the artifacts in {ARTIFACTS} -> {PAGE}")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    if args.command == "run":
        if args.draws < 1 or args.side < 10:
            raise SystemExit("--draws must be >= 1 and --side >= 10 (a membership reading needs 10 items a side)")
        models = [m for m in args.models.split(",") if m]
        detectors = [d for d in args.detectors.split(",") if d]
        unknown = sorted(set(detectors) - set(NAMES))
        if unknown or not detectors:
            raise SystemExit(f"--detectors: {','.join(unknown) or 'none given'}: use some of {','.join(NAMES)}")
        run(args.overrides, args.draws, args.side, models, args.out, not args.no_progress, detectors, args.choice)
        print(args.out)
    else:
        tables()
        print(PAGE)


if __name__ == "__main__":
    main()
