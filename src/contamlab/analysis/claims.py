"""The paper's qualitative claims held against one setting's results: the report's claims table.

"Zero Gap Is Not Restoration" makes ten qualitative claims (§5, Tables 1–4, Figures 1–2, Llama-2 × GSM8K). For each,
this module gives the paper's number, this setting's number with a 95 % interval, and a verdict: *reproduced*, *not
reproduced*, or *not testable here* (the jobs it needs did not run). Paired SA-PPG differences between two strategies
come from a stratified paired bootstrap over the jobs' ``per_question.csv`` (same questions, same clean batch); the
verdict rules are stated in each row, so a reader can disagree with them.

The paper's numbers are in :data:`PAPER`, each once; the claims are the records of :data:`CLAIMS`, each with the
check that reads this setting's results and applies its verdict rule, and what a grid must run to test it.
:func:`claims` gives every claim's table row; :func:`claims_section` is the report's section: a table row per claim
these jobs can test, and the untestable ones folded into one line that names what each needs (most grids test only
a few claims: a table of "not testable here" rows would bury them).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from contamlab.analysis.markdown import difference_cell, metric_cell
from contamlab.metrics import paired_difference

REPRODUCED, NOT_REPRODUCED, NOT_TESTABLE = "reproduced", "not reproduced", "not testable here"
REFERENCES = ("all_zero", "clean_2nd")  # rows that are references, not strategies

# The paper's numbers ("Zero Gap Is Not Restoration", Llama-2 × GSM8K unless noted), as printed there.
PAPER = {
    # Table 1: G-AP and SA-PPG per strategy.
    "lne_g_ap": "0.0235",
    "lne_sa_ppg": "0.2932",
    "railcap_sa_ppg": "0.1914",  # also RailCap at n = 4 in Table 4
    "shortcut_sa_ppg": "0.2476",
    # Table 2: A-PPG and SA-PPG with All-Zero.
    "all_zero_a_ppg": "0.2190",
    "identity_a_ppg": "0.3793",
    "all_zero_sa_ppg": "0.4903",
    # Table 3: TED vs Identity, their largest gap (Pythia × GSM8K).
    "pythia_ted_sa_ppg": "0.2131",
    "pythia_identity_sa_ppg": "0.1950",
    # Table 4: the RailCap ablation (cap at n = 1 and n = 4, spread over n = 3..7, ban at n = 4).
    "n1_s_delta_plus": "0.0215",
    "n1_s_delta_minus": "0.2218",
    "n4_s_delta_plus": "0.0942",
    "n4_s_delta_minus": "0.0972",
    "n3_7_spread": "0.008",
    "ban_sa_ppg": "0.2190",
    "ban_s_delta_minus": "0.1464",
    # Figure 2: mean per-question gap between two clean batches.
    "gap_r01": "0.190",
    "gap_rhat": "0.041",
    "stability_m": "50",
    "stability_ratio": "4.6",
}


@dataclass(frozen=True)
class Setting:
    """One (model, domain)'s results, as the checks read them.

    Attributes:
        main: The main-table rows (every strategy at its main setting, All-Zero and the noise floor), as
            :func:`contamlab.analysis.results.metric_rows` gives them (with ``job`` directories).
        railcap: The RailCap rows (the Table 4 ablation).
        figure1: The ``figure1`` block of the setting's identity job, if it ran.
        stability: The ``stability`` block (Figure 2), if it ran.
    """

    main: list[dict[str, Any]]
    railcap: list[dict[str, Any]]
    figure1: dict[str, Any] | None
    stability: dict[str, Any] | None

    @property
    def by(self) -> dict[str, dict[str, Any]]:
        """The main rows by strategy name."""
        return {r["strategy_name"]: r for r in self.main}

    @property
    def strategies(self) -> list[dict[str, Any]]:
        """The strategies (not the references), best SA-PPG first."""
        return _ranked(self.main, "sa_ppg")

    @property
    def cap(self) -> dict[int, dict[str, Any]]:
        """The RailCap cap rows (all duplicates) by n."""
        return {r.get("n"): r for r in self.railcap if r.get("mode") == "cap" and r.get("duplicates", "all") == "all"}


Check = Callable[[Setting], tuple[str, bool] | None]


@dataclass(frozen=True)
class Claim:
    """One claim of the paper, the paper's evidence for it, and the check that holds it against a setting.

    Attributes:
        claim: The claim with its verdict rule (the table's first column).
        name: The claim's short name, shown when it is not testable here.
        paper: The paper's evidence; ``{key}`` fields are filled from :data:`PAPER`.
        paper_short: The same, abridged, shown when the claim is not testable here.
        check: Reads the setting: this setting's evidence and whether the verdict rule holds, or None when the jobs
            the claim needs did not run.
        needs: What the check needs that a grid may lack, in a few words ("TED and Identity").
        grid: The evaluate.py override that runs what it needs (``experiment=table1``).
    """

    claim: str
    name: str
    paper: str
    paper_short: str
    check: Check
    needs: str
    grid: str

    def row(self, setting: Setting) -> list[str]:
        """The claim's row of the claims table: [claim, paper, this setting, verdict]."""
        result = self.check(setting)
        if result is None:
            return [self.name, self.paper_short.format(**PAPER), "–", NOT_TESTABLE]
        text, holds = result
        return [self.claim, self.paper.format(**PAPER), text, REPRODUCED if holds else NOT_REPRODUCED]


def _rank_reversal(s: Setting) -> tuple[str, bool] | None:
    """Table 1: the G-AP best strategy is beaten under SA-PPG by the SA-PPG best (paired interval above 0)."""
    if len(s.strategies) < 3:
        return None
    best_gap, best_sa = _ranked(s.main, "g_ap")[0], s.strategies[0]
    text = f"G-AP best: {best_gap['label']} ({metric_cell(best_gap, 'g_ap')}); SA-PPG best: {best_sa['label']} "
    text += f"({metric_cell(best_sa, 'sa_ppg')})"
    if best_gap is best_sa:  # one strategy best under both: nothing to reverse
        return text + "; the same strategy under both", False
    diff = paired_sappg(best_gap, best_sa)
    text += f"; SA-PPG({best_gap['label']}) − SA-PPG({best_sa['label']}) = {difference_cell(diff)}"
    return text, diff is not None and diff[1] > 0


def _lne_best_under_gap(s: Setting) -> tuple[str, bool] | None:
    """Table 1: LNE-blocking ranks first under G-AP but not under SA-PPG."""
    if "lne" not in s.by or len(s.strategies) < 3:
        return None
    lne = s.by["lne"]
    gap_rank = [r["strategy_name"] for r in _ranked(s.main, "g_ap")].index("lne") + 1
    sa_rank = [r["strategy_name"] for r in s.strategies].index("lne") + 1
    text = (
        f"G-AP rank {gap_rank} of {len(s.strategies)} ({metric_cell(lne, 'g_ap')}); "
        f"SA-PPG rank {sa_rank} ({metric_cell(lne, 'sa_ppg')})"
    )
    return text, gap_rank == 1 and sa_rank > 1


def _all_zero(s: Setting) -> tuple[str, bool] | None:
    """Table 2: All-Zero has a lower A-PPG than Identity and the highest SA-PPG of all rows but the noise floor."""
    if "all_zero" not in s.by or "identity" not in s.by:
        return None
    zero, ident = s.by["all_zero"], s.by["identity"]
    worst = max((r for r in s.main if r["strategy_name"] != "clean_2nd"), key=lambda r: r["all/sa_ppg"])
    text = (
        f"A-PPG {metric_cell(zero, 'a_ppg')} vs Identity {metric_cell(ident, 'a_ppg')}; "
        f"SA-PPG {metric_cell(zero, 'sa_ppg')} "
        f"(worst: {worst['label']})"
    )
    return text, zero["all/a_ppg"] < ident["all/a_ppg"] and worst is zero


def _railcap_lowest(s: Setting) -> tuple[str, bool] | None:
    """Tables 1 and 3: RailCap has the lowest SA-PPG; runner-up − RailCap has a paired interval above 0."""
    if "railcap" not in s.by or len(s.strategies) < 2:
        return None
    railcap = s.by["railcap"]
    runner = [r for r in s.strategies if r["strategy_name"] != "railcap"][0]
    diff = paired_sappg(runner, railcap)
    text = f"RailCap {metric_cell(railcap, 'sa_ppg')}; {runner['label']} − RailCap = {difference_cell(diff)}"
    return text, s.strategies[0]["strategy_name"] == "railcap" and diff is not None and diff[1] > 0


def _n_trade(s: Setting) -> tuple[str, bool] | None:
    """Table 4: from n = 1 to n = 4, S-Δ⁺ rises and S-Δ⁻ falls (both paired intervals above 0)."""
    cap = s.cap
    if 1 not in cap or 4 not in cap:
        return None
    n1, n4 = cap[1], cap[4]
    plus = paired_sappg(n4, n1, metric="s_delta_plus")  # residual contamination grows with n
    minus = paired_sappg(n1, n4, metric="s_delta_minus")  # collateral damage shrinks with n
    text = (
        f"n = 1: {metric_cell(n1, 's_delta_plus', False)}, {metric_cell(n1, 's_delta_minus', False)}; "
        f"n = 4: {metric_cell(n4, 's_delta_plus', False)}, {metric_cell(n4, 's_delta_minus', False)}; "
        f"S-Δ⁺ rise {difference_cell(plus)}, S-Δ⁻ fall {difference_cell(minus)}"
    )
    return text, plus is not None and minus is not None and plus[1] > 0 and minus[1] > 0


def _flat_over_n(s: Setting) -> tuple[str, bool] | None:
    """Table 4: SA-PPG is flat over n = 3..7 (worst − best has a paired interval reaching 0)."""
    mid = [s.cap[n] for n in range(3, 8) if n in s.cap]
    if len(mid) != 5:
        return None
    values = [r["all/sa_ppg"] for r in mid]
    best = min(mid, key=lambda r: r["all/sa_ppg"])
    worst = max(mid, key=lambda r: r["all/sa_ppg"])
    diff = paired_sappg(worst, best)
    text = (
        f"SA-PPG {min(values):.3f}–{max(values):.3f} (best n = {best.get('n')}); "
        f"n = {worst.get('n')} − n = {best.get('n')} = {difference_cell(diff)}"
    )
    return text, diff is not None and diff[1] <= 0  # the spread is inside the paired noise


def _ban_worse_than_cap(s: Setting) -> tuple[str, bool] | None:
    """Table 4: at n = 4, ban − cap has a paired interval above 0."""
    ban = next((r for r in s.railcap if r.get("mode") == "ban" and r.get("n") == 4), None)
    if ban is None or 4 not in s.cap:
        return None
    cap = s.cap[4]
    diff = paired_sappg(ban, cap)
    text = f"ban {metric_cell(ban, 'sa_ppg', False)} vs cap {metric_cell(cap, 'sa_ppg', False)}: "
    text += difference_cell(diff)
    return text, diff is not None and diff[1] > 0


def _ted_like_identity(s: Setting) -> tuple[str, bool] | None:
    """Table 3: TED − Identity has a paired interval within ±0.02."""
    if "ted" not in s.by or "identity" not in s.by:
        return None
    ted, ident = s.by["ted"], s.by["identity"]
    diff = paired_sappg(ted, ident)
    text = f"TED {metric_cell(ted, 'sa_ppg')}, Identity {metric_cell(ident, 'sa_ppg')}; "
    text += f"difference {difference_cell(diff)}"
    return text, diff is not None and diff[1] >= -0.02 and diff[2] <= 0.02


def _readout_stability(s: Setting) -> tuple[str, bool] | None:
    """Figure 2: the r⁰¹ gap between two clean batches is at least twice the r̂ gap."""
    st = s.stability
    if not st or st.get("gap_r01") is None or st.get("gap_rhat") is None:
        return None
    ratio = st["gap_r01"] / st["gap_rhat"] if st["gap_rhat"] else math.inf
    return f"{st['gap_r01']:.3f} vs {st['gap_rhat']:.3f} at m = {st['m']}: ratio {ratio:.1f}", ratio >= 2


def _collapse_onto_greedy(s: Setting) -> tuple[str, bool] | None:
    """Figure 1: leaked − unleaked ROUGE-L to the greedy answer is above 0 (its interval, if there is one).

    A group with no question has null statistics in results.json: not testable.
    """
    f1 = s.figure1
    if not f1 or any(f1[g]["rouge_l_mean"] is None for g in ("leaked", "unleaked")):
        return None
    lk, un = f1["leaked"], f1["unleaked"]
    lo_hi = f1.get("rouge_l_diff_ci")
    gap = lk["rouge_l_mean"] - un["rouge_l_mean"]
    ci = f" [{lo_hi[0]:+.3f}, {lo_hi[1]:+.3f}]" if lo_hi else ""
    text = f"ROUGE-L {lk['rouge_l_mean']:.3f} leaked vs {un['rouge_l_mean']:.3f} unleaked: {gap:+.3f}{ci}"
    return text, lo_hi[0] > 0 if lo_hi else gap > 0


def _runner_up_half(s: Setting) -> tuple[str, bool] | None:
    """Figure 1: in each group, the Wilson interval of the runner-up share at divergence meets [0.4, 0.6].

    A group with no divergence step is not testable.
    """
    f1 = s.figure1
    steps = {g: int(f1[g]["divergence_steps"]) for g in ("leaked", "unleaked")} if f1 else {}
    if not steps or not all(steps.values()):
        return None
    shares, verdicts = [], []
    for name in ("leaked", "unleaked"):
        n, share = steps[name], f1[name]["rank2_share"]
        lo, hi = _wilson(share, n)
        shares.append(f"{name} {share:.2f} [{lo:.2f}, {hi:.2f}] of {n} steps")
        verdicts.append(lo <= 0.6 and hi >= 0.4)
    return "; ".join(shares), all(verdicts)


# The claims, in the report's order (here, below the checks, because each record names its check).
CLAIMS = (
    Claim(
        claim=(
            "G-AP and SA-PPG rank the strategies differently (the G-AP best is beaten under SA-PPG, paired interval "
            "above 0)"
        ),
        name="G-AP vs SA-PPG rank reversal",
        paper="G-AP best: LNE ({lne_g_ap}); SA-PPG best: RailCap ({railcap_sa_ppg}), LNE {lne_sa_ppg}",
        paper_short="LNE {lne_g_ap} → RailCap {railcap_sa_ppg}",
        check=_rank_reversal,
        needs="three strategies or more, All-Zero aside",
        grid="experiment=table1",
    ),
    Claim(
        claim="LNE-blocking is best under G-AP but not under SA-PPG",
        name="LNE best under G-AP, not under SA-PPG",
        paper="G-AP rank 1 ({lne_g_ap}); SA-PPG {lne_sa_ppg}, behind Shortcut and RailCap",
        paper_short="G-AP {lne_g_ap}; SA-PPG {lne_sa_ppg}",
        check=_lne_best_under_gap,
        needs="LNE-blocking and two more strategies",
        grid="experiment=table1",
    ),
    Claim(
        claim="All-Zero beats Identity under A-PPG but is the worst under SA-PPG",
        name="All-Zero good under A-PPG, worst under SA-PPG",
        paper="A-PPG {all_zero_a_ppg} vs Identity {identity_a_ppg}; SA-PPG {all_zero_sa_ppg}, worst",
        paper_short="{all_zero_a_ppg} / {all_zero_sa_ppg}",
        check=_all_zero,
        needs="All-Zero and Identity",
        grid="experiment=table1",
    ),
    Claim(
        claim="RailCap has the lowest SA-PPG (runner-up − RailCap, paired interval above 0)",
        name="RailCap lowest SA-PPG",
        paper="{railcap_sa_ppg} vs Shortcut {shortcut_sa_ppg} (lowest in all six settings)",
        paper_short="{railcap_sa_ppg}",
        check=_railcap_lowest,
        needs="RailCap and another strategy",
        grid="experiment=table1",
    ),
    Claim(
        claim=(
            "Raising n from 1 to 4 trades collateral damage (S-Δ⁻ falls) for residual contamination (S-Δ⁺ rises); "
            "both paired intervals above 0"
        ),
        name="n-ablation trades S-Δ⁺ for S-Δ⁻",
        paper="n = 1: S-Δ⁺ {n1_s_delta_plus}, S-Δ⁻ {n1_s_delta_minus}; n = 4: {n4_s_delta_plus}, {n4_s_delta_minus}",
        paper_short="{n1_s_delta_plus}/{n1_s_delta_minus} → {n4_s_delta_plus}/{n4_s_delta_minus}",
        check=_n_trade,
        needs="RailCap at n = 1 and n = 4",
        grid="experiment=table4",
    ),
    Claim(
        claim="SA-PPG is flat over n = 3–7 (worst − best within the paired noise)",
        name="flat over n = 3–7",
        paper="all within {n3_7_spread} of the best (n = 4, {railcap_sa_ppg})",
        paper_short="within {n3_7_spread}",
        check=_flat_over_n,
        needs="RailCap at each n = 3–7",
        grid="experiment=table4",
    ),
    Claim(
        claim="A hard ban is worse than the cap (ban − cap at n = 4, paired interval above 0)",
        name="ban worse than cap",
        paper="{ban_sa_ppg} vs {railcap_sa_ppg} (S-Δ⁻ {ban_s_delta_minus} vs {n4_s_delta_minus})",
        paper_short="{ban_sa_ppg} vs {railcap_sa_ppg}",
        check=_ban_worse_than_cap,
        needs="RailCap's ban and cap at n = 4",
        grid="experiment=table4",
    ),
    Claim(
        claim="TED ≈ Identity (TED − Identity: paired interval within ±0.02, the paper's largest gap 0.018)",
        name="TED ≈ Identity",
        paper="largest gap {pythia_ted_sa_ppg} vs {pythia_identity_sa_ppg} (Pythia × GSM8K)",
        paper_short="{pythia_ted_sa_ppg} vs {pythia_identity_sa_ppg}",
        check=_ted_like_identity,
        needs="TED and Identity",
        grid="experiment=table1",
    ),
    Claim(
        claim="r̂ is far more stable per question than r⁰¹ (two independent clean batches; ratio ≥ 2)",
        name="readout stability",
        paper="mean gap {gap_r01} (r⁰¹) vs {gap_rhat} (r̂), m = {stability_m}: ratio {stability_ratio}",
        paper_short="{gap_r01} vs {gap_rhat}",
        check=_readout_stability,
        needs="two independent clean batches",
        grid="experiment=figure2",
    ),
    Claim(
        claim="Leaked samples collapse onto the greedy trajectory (ROUGE-L to greedy, leaked − unleaked > 0)",
        name="collapse onto greedy",
        paper="leaked samples on the greedy path, unleaked ones dispersed (figure only)",
        paper_short="figure",
        check=_collapse_onto_greedy,
        needs="leaked and unleaked questions in a Figure 1 job",
        grid="experiment=figure1",
    ),
    Claim(
        claim=(
            "At the first ten decoding steps where the models disagree, the clean token is the contaminated model's "
            "runner-up about half the time (interval meets [0.4, 0.6])"
        ),
        name="runner-up about half the time",
        paper="about half",
        paper_short="about half",
        check=_runner_up_half,
        needs="divergence steps in both groups of a Figure 1 job",
        grid="experiment=figure1",
    ),
)


def claims(
    main: list[dict[str, Any]],
    railcap: list[dict[str, Any]],
    figure1: dict[str, Any] | None,
    stability: dict[str, Any] | None,
) -> list[list[str]]:
    """The claims table of one (model, domain): rows of [claim, paper, this setting, verdict], one per claim.

    Args:
        main: The setting's main-table rows (every strategy at its main setting, All-Zero and the noise floor), as
            :func:`contamlab.analysis.results.metric_rows` gives them (with ``job`` directories).
        railcap: The setting's RailCap rows (the Table 4 ablation).
        figure1: The ``figure1`` block of the setting's identity job, if it ran.
        stability: The ``stability`` block (Figure 2), if it ran.

    Returns:
        One row per claim of :data:`CLAIMS`, in order.
    """
    setting = Setting(main, railcap, figure1, stability)
    return [claim.row(setting) for claim in CLAIMS]


def claims_section(
    main: list[dict[str, Any]],
    railcap: list[dict[str, Any]],
    figure1: dict[str, Any] | None,
    stability: dict[str, Any] | None,
) -> list[str]:
    """The report's claims section of one (model, domain): Markdown lines, the heading not included.

    A table row per claim these jobs can test; the claims they cannot test are folded into one line after it, grouped
    by the grid that runs what they need, each with what it needs. The arguments are those of :func:`claims`.
    """
    setting = Setting(main, railcap, figure1, stability)
    tested, untestable = [], []
    for claim in CLAIMS:
        row = claim.row(setting)
        if row[3] == NOT_TESTABLE:
            untestable.append(claim)
        else:
            tested.append(row)
    lines = []
    if tested:
        header = ["claim (verdict rule)", "paper (Llama-2 × GSM8K)", "this setting (95% interval)", "verdict"]
        lines += ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(row) + " |" for row in tested]
        lines += [""]
    if untestable:
        grids: dict[str, list[Claim]] = {}
        for claim in untestable:
            grids.setdefault(claim.grid, []).append(claim)
        groups = "; ".join(
            f"`{grid}` for " + ", ".join(f"{c.name} ({c.needs})" for c in group) for grid, group in grids.items()
        )
        lines += [
            f"Not testable with these jobs ({len(untestable)} of {len(CLAIMS)} claims), each with what it needs and "
            f"the evaluate.py grid that runs it: {groups}.",
            "",
        ]
    return lines


def _per_question(row: dict[str, Any]) -> dict[str, np.ndarray] | None:
    if not row.get("job"):
        return None  # a noise-floor row belongs to no job (its job is empty): Path("") would read the cwd
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
