"""The evidence study's committed artifacts, and the tables and figure generated from them (``make evidence``).

``collect`` turns a run of ``make evidence`` (its ``train/`` and ``detect/`` folders) into one small JSON file per
(model, leak form, seed) under ``results/evidence/``: the test items and which leaked, every per-item score of every
reading (detector x text view) on the clean model and on each dose's contaminated and sham model, the commands, the
commit, the machine and the wall times. ``tables`` reads those files alone and writes ``docs/results_evidence.md``
and its figure; ``tests/test_evidence_artifacts.py`` fails when the page differs from what the files give.

The statistics follow the analysis plan of docs/real_world.md#analysis-plan: per-item AUROC (leaked against
unleaked), two-level bootstrap intervals over seeds (:func:`contamlab.metrics.seeds.two_level`), paired where two
models are compared on the same items, and the loss drop as the leak's strength on a model-free scale.

    python -m contamlab.studies.evidence collect outputs/evidence --out results/evidence
    python -m contamlab.studies.evidence tables
"""

from __future__ import annotations

import argparse
import csv
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contamlab.audit.nonmembers import NONMEMBER_SEED
from contamlab.config import build_domain, compose, model_store
from contamlab.io import atomic_write_json, atomic_write_text
from contamlab.metrics.roc import auroc_draws
from contamlab.metrics.seeds import two_level
from contamlab.studies.blocks import with_block
from contamlab.studies.run_files import overrides_of

ARTIFACTS = Path("results/evidence")
PAGE = Path("docs/results_evidence.md")
README = Path("README.md")
#: The README's generated block: the lines between these markers are :func:`readme_block`'s.
BEGIN, END = (
    "<!-- evidence:begin (generated: python -m contamlab.studies.evidence tables) -->",
    "<!-- evidence:end -->",
)
FIGURE = Path("docs/figures/evidence_dose.png")
#: Bootstrap settings of every interval on the page (the plan's).
N_BOOT, BOOT_SEED = 2000, 0
#: Models scored at each dose (the clean one once: it does not depend on the dose).
DOSED = ("contaminated", "sham")
#: Every per-item reading of the dose curve: the first four in every part, the others where ``make evidence-more``
#: gives them (the document view of some parts' seeds; the page names those seeds).
DETECTORS = ("loss", "zlib", "mink", "minkpp", "dcpdd", "recall", "codec")
#: The readings every world scored: the README's block.
HEADLINE = DETECTORS[:4]
VIEWS = ("document", "question", "answer")
NAMES = {
    "loss": "Loss",
    "zlib": "Zlib",
    "mink": "Min-K%",
    "minkpp": "Min-K%++",
    "dcpdd": "DC-PDD",
    "recall": "ReCaLL",
    "codec": "CoDeC",
}
MODELS = {"smollm2": "SmolLM2-135M", "gemma3": "Gemma-3-270m", "tiny": "tiny world"}
FORMS = {
    "real_world": "verbatim",
    "real_world_pq": "question reworded, solution verbatim",
    "real_world_reworded": "fully reworded",
    "evidence_tiny": "verbatim",
}
#: What an artifact keeps of each trained stage's train_summary.json: its identity and its cost.
STAGE_FIELDS = ("key", "steps", "wall_s", "tokens_per_s", "tokens_per_epoch")
#: A dose's sweep folder: the main one, or its ``-more`` sweep (``EV_MORE_DETECTORS``, the document view)
_SWEEP = re.compile(r"^(?P<model>[a-z0-9]+)-(?P<exp>[a-z_]+)-(?P<seed>\d+)-e(?P<dose>\d+)(?:-more)?$")


# -- collect ----------------------------------------------------------------------------------------------------------
def _round(value: str) -> float | None:
    return None if value == "" else float(f"{float(value):.6g}")


def _read_job(job: Path) -> tuple[str, dict[str, dict[str, Any]], dict[str, Any]]:
    """One detection job: its reading (``detector/view``), per-model score columns and its results.json."""
    over = overrides_of(job)
    reading = f"{over['detector']}/{over.get('detector.text', 'document')}"
    with (job / "detection_per_question.csv").open() as f:
        rows = list(csv.DictReader(f))
    columns = {
        "ids": [r["id"] for r in rows],
        "leaked": [int(r["leaked"]) for r in rows],
        **{m: [_round(r[f"score_{m}"]) for r in rows] for m in (*DOSED, "clean") if f"score_{m}" in rows[0]},
    }
    return reading, columns, json.loads((job / "results.json").read_text())


def _train_record(train_dir: Path, doses: Sequence[int]) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """Each trained stage's cost and identity, and the seed's item texts, through the train run's own config.

    Returns:
        ``(stages, texts)``: per stage (``clean``, ``contaminated@<dose>``, ``sham@<dose>``) its key, steps, wall
        time and speed; and the texts of the seed's test questions, audit non-members and sham items, so that a
        reader can check without this code that the seeds drew other items.
    """
    over = overrides_of(train_dir)
    out: dict[str, Any] = {"command": "python train.py " + " ".join(f"{k}={v}" for k, v in over.items())}
    base = [f"{k}={v}" for k, v in over.items() if k not in ("snapshots", "hydra.run.dir", "domain.leak_epochs")]
    texts: dict[str, list[str]] = {}
    for dose in doses:
        cfg = compose("train", [*base, f"domain.leak_epochs={dose}"])
        store, domain = model_store(cfg), build_domain(cfg.domain)
        if not texts:
            texts = {
                "questions": [q.question for q in domain.test],
                "nonmembers": [q.question for q in domain.nonmember_questions(len(domain.test), NONMEMBER_SEED)],
                "sham_items": [q.question for q in domain.sham_training_questions()],
            }
        for stage in ("clean", *DOSED):
            name = "clean" if stage == "clean" else f"{stage}@{dose}"
            if name in out:
                continue
            summary = json.loads((store.stage_dir(domain, stage) / "train_summary.json").read_text())
            entry = {k: summary.get(k) for k in STAGE_FIELDS}
            entry["snapshot_of"] = summary.get("snapshot_of")
            out[name] = entry
            out.setdefault("run", summary["run"])
    return out, texts


def collect(run_dir: Path, out: Path) -> list[Path]:
    """Write one artifact per (model, leak form, seed) of a ``make evidence`` run; return the files written."""
    groups: dict[tuple[str, str, int], dict[int, list[Path]]] = {}
    for sweep in sorted((run_dir / "detect").iterdir()):
        if m := _SWEEP.match(sweep.name):
            groups.setdefault((m["model"], m["exp"], int(m["seed"])), {}).setdefault(int(m["dose"]), []).append(sweep)
    written = []
    for (model, exp, seed), sweeps in sorted(groups.items()):
        readings: dict[str, Any] = {}
        items: dict[str, Any] = {}
        runs: dict[str, Any] = {}
        for dose, folders in sorted(sweeps.items()):
            jobs = sorted(p for sweep in folders for p in sweep.iterdir() if (p / "results.json").is_file())
            for job in jobs:
                reading, cols, results = _read_job(job)
                if items and (cols["ids"], cols["leaked"]) != (items["ids"], items["leaked"]):
                    raise ValueError(f"{job}: other items than the seed's other jobs")
                items = {"ids": cols["ids"], "leaked": cols["leaked"]}
                entry = readings.setdefault(reading, {"clean": cols["clean"], **{m: {} for m in DOSED}})
                for m in DOSED:
                    entry[m][str(dose)] = cols[m]
                det = results["detection"]
                runs.setdefault(str(dose), []).append(
                    {
                        "reading": reading,
                        "wall_s": {m: det[m]["wall_s"] for m in (*DOSED, "clean")},
                        "cached": {m: det[m]["cached"] for m in (*DOSED, "clean")},
                        "command": "python evaluate.py " + " ".join(f"{k}={v}" for k, v in overrides_of(job).items()),
                        "commit": results["run"]["git_commit"],
                        "dirty": results["run"]["git_dirty"],
                    }
                )
        train, texts = _train_record(run_dir / "train" / f"{model}-{exp}-{seed}", sorted(sweeps))
        artifact = {
            "model": model,
            "experiment": exp,
            "leak_form": FORMS.get(exp, exp),
            "seed": seed,
            "doses": sorted(sweeps),
            **items,
            **texts,
            "readings": readings,
            "train": train,
            "detect": runs,
        }
        path = out / f"{model}-{exp}-seed{seed}.json"
        atomic_write_json(path, artifact)
        written.append(path)
    return written


# -- statistics -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Seed:
    """One seed's items and the scores of one reading: leaked mask [n], and ``{model label: scores [n]}``."""

    leaked: np.ndarray
    scores: dict[str, np.ndarray]

    def sides(self, label: str) -> tuple[np.ndarray, np.ndarray]:
        """The model's scores on the leaked items [P] and on the unleaked ones [N]."""
        s = self.scores[label]
        return s[self.leaked], s[~self.leaked]


def seeds_of(artifacts: list[dict[str, Any]], reading: str, dose: int) -> list[Seed]:
    """The seeds of ``artifacts`` that scored ``reading`` (``detector/view``) at ``dose``, each as a :class:`Seed`."""
    out = []
    for a in artifacts:
        r = a["readings"].get(reading)
        if r is None or str(dose) not in r["contaminated"]:
            continue
        scores = {"clean": r["clean"], **{m: r[m][str(dose)] for m in DOSED}}
        arr = {k: np.array([np.nan if v is None else v for v in x], np.float64) for k, x in scores.items()}
        ok = np.all([np.isfinite(v) for v in arr.values()], axis=0)  # an item dropped by any model: by all
        out.append(Seed(np.asarray(a["leaked"], bool)[ok], {k: v[ok] for k, v in arr.items()}))
    return out


def _sizes(seeds: list[Seed]) -> list[tuple[int, int]]:
    return [(int(s.leaked.sum()), int((~s.leaked).sum())) for s in seeds]


def auroc(seeds: list[Seed], label: str) -> tuple[float, tuple[float, float], list[float]]:
    """A model's AUROC (leaked vs unleaked), averaged over seeds, with its two-level interval."""

    def stat(i: int, ip: np.ndarray, ineg: np.ndarray) -> np.ndarray:
        return auroc_draws(*seeds[i].sides(label), ip, ineg)

    return two_level(_sizes(seeds), stat, N_BOOT, BOOT_SEED)


def auroc_difference(seeds: list[Seed], a: str, b: str) -> tuple[float, tuple[float, float], list[float]]:
    """AUROC(a) - AUROC(b) on the same drawn items (paired), averaged over seeds, with its two-level interval."""

    def stat(i: int, ip: np.ndarray, ineg: np.ndarray) -> np.ndarray:
        return auroc_draws(*seeds[i].sides(a), ip, ineg) - auroc_draws(*seeds[i].sides(b), ip, ineg)

    return two_level(_sizes(seeds), stat, N_BOOT, BOOT_SEED)


def loss_drop(seeds: list[Seed], treated: str = "contaminated", control: str = "sham") -> tuple:
    """The leak's strength: mean (control - treated) per-token loss on leaked items minus the same on unleaked ones.

    Scores are ``loss``'s (the mean log-prob, -loss), so the drop of an item is ``score_treated - score_control``.
    """

    def stat(i: int, ip: np.ndarray, ineg: np.ndarray) -> np.ndarray:
        s = seeds[i]
        drop = s.scores[treated] - s.scores[control]
        return drop[s.leaked][ip].mean(axis=1) - drop[~s.leaked][ineg].mean(axis=1)

    return two_level(_sizes(seeds), stat, N_BOOT, BOOT_SEED)


def mean_shift(seeds: list[Seed], a: str, b: str) -> tuple:
    """Mean score of model a minus model b over all items (paired), averaged over seeds: a dataset-level shift."""

    def stat(i: int, ip: np.ndarray, ineg: np.ndarray) -> np.ndarray:
        s = seeds[i]
        d = s.scores[a] - s.scores[b]
        dl, du = d[s.leaked][ip], d[~s.leaked][ineg]
        return np.concatenate([dl, du], axis=1).mean(axis=1)

    return two_level(_sizes(seeds), stat, N_BOOT, BOOT_SEED)


# -- tables -----------------------------------------------------------------------------------------------------------
def load(folder: Path = ARTIFACTS) -> list[dict[str, Any]]:
    """Every artifact of the folder, in name order."""
    return [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]


def _cell(value: tuple, digits: int = 2, seeds: bool = True, fmt: str = "f") -> str:
    """``point [low, high] (per seed)``; ``fmt="g"``: ``digits`` significant digits (scores of any scale)."""
    point, (low, high), per_seed = value
    f = f".{digits}{fmt}"
    text = f"{point:{f}} [{low:{f}}, {high:{f}}]"
    if seeds and len(per_seed) > 1:
        text += " (" + ", ".join(f"{v:{f}}" for v in per_seed) + ")"
    return text


def _worlds(artifacts: list[dict[str, Any]]) -> dict[tuple[str, str], list[dict[str, Any]]]:
    out: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for a in artifacts:
        out.setdefault((a["model"], a["experiment"]), []).append(a)
    return out


def _scored(artifacts: list[dict[str, Any]]) -> list[str]:
    """The detectors of :data:`DETECTORS` that some artifact scored on the document view."""
    return [d for d in DETECTORS if any(f"{d}/document" in a["readings"] for a in artifacts)]


def _fewer(det: str, group: list[dict[str, Any]]) -> str:
    """`` (seeds …)``: the seeds that scored the reading where they are fewer than the world's; else empty."""
    scored = sorted(a["seed"] for a in group if f"{det}/document" in a["readings"])
    if len(scored) in (0, len(group)):
        return ""
    return f" (seed{'s' if len(scored) > 1 else ''} {', '.join(map(str, scored))})"


def _name(det: str, group: list[dict[str, Any]]) -> str:
    """The reading's name, with the seeds that scored it where they are fewer than the world's."""
    return NAMES[det] + _fewer(det, group)


def _doses(group: list[dict[str, Any]]) -> list[int]:
    return sorted({d for a in group for d in a["doses"]})


def page(artifacts: list[dict[str, Any]]) -> str:
    """The generated results page of the evidence study (markdown), from the artifacts alone."""
    lines = [
        "# Results: the evidence study",
        "",
        "Generated by `python -m contamlab.studies.evidence tables` from the artifacts in",
        "[results/evidence/](../results/evidence/) (each file: one model, leak form and seed, with its commands,",
        "commit, machine and wall times); `make evidence-full` rebuilds them all, `make evidence` the default grid's.",
        "Do not edit by hand: a test compares this page with what the artifacts give. The design and the analysis",
        "plan: [real_world.md](real_world.md#the-evidence-study).",
        "",
        "Cells: the mean over seeds, its 95 % two-level bootstrap interval (seeds, then items; 2,000 draws), and the",
        "per-seed values in parentheses. AUROC: leaked against unleaked test items (50 and 50 a seed).",
    ]
    for (model, exp), group in _worlds(artifacts).items():
        seeds_run = sorted(a["seed"] for a in group)
        doses = _doses(group)
        lines += [
            "",
            f"## {MODELS.get(model, model)}, {FORMS.get(exp, exp)} leak",
            "",
            f"Seeds {', '.join(map(str, seeds_run))}; doses (epochs over the leaked half): "
            f"{', '.join(map(str, doses))}.",
            "",
            "### The leak's strength",
            "",
            "Loss drop: the per-token log-likelihood gain from the sham to the contaminated model on the leaked items,",
            "minus the same on the unleaked ones (nats per token, document view).",
            "",
            "| dose | loss drop, contaminated vs sham | loss drop, sham vs clean (should be 0) |",
            "|---|---|---|",
        ]
        for dose in doses:
            seeds = seeds_of(group, "loss/document", dose)
            if seeds:
                lines.append(
                    f"| {dose} | {_cell(loss_drop(seeds), 3)} | {_cell(loss_drop(seeds, 'sham', 'clean'), 3)} |"
                )
        lines += [
            "",
            "### The dose curve (document view)",
            "",
            "H2 decides *detects* when the interval of AUROC(contaminated) − AUROC(sham) lies above 0; H1 holds",
            "when the sham's interval covers 0.5. A cell whose difference lies above 0 while its sham's interval",
            "excludes 0.5 reads *biased by the split*, not as detecting (the analysis plan).",
            "",
            "| reading | dose | contaminated | sham | contaminated − sham | detects | sham covers 0.5 |",
            "|---|---|---|---|---|---|---|",
        ]
        smallest: dict[str, Any] = {}
        for det in DETECTORS:
            for dose in doses:
                seeds = seeds_of(group, f"{det}/document", dose)
                if not seeds:
                    continue
                cont, sham, diff = (
                    auroc(seeds, "contaminated"),
                    auroc(seeds, "sham"),
                    auroc_difference(seeds, "contaminated", "sham"),
                )
                above = diff[1][0] > 0
                covers = sham[1][0] <= 0.5 <= sham[1][1]
                if above and covers and det not in smallest:
                    smallest[det] = dose
                detects = ("yes" if covers else "biased by the split") if above else "no"
                lines.append(
                    f"| {_name(det, group)} | {dose} | {_cell(cont)} | {_cell(sham)} | {_cell(diff)} | "
                    f"{detects} | {'yes' if covers else 'no'} |"
                )
        lines += ["", "| reading | clean model's AUROC | smallest detected dose | AUROC(top dose) − AUROC(dose 1) |"]
        lines += ["|---|---|---|---|"]
        for det in DETECTORS:
            first = seeds_of(group, f"{det}/document", doses[0])
            if not first:
                continue
            top = seeds_of(group, f"{det}/document", doses[-1])
            scored = [a["readings"].get(f"{det}/document", {"contaminated": {}})["contaminated"] for a in group]
            both = [a for a, r in zip(group, scored) if str(doses[0]) in r and str(doses[-1]) in r]
            response = "n/a"
            if both and doses[-1] != doses[0]:
                lo, hi = seeds_of(both, f"{det}/document", doses[0]), seeds_of(both, f"{det}/document", doses[-1])
                paired = [
                    Seed(h.leaked, {"top": h.scores["contaminated"], "one": o.scores["contaminated"]})
                    for o, h in zip(lo, hi)
                ]
                response = _cell(auroc_difference(paired, "top", "one"))
            lines.append(
                f"| {_name(det, group)} | {_cell(auroc(top, 'clean'))} | {smallest.get(det, 'none')} | {response} |"
            )
        lines += ["", "### Which text carries the signal (H4)", ""]
        rows, sham_cells, sham_cover = [], 0, 0
        for det in DETECTORS:
            for dose in doses:
                viewed = [a for a in group if all(f"{det}/{v}" in a["readings"] for v in VIEWS)]
                cells = [seeds_of(viewed, f"{det}/{v}", dose) for v in VIEWS]
                if not all(cells):
                    continue
                rows.append(
                    f"| {_name(det, group)} | {dose} | "
                    + " | ".join(_cell(auroc(s, "contaminated"), seeds=False) for s in cells)
                    + " |"
                )
                for s in cells:
                    low, high = auroc(s, "sham")[1]
                    sham_cells, sham_cover = sham_cells + 1, sham_cover + (low <= 0.5 <= high)
        if rows:
            lines += [
                "AUROC of the contaminated model, per text view, over the seeds that scored every view (the dose",
                "curve's document cells above may pool more seeds).",
                "",
                "| reading | dose | document | question | answer |",
                "|---|---|---|---|---|",
                *rows,
                "",
                f"The sham model on the same cells: {sham_cover} of {sham_cells} AUROC intervals cover 0.5.",
            ]
        else:
            lines.append("Not measured here: this world's runs scored the document view only.")
        lines += [
            "",
            "### What in-domain training does without membership",
            "",
            "The sham model against the clean one: its mean score shift over all test items (a dataset-level reading",
            "would take it for contamination) and its own AUROC; the contaminated model's shift beside it.",
            "",
            "| reading | dose | sham − clean, mean score | contaminated − sham, mean score | sham AUROC |",
            "|---|---|---|---|---|",
        ]
        for det in DETECTORS:
            for dose in doses:
                seeds = seeds_of(group, f"{det}/document", dose)
                if seeds:
                    lines.append(
                        f"| {_name(det, group)} | {dose} | "
                        f"{_cell(mean_shift(seeds, 'sham', 'clean'), 3, False, 'g')} | "
                        f"{_cell(mean_shift(seeds, 'contaminated', 'sham'), 3, False, 'g')} | "
                        f"{_cell(auroc(seeds, 'sham'), seeds=False)} |"
                    )
        lines += ["", "### Cost", "", "| seed | stage | steps | wall (s) | tok/s |", "|---|---|---|---|---|"]
        for a in sorted(group, key=lambda a: a["seed"]):
            for name, t in a["train"].items():
                if isinstance(t, dict) and "wall_s" in t and t.get("snapshot_of") is None:
                    lines.append(
                        f"| {a['seed']} | {name} | {t['steps']} | {t['wall_s']:.0f} | {t['tokens_per_s']:.0f} |"
                    )
    shown = _scored(artifacts)
    lines += [
        "",
        "## The worlds at matched strength",
        "",
        "Every world and dose, ordered by the leak's loss drop (contaminated vs sham, nats per token): compare two",
        "worlds only between rows of like strength. Cells: AUROC(contaminated) − AUROC(sham), document view.",
        "",
        "| loss drop | world | dose | seeds | " + " | ".join(NAMES[d] for d in shown) + " |",
        "|---|---|---|---|" + "---|" * len(shown),
    ]
    rows = []
    for (model, exp), group in _worlds(artifacts).items():
        for dose in _doses(group):
            strength = seeds_of(group, "loss/document", dose)
            if not strength:
                continue
            drop = loss_drop(strength)
            cells = []
            for det in shown:
                seeds = seeds_of(group, f"{det}/document", dose)
                diff = auroc_difference(seeds, "contaminated", "sham") if seeds else None
                cells.append(_cell(diff, seeds=False) + _fewer(det, group) if diff else "n/a")
            world = f"{MODELS.get(model, model)}, {FORMS.get(exp, exp)}"
            rows.append(
                (
                    drop[0],
                    f"| {_cell(drop, 3, False)} | {world} | {dose} | {len(strength)} | " + " | ".join(cells) + " |",
                )
            )
    lines += [row for _, row in sorted(rows, key=lambda r: r[0])]
    lines += ["", f"![AUROC against dose](figures/{FIGURE.name})", ""]
    return "\n".join(lines)


def readme_block(artifacts: list[dict[str, Any]]) -> str:
    """The README's summary: per world, at its top dose, each reading's AUROC on the contaminated and the sham model."""
    lines = [
        "| world (seeds), top dose | loss drop | " + " | ".join(NAMES[d] for d in HEADLINE) + " |",
        "|---|---|" + "---|" * len(HEADLINE),
    ]
    for (model, exp), group in _worlds(artifacts).items():
        top = _doses(group)[-1]
        strength = seeds_of(group, "loss/document", top)
        cells = []
        for det in HEADLINE:
            seeds = seeds_of(group, f"{det}/document", top)
            cells.append(f"{auroc(seeds, 'contaminated')[0]:.2f} / {auroc(seeds, 'sham')[0]:.2f}" if seeds else "n/a")
        drop = f"{loss_drop(strength)[0]:.3f}" if strength else "n/a"
        world = f"{MODELS.get(model, model)}, {FORMS.get(exp, exp)} ({len(strength)}), {top} epochs"
        lines.append(f"| {world} | {drop} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def figure(artifacts: list[dict[str, Any]], path: Path) -> None:
    """AUROC against dose, a panel per detector (document view): a colour per world; contaminated solid, sham dashed."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    worlds = _worlds(artifacts)
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    shown = _scored(artifacts)
    cols = min(4, len(shown))
    rows = -(-len(shown) // cols)
    fig, grid = plt.subplots(rows, cols, figsize=(3.2 * cols, 3.1 * rows + 0.6), sharey=True, squeeze=False)
    axes = grid.ravel()
    for ax in axes[len(shown) :]:
        ax.axis("off")
    for ax, det in zip(axes, shown):
        for colour, ((model, exp), group) in zip(colours, worlds.items()):
            label = f"{MODELS.get(model, model)}, {FORMS.get(exp, exp)}"
            for which, style in (("contaminated", "-"), ("sham", "--")):
                xs, ys, lo, hi = [], [], [], []
                for dose in _doses(group):
                    seeds = seeds_of(group, f"{det}/document", dose)
                    if seeds:
                        point, (low, high), _ = auroc(seeds, which)
                        xs.append(dose), ys.append(point), lo.append(low), hi.append(high)
                ax.plot(xs, ys, style, marker="o", ms=3, color=colour, label=f"{label}: {which}")
                ax.fill_between(xs, lo, hi, color=colour, alpha=0.12)
        ax.axhline(0.5, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ticks = sorted({d for g in worlds.values() for d in _doses(g)})
        ax.set_xticks(ticks, [str(t) for t in ticks])
        notes = [f"{MODELS.get(m, m)}{fewer}" for (m, _), g in worlds.items() if (fewer := _fewer(det, g))]
        ax.set_title("\n".join([NAMES[det], *notes]), fontsize=9)
        ax.set_xlabel("epochs over the leaked half")
    for ax in grid[:, 0]:
        ax.set_ylabel("AUROC, leaked vs unleaked")
    handles, labels = axes[0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=min(4, len(labels)), fontsize=7, frameon=False)
    fig.tight_layout(rect=(0, (0.08 + 0.04 * (len(labels) // 4)) / rows, 1, 1))
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)


def tables(folder: Path = ARTIFACTS, out: Path = PAGE, fig: Path | None = FIGURE) -> str:
    """Write the results page (and the figure) from the artifacts; return the page."""
    artifacts = load(folder)
    if not artifacts:
        raise SystemExit(f"no artifacts in {folder}: run make evidence first")
    text = page(artifacts)
    atomic_write_text(out, text)
    atomic_write_text(README, with_block(README.read_text(), readme_block(artifacts), BEGIN, END))
    if fig is not None:
        figure(artifacts, fig)
    return text


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: ``collect RUN_DIR [--out DIR]`` or ``tables``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    c = sub.add_parser("collect", help="a make evidence run -> one JSON artifact per model, leak form and seed")
    c.add_argument("run_dir", type=Path)
    c.add_argument("--out", type=Path, default=ARTIFACTS)
    sub.add_parser("tables", help=f"the artifacts in {ARTIFACTS} -> {PAGE} and {FIGURE}")
    args = parser.parse_args(argv)
    if args.command == "collect":
        for path in collect(args.run_dir, args.out):
            print(path)
    else:
        tables()
        print(PAGE)


if __name__ == "__main__":
    main()
