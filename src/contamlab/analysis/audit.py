"""Audit results as Markdown and figures: one audit, a leaderboard over models, the meta-audit.

- :func:`audit_markdown`: one audit's verdicts, BenBench's evidence and the transparency card (``audit.md``).
- :func:`leaderboard`: model × benchmark × reading (statistic, interval, verdict) over every audit of a sweep.
- :func:`meta_audit`: the readings held against the simulation's truth: how often each flags a clean model (false
  alarms) and a contaminated one (power, by leak style), with the number of models behind each figure.
- :func:`error_rate_table`: the error-rate audits' verdicts against the same truth, with their null and twins.
- :func:`benbench_order_figure`, :func:`codec_figure`: BenBench's model ordering by δ_train-test and CoDeC's scores
  against its bands and the reference models.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contamlab.analysis.markdown import table
from contamlab.analysis.transparency_card import render_markdown
from contamlab.models.reference import ModelRef


def _num(value: Any, digits: int = 3) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def _interval(v: dict[str, Any]) -> str:
    ci = v.get("interval")
    return f"{_num(v['value'])} [{_num(ci[0])}, {_num(ci[1])}]" if ci else _num(v["value"])


def _p(value: Any) -> str:
    return "—" if value is None else f"{value:.2g}"


def _flag(flagged: Any) -> str:
    return {True: "**flagged**", False: "not flagged"}.get(flagged, "no verdict")


def _flag_or_why(v: dict[str, Any]) -> str:
    """The flag, or for a reading left unread for want of items, why (a table without a verdict column says so)."""
    return v["verdict"] if v["flagged"] is None and v["verdict"].startswith("too few items") else _flag(v["flagged"])


def _error_rates(v: dict[str, Any]) -> list[str]:
    """A reading with error rates's false alarms on the null and power per dose (docs/audit.md#error-rates)."""
    cal = (v.get("detail") or {}).get("error_rates")
    if cal is None:
        return ["—", "—"]
    if "not_run" in cal:
        return ["no error rates", "—"]
    null = cal["null"]
    alarms = f"{null['flagged']}/{null['total']}" if null else "—"
    power = "; ".join(f"{r['flagged']}/{r['total']} at {dose}" for dose, r in cal["power"].items()) or "—"
    return [alarms, power]


def verdict_table(verdicts: Sequence[dict[str, Any]]) -> str:
    """One row per reading: statistic, value [95% interval], p, the method's words, the flag.

    A error-rate audit adds each reading's false alarms on the pool's splits and its power on the twins.
    """
    measured = any("error_rates" in (v.get("detail") or {}) for v in verdicts)
    body = [
        [v["name"], v["statistic"], _interval(v), _p(v["p_value"]), v["verdict"].replace("|", "/"), _flag(v["flagged"])]
        + (_error_rates(v) if measured else [])
        for v in verdicts
    ]
    header = ["reading", "statistic", "value [95% CI]", "p", "verdict", "flag"]
    return table(header + (["split null (level check)", "power (twins)"] if measured else []), body)


def _error_rates_note(audit: dict[str, Any]) -> list[str]:
    """What the error rates were measured on: the pool, its splits, the twins and their doses."""
    cal = audit.get("error_rates")
    if not cal:
        return []
    return [
        f"Calibrated on this model: a pool of {cal['pool']}; the null from {cal['null_draws']} random splits of it "
        f"({cal['sides'][0]} and {cal['sides'][1]} items, or in proportion); the power from {cal['twins_per_dose']} "
        f"twins per dose ({', '.join(cal['doses'])}), each LoRA-fine-tuned on a random half of the pool. A reading "
        f"below power {cal['min_power']:g} at every dose gives no verdict ({cal['wall_s']:.0f} s{_twin_cost(cal)}).",
        "",
    ]


def _twin_cost(cal: dict[str, Any]) -> str:
    """What a twin cost this run, as a clause (empty where every twin was trained and scored before)."""
    per = cal.get("seconds_per_twin") or {}
    parts = [f"{what} {per[what]:.0f} s" for what in ("train", "score") if per.get(what) is not None]
    return f"; a twin's median cost: {', '.join(parts)}" if parts else ""


def _scoring_note(audit: dict[str, Any]) -> str:
    """How the wall time went on loading and scoring each model (all cached: no model loaded)."""
    per = audit.get("scoring_s")
    if not per:
        return ""
    cached = [k for k, d in audit["detectors"].items() if d.get("cached")]
    parts = ", ".join(f"`{spec}` {s:.1f} s" for spec, s in per.items())
    return f" (loading and scoring: {parts}; read from the cache: {', '.join(cached) or 'nothing'})"


def _blind_note(audit: dict[str, Any]) -> list[str]:
    """The blind baseline's line: what the texts alone give, and the verdicts it withheld."""
    blind = audit.get("blind")
    if not blind:
        return []
    low, high = blind["ci"]
    line = (
        f"Blind baseline (no model: word and character n-grams, cross-validated): benchmark vs non-members at AUROC "
        f"{blind['auroc']:.3f} [{low:.3f}, {high:.3f}]; a membership reading at or below it says nothing of membership."
    )
    if blind["withheld"]:
        line += f" Withheld as not distinguishable from that shift: {', '.join(blind['withheld'])}."
    return [line, ""]


def _shift_note(audit: dict[str, Any]) -> list[str]:
    """The shift null's line: which shift the verdicts' false alarms were measured under, and what it withheld."""
    shift = audit.get("shift_null")
    if not shift:
        return []
    world = shift["file_world"]
    line = (
        f"Shift null, `{shift['condition']}` condition: {shift['about']}, measured on models that saw nothing "
        f"({world['model']} on {world['domain']}). Each membership verdict states its false alarms under it; a "
        f"reading whose rate is shown above {shift['max_rate']:g} (the lower end of its interval) gives no verdict."
    )
    if shift["withheld"]:
        line += f" No verdict: {', '.join(shift['withheld'])}."
    return [line, ""]


def audit_markdown(results: dict[str, Any]) -> str:
    """The report section of one audit."""
    audit = results["audit"]
    refs = ", ".join(f"`{r['spec']}`" for r in audit["references"]) or "none"
    lines = [
        f"## Audit of `{audit['target']['spec']}` on {audit['benchmark']} ({audit['questions']} items)",
        "",
        f"Model: `{audit['target']['source']}`. Reference models: {refs}. Non-member items: {audit['nonmembers']}.",
        f"Wall time: {results['timings']['wall_s']:.1f} s{_scoring_note(audit)}.",
        "",
        verdict_table(audit["verdicts"]),
        "",
        *_blind_note(audit),
        *_shift_note(audit),
        *_error_rates_note(audit),
    ]
    not_run = {k: v["not_run"] for k, v in audit["detectors"].items() if "not_run" in v}
    if not_run:
        lines += ["Not run: " + "; ".join(f"{k} ({why})" for k, why in not_run.items()), ""]
    bench = audit["detectors"].get("benbench", {})
    if bench.get("instance_flags"):
        flags = {k: v["test"] for k, v in bench["instance_flags"].items()}
        lines += ["BenBench instance-level flags (items with every n-gram predicted): " + _kv(flags), ""]
    evidence = bench.get("evidence") or []
    if evidence:
        lines += [f"Evidence, the first {min(5, len(evidence))} of {len(evidence)} flagged items:", ""]
        for item in evidence[:5]:
            grams = " · ".join(f"`{g.strip()}`" for g in item["ngrams"])
            lines.append(f"- {item['id']}: {grams}")
        lines.append("")
    if audit.get("truth"):
        t = audit["truth"]
        lines += [
            f"Simulation truth: {'contaminated (' + t['leak'] + ' leak)' if t['contaminated'] else 'clean'}.",
            "",
        ]
    lines += ["### Benchmark Transparency Card (measured)", "", render_markdown(audit["card"]), ""]
    return "\n".join(lines)


def _kv(values: dict[str, Any]) -> str:
    return ", ".join(f"{k} {v}" for k, v in values.items())


def audit_results(results: Sequence[tuple[Path, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The audits among a sweep's results (newest first, one per target × benchmark × references)."""
    seen, out = set(), []
    for _, r in results:
        if "audit" not in r:
            continue
        a = r["audit"]
        key = (
            r["config"]["model"]["name"],
            a["benchmark"],
            a["target"]["spec"],
            tuple(x["spec"] for x in a["references"]),
        )
        key += (r["config"].get("seed"),)
        if key not in seen:
            seen.add(key)
            out.append(r)
    return out


def target_label(r: dict[str, Any]) -> str:
    """The audited model as `<model>:<spec>@<seed>` (the seed shown for a simulated target)."""
    a = r["audit"]
    seed = r["config"].get("seed", 0)
    ref = ModelRef.parse(a["target"]["spec"])
    suffix = f"@{seed}" if ref.simulated and ref.seed is None else ""
    return f"{r['config']['model']['name']}:{a['target']['spec']}{suffix}"


def leaderboard(audits: Sequence[dict[str, Any]]) -> str:
    """Model × benchmark × reading: the statistic with its interval and the verdict's flag."""
    body = []
    for r in sorted(audits, key=lambda r: (r["audit"]["benchmark"], target_label(r))):
        for v in r["audit"]["verdicts"]:
            body.append(
                [target_label(r), r["audit"]["benchmark"], v["name"], _interval(v), _p(v["p_value"]), _flag_or_why(v)]
            )
    return table(["model", "benchmark", "reading", "value [95% CI]", "p", "flag"], body)


def timing_table(audits: Sequence[dict[str, Any]]) -> str:
    """Wall time per audit: the target's detector passes and this job's own wall time.

    The detector times are those of the first computation, marked ``(cached)`` where this run read them back; the
    job's wall time includes the references, the sampling and whatever came from the caches.
    """
    body = []
    for r in sorted(audits, key=lambda r: (r["audit"]["benchmark"], target_label(r))):
        detectors = r["audit"]["detectors"]
        scored = sum(d.get("wall_s", 0.0) for d in detectors.values())
        per = ", ".join(
            f"{k} {d['wall_s']:.0f}{' (cached)' if d.get('cached') else ''}"
            for k, d in detectors.items()
            if "wall_s" in d
        )
        body.append([target_label(r), r["audit"]["benchmark"], f"{scored:.0f}", f"{r['timings']['wall_s']:.0f}", per])
    return table(["model", "benchmark", "target's detectors (s)", "job wall (s)", "per detector (s)"], body)


#: The groups a simulated target falls in by its truth: the unleaked ones (false alarms), then the leaks (power).
NULL_GROUPS = ("clean", "sham")
LEAK_GROUPS = ("verbatim", "paraphrased")


def _truth_group(r: dict[str, Any]) -> str | None:
    """The group of an audit's simulated target by its truth; None where the truth is not known.

    Its leak (``verbatim``, ``paraphrased``) where it saw the benchmark, else ``sham`` for a sham control (in-domain
    tuning on fresh problems) or ``clean``.

    The two unleaked groups are kept apart because they answer different questions: a flag on the clean model is a
    false alarm of the plain recipe, one on the sham a false alarm of extra in-domain training without membership.
    """
    truth = r["audit"].get("truth")
    if not truth:
        return None
    if truth["contaminated"]:
        return str(truth["leak"])
    return "sham" if ModelRef.parse(r["audit"]["target"]["spec"]).stage == "sham" else "clean"


def meta_audit(audits: Sequence[dict[str, Any]]) -> str | None:
    """False alarms and power of each reading over the simulated targets (None without any simulated target).

    Each cell is ``flagged / models`` among the clean targets (false alarms), the sham controls (a column of its own
    where any was audited) and the contaminated ones, by leak.
    """
    rows: dict[str, dict[str, list[int]]] = {}
    for r in audits:
        group = _truth_group(r)
        if group is None:
            continue
        for v in r["audit"]["verdicts"]:
            if v["flagged"] is None:
                continue
            cell = rows.setdefault(v["name"], {}).setdefault(group, [0, 0])
            cell[0] += int(bool(v["flagged"]))
            cell[1] += 1
    if not rows:
        return None

    def show(cell: list[int] | None) -> str:
        return "—" if not cell else f"{cell[0]}/{cell[1]}"

    shams = any("sham" in g for g in rows.values())  # the sham column where sham controls were audited
    body = [
        [
            name,
            show(g.get("clean")),
            *([show(g.get("sham"))] if shams else []),
            show(g.get("verbatim")),
            show(g.get("paraphrased")),
            _trust(g),
        ]
        for name, g in sorted(rows.items())
    ]
    header = [
        "reading",
        "false alarms (clean)",
        *(["false alarms (sham)"] if shams else []),
        "power (verbatim leak)",
        "power (question reworded, solution verbatim)",
        "assessment",
    ]
    return table(header, body)


def error_rate_table(audits: Sequence[dict[str, Any]]) -> str | None:
    """The error-rate audits of simulated models against their truth (None without any).

    Per reading with error rates: among the clean targets, the sham controls (where audited) and the contaminated ones
    (by leak), flagged / given a verdict, and how many were left without one as underpowered; then the split null's
    flagged splits per audit (their range over the audits: audits of one pool share their splits, so the counts are
    not summed) and the twins' power at the first dose, summed over the audits.
    """
    rows: dict[str, dict[str, list[int]]] = {}
    for r in audits:
        group = _truth_group(r)
        if group is None or not r["audit"].get("error_rates"):
            continue
        for v in r["audit"]["verdicts"]:
            cal = (v.get("detail") or {}).get("error_rates")
            if not cal or "not_run" in cal:
                continue
            row = rows.setdefault(v["name"], {})
            cell = row.setdefault(group, [0, 0, 0])  # flagged, verdicts, underpowered
            if v["flagged"] is None:
                cell[2] += int(v["verdict"].startswith("underpowered"))
            else:
                cell[0] += int(bool(v["flagged"]))
                cell[1] += 1
            if cal.get("null"):  # one count per audit: audits of one pool share their splits, so no sum
                row.setdefault("null", []).append((cal["null"]["flagged"], cal["null"]["total"]))
            if cal.get("power"):
                first = next(iter(cal["power"].values()))
                power = row.setdefault("power", [0, 0])
                power[0] += first["flagged"]
                power[1] += first["total"]
    if not rows:
        return None

    def show(cell: list[int] | None) -> str:
        if not cell:
            return "—"
        text = f"{cell[0]}/{cell[1]}"
        return text + (f" ({cell[2]} underpowered)" if len(cell) > 2 and cell[2] else "")

    def per_audit(counts: list[tuple[int, int]] | None) -> str:
        # the range over the audits of one audit's split null: a level check, not a count that adds up
        if not counts:
            return "—"
        flagged, totals = [c[0] for c in counts], sorted({c[1] for c in counts})
        span = f"{min(flagged)}" if min(flagged) == max(flagged) else f"{min(flagged)}–{max(flagged)}"
        return f"{span} of {'/'.join(map(str, totals))} ({len(counts)} audit{'s' * (len(counts) != 1)})"

    shams = any("sham" in g for g in rows.values())
    body = [
        [name, show(g.get("clean")), *([show(g.get("sham"))] if shams else []), show(g.get("verbatim")),
         show(g.get("paraphrased")), per_audit(g.get("null")), show(g.get("power"))]
        for name, g in sorted(rows.items())
    ]  # fmt: skip
    header = [
        "reading",
        "flagged: clean models",
        *(["flagged: sham controls"] if shams else []),
        "flagged: verbatim leaks",
        "flagged: paraphrased leaks",
        "split null (level check): flagged splits per audit",
        "twins flagged (first dose)",
    ]
    return table(header, body)


def _trust(g: dict[str, list[int]]) -> str:
    """Trustworthy at a leak strength: no false alarm and every contaminated model of that leak flagged."""
    nulls = [c for k in NULL_GROUPS if (c := g.get(k))]
    if not nulls:
        return "untested on clean models"
    if any(c[0] for c in nulls):
        return "false alarms"
    held = [leak for leak in LEAK_GROUPS if (c := g.get(leak)) and c[0] == c[1]]
    return f"trustworthy ({', '.join(held)} leak)" if held else "no false alarm, misses leaks"


# -- figures --------------------------------------------------------------------------------------------------------
def benbench_order_figure(audits: Sequence[dict[str, Any]], path: str | Path) -> Path | None:
    """BenBench's leaderboard picture: models ordered by δ_train-test (n-gram accuracy and perplexity)."""
    from contamlab.analysis.figures import plt, save_figure

    points = []
    for r in audits:
        ppl = next((v for v in r["audit"]["verdicts"] if v["name"] == "benbench/delta_train_test_ppl"), None)
        ngram = next(
            (v for v in r["audit"]["verdicts"] if v["name"].startswith("benbench/delta_train_test_ngram")), None
        )
        if ppl is not None or ngram is not None:
            points.append((f"{target_label(r)} / {r['audit']['benchmark']}", ngram, ppl))
    if not points:
        return None
    points.sort(key=lambda p: -(p[1]["value"] if p[1] and p[1]["value"] is not None else float("-inf")))
    fig, axes = plt.subplots(1, 2, figsize=(10, 0.5 * len(points) + 1.5), sharey=True)
    for ax, k, title in ((axes[0], 1, "δ_train-test, n-gram accuracy"), (axes[1], 2, "δ_train-test, answer PPL")):
        for y, p in enumerate(points):
            v = p[k]
            if v is None or v["value"] is None:
                continue
            lo, hi = v["interval"] or (v["value"], v["value"])
            ax.errorbar(v["value"], y, xerr=[[v["value"] - lo], [hi - v["value"]]], fmt="o", color="C0", capsize=3)
        ax.axvline(0, color="grey", lw=0.8)
        ax.set_title(title)
        ax.set_xlabel("points (positive: the train split favoured)")
    axes[0].set_yticks(range(len(points)), [p[0] for p in points])
    axes[0].invert_yaxis()
    return save_figure(fig, path)


def codec_figure(audits: Sequence[dict[str, Any]], path: str | Path) -> Path | None:
    """CoDeC's dataset scores with intervals against its bands (0.6, 0.8) and each audit's best reference."""
    from contamlab.analysis.figures import plt, save_figure

    points = []
    for r in audits:
        band = next((v for v in r["audit"]["verdicts"] if v["name"] == "codec/bands"), None)
        ref = next((v for v in r["audit"]["verdicts"] if v["name"] == "codec/reference"), None)
        if band is not None and band["value"] is not None:
            points.append((f"{target_label(r)} / {r['audit']['benchmark']}", band, ref["reference"] if ref else None))
    if not points:
        return None
    fig, ax = plt.subplots(figsize=(7, 0.45 * len(points) + 1.5))
    ax.axvspan(0.8, 1.0, color="C3", alpha=0.12, label="strong evidence (>= 0.8)")
    ax.axvspan(0.6, 0.8, color="C1", alpha=0.12, label="grey zone")
    for y, (_, v, ref) in enumerate(points):
        lo, hi = v["interval"] or (v["value"], v["value"])
        ax.errorbar(v["value"], y, xerr=[[v["value"] - lo], [hi - v["value"]]], fmt="o", color="C0", capsize=3)
        if ref is not None:
            ax.plot([ref, ref + 0.2], [y, y], color="grey", lw=2, alpha=0.6)
            ax.plot(ref, y, "|", color="k", ms=10)
    ax.set_yticks(range(len(points)), [p[0] for p in points])
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("CoDeC score (| best reference, grey bar: the 20-point margin)")
    ax.legend(loc="upper left", fontsize=8)
    return save_figure(fig, path)


def audit_sections(results: Sequence[tuple[Path, dict[str, Any]]], root: Path) -> list[str]:
    """The report's audit part: leaderboard, meta-audit, figures (empty without audits)."""
    audits = audit_results(results)
    if not audits:
        return []
    lines = [f"## Audits ({len(audits)} model × benchmark)", "", leaderboard(audits), ""]
    lines += ["### Wall time per audit", "", timing_table(audits), ""]
    meta = meta_audit(audits)
    if meta:
        lines += [
            "## Meta-audit: each reading against the simulation's truth",
            "",
            "Flagged / models audited. A reading is called trustworthy at a leak where it flagged no clean model "
            "and every contaminated model of that leak; with this few models that is a description, not a rate.",
            "",
            meta,
            "",
        ]
    for name, fn in (("benbench_order", benbench_order_figure), ("codec_scores", codec_figure)):
        png = fn(audits, root / "figures" / f"audit_{name}.png")
        if png is not None:
            lines += [f"![{name}]({png.relative_to(root)})", ""]
    return lines
