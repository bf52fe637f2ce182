"""The study's report: the tables and figures of "Zero Gap Is Not Restoration" from finished evaluate.py jobs.

``python -m contamlab.analysis.report <dir>`` reads every ``results.json`` below ``<dir>`` (one sweep or a whole
``make reproduce`` tree) and writes ``<dir>/report.md`` with the figures it references under ``<dir>/figures/``:

- Table 1: G-AP vs SA-PPG per strategy (the rank reversal), per (model, domain);
- in Tables 1-4 the reference row "Clean, 2nd batch": an independent second clean batch scored against the first,
  what a perfect strategy would score at this m (the noise floor, docs/methods/metrics.md);
- Table 2: Δ⁺, Δ⁻, A-PPG, G-APP, SA-PPG per strategy (with All-Zero);
- Table 3: SA-PPG per strategy × (model, domain), the best mitigation in bold only where it beats Identity;
- Table 4: the RailCap ablation (n = 1..7, ban at n = 4) with S-Δ⁺ / S-Δ⁻, All-Zero as reference;
- leaked / unleaked split of SA-PPG (beyond the paper);
- Figure 1 (collapse onto greedy, divergence ranks) and Figure 2 (readout stability) from the jobs that ran them;
- the detector table (the meta-experiment), when detector jobs are present.

Jobs repeated across sweeps (same model, domain and strategy parameters) count once: the newest file wins (the rows
are :mod:`.results`'s, which the headline, the summary and the real-LM world's report read too).
"""

from __future__ import annotations

import json
import logging
import os
import sys
from pathlib import Path
from typing import Any

from contamlab.analysis.markdown import table
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

log = logging.getLogger("contamlab")


def _fmt(row: dict[str, Any], key: str, ci: bool = True) -> str:
    value = row.get(key)
    if value is None:
        return ""
    lo, hi = row.get(f"{key}_lo"), row.get(f"{key}_hi")
    return f"{value:.4f}" + (f" [{lo:.3f}, {hi:.3f}]" if ci and lo is not None else "")


def _ranks(values: list[float]) -> list[int]:
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranks = [0] * len(values)
    for rank, i in enumerate(order, 1):
        ranks[i] = rank
    return ranks


def table1(rows: list[dict[str, Any]]) -> str:
    """G-AP vs SA-PPG per strategy with each metric's ranking (1 = best): the paper's rank reversal.

    The noise-floor row is shown for reference and not ranked.
    """
    ranked = [r for r in rows if r["strategy_name"] != FLOOR]
    gap, sappg = _ranks([r["all/g_ap"] for r in ranked]), _ranks([r["all/sa_ppg"] for r in ranked])
    rank = {id(r): (str(a), str(b)) for r, a, b in zip(ranked, gap, sappg)}
    body = [
        [
            r["label"],
            _fmt(r, "all/g_ap"),
            rank.get(id(r), ("–",))[0],
            _fmt(r, "all/sa_ppg"),
            rank.get(id(r), ("", "–"))[1],
        ]
        for r in rows
    ]
    return table(["strategy", "G-AP", "rank", "SA-PPG", "rank"], body)


def table2(rows: list[dict[str, Any]]) -> str:
    """Δ⁺, Δ⁻, A-PPG, G-APP, SA-PPG per strategy: where G-AP hides the error (cancellation, uniform weighting)."""
    keys = ("delta_plus", "delta_minus", "a_ppg", "g_app", "sa_ppg")
    body = [[r["label"], *(_fmt(r, f"all/{k}", ci=False) for k in keys)] for r in rows]
    return table(["strategy", "Δ⁺", "Δ⁻", "A-PPG", "G-APP", "SA-PPG"], body)


BEATS_RULE = (
    "Bold: in each setting, the lowest SA-PPG among the mitigations (every strategy but Identity, which mitigates "
    "nothing, and All-Zero) that beat Identity. A mitigation beats Identity when Identity − mitigation has a paired "
    "95% bootstrap interval above 0 (same questions, same clean batch: the jobs' per_question.csv); where the two jobs "
    "are not paired, when the mitigation's 95% interval lies wholly below Identity's; where either has no interval, "
    "when its SA-PPG is lower."
)


def beats_identity(row: dict[str, Any], identity: dict[str, Any]) -> tuple[bool, str]:
    """Whether ``row``'s strategy beats Identity under SA-PPG (:data:`BEATS_RULE`), and the evidence in words.

    A lower point estimate alone is not enough where intervals exist: in a small setting the strategies' SA-PPG
    differ by less than one sample's noise.
    """
    from contamlab.analysis.claims import paired_sappg

    name = row["label"]
    values = f"{name} {_fmt(row, 'all/sa_ppg', ci=False)}, Identity {_fmt(identity, 'all/sa_ppg', ci=False)}"
    diff = paired_sappg(identity, row)
    if diff is not None:
        evidence = f"Identity − {name} = {diff[0]:+.4f}, paired interval [{diff[1]:+.3f}, {diff[2]:+.3f}]"
        return diff[1] > 0, f"{values}; {evidence}"
    lo, hi = identity.get("all/sa_ppg_lo"), row.get("all/sa_ppg_hi")
    if lo is not None and hi is not None:
        intervals = f"{name} {_fmt(row, 'all/sa_ppg')}, Identity {_fmt(identity, 'all/sa_ppg')} (not paired)"
        return hi < lo, intervals
    return row["all/sa_ppg"] < identity["all/sa_ppg"], f"{values} (no intervals)"


def best_mitigation(rows: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, str | None]:
    """One setting's best mitigation for Table 3's bold, or None with the reason in words.

    Args:
        rows: The setting's main rows (labelled).

    Returns:
        ``(row, None)``: the lowest-SA-PPG mitigation that beats Identity (:func:`beats_identity`), or, where Identity
        did not run, the lowest mitigation with a note saying so; ``(None, note)`` when no mitigation beats Identity
        or none ran.
    """
    mitigations = sorted(
        (r for r in rows if r["strategy_name"] not in ("identity", "all_zero", FLOOR)), key=lambda r: r["all/sa_ppg"]
    )
    identity = next((r for r in rows if r["strategy_name"] == "identity"), None)
    if not mitigations:
        return None, "no mitigation ran"
    if identity is None:
        return mitigations[0], "no Identity job, so the lowest mitigation is in bold, untested against no mitigation"
    evidence = None
    for row in mitigations:  # lowest first; the lowest may sit within the noise where a paired runner-up does not
        beats, words = beats_identity(row, identity)  # a paired test reads both jobs' per_question.csv: once each
        if beats:
            return row, None
        evidence = evidence or words
    return None, f"**no mitigation beats Identity here** (lowest mitigation: {evidence})"


def table3(rows: list[dict[str, Any]]) -> str:
    """SA-PPG per strategy (rows) × (model, domain) (columns), then the rule for the bold and a note per setting.

    In each column the best mitigation is in bold only where it beats Identity (:func:`best_mitigation`); a column
    where none does has no bold cell and says so below the table, since bolding Identity would name "no mitigation"
    the best mitigation.
    """
    settings = sorted({(r["model"], r["domain"]) for r in rows})
    strategies = sorted({(strategy_order(r), r["label"]) for r in rows})
    cell = {(r["model"], r["domain"], r["label"]): r["all/sa_ppg"] for r in rows}
    bold, notes = {}, []
    for s in settings:
        best, note = best_mitigation([r for r in rows if (r["model"], r["domain"]) == s])
        if best is not None:
            bold[s] = best["label"]
        if note is not None:
            notes.append(f"- {s[0]} × {s[1]}: {note}.")
    body = []
    for _, name in strategies:
        cells = []
        for s in settings:
            value = cell.get((*s, name))
            text = "" if value is None else f"{value:.4f}"
            cells.append(f"**{text}**" if value is not None and bold.get(s) == name else text)
        body.append([name, *cells])
    grid = table(["strategy", *(f"{m} × {d}" for m, d in settings)], body)
    return "\n".join([grid, "", BEATS_RULE, *([""] + notes if notes else [])])


def table4(railcap: list[dict[str, Any]], all_zero: dict[str, Any] | None, floor: dict[str, Any] | None = None) -> str:
    """The RailCap ablation: n sweep (cap), ban at n = 4, All-Zero and the noise floor as references."""
    keys = ("sa_ppg", "s_delta_plus", "s_delta_minus")
    ordered = sorted(railcap, key=lambda r: (r.get("mode") != "cap", r.get("n", 0), r.get("duplicates", "")))
    body = []
    for r in ordered:
        label = f"n = {r.get('n')}" + ("" if r.get("mode") == "cap" else f", {r.get('mode')}")
        if r.get("duplicates", "all") != "all":
            label += f", duplicates={r['duplicates']}"
        body.append([label, *(_fmt(r, f"all/{k}", ci=False) for k in keys)])
    if all_zero is not None:
        body.append(["All-Zero", *(_fmt(all_zero, f"all/{k}", ci=False) for k in keys)])
    if floor is not None:
        body.append([FLOOR_LABEL, *(_fmt(floor, f"all/{k}", ci=False) for k in keys)])
    return table(["RailCap", "SA-PPG", "S-Δ⁺", "S-Δ⁻"], body)


def split_table(rows: list[dict[str, Any]]) -> str:
    """SA-PPG and mean solve probabilities on leaked vs unleaked questions (beyond the paper)."""
    body = [
        [r["label"], *(_fmt(r, f"{g}/sa_ppg") for g in ("all", "leaked", "unleaked"))]
        + [_fmt(r, f"{g}/s_delta_minus", ci=False) for g in ("leaked", "unleaked")]
        for r in rows
    ]
    return table(["strategy", "SA-PPG all", "leaked", "unleaked", "S-Δ⁻ leaked", "S-Δ⁻ unleaked"], body)


def clean_bins_table(per_bin: list[dict[str, Any]], bins: int) -> str:
    """The clean model's solve probabilities as SA-PPG stratifies them (Eq. 13): the bins that hold questions.

    Args:
        per_bin: A job's ``per_bin`` rows (:func:`contamlab.metrics.per_bin_table`): ``lo``, ``hi``, ``n``,
            ``mean_r_clean`` per non-empty bin of the clean solve probability.
        bins: B, the number of equal-width bins.
    """
    total = sum(int(row["n"]) for row in per_bin)
    body = []
    for row in per_bin:
        edge = "]" if row["hi"] >= 1 else ")"  # the last bin holds r̂ = 1
        body.append([f"[{row['lo']:.2f}, {row['hi']:.2f}{edge}", str(row["n"]), f"{row['mean_r_clean']:.3f}"])
    head = f"{total} questions in {len(per_bin)} of the {bins} bins of the clean solve probability."
    return head + "\n\n" + table(["clean r̂ bin", "questions", "mean clean r̂"], body)


def survival_table(root: Path) -> str | None:
    """RailCap's premise measured on a model pair (``root/runner_up/*.json``).

    The share of forced-runner-up branches of greedy-correct trajectories that still end correct, as
    ``scripts/calibrate.py --reference --stage <stage> --out <root>/runner_up/<stage>.json`` writes it.

    Returns:
        A table with each file's counts and 95 % Wilson interval, or None when ``root/runner_up`` holds none.
    """
    from scipy.stats import binomtest

    body = []
    for path in sorted((root / "runner_up").glob("*.json")):
        report = json.loads(path.read_text())
        survival = report["runner_up_survival"]
        k, n = int(survival["correct_branches"]), int(survival["branches"])
        ci = binomtest(k, n).proportion_ci(0.95, method="wilson") if n else None
        interval = f" [{ci.low:.2f}, {ci.high:.2f}]" if ci else ""
        body.append(
            [
                f"{report['model']} × {report['domain']}",
                report.get("stage", "base"),
                f"{report['greedy_accuracy']:.3f} of {report['questions']}",
                f"{k} of {n}",
                (f"{k / n:.3f}" if n else "n/a") + interval,
            ]
        )
    if not body:
        return None
    header = ["model × domain", "model", "greedy accuracy", "branches still correct", "survival (95 % Wilson)"]
    return table(header, body)


def _rel(path: Path, root: Path) -> str:
    return os.path.relpath(path, root)


def build_report(root: str | Path) -> str | None:
    """The Markdown report of every job below ``root`` (figures written to ``root/figures``); None when empty."""
    from contamlab.analysis import figures
    from contamlab.analysis.audit import audit_sections

    root = Path(root)
    results = load_results(root)
    if not results:
        return None
    dropped: list[tuple[Path, Path]] = []
    rows = metric_rows(results, dropped)
    lines = ["# contamlab report", "", f"{len(results)} job results under `{root}`.", ""]
    if dropped:
        merged = "; ".join(f"`{_rel(old, root)}` (kept `{_rel(new, root)}`)" for old, new in dropped)
        lines += [f"{len(dropped)} duplicate run(s) dropped, the newer results.json kept: {merged}.", ""]
    settings = sorted({(r["model"], r["domain"]) for r in rows})
    main = label_rows([r for r in rows if is_main_row(r)])
    for model, domain in settings:
        every = [r for r in rows if (r["model"], r["domain"]) == (model, domain)]
        here = sorted((r for r in main if (r["model"], r["domain"]) == (model, domain)), key=strategy_order)
        lines += [f"## {model} × {domain} ({every[0]['questions']} questions, m = {every[0]['m']})", ""]
        if here:
            lines += ["### Table 1: G-AP vs SA-PPG (95% bootstrap intervals; rank 1 = best)", "", table1(here), ""]
            png = root / "figures" / f"table1_{model}_{domain}.png"
            fig = figures.strategy_figure(here, png, f"{model} × {domain}")
            lines += [f"![Table 1, {model} × {domain}]({_rel(fig, root)})", ""]
            lines += ["### Table 2: decomposition (Δ⁺ under-, Δ⁻ over-suppression)", "", table2(here), ""]
            lines += ["### Leaked vs unleaked questions", "", split_table(here), ""]
            bins = _clean_bins(results, model, domain)
            if bins is not None:
                lines += ["### The clean model's solve probabilities (the SA-PPG strata)", "", bins, ""]
        railcap = [r for r in every if r["strategy_name"] == "railcap"]
        if len(railcap) > 1:
            zero = next((r for r in here if r["strategy_name"] == "all_zero"), None)
            floor = next((r for r in here if r["strategy_name"] == FLOOR), None)
            lines += ["### Table 4: RailCap ablation", "", table4(railcap, zero, floor), ""]
            capped = [r for r in railcap if r.get("mode") == "cap" and r.get("duplicates", "all") == "all"]
            if len(capped) > 1:
                fig = figures.ablation_figure(capped, root / "figures" / f"table4_{model}_{domain}.png")
                lines += [f"![Table 4, {model} × {domain}]({_rel(fig, root)})", ""]
        if here:
            lines += _claims_section(results, here, railcap, model, domain)
    if main:
        title = "## Table 3: SA-PPG per strategy and setting (in bold: the best mitigation, where one beats Identity)"
        lines += [title, "", table3(main), ""]
    lines += _figure_sections(results, root)
    survival = survival_table(root)
    if survival is not None:
        lines += ["## Runner-up survival (RailCap's premise)", ""]
        lines += ["Greedy-correct questions, 10 random steps each: the runner-up token forced there, greedy after.", ""]
        lines += [survival, ""]
    lines += audit_sections(results, root)
    detection = [result for _, result in results if "detection" in result]
    if detection:
        from contamlab.analysis.detectors import comparison_lines, detector_table, leaderboard, roc_figure

        lines += ["## Detectors (AUROC, leaked vs unleaked; the clean model is the control)", ""]
        lines += [detector_table(detection), ""]
        lines += ["## Detector leaderboard (every detector on the same items, against the simulation's truth)", ""]
        lines += [leaderboard(detection), ""]
        tests = comparison_lines(detection)
        if tests:
            lines += ["Model-comparison tests:", "", *tests, ""]
        png = roc_figure(detection, root / "figures" / "roc.png", "ROC curves per detector")
        if png is not None:
            lines += [f"![ROC curves]({_rel(png, root)})", ""]
    return "\n".join(lines)


def _clean_bins(results, model: str, domain: str) -> str | None:
    """:func:`clean_bins_table` of the newest job of this setting (every job shares the clean batch)."""
    for _, r in results:  # newest first
        if (r["config"]["model"]["name"], r["config"]["domain"]["name"]) == (model, domain) and r.get("per_bin"):
            return clean_bins_table(r["per_bin"], int(r["config"]["metric"]["bins"]))
    return None


def _claims_section(results, here, railcap, model: str, domain: str) -> list[str]:
    """The paper's claims held against this setting (:mod:`contamlab.analysis.claims`): testable ones in a table."""
    from contamlab.analysis.claims import claims_section

    def newest(block: str) -> dict[str, Any] | None:
        for _, r in results:  # newest first
            if block in r and (r["config"]["model"]["name"], r["config"]["domain"]["name"]) == (model, domain):
                return r[block]
        return None

    return ["### Claims of the paper", "", *claims_section(here, railcap, newest("figure1"), newest("stability"))]


def _figure_sections(results: list[tuple[Path, dict[str, Any]]], root: Path) -> list[str]:
    lines: list[str] = []
    fig1 = [(p, r) for p, r in results if "figure1" in r]
    if fig1:
        lines += ["## Figure 1: collapse onto the greedy trajectory; rank of the clean token at divergence", ""]
        body = []
        for _, r in fig1:
            for group in ("leaked", "unleaked"):
                s = r["figure1"][group]
                body.append(
                    [
                        f"{r['config']['model']['name']} × {r['config']['domain']['name']}",
                        group,
                        f"{s['rouge_l_mean']:.3f}",
                        str(s["divergence_steps"]),
                        f"{s['rank2_share']:.3f}",
                        f"{s['rank_median']:.1f}",
                    ]
                )
        header = ["setting", "group", "ROUGE-L to greedy", "divergence steps", "rank-2 share", "median rank"]
        lines += [table(header, body), ""]
        for path, r in fig1:
            png = path.parent / "figures" / "figure1.png"
            if png.exists():
                lines += [f"![Figure 1, {r['config']['domain']['name']}]({_rel(png, root)})", ""]
    fig2 = [(p, r) for p, r in results if "stability" in r]
    if fig2:
        lines += ["## Figure 2: readout stability (two independent clean batches)", ""]
        body = [
            [
                f"{r['config']['model']['name']} × {r['config']['domain']['name']}",
                str(r["stability"]["m"]),
                f"{r['stability']['gap_r01']:.3f}",
                f"{r['stability']['gap_rhat']:.3f}",
            ]
            for _, r in fig2
        ]
        lines += [table(["setting", "m", "mean gap r⁰¹ (m = 1)", "mean gap r̂"], body), ""]
        for path, r in fig2:
            png = path.parent / "figures" / "figure2.png"
            if png.exists():
                lines += [f"![Figure 2, {r['config']['domain']['name']}]({_rel(png, root)})", ""]
    return lines


def write_report(root: str | Path) -> Path | None:
    """Write ``root/report.md``; returns its path (None when no job finished)."""
    text = build_report(root)
    if text is None:
        log.warning("no results.json under %s; no report", root)
        return None
    path = Path(root) / "report.md"
    atomic_write_text(path, text)
    log.info("report written to %s", path)
    return path


if __name__ == "__main__":
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if len(sys.argv) != 2:
        sys.exit("usage: python -m contamlab.analysis.report <results dir>")
    sys.exit(0 if write_report(sys.argv[1]) else 1)
