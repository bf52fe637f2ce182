"""The real-LM world's report: detection across seeds beside the tiny world, and the meta-audit per model family.

``python -m contamlab.analysis.real_world <dir> [--tiny <dir>]`` reads every ``results.json`` below ``<dir>`` (the
detection jobs and the audits of ``make real-world``) and writes ``<dir>/real_world.md``:

- the detection table: per detector, model and leak form, the AUROC of leaked against unleaked test questions on the
  contaminated model and on the clean control, averaged over the seeds (each seed leaks another random half and
  trains another clean model), with a 95 % interval of that average: each draw resamples every seed's leaked and
  unleaked questions (stratified, as :func:`contamlab.metrics.roc.auroc_interval`) and averages the seeds' AUROCs. The
  interval is over questions, given these trained models; the per-seed values show the spread over training runs.
  With ``--tiny``, the tiny world's AUROC on the same detector and leak form stands beside it;
- the meta-audit: for each model family, every audit reading's flagged / audited among the clean models (false
  alarms) and among the contaminated ones (power, per leak form), as :func:`contamlab.analysis.audit.meta_audit`;
- the error-rate audits (``audit.error_rates.pool``): for each model family, every verdict with error rates against the
  truth, with the split null's flagged splits per audit (a level check) and the twins' power over that family's audits;
- the training cost: wall time and tokens per second of every stage, and each audit's detector times.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from contamlab.analysis.audit import audit_results, error_rate_table, meta_audit, target_label, timing_table
from contamlab.analysis.results import load_results
from contamlab.io import atomic_write_text
from contamlab.metrics.seeds import two_level_auroc

LEAK = {"arith": "verbatim", "arith_pq": "paraphrased", "gsm8k": "verbatim (GSM8K)", "pq": "paraphrased (PQ)"}
N_BOOT = 1000


def _per_question(result_dir: Path) -> dict[str, np.ndarray] | None:
    """The leaked flags and both models' scores of one detection job (None without its CSV)."""
    path = result_dir / "detection_per_question.csv"
    if not path.is_file():
        return None
    with path.open() as f:
        rows = list(csv.DictReader(f))

    def column(name: str) -> np.ndarray:
        return np.array([float(r[name]) if r[name] not in ("", "nan") else np.nan for r in rows])

    return {
        "leaked": np.array([r["leaked"] == "1" for r in rows]),
        "contaminated": column("score_contaminated"),
        "clean": column("score_clean"),
    }


def seed_average(seeds: Sequence[tuple[np.ndarray, np.ndarray]], seed: int = 0) -> dict[str, Any] | None:
    """The mean over seeds of the AUROC (leaked vs unleaked) and its two-level bootstrap interval.

    The interval resamples the seeds, then each drawn seed's leaked and unleaked questions
    (:func:`~contamlab.metrics.seeds.two_level_auroc`): seeds that disagree widen it, as they should.

    Args:
        seeds: Per seed, (scores [N], leaked flags [N]); non-finite scores are left out.
        seed: Seed of the bootstrap draws.

    Returns:
        ``auroc`` (the mean of the seeds' AUROCs), ``ci`` (2.5 and 97.5 percentiles of the replicates), ``per_seed``
        and ``n`` (questions scored per seed), or None when a seed has an empty class.
    """
    sides, counts = [], []
    for scores, leaked in seeds:
        keep = np.isfinite(scores)
        pos, neg = scores[keep & leaked], scores[keep & ~leaked]
        if not pos.size or not neg.size:
            return None
        sides.append((pos, neg))
        counts.append(int(keep.sum()))
    mean, ci, points = two_level_auroc(sides, N_BOOT, seed)
    return {"auroc": mean, "ci": ci, "per_seed": points, "n": counts}


def _cell(entry: dict[str, Any] | None) -> str:
    if entry is None:
        return "—"
    low, high = entry["ci"]
    return f"{entry['auroc']:.2f} [{low:.2f}, {high:.2f}]"


def _separates(entry: dict[str, Any] | None) -> bool | None:
    return None if entry is None else entry["ci"][0] > 0.5


def detections(results: Sequence[tuple[Path, dict[str, Any]]]) -> dict[tuple[str, str, str], dict[str, list]]:
    """Per (model, domain, detector), each seed's (scores, leaked) on the contaminated and the clean model.

    The seeds are in order (the per-seed table's order).

    Every job of a grid carries its detection; one per (model, domain, detector, seed) is kept (the newest).
    """
    found: dict[tuple[str, str, str], dict[str, list]] = defaultdict(lambda: {"contaminated": [], "clean": []})
    seen = set()
    for path, r in results:
        det = r.get("detection")
        if not det:
            continue
        cfg = r["config"]
        key = (cfg["model"]["name"], cfg["domain"]["name"], det["detector"]["name"])
        if (*key, cfg.get("seed")) in seen:
            continue
        data = _per_question(path.parent)
        if data is None:
            continue
        seen.add((*key, cfg.get("seed")))
        for which in ("contaminated", "clean"):
            found[key][which].append((cfg.get("seed"), data[which], data["leaked"]))
    # each list in seed order (the per-seed table's order), then without the seeds
    return {
        key: {
            which: [(scores, leaked) for _, scores, leaked in sorted(runs, key=lambda r: (r[0] is None, r[0] or 0))]
            for which, runs in v.items()
        }
        for key, v in found.items()
    }


def detection_table(found: dict, tiny: dict | None = None) -> str:
    """Markdown: detector × (model, leak) AUROC on the contaminated model and the clean control, with the tiny world."""
    models = sorted({m for m, _, _ in found if m != "tiny"})
    domains = sorted({d for _, d, _ in found}, key=lambda d: list(LEAK).index(d) if d in LEAK else 99)
    header = ["detector", "leak", *[f"{m}: contaminated" for m in models], *[f"{m}: clean" for m in models]]
    if tiny:
        header.append("tiny world: contaminated")
    header.append("tiny world's conclusion holds?")
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for detector in sorted({d for _, _, d in found}):
        for domain in domains:
            cont = {m: _avg(found.get((m, domain, detector), {}).get("contaminated")) for m in models}
            clean = {m: _avg(found.get((m, domain, detector), {}).get("clean")) for m in models}
            if all(v is None for v in cont.values()):
                continue
            row = [detector, LEAK.get(domain, domain)]
            row += [_cell(cont[m]) for m in models] + [_cell(clean[m]) for m in models]
            verdict = "—"
            if tiny:
                t = _avg(tiny.get(("tiny", domain, detector), {}).get("contaminated"))
                row.append(_cell(t))
                if t is not None and any(v is not None for v in cont.values()):
                    held = [_separates(cont[m]) == _separates(t) for m in models if cont[m] is not None]
                    verdict = "yes" if all(held) else "no" if not any(held) else "for some models"
            row.append(verdict)
            lines.append("| " + " | ".join(row) + " |")
    return "\n".join(lines)


def _avg(seeds: list | None) -> dict[str, Any] | None:
    return seed_average(seeds) if seeds else None


def per_seed_table(found: dict) -> str:
    """Markdown: every seed's AUROC on the contaminated model (the spread over training runs)."""
    lines = ["| model | leak | detector | AUROC per seed (contaminated) | AUROC per seed (clean) | questions |"]
    lines.append("|---|---|---|---|---|---|")
    for (model, domain, detector), sides in sorted(found.items()):
        if model == "tiny":
            continue
        cont, clean = _avg(sides["contaminated"]), _avg(sides["clean"])
        if cont is None:
            continue
        seeds = ", ".join(f"{v:.2f}" for v in cont["per_seed"])
        ctrl = ", ".join(f"{v:.2f}" for v in clean["per_seed"]) if clean else "—"
        n = ", ".join(str(c) for c in cont["n"])
        lines.append(f"| {model} | {LEAK.get(domain, domain)} | {detector} | {seeds} | {ctrl} | {n} |")
    return "\n".join(lines)


def by_family(audits: Sequence[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """The audits grouped by model family, families in name order."""
    families: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in audits:
        families[r["config"]["model"]["name"]].append(r)
    return dict(sorted(families.items()))


def meta_audit_sections(audits: Sequence[dict[str, Any]]) -> list[str]:
    """One meta-audit table per model family (flagged / audited among clean and contaminated models).

    A model audited by several jobs (the cheap detectors in one, a costly one in another) counts once in the heading.
    """
    out = []
    for model, family in by_family(audits).items():
        if table := meta_audit(family):
            n = len({(target_label(r), r["audit"]["benchmark"]) for r in family})
            out += [f"### {model} ({n} models audited)", "", table, ""]
    return out


def error_rate_sections(audits: Sequence[dict[str, Any]]) -> list[str]:
    """One table per model family of the verdicts with error rates against the truth (docs/audit.md).

    Per family, because a reading's false alarms and power are properties of the model they are measured on: summed over
    SmolLM2 and Gemma-3 together, a count would describe neither.
    """
    out = []
    for model, family in by_family(audits).items():
        if table := error_rate_table(family):
            out += [f"### {model}", "", table, ""]
    return out


def training_table(models_dir: Path) -> str | None:
    """Markdown: every trained stage of the real LMs, its steps, tokens per second and wall time.

    A error-rate audit's twins (``<model>/twins/``) are summed on a line of their own: they are the audit's cost,
    not stages of the study.
    """
    found, twins = [], []
    for path in models_dir.glob("*/*/*/train_summary.json"):
        s = json.loads(path.read_text())
        if s.get("model") == "tiny" or path.parent.name.endswith(".partial"):
            continue
        if path.parent.parent.name == "twins":
            twins.append(s)
            continue
        found.append((s["model"], s["domain"], s["stage"], s.get("key_fields", {}).get("seed"), s))
    if not found:
        return None
    rows = [
        f"| {model} | {domain} | {stage} | {seed} | {s['steps']} | {s['tokens_per_epoch']} | "
        f"{(s.get('tokens_per_s') or 0):.0f} | {s['wall_s']:.0f} | {s.get('precision', '')} |"
        for model, domain, stage, seed, s in sorted(found, key=lambda f: f[:4])
    ]
    total = {m: sum(f[4]["wall_s"] for f in found if f[0] == m) for m in sorted({f[0] for f in found})}
    head = "| model | domain | stage | seed | steps | tokens per epoch | tok/s | wall (s) | precision |\n|" + "---|" * 9
    sums = "; ".join(f"{m} {t / 60:.1f} min" for m, t in total.items())
    twin_line = ""
    if twins:  # per model and benchmark: one model's twins folder holds the twins of every audited benchmark
        groups = sorted({(t["model"], t["domain"]) for t in twins})
        per_group = {g: [t for t in twins if (t["model"], t["domain"]) == g] for g in groups}
        twin_line = (
            " Error-rate twins, trained apart: "
            + "; ".join(
                f"{m} on {d} {len(ts)} twin{'s' * (len(ts) != 1)}, {sum(t['wall_s'] for t in ts) / 60:.1f} min"
                for (m, d), ts in per_group.items()
            )
            + "."
        )
    return head + "\n" + "\n".join(rows) + f"\n\nTraining time, the stages' own wall times summed: {sums}.{twin_line}"


def write_report(
    root: Path, tiny_root: Path | None = None, models_dir: Path | None = None, out: Path | None = None
) -> Path:
    """Write the report of the jobs below ``root`` to ``out`` (default ``<root>/real_world.md``); return its path."""
    results = load_results(root)
    found = detections(results)
    audits = audit_results(results)
    tiny = detections(load_results(tiny_root)) if tiny_root else None
    parts = [
        "# The real-LM world",
        "",
        f"From the jobs under `{root}`{f' and the tiny world under `{tiny_root}`' if tiny_root else ''}.",
        "",
        "## Detection: AUROC of leaked vs unleaked test questions",
        "",
        "Mean over seeds [95 % bootstrap interval over questions]; the clean model is the control (0.5: no "
        "separation). 'Holds' compares whether the interval lies above 0.5 on the real LM and on the tiny world.",
        "",
        detection_table(found, tiny) if found else "No detection jobs found.",
        "",
        "### Per seed",
        "",
        per_seed_table(found) if found else "",
        "",
        "## Meta-audit: flagged / audited",
        "",
        "Clean models are the false-alarm column; contaminated ones the power columns (docs/audit.md).",
        "",
        *(meta_audit_sections(audits) or ["No audits found."]),
    ]
    if measured := error_rate_sections(audits):
        parts += [
            "## Error-rate audits against the truth",
            "",
            "Each reading with error rates's verdict (docs/audit.md#error-rates): flagged / given a verdict, and "
            "the audits where it gave none for want of power; the split null's flagged splits per audit (a level "
            "check; audits of one pool share their splits) and the twins' power over a model family's audits.",
            "",
            *measured,
        ]
    if models_dir is not None and (table := training_table(models_dir)):
        parts += ["## Training", "", table, ""]
    if audits:
        parts += ["## Audit cost", "", "Seconds of each detector's scoring of the target (first computation).", ""]
        parts += [timing_table(audits), ""]
    out = out or root / "real_world.md"
    atomic_write_text(out, "\n".join(parts) + "\n")
    return out


def main(argv: Sequence[str] | None = None) -> None:
    """``python -m contamlab.analysis.real_world <dir> [--tiny <dir>] [--models <dir>] [--out <file>]``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="the directory of make real-world's jobs")
    parser.add_argument("--tiny", type=Path, default=None, help="a tiny-world detection sweep to set beside it")
    parser.add_argument("--models", type=Path, default=None, help="the models directory (for the training table)")
    parser.add_argument("--out", type=Path, default=None, help="the report's path (default: <dir>/real_world.md)")
    args = parser.parse_args(argv)
    print(write_report(args.root, args.tiny, args.models, args.out))


if __name__ == "__main__":
    main()
