"""Plots of a job and of a grid (matplotlib, Agg backend; PNG files next to the results).

- :func:`per_bin_figure`: a job's per-bin gaps (the terms of SA-PPG, Eq. 13): mean Δ⁺ above, Δ⁻ below the axis.
- :func:`figure1`: "Zero Gap Is Not Restoration" Figure 1: ROUGE-L of samples to the greedy trajectory and ranks of
  the clean model's token at divergence steps, leaked vs unleaked.
- :func:`figure2`: Figure 2: two independent sampling batches of the clean model, r⁰¹ (m = 1) vs r̂ (m samples).
- :func:`strategy_figure`: Table 1 as a picture: G-AP vs SA-PPG per strategy with bootstrap intervals.
- :func:`ablation_figure`: Table 4 as a picture: S-Δ⁺ and S-Δ⁻ of RailCap against n.
- :func:`save_figure`: how every figure is written (the audit's too).

Every number drawn says what it is (an axis label, a legend entry, or a title naming it): a figure lifted out of its
report still reads on its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # files only; never needs a display
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

from contamlab.io import atomic_path  # noqa: E402


def _num(value: Any, default: float = np.nan) -> float:
    return default if value is None else float(value)


def save_figure(fig: plt.Figure, path: str | Path) -> Path:
    """Lay out ``fig``, write it to ``path`` as a PNG and close it; returns ``path``.

    Every figure of the report goes through here (those of :mod:`.audit` too), so that they share one resolution
    and one atomic write.
    """
    fig.tight_layout()
    try:
        with atomic_path(path) as tmp:  # a killed run never leaves half a PNG
            fig.savefig(tmp, dpi=110, format="png")
    finally:
        plt.close(fig)
    return Path(path)


COUNTS_NOTE = "numbers above the bars: questions in the bin"


def per_bin_figure(per_bin: Sequence[dict[str, Any]], path: str | Path, title: str = "") -> Path:
    """Bar chart of mean Δ⁺ (up) and Δ⁻ (down) per clean-probability bin, with the bin sizes on top."""
    centers = np.array([(row["lo"] + row["hi"]) / 2 for row in per_bin])
    width = (per_bin[0]["hi"] - per_bin[0]["lo"]) * 0.9 if per_bin else 0.02
    plus = np.array([row["mean_delta_plus"] for row in per_bin])
    minus = np.array([row["mean_delta_minus"] for row in per_bin])
    fig, ax = plt.subplots(figsize=(7, 3.4))
    ax.bar(centers, plus, width=width, color="tab:red", label="Δ⁺ (under-suppression)")
    ax.bar(centers, -minus, width=width, color="tab:blue", label="Δ⁻ (over-suppression)")
    top = max(plus.max(initial=0), 0.02)
    for x, row in zip(centers, per_bin):
        ax.text(x, top * 1.05, str(row["n"]), ha="center", va="bottom", fontsize=6)
    ax.axhline(0, color="black", linewidth=0.6)
    # Room for the bin sizes above the tallest bar, and half a bin beyond [0, 1] so the edge bars show whole.
    ax.set_ylim(min(-minus.max(initial=0), 0) * 1.05 - 0.01, top * 1.2 + 0.01)
    ax.set_xlim(-width, 1 + width)
    ax.set_xlabel("clean solve probability (bin)")
    ax.set_ylabel("mean per-question gap")
    # The bin sizes are numbers without an axis: the title names them, whatever title the caller gives.
    ax.set_title(f"{title or 'per-bin gaps'}\n{COUNTS_NOTE}", fontsize=9, pad=22)
    # Above the axes, under the title: inside, it covered the largest bars (Δ⁻ grows with the clean probability).
    ax.legend(fontsize=7, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)
    return save_figure(fig, path)


def figure1(
    rouge: Sequence[Sequence[float]],
    ranks: Sequence[Sequence[int]],
    leaked: Sequence[bool],
    path: str | Path,
    title: str = "",
) -> Path:
    """Figure 1: (a, c) ROUGE-L to the greedy trajectory per question; (b, d) divergence-step rank histograms."""
    leaked = np.asarray(leaked, dtype=bool)
    fig, axes = plt.subplots(2, 2, figsize=(9, 5.5))
    rng = np.random.default_rng(0)
    for row_axes, (group, mask) in zip(axes, (("leaked", leaked), ("unleaked", ~leaked))):
        scatter, hist = row_axes
        qs = [i for i in range(len(rouge)) if mask[i] and len(rouge[i])]
        means = np.array([np.mean(rouge[i]) for i in qs])
        order = np.argsort(means)
        for x, i in enumerate(np.array(qs)[order]):
            ys = np.asarray(rouge[i])
            jitter = rng.uniform(-0.3, 0.3, len(ys))
            label = "one sample" if x == 0 else None  # one legend entry for all the grey points
            scatter.scatter(np.full(len(ys), x) + jitter, ys, s=2, alpha=0.15, color="grey", label=label)
        colour = "tab:red" if group == "leaked" else "tab:blue"
        scatter.scatter(np.arange(len(qs)), means[order], s=6, color=colour, label="question mean")
        scatter.set_ylim(0, 1.02)
        scatter.set_xlabel("question (sorted by mean)")
        scatter.set_ylabel("ROUGE-L to greedy")
        scatter.set_title(f"{group}: samples vs own greedy trajectory", fontsize=9)
        if qs:
            scatter.legend(fontsize=7, loc="lower right", markerscale=2)
        flat = np.array([r for i in range(len(ranks)) if mask[i] for r in ranks[i]], dtype=int)
        edges = np.arange(1.5, 12.5)
        clipped = np.minimum(flat, 11)  # ranks above 10 share the last bar
        hist.hist(clipped, bins=edges, color="tab:red" if group == "leaked" else "tab:blue", rwidth=0.85)
        hist.set_xticks(range(2, 12), [*map(str, range(2, 11)), ">10"])
        share = (flat == 2).mean() if flat.size else float("nan")
        hist.set_title(f"{group}: rank of the clean token ({flat.size} steps, rank 2: {share:.0%})", fontsize=9)
        hist.set_xlabel("rank under the contaminated model")
        hist.set_ylabel("divergence steps")
    if title:
        fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


def figure2(correct_a: np.ndarray, correct_b: np.ndarray, path: str | Path, title: str = "") -> Path:
    """Figure 2: readouts of two independent batches, questions sorted by the first; r⁰¹ left, r̂ right."""
    a, b = np.asarray(correct_a, dtype=float), np.asarray(correct_b, dtype=float)  # [N, m]
    rng = np.random.default_rng(0)
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3.2))
    for ax, (xa, xb, name) in zip(
        (left, right), ((a[:, 0], b[:, 0], "r⁰¹ (m = 1)"), (a.mean(1), b.mean(1), f"r̂ (m = {a.shape[1]})"))
    ):
        order = np.argsort(xa, kind="stable")
        jitter = rng.uniform(-0.03, 0.03, len(xa)) if name.startswith("r⁰¹") else 0.0
        ax.scatter(np.arange(len(xa)), xa[order] + jitter, s=5, label="batch 1")
        ax.scatter(np.arange(len(xb)), xb[order] - jitter, s=5, label="batch 2", alpha=0.7)
        ax.set_title(f"{name}: mean |batch 1 − batch 2| {np.abs(xa - xb).mean():.3f}", fontsize=9)
        ax.set_xlabel("question (sorted by batch 1)")
        ax.set_ylabel("readout (share of samples correct)")
        ax.legend(fontsize=7)
    if title:
        fig.suptitle(title, fontsize=10)
    return save_figure(fig, path)


def strategy_figure(rows: Sequence[dict[str, Any]], path: str | Path, title: str = "") -> Path:
    """Grouped bars of G-AP and SA-PPG per strategy (rows of :func:`contamlab.analysis.summary.collect`)."""
    labels = [r.get("label", r["strategy"]) for r in rows]
    x = np.arange(len(rows))
    fig, ax = plt.subplots(figsize=(max(5, 1.1 * len(rows)), 3.2))
    for offset, key, color in ((-0.2, "g_ap", "tab:grey"), (0.2, "sa_ppg", "tab:green")):
        values = np.array([_num(r.get(f"all/{key}")) for r in rows])
        lo = np.array([_num(r.get(f"all/{key}_lo"), v) for r, v in zip(rows, values)])
        hi = np.array([_num(r.get(f"all/{key}_hi"), v) for r, v in zip(rows, values)])
        err = np.vstack([values - lo, hi - values])
        ax.bar(x + offset, values, width=0.4, color=color, label=key.upper().replace("_", "-"), yerr=err, capsize=2)
    ax.set_xticks(x, labels, rotation=20, ha="right", fontsize=7)
    ax.set_ylabel("gap (lower = better restoration)")
    ax.set_title(title or "G-AP vs SA-PPG", fontsize=9)
    ax.legend(fontsize=7, title="whiskers: 95% bootstrap interval", title_fontsize=7)
    return save_figure(fig, path)


def ablation_figure(rows: Sequence[dict[str, Any]], path: str | Path, title: str = "") -> Path:
    """S-Δ⁺, S-Δ⁻ and SA-PPG of RailCap (cap mode) against n; ``rows`` carry ``n`` and the metric columns."""
    rows = sorted(rows, key=lambda r: r["n"])
    n = [r["n"] for r in rows]
    fig, ax = plt.subplots(figsize=(5, 3.2))
    lines = (
        ("s_delta_plus", "tab:red", "S-Δ⁺ (residual contamination)"),
        ("s_delta_minus", "tab:blue", "S-Δ⁻ (collateral damage)"),
        ("sa_ppg", "black", "SA-PPG"),
    )
    for key, color, label in lines:
        ax.plot(n, [r[f"all/{key}"] for r in rows], marker="o", color=color, label=label)
    ax.set_xlabel("RailCap n")
    ax.set_xticks(n)  # n is an integer: no 1.5 ticks between the runs
    ax.set_ylabel("stratified gap (lower = better)")
    ax.set_title(title or "RailCap ablation", fontsize=9)
    ax.legend(fontsize=7)
    return save_figure(fig, path)


def roc_panels(
    curves: dict[str, Sequence[tuple[str, dict[str, Sequence[float]], dict[str, Sequence[float]] | None]]],
    path: str | Path,
    title: str = "",
) -> Path:
    """ROC curves, one panel per group (contamination form).

    Each detector's contaminated-model curve is solid, its clean-control curve dashed in the same colour; the chance
    diagonal is dotted.

    Args:
        curves: ``{panel: [(detector, {"fpr", "tpr"} contaminated, {"fpr", "tpr"} clean or None), …]}``.
        path: The PNG to write.
        title: Figure title.
    """
    fig, axes = plt.subplots(1, len(curves), figsize=(5.2 * len(curves), 4.8), squeeze=False)
    colours = plt.get_cmap("tab20")
    for ax, (panel, items) in zip(axes[0], curves.items()):
        for i, (name, cont, clean) in enumerate(items):
            colour = colours(i % 20)
            ax.plot(cont["fpr"], cont["tpr"], color=colour, lw=1.6, label=name)
            if clean:
                ax.plot(clean["fpr"], clean["tpr"], color=colour, lw=1.0, ls="--")
        ax.plot([0, 1], [0, 1], color="0.6", lw=0.8, ls=":")
        ax.set(xlabel="false positive rate (unleaked flagged)", ylabel="true positive rate (leaked flagged)")
        ax.set_title(f"{panel} leak (solid: contaminated, dashed: clean control)", fontsize=9)
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1.01)
        ax.legend(fontsize=7, loc="lower right")
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    return save_figure(fig, path)
