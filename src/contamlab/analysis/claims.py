"""The paper's qualitative claims held against one setting's results: the report's claims table.

"Zero Gap Is Not Restoration" makes ten qualitative claims (§5, Tables 1–4, Figures 1–2, Llama-2 × GSM8K). For each,
this module gives the paper's number, this setting's number with a 95 % interval, and a verdict: *reproduced*, *not
reproduced*, or *not testable here* (the jobs it needs did not run). Paired SA-PPG differences between two strategies
come from a stratified paired bootstrap over the jobs' ``per_question.csv`` (same questions, same clean batch); the
verdict rules are stated in each row, so a reader can disagree with them.
"""

from __future__ import annotations

import csv
import math
from pathlib import Path
from typing import Any

import numpy as np

from contamlab.metrics import paired_difference

REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE = "reproduced", "not reproduced", "not testable here"
REFERENCES = ("all_zero", "clean_2nd")  # rows that are references, not strategies


def _per_question(row: dict[str, Any]) -> dict[str, np.ndarray] | None:
    path = Path(row["job"]) / "per_question.csv"
    if not path.is_file():
        return None
    with path.open() as f:
        rows = list(csv.DictReader(f))
    return {
        "id": np.array([r["id"] for r in rows]),
        "bin": np.array([int(r["bin"]) for r in rows]),
        "r_clean": np.array([float(r["r_clean"]) for r in rows]),
        "r_strategy": np.array([float(r["r_strategy"]) for r in rows]),
    }


def paired_sappg(
    a: dict[str, Any], b: dict[str, Any], bins: int = 50, metric: str = "sa_ppg"
) -> tuple[float, float, float] | None:
    """metric(a) - metric(b) (SA-PPG by default) with its paired 95 % interval, or None when the jobs are not paired."""
    qa, qb = _per_question(a), _per_question(b)
    if qa is None or qb is None or not np.array_equal(qa["id"], qb["id"]):
        return None
    if not np.allclose(qa["r_clean"], qb["r_clean"]):
        return None  # different clean batches: not a paired comparison
    return paired_difference(qa["r_strategy"], qb["r_strategy"], qa["r_clean"], bins, qa["bin"], metric)


def _v(row: dict[str, Any], key: str, ci: bool = True) -> str:
    value, lo, hi = row.get(f"all/{key}"), row.get(f"all/{key}_lo"), row.get(f"all/{key}_hi")
    if value is None:
        return "–"
    return f"{value:.3f}" + (f" [{lo:.3f}, {hi:.3f}]" if ci and lo is not None else "")


def _diff(d: tuple[float, float, float] | None) -> str:
    return "–" if d is None else f"{d[0]:+.3f} [{d[1]:+.3f}, {d[2]:+.3f}]"


def _ranked(rows: list[dict[str, Any]], key: str) -> list[dict[str, Any]]:
    return sorted((r for r in rows if r["strategy_name"] not in REFERENCES), key=lambda r: r[f"all/{key}"])


def _wilson(share: float, n: int) -> tuple[float, float]:
    """95 % Wilson interval of a proportion."""
    if n == 0:
        return math.nan, math.nan
    z = 1.959964
    centre = (share + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(share * (1 - share) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return centre - half, centre + half


def claims(
    main: list[dict[str, Any]],
    railcap: list[dict[str, Any]],
    figure1: dict[str, Any] | None,
    stability: dict[str, Any] | None,
) -> list[list[str]]:
    """The claims table of one (model, domain): rows of [claim, paper, this setting, verdict].

    Args:
        main: The setting's main-table rows (every strategy at its main setting, All-Zero and the noise floor), as
            :func:`contamlab.analysis.report.metric_rows` gives them (with ``job`` directories).
        railcap: The setting's RailCap rows (the Table 4 ablation).
        figure1: The ``figure1`` block of the setting's identity job, if it ran.
        stability: The ``stability`` block (Figure 2), if it ran.
    """
    by = {r["strategy_name"]: r for r in main}
    out: list[list[str]] = []

    # 1-2. Rank reversal; LNE best under G-AP but not under SA-PPG.
    strategies = _ranked(main, "sa_ppg")
    if len(strategies) >= 3:
        best_gap, best_sa = _ranked(main, "g_ap")[0], strategies[0]
        diff = paired_sappg(best_gap, best_sa) if best_gap is not best_sa else None
        text = (
            f"G-AP best: {best_gap['label']} ({_v(best_gap, 'g_ap')}); SA-PPG best: {best_sa['label']} "
            f"({_v(best_sa, 'sa_ppg')}); SA-PPG({best_gap['label']}) − SA-PPG({best_sa['label']}) = {_diff(diff)}"
        )
        reversed_ = diff is not None and diff[1] > 0
        out.append(
            [
                "G-AP and SA-PPG rank the strategies differently (the G-AP best is beaten under SA-PPG, paired "
                "interval above 0)",
                "G-AP best: LNE (0.0235); SA-PPG best: RailCap (0.1914), LNE 0.2932",
                text,
                REPRODUCED if reversed_ else NOT_REPRODUCED,
            ]
        )
    else:
        out.append(["G-AP vs SA-PPG rank reversal", "LNE 0.0235 → RailCap 0.1914", "–", NOT_TESTABLE])
    if "lne" in by and len(strategies) >= 3:
        gap_rank = [r["strategy_name"] for r in _ranked(main, "g_ap")].index("lne") + 1
        sa_rank = [r["strategy_name"] for r in strategies].index("lne") + 1
        out.append(
            [
                "LNE-blocking is best under G-AP but not under SA-PPG",
                "G-AP rank 1 (0.0235); SA-PPG 0.2932, behind Shortcut and RailCap",
                f"G-AP rank {gap_rank} of {len(strategies)} ({_v(by['lne'], 'g_ap')}); SA-PPG rank {sa_rank} "
                f"({_v(by['lne'], 'sa_ppg')})",
                REPRODUCED if gap_rank == 1 and sa_rank > 1 else NOT_REPRODUCED,
            ]
        )
    else:
        out.append(["LNE best under G-AP, not under SA-PPG", "G-AP 0.0235; SA-PPG 0.2932", "–", NOT_TESTABLE])

    # 3. All-Zero: good under A-PPG, worst under SA-PPG.
    if "all_zero" in by and "identity" in by:
        zero, ident = by["all_zero"], by["identity"]
        worst = max((r for r in main if r["strategy_name"] != "clean_2nd"), key=lambda r: r["all/sa_ppg"])
        ok = zero["all/a_ppg"] < ident["all/a_ppg"] and worst is zero
        out.append(
            [
                "All-Zero beats Identity under A-PPG but is the worst under SA-PPG",
                "A-PPG 0.2190 vs Identity 0.3793; SA-PPG 0.4903, worst",
                f"A-PPG {_v(zero, 'a_ppg')} vs Identity {_v(ident, 'a_ppg')}; SA-PPG {_v(zero, 'sa_ppg')} "
                f"(worst: {worst['label']})",
                REPRODUCED if ok else NOT_REPRODUCED,
            ]
        )
    else:
        out.append(["All-Zero good under A-PPG, worst under SA-PPG", "0.2190 / 0.4903", "–", NOT_TESTABLE])

    # 4. RailCap lowest SA-PPG (paired against the runner-up).
    if "railcap" in by and len(strategies) >= 2:
        others = [r for r in strategies if r["strategy_name"] != "railcap"]
        runner = others[0]
        diff = paired_sappg(runner, by["railcap"])
        ok = strategies[0]["strategy_name"] == "railcap" and diff is not None and diff[1] > 0
        out.append(
            [
                "RailCap has the lowest SA-PPG (runner-up − RailCap, paired interval above 0)",
                "0.1914 vs Shortcut 0.2476 (lowest in all six settings)",
                f"RailCap {_v(by['railcap'], 'sa_ppg')}; {runner['label']} − RailCap = {_diff(diff)}",
                REPRODUCED if ok else NOT_REPRODUCED,
            ]
        )
    else:
        out.append(["RailCap lowest SA-PPG", "0.1914", "–", NOT_TESTABLE])

    # 5-6. The n ablation: the trade, and flatness over n = 3..7; ban vs cap.
    cap = {r.get("n"): r for r in railcap if r.get("mode") == "cap" and r.get("duplicates", "all") == "all"}
    if 1 in cap and 4 in cap:
        n1, n4 = cap[1], cap[4]
        plus = paired_sappg(n4, n1, metric="s_delta_plus")  # residual contamination grows with n
        minus = paired_sappg(n1, n4, metric="s_delta_minus")  # collateral damage shrinks with n
        trade = plus is not None and minus is not None and plus[1] > 0 and minus[1] > 0
        out.append(
            [
                "Raising n from 1 to 4 trades collateral damage (S-Δ⁻ falls) for residual contamination (S-Δ⁺ rises); "
                "both paired intervals above 0",
                "n = 1: S-Δ⁺ 0.0215, S-Δ⁻ 0.2218; n = 4: 0.0942, 0.0972",
                f"n = 1: {_v(n1, 's_delta_plus', False)}, {_v(n1, 's_delta_minus', False)}; "
                f"n = 4: {_v(n4, 's_delta_plus', False)}, {_v(n4, 's_delta_minus', False)}; "
                f"S-Δ⁺ rise {_diff(plus)}, S-Δ⁻ fall {_diff(minus)}",
                REPRODUCED if trade else NOT_REPRODUCED,
            ]
        )
    else:
        out.append(["n-ablation trades S-Δ⁺ for S-Δ⁻", "0.0215/0.2218 → 0.0942/0.0972", "–", NOT_TESTABLE])
    mid = [cap[n] for n in range(3, 8) if n in cap]
    if len(mid) == 5:
        values = [r["all/sa_ppg"] for r in mid]
        best = min(mid, key=lambda r: r["all/sa_ppg"])
        worst = max(mid, key=lambda r: r["all/sa_ppg"])
        diff = paired_sappg(worst, best)
        flat = diff is not None and diff[1] <= 0  # the spread is inside the paired noise
        out.append(
            [
                "SA-PPG is flat over n = 3–7 (worst − best within the paired noise)",
                "all within 0.008 of the best (n = 4, 0.1914)",
                f"SA-PPG {min(values):.3f}–{max(values):.3f} (best n = {best.get('n')}); "
                f"n = {worst.get('n')} − n = {best.get('n')} = {_diff(diff)}",
                REPRODUCED if flat else NOT_REPRODUCED,
            ]
        )
    else:
        out.append(["flat over n = 3–7", "within 0.008", "–", NOT_TESTABLE])
    ban = next((r for r in railcap if r.get("mode") == "ban" and r.get("n") == 4), None)
    if ban is not None and 4 in cap:
        diff = paired_sappg(ban, cap[4])
        out.append(
            [
                "A hard ban is worse than the cap (ban − cap at n = 4, paired interval above 0)",
                "0.2190 vs 0.1914 (S-Δ⁻ 0.1464 vs 0.0972)",
                f"ban {_v(ban, 'sa_ppg', False)} vs cap {_v(cap[4], 'sa_ppg', False)}: {_diff(diff)}",
                REPRODUCED if diff is not None and diff[1] > 0 else NOT_REPRODUCED,
            ]
        )
    else:
        out.append(["ban worse than cap", "0.2190 vs 0.1914", "–", NOT_TESTABLE])

    # 7. TED ≈ Identity.
    if "ted" in by and "identity" in by:
        diff = paired_sappg(by["ted"], by["identity"])
        near = diff is not None and diff[1] >= -0.02 and diff[2] <= 0.02
        out.append(
            [
                "TED ≈ Identity (TED − Identity: paired interval within ±0.02, the paper's largest gap 0.018)",
                "largest gap 0.2131 vs 0.1950 (Pythia × GSM8K)",
                f"TED {_v(by['ted'], 'sa_ppg')}, Identity {_v(by['identity'], 'sa_ppg')}; difference {_diff(diff)}",
                REPRODUCED if near else NOT_REPRODUCED,
            ]
        )
    else:
        out.append(["TED ≈ Identity", "0.2131 vs 0.1950", "–", NOT_TESTABLE])

    # 8. Readout stability (Figure 2).
    if stability and stability.get("gap_r01") is not None and stability.get("gap_rhat") is not None:
        ratio = stability["gap_r01"] / stability["gap_rhat"] if stability["gap_rhat"] else math.inf
        out.append(
            [
                "r̂ is far more stable per question than r⁰¹ (two independent clean batches; ratio ≥ 2)",
                "mean gap 0.190 (r⁰¹) vs 0.041 (r̂), m = 50: ratio 4.6",
                f"{stability['gap_r01']:.3f} vs {stability['gap_rhat']:.3f} at m = {stability['m']}: ratio {ratio:.1f}",
                REPRODUCED if ratio >= 2 else NOT_REPRODUCED,
            ]
        )
    else:
        out.append(["readout stability", "0.190 vs 0.041", "–", NOT_TESTABLE])

    # 9-10. Figure 1 (a group with no question or no divergence step has null statistics in results.json).
    if figure1 and all(figure1[g]["rouge_l_mean"] is not None for g in ("leaked", "unleaked")):
        lk, un = figure1["leaked"], figure1["unleaked"]
        lo_hi = figure1.get("rouge_l_diff_ci")
        gap = lk["rouge_l_mean"] - un["rouge_l_mean"]
        ci = f" [{lo_hi[0]:+.3f}, {lo_hi[1]:+.3f}]" if lo_hi else ""
        ok = lo_hi[0] > 0 if lo_hi else gap > 0
        out.append(
            [
                "Leaked samples collapse onto the greedy trajectory (ROUGE-L to greedy, leaked − unleaked > 0)",
                "leaked samples on the greedy path, unleaked ones dispersed (figure only)",
                f"ROUGE-L {lk['rouge_l_mean']:.3f} leaked vs {un['rouge_l_mean']:.3f} unleaked: {gap:+.3f}{ci}",
                REPRODUCED if ok else NOT_REPRODUCED,
            ]
        )
    else:
        out.append(["collapse onto greedy", "figure", "–", NOT_TESTABLE])
    steps = {g: int(figure1[g]["divergence_steps"]) for g in ("leaked", "unleaked")} if figure1 else {}
    if steps and all(steps.values()):
        shares, verdicts = [], []
        for name in ("leaked", "unleaked"):
            n, share = steps[name], figure1[name]["rank2_share"]
            lo, hi = _wilson(share, n)
            shares.append(f"{name} {share:.2f} [{lo:.2f}, {hi:.2f}] of {n} steps")
            verdicts.append(lo <= 0.6 and hi >= 0.4)
        out.append(
            [
                "At the first ten decoding steps where the models disagree, the clean token is the contaminated "
                "model's runner-up about half the time (interval meets [0.4, 0.6])",
                "about half",
                "; ".join(shares),
                REPRODUCED if all(verdicts) else NOT_REPRODUCED,
            ]
        )
    else:
        out.append(["runner-up about half the time", "about half", "–", NOT_TESTABLE])
    return out
