"""The restoration study on a real LM: committed artifacts, and the tables generated from them (``make restoration``).

The README's headline on SmolLM2-135M (what RailCap restores, against Identity and the noise floor) at independent
seeds. ``collect`` turns a run of ``make restoration`` (its ``train/`` and ``eval/`` folders) into one small JSON file
per (model, seed) under ``results/restoration/``: the test questions and which leaked, the clean model's two sample
batches and each strategy's readouts per question (solve probability r̂, one-sample readout r⁰¹, correct counts),
the job's own metrics, the commands, the commit, the machine and the wall times. ``tables`` reads those files alone
and writes ``docs/results_restoration.md`` and the README's block; ``tests/test_restoration_artifacts.py`` fails when
either differs from what the files give.

The statistics follow docs/real_world.md#analysis-plan (H5): per seed, the metrics of "Zero Gap Is Not
Restoration" §3 (:mod:`contamlab.metrics.gaps`: SA-PPG Eq. 13, Δ⁺/Δ⁻ Eq. 8–9, G-AP Eq. 2) against the clean model's
first batch; the noise floor is the second clean batch scored the same way. Over seeds, two-level bootstrap intervals
(:func:`contamlab.metrics.seeds.two_level_strata`: seeds with replacement, then each drawn seed's questions within
their clean bin), paired wherever two rows are compared on the same questions.

    python -m contamlab.studies.restoration collect outputs/restoration --out results/restoration
    python -m contamlab.studies.restoration tables
"""

from __future__ import annotations

import argparse
import csv
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from contamlab.config import build_domain, compose, model_store
from contamlab.io import atomic_write_json, atomic_write_text
from contamlab.metrics.gaps import metric_draws
from contamlab.metrics.seeds import two_level_strata
from contamlab.studies import evidence
from contamlab.studies.blocks import with_block
from contamlab.studies.evidence import FORMS, STAGE_FIELDS, load
from contamlab.studies.run_files import overrides_of

ARTIFACTS = Path("results/restoration")
PAGE = Path("docs/results_restoration.md")
README = Path("README.md")
#: The README's generated block: the lines between these markers are :func:`readme_block`'s.
BEGIN, END = (
    "<!-- restoration:begin (generated: python -m contamlab.studies.restoration tables) -->",
    "<!-- restoration:end -->",
)
FIGURE = Path("docs/figures/dose_gap.png")
#: Bootstrap settings of every interval (the plan's).
N_BOOT, BOOT_SEED = 2000, 0
#: The noise floor's row: the second clean batch against the first.
FLOOR = "clean_2"
#: Row order and names; a strategy not listed here follows them in name order.
ORDER = ("identity", "all_zero", "ted", "lne", "shortcut", "railcap", FLOOR)
LABELS = {FLOOR: "Clean, 2nd batch (noise floor)"}
#: The README's shorter name of the floor row.
SHORT = {FLOOR: "Clean, 2nd batch"}
MODELS = {"smollm2": "SmolLM2-135M", "gemma3": "Gemma-3-270m", "tiny": "tiny world"}
METRICS = {"sa_ppg": "SA-PPG", "g_ap": "G-AP", "delta_plus": "Δ⁺", "delta_minus": "Δ⁻"}


# -- collect ----------------------------------------------------------------------------------------------------------
def _read_job(job: Path) -> tuple[str, dict[str, Any], dict[str, Any]]:
    """One evaluation job: its strategy, per-question columns, and its results.json."""
    results = json.loads((job / "results.json").read_text())
    with (job / "per_question.csv").open() as f:
        rows = list(csv.DictReader(f))
    if "r_clean_2" not in rows[0]:
        raise ValueError(f"{job}: per_question.csv has no second clean batch (run with analysis.floor=true)")

    def col(name: str, kind: type) -> list:
        return [kind(r[name]) for r in rows]

    cols = {
        "ids": col("id", str),
        "leaked": col("leaked", int),
        "clean_bin": col("bin", int),
        "clean": {"correct": col("clean_correct", int), "r": col("r_clean", float), "r01": col("r01_clean", int)},
        FLOOR: {"correct": col("clean_2_correct", int), "r": col("r_clean_2", float), "r01": col("r01_clean_2", int)},
        "strategy": {
            "correct": col("strategy_correct", int),
            "kept": col("strategy_kept", int),
            "r": col("r_strategy", float),
            "r01": col("r01_strategy", int),
        },
    }
    return results["strategy"]["name"], cols, results


def _train_record(train_dir: Path, dose: int) -> tuple[dict[str, Any], list[str]]:
    """The trained stages' cost and identity at ``dose`` leak epochs, and the seed's test questions.

    Read through the train run's own config; a run that saved snapshots (``snapshots=[1,2,4]``) gives each dose's
    contaminated stage (a snapshot records the run it was taken from in ``snapshot_of``).
    """
    over = overrides_of(train_dir)
    kept = [f"{k}={v}" for k, v in over.items() if k not in ("hydra.run.dir", "snapshots", "domain.leak_epochs")]
    cfg = compose("train", [*kept, f"domain.leak_epochs={dose}"])
    store, domain = model_store(cfg), build_domain(cfg.domain)
    out: dict[str, Any] = {"command": "python train.py " + " ".join(f"{k}={v}" for k, v in over.items())}
    for stage in ("clean", "contaminated"):
        summary = json.loads((store.stage_dir(domain, stage) / "train_summary.json").read_text())
        out[stage] = {k: summary.get(k) for k in STAGE_FIELDS}
        if summary.get("snapshot_of"):
            out[stage]["snapshot_of"] = summary["snapshot_of"]
        out.setdefault("run", summary["run"])
    return out, [q.question for q in domain.test]


def collect(run_dir: Path, out: Path) -> list[Path]:
    """Write one artifact per (model, seed, dose, m) of a ``make restoration`` or ``make dose-gap`` run.

    Each ``eval/<model>-<seed>`` sweep may hold several doses and sample counts (``domain.leak_epochs=1,2,4,8``);
    its jobs are grouped by both. Returns the files written.
    """
    if not (run_dir / "eval").is_dir():
        raise SystemExit(f"{run_dir / 'eval'}: no such folder; run make restoration (RS=<run dir>) first")
    written = []
    for sweep in sorted((run_dir / "eval").iterdir()):
        model, _, seed = sweep.name.rpartition("-")
        jobs = sorted(p for p in sweep.iterdir() if (p / "results.json").is_file())
        if not model or not seed.isdigit() or not jobs:
            continue
        groups: dict[tuple[int, int], dict[str, Any]] = {}
        for job in jobs:
            name, cols, results = _read_job(job)
            config, experiment = results["config"], overrides_of(job).get("experiment")
            group = groups.setdefault((int(config["domain"]["leak_epochs"]), int(config["m"])), {"strategies": {}})
            common = {k: cols[k] for k in ("ids", "leaked", "clean_bin", "clean", FLOOR)}
            if group.get("shared", common) != common:
                raise ValueError(f"{job}: other questions or clean samples than the sweep's other jobs")
            group |= {"shared": common, "experiment": experiment, "bins": config["metric"]["bins"]}
            group["strategies"][name] = {
                **cols["strategy"],
                "metrics": {k: results["metrics"]["all"]["values"][k] for k in METRICS},
                "floor_metrics": {k: results["floor"]["metrics"]["all"]["values"][k] for k in METRICS},
                "command": "python evaluate.py " + " ".join(f"{k}={v}" for k, v in overrides_of(job).items()),
                "commit": results["run"]["git_commit"],
                "dirty": results["run"]["git_dirty"],
                "machine": results["run"]["machine"],
                "wall_s": round(results["timings"]["wall_s"], 1),
            }
        for (dose, m), group in sorted(groups.items()):
            train, questions = _train_record(run_dir / "train" / sweep.name, dose)
            artifact = {
                "model": model,
                "experiment": group["experiment"],
                "seed": int(seed),
                "dose": dose,
                "m": m,
                "bins": group["bins"],
                **group["shared"],
                "questions": questions,
                "strategies": group["strategies"],
                "train": train,
            }
            path = out / name_of(model, int(seed), dose, m)
            atomic_write_json(path, artifact)
            written.append(path)
    if not written:
        raise SystemExit(f"{run_dir / 'eval'}: no finished <model>-<seed> sweep to collect")
    return written


def name_of(model: str, seed: int, dose: int, m: int) -> str:
    """An artifact's file name: one per model, dose, sample count and seed."""
    return f"{model}-e{dose}-m{m}-seed{seed}.json"


# -- statistics -------------------------------------------------------------------------------------------------------
def rows_of(artifact: dict[str, Any]) -> dict[str, dict[str, np.ndarray]]:
    """Every row's readouts of one seed (the strategies and the floor), in :data:`ORDER`: ``{row: {r, r01}}``."""
    found = dict(artifact["strategies"]) | {FLOOR: artifact[FLOOR]}
    # a strategy outside ORDER goes after the listed strategies, before the floor
    names = sorted(found, key=lambda n: (ORDER.index(n) if n in ORDER else ORDER.index(FLOOR) - 0.5, n))
    return {n: {"r": np.asarray(found[n]["r"], float), "r01": np.asarray(found[n]["r01"], float)} for n in names}


def _statistic(artifacts: list[dict[str, Any]], row: str, metric: str, minus: str | None = None) -> Callable:
    """The per-seed statistic of :func:`two_level_strata`: ``metric(row)``, or ``metric(row) - metric(minus)``."""
    # each seed's columns as arrays, once: the statistic is called for the point and again for the draws
    seeds = [
        (rows_of(a), *(np.asarray(a["clean"][k], float) for k in ("r", "r01")), np.asarray(a["clean_bin"]))
        for a in artifacts
    ]

    def value(s: int, idx: np.ndarray, name: str) -> np.ndarray:
        rows, r_clean, r01_clean, bins = seeds[s]
        if metric == "g_ap":  # Eq. 2 on the one-sample readouts
            return np.abs(rows[name]["r01"][idx].mean(axis=1) - r01_clean[idx].mean(axis=1))
        return metric_draws(rows[name]["r"], r_clean, bins, idx, metric)

    def stat(s: int, idx: np.ndarray) -> np.ndarray:
        return value(s, idx, row) - (value(s, idx, minus) if minus else 0.0)

    return stat


def pooled(
    artifacts: list[dict[str, Any]], row: str, metric: str, minus: str | None = None
) -> tuple[float, tuple[float, float], list[float]]:
    """Mean over seeds of ``metric(row)`` (minus ``metric(minus)``, paired) with its two-level interval."""
    strata = [np.asarray(a["clean_bin"]) for a in artifacts]
    return two_level_strata(strata, _statistic(artifacts, row, metric, minus), N_BOOT, BOOT_SEED)


# -- tables -----------------------------------------------------------------------------------------------------------
def _cell(value: tuple, digits: int = 3, sign: bool = False) -> str:
    point, (low, high), _ = value
    f = f"+.{digits}f" if sign else f".{digits}f"
    return f"{point:{f}} [{low:{f}}, {high:{f}}]"


def _seeds(value: tuple, digits: int = 3, sign: bool = False) -> str:
    f = f"+.{digits}f" if sign else f".{digits}f"
    return ", ".join(f"{v:{f}}" for v in value[2])


def _groups(artifacts: list[dict[str, Any]]) -> dict[tuple[str, str, int, int], list[dict[str, Any]]]:
    """The seeds of each (model, experiment, dose, m), in seed order."""
    out: dict[tuple[str, str, int, int], list[dict[str, Any]]] = {}
    for a in sorted(artifacts, key=lambda a: (a["model"], a["experiment"], a["dose"], a["m"], a["seed"])):
        out.setdefault((a["model"], a["experiment"], a["dose"], a["m"]), []).append(a)
    return out


def _title(model: str, experiment: str, dose: int, m: int, group: list[dict[str, Any]]) -> str:
    seeds = ", ".join(str(a["seed"]) for a in group)
    form = FORMS.get(experiment, experiment)
    return f"{MODELS.get(model, model)}, {form} leak at {dose} epoch{'s' if dose != 1 else ''}, m = {m}, seeds {seeds}"


def _common_rows(group: list[dict[str, Any]]) -> list[str]:
    """The rows every seed of the group has, in order."""
    names = [set(rows_of(a)) for a in group]
    return [n for n in rows_of(group[0]) if all(n in s for s in names)]


def page(artifacts: list[dict[str, Any]], evidence_artifacts: Sequence[dict[str, Any]] = ()) -> str:
    """The generated results page of the restoration study (markdown), from the artifacts alone.

    ``evidence_artifacts`` (the evidence study's) give the loss drop beside each dose of H6's table.
    """
    lines = [
        "# Results: restoration on a real LM, at independent seeds",
        "",
        "Generated by `python -m contamlab.studies.restoration tables` from `results/restoration/` "
        "(`make restoration`, `make dose-gap`); do not edit. The plan (hypotheses, tests, decision rules) is H5 "
        "and H6 of [real_world.md](real_world.md#analysis-plan). Each metric is scored against the clean model's "
        "first sample batch; the noise floor is a second clean batch scored the same way (what a perfect strategy "
        f"would reach at this m). Intervals: 95 %, two-level bootstrap ({N_BOOT:,} draws: seeds with replacement, "
        "then each drawn seed's questions within their clean bin), paired where two rows are compared; each seed's "
        "own value follows "
        "in parentheses.",
        "",
        *dose_section(artifacts, list(evidence_artifacts)),
    ]
    for (model, experiment, dose, m), group in _groups(artifacts).items():
        names = _common_rows(group)
        lines += [f"## {_title(model, experiment, dose, m, group)}", ""]
        lines += ["| row | " + " | ".join(METRICS.values()) + " |", "|---|" + "---|" * len(METRICS)]
        for name in names:
            values = [pooled(group, name, k) for k in METRICS]
            cells = [f"{_cell(v)} ({_seeds(v)})" for v in values]
            lines.append(f"| {LABELS.get(name, name)} | " + " | ".join(cells) + " |")
        lines += ["", "Paired differences (per question, same clean batch):", ""]
        lines += ["| difference | " + " | ".join(METRICS.values()) + " |", "|---|" + "---|" * len(METRICS)]
        for a, b in _differences(names):
            values = [pooled(group, a, k, b) for k in METRICS]
            cells = [f"{_cell(v, sign=True)} ({_seeds(v, sign=True)})" for v in values]
            lines.append(f"| {LABELS.get(a, a)} − {LABELS.get(b, b)} | " + " | ".join(cells) + " |")
        strategies = [n for n in names if n not in ("identity", FLOOR)]
        if "identity" in names and strategies:  # a grid of Identity alone has no strategy to share its excess
            lines += [
                "",
                "Share of Identity's SA-PPG excess over the floor that each strategy removes, (Identity − strategy) / "
                "(Identity − floor), from the pooled points (a point value, no interval: plan H5 d):",
                "",
            ]
            excess = pooled(group, "identity", "sa_ppg", FLOOR)[0]
            for n in strategies:
                lines.append(f"- {n}: {100 * pooled(group, 'identity', 'sa_ppg', n)[0] / excess:.0f} %")
        lines += ["", "Each seed's runs (the commit and the machine of each are in its artifact):", ""]
        lines += ["| seed | row | command | wall time |", "|---|---|---|---|"]
        for a in group:
            t = a["train"]
            cost = sum(t[s]["wall_s"] for s in ("clean", "contaminated"))
            lines.append(f"| {a['seed']} | training | `{t['command']}` | {cost:,.0f} s |")
            for name, s in a["strategies"].items():
                lines.append(f"| {a['seed']} | {name} | `{s['command']}` | {s['wall_s']:,.0f} s |")
        lines.append("")
    return "\n".join(lines)


def _differences(names: list[str]) -> list[tuple[str, str]]:
    """Identity against each strategy, and each strategy against the floor."""
    strategies = [n for n in names if n not in ("identity", FLOOR)]
    out = [("identity", n) for n in strategies if "identity" in names]
    return out + [(n, FLOOR) for n in [*(["identity"] if "identity" in names else []), *strategies]]


def _dose_groups(artifacts: list[dict[str, Any]]) -> dict[tuple[str, str, int], dict[int, list[dict[str, Any]]]]:
    """Identity's groups by world and m, then dose: ``{(model, experiment, m): {dose: seeds}}`` (H6)."""
    out: dict[tuple[str, str, int], dict[int, list[dict[str, Any]]]] = {}
    for (model, experiment, dose, m), group in _groups(artifacts).items():
        if "identity" in _common_rows(group):
            out.setdefault((model, experiment, m), {})[dose] = group
    return out


def _loss_drop(evidence_artifacts: list[dict[str, Any]], group: list[dict[str, Any]], dose: int) -> tuple | None:
    """The evidence study's loss drop (contaminated - sham, document view) on the same world, seeds and dose."""
    a0 = group[0]
    seeds = {a["seed"] for a in group}
    same = [
        e
        for e in evidence_artifacts
        if (e["model"], e["experiment"]) == (a0["model"], a0["experiment"]) and e["seed"] in seeds
    ]
    found = evidence.seeds_of(same, "loss/document", dose)
    return evidence.loss_drop(found) if len(found) == len(seeds) else None


def _other_models(evidence_artifacts: list[dict[str, Any]], group: list[dict[str, Any]], dose: int) -> bool:
    """Whether the evidence study measured the loss drop on other models than these runs' (another stage key).

    Both train the same items, seeds and dose, but a recipe setting outside the key's defaults (the real LMs'
    committed evidence runs projected every position, ``finetune.logits: all``) names sibling models.
    """
    keys = {(e["seed"], e["train"].get(f"contaminated@{dose}", {}).get("key")) for e in evidence_artifacts}
    return any((a["seed"], a["train"]["contaminated"]["key"]) not in keys for a in group)


def dose_section(artifacts: list[dict[str, Any]], evidence_artifacts: list[dict[str, Any]]) -> list[str]:
    """H6: per world and dose, Identity's G-AP and its excess over the floor, beside the evidence study's loss drop."""
    worlds = _dose_groups(artifacts)
    if not any(len(doses) > 1 for doses in worlds.values()):
        return []
    lines = [
        "## Along the dose (H6)",
        "",
        "Identity at each dose against the clean model, and its paired excess over the noise floor; the loss drop is "
        "the evidence study's (contaminated − sham, nats per token, document view: "
        "[results_evidence.md](results_evidence.md)) on the same seeds and dose, – where that study has none. A dose "
        "*inflates accuracy* when the Δ⁺ excess lies above 0.",
        "",
        "| world | dose | m | seeds | loss drop | G-AP | G-AP − floor | SA-PPG − floor | Δ⁺ − floor |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    smallest, siblings = [], []
    for (model, experiment, m), doses in worlds.items():
        world = f"{MODELS.get(model, model)}, {FORMS.get(experiment, experiment)}"
        first = None
        for dose, group in sorted(doses.items()):
            drop = _loss_drop(evidence_artifacts, group, dose)
            if drop is not None and _other_models(evidence_artifacts, group, dose) and world not in siblings:
                siblings.append(world)
            plus = pooled(group, "identity", "delta_plus", FLOOR)
            if first is None and plus[1][0] > 0:
                first = dose
            cells = [
                _cell(pooled(group, "identity", "g_ap")),
                _cell(pooled(group, "identity", "g_ap", FLOOR), sign=True),
                _cell(pooled(group, "identity", "sa_ppg", FLOOR), sign=True),
                _cell(plus, sign=True),
            ]
            seeds = ", ".join(str(a["seed"]) for a in group)
            strength = "–" if drop is None else _cell(drop)
            lines.append(f"| {world} | {dose} | {m} | {seeds} | {strength} | " + " | ".join(cells) + " |")
        if len(doses) > 1:
            smallest.append(f"{world} (m = {m}): {'none of ' + str(sorted(doses)) if first is None else first}")
    lines += ["", "Smallest dose that inflates accuracy: " + "; ".join(smallest) + ".", ""]
    if siblings:
        lines += [
            f"The loss drop of {', '.join(siblings)} was measured on sibling models, under other stage keys: the same "
            "items, seeds and dose, trained in the evidence study with every position projected onto the vocabulary "
            "(`finetune.logits: all`) where these runs project the labelled positions only. The two give the same "
            "bytes on some CPUs and round bf16 products differently on others (docs/performance.md#the-training-step), "
            "so the column estimates these runs' drop up to that rounding.",
            "",
        ]
    lines += [f"![G-AP against the loss drop](figures/{FIGURE.name})", ""]
    return lines


def figure(artifacts: list[dict[str, Any]], evidence_artifacts: list[dict[str, Any]], path: Path) -> None:
    """Identity's Δ⁺ excess over the floor against the loss drop, a point per dose, the worlds overlaid (H6)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(8.4, 3.4))
    for (model, experiment, m), doses in _dose_groups(artifacts).items():
        if len(doses) < 2:
            continue
        label = f"{MODELS.get(model, model)}, {FORMS.get(experiment, experiment)}, m = {m}"
        pts = []
        for dose, group in sorted(doses.items()):
            drop = _loss_drop(evidence_artifacts, group, dose)
            pts.append((dose, drop, pooled(group, "identity", "delta_plus", FLOOR)))
        for ax, x_of in ((axes[0], lambda p: p[0]), (axes[1], lambda p: p[1][0] if p[1] else None)):
            xy = [(x_of(p), p[2]) for p in pts if x_of(p) is not None]
            xs = [x for x, _ in xy]
            ys = [v[0] for _, v in xy]
            err = [[v[0] - v[1][0] for _, v in xy], [v[1][1] - v[0] for _, v in xy]]
            ax.errorbar(xs, ys, yerr=err, marker="o", ms=4, capsize=3, label=label)
    axes[0].set_xscale("log", base=2)
    axes[0].set_xlabel("epochs over the leaked half")
    axes[1].set_xlabel("loss drop (nats per token, contaminated − sham)")
    for ax in axes:
        ax.axhline(0, color="grey", lw=0.8)
        ax.set_ylabel("Identity − floor, Δ⁺")
    axes[0].legend(fontsize=7, frameon=False)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def readme_block(artifacts: list[dict[str, Any]]) -> str:
    """The README's summary: SA-PPG pooled over seeds per row, Identity − RailCap and RailCap − floor (paired).

    One table of the groups with a strategy beside Identity; where there are several, each row names its group.
    """
    # the dose curve's Identity-only groups are on the page, not in the README's headline
    groups = {k: g for k, g in _groups(artifacts).items() if set(_common_rows(g)) - {"identity", FLOOR}}
    lines = ["| strategy | SA-PPG [95 % CI] (per seed) | Δ⁺ | Δ⁻ |", "|---|---|---|---|"]
    for (model, experiment, dose, m), group in groups.items():
        names = _common_rows(group)
        where = f"{_title(model, experiment, dose, m, group)}: " if len(groups) > 1 else ""
        for name in names:
            sa = pooled(group, name, "sa_ppg")
            plus, minus = pooled(group, name, "delta_plus"), pooled(group, name, "delta_minus")
            label = f"{where}{SHORT.get(name, name)}"
            lines.append(f"| {label} | {_cell(sa)} ({_seeds(sa)}) | {plus[0]:.3f} | {minus[0]:.3f} |")
        pairs = [p for p in (("identity", "railcap"), ("railcap", FLOOR)) if set(p) <= set(names)]
        for a, b in pairs:
            d = pooled(group, a, "sa_ppg", b)
            label = f"{where}{a} − {'floor' if b == FLOOR else b} (paired)"
            lines.append(f"| {label} | {_cell(d, sign=True)} ({_seeds(d, sign=True)}) | | |")
    return "\n".join(lines)


def tables(folder: Path = ARTIFACTS, out: Path = PAGE, fig: Path | None = FIGURE) -> str:
    """Write the results page, its figure (when the dose curve is there) and the README block; return the page."""
    artifacts = load(folder)
    if not artifacts:
        raise SystemExit(f"no artifacts in {folder}: run make restoration first")
    beside = load(evidence.ARTIFACTS)
    text = page(artifacts, beside)
    atomic_write_text(out, text)
    if fig is not None and FIGURE.name in text:
        figure(artifacts, beside, fig)
    readme = with_block(README.read_text(), readme_block(artifacts), BEGIN, END)
    atomic_write_text(README, readme)
    return text


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: ``collect RUN_DIR [--out DIR]`` or ``tables``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="a make restoration run -> one JSON artifact per model and seed")
    c.add_argument("run_dir", type=Path)
    c.add_argument("--out", type=Path, default=ARTIFACTS)
    sub.add_parser("tables", help=f"the artifacts in {ARTIFACTS} -> {PAGE} and the README's block")
    args = parser.parse_args(argv)
    if args.command == "collect":
        for path in collect(args.run_dir, args.out):
            print(path)
    else:
        tables()
        print(PAGE)


if __name__ == "__main__":
    main()
