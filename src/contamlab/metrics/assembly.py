"""Every restoration metric of one strategy against the clean model, overall and per leaked / unleaked group.

Assembles :mod:`.gaps` (G-AP, G-APP, A-PPG, SA-PPG, Δ±, S-Δ±; "Zero Gap Is Not Restoration" Eq. 2–13) with the
stratified bootstrap intervals (**[ours]**, docs/methods/metrics.md) into the ``metrics`` block of an
evaluation's results.json.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from contamlab.metrics.gaps import bootstrap_intervals, g_ap, gap_metrics


def compute_metrics(
    r_co: np.ndarray,
    r_cl: np.ndarray,
    r01_co: np.ndarray,
    r01_cl: np.ndarray,
    clean_bins: np.ndarray,
    leaked: np.ndarray,
    *,
    bins: int,
    bootstrap: int,
    confidence: float,
    seed: int,
) -> dict[str, Any]:
    """Every metric overall and per leaked / unleaked group, with bootstrap intervals when ``bootstrap`` > 0.

    Args:
        r_co: ``[N]`` solve probabilities r̂ of the strategy (or of any batch compared with the clean one).
        r_cl: ``[N]`` clean solve probabilities.
        r01_co: ``[N]`` one-response 0/1 readouts of the strategy.
        r01_cl: ``[N]`` one-response 0/1 readouts of the clean model.
        clean_bins: ``[N]`` 0-based clean-probability bin of each question.
        leaked: ``[N]`` whether each question leaked.
        bins: Number B of bins.
        bootstrap: Bootstrap draws (0: no intervals).
        confidence: Two-sided level of the intervals.
        seed: Bootstrap seed.

    Returns:
        ``{group: {"values": {...}, "ci": {...}}}`` for groups ``all``, ``leaked``, ``unleaked`` (non-empty ones).
    """
    out: dict[str, Any] = {}
    for group, mask in (("all", np.ones_like(leaked)), ("leaked", leaked), ("unleaked", ~leaked)):
        if not mask.any():
            continue
        values = gap_metrics(r_co[mask], r_cl[mask], bins, clean_bins[mask])
        values["g_ap"] = g_ap(r01_co[mask], r01_cl[mask])
        values["mean_r_strategy"], values["mean_r_clean"] = float(r_co[mask].mean()), float(r_cl[mask].mean())
        values["n"] = int(mask.sum())
        entry: dict[str, Any] = {"values": values}
        if bootstrap > 0:
            entry["ci"] = bootstrap_intervals(
                r_co[mask],
                r_cl[mask],
                bins,
                clean_bins[mask],
                bootstrap,
                confidence,
                seed,
                r01_co[mask],
                r01_cl[mask],
            )
        out[group] = entry
    return out
