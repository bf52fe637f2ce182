"""Detector evaluation: AUROC, TPR at 1% and 5% FPR and FPR at 95% TPR of per-question scores, seen (1) vs unseen (0).

The Min-K%++ / Shi et al. protocol (docs/methods/detectors.md): ``sklearn.metrics.roc_curve`` and ``auc`` with
label 1 = member; TPR@FPR = the largest TPR among ROC points with FPR <= the bound; FPR@TPR = the smallest FPR among
points with TPR >= the bound. Questions without a finite score are left out and counted. The AUROC interval is a
stratified percentile bootstrap (members and non-members resampled separately, so every draw has both classes).

:data:`MIN_ITEMS_PER_SIDE` is the fewest scored items per side that any reported statistic rests on (the detection
job's leaked / unleaked questions, the audit's benchmark / non-member items, the items of a one-sample reading);
:func:`too_few_items` says so in the words the reports use instead of a number.
"""

from __future__ import annotations

import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

#: The fewest scored items per side behind a reported AUROC, test or bootstrap interval. With one item a side the
#: AUROC is 0 or 1 and every bootstrap draw repeats it, an interval of width 0 that reads as a finding; with a few a
#: side the resamples take a handful of distinct values and the percentile interval falls short of its coverage. Ten
#: is a floor against such degenerate readings, not a power calculation; every reading is checked against it.
MIN_ITEMS_PER_SIDE = 10


def too_few_items(*sides: tuple[str, int]) -> str | None:
    """The reason a statistic is not reported, when a side has fewer than :data:`MIN_ITEMS_PER_SIDE` items.

    Args:
        *sides: ``(what, count)`` of each side (``("leaked", 4), ("unleaked", 6)``); one side for a one-sample
            statistic (``("", 3)``).

    Returns:
        ``too few items (n = 4 leaked and 6 unleaked, need ≥ 10 per side)``, or None when every side has enough.
    """
    if all(n >= MIN_ITEMS_PER_SIDE for _, n in sides):
        return None
    counts = " and ".join(f"{n} {what}".strip() for what, n in sides)
    per = " per side" if len(sides) > 1 else ""
    return f"too few items (n = {counts}, need ≥ {MIN_ITEMS_PER_SIDE}{per})"


def roc_metrics(
    scores: Sequence[float], labels: Sequence[bool], fpr_bound: float = 0.05, tpr_bound: float = 0.95
) -> dict[str, Any]:
    """ROC summary of scores (higher = more likely seen) against labels (True = seen).

    Returns:
        ``auroc``, ``tpr_at_5fpr``, ``tpr_at_1fpr``, ``fpr_at_95tpr`` (None when only one class has a score),
        ``n_scored``, ``n_positive``, ``n_negative`` and ``n_unscored``.
    """
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    if s.shape != y.shape:
        raise ValueError(f"roc_metrics: {s.shape[0]} scores but {y.shape[0]} labels")
    keep = np.isfinite(s)  # NaN (unscored) and ±inf (e.g. an overflowing perplexity) are left out, counted
    s, y = s[keep], y[keep]
    out: dict[str, Any] = {
        "n_scored": int(keep.sum()),
        "n_positive": int(y.sum()),
        "n_negative": int((~y).sum()),
        "n_unscored": int((~keep).sum()),
        "auroc": None,
        "tpr_at_5fpr": None,
        "tpr_at_1fpr": None,
        "fpr_at_95tpr": None,
    }
    if y.all() or not y.any():
        return out
    from sklearn.metrics import auc, roc_curve  # here: the audit imports this module and needs neither (seconds)

    fpr, tpr, _ = roc_curve(y.astype(int), s)
    out["auroc"] = float(auc(fpr, tpr))
    out["tpr_at_5fpr"] = float(tpr[fpr <= fpr_bound].max())
    out["tpr_at_1fpr"] = float(tpr[fpr <= 0.01].max())
    out["fpr_at_95tpr"] = float(fpr[tpr >= tpr_bound].min())
    return out


def roc_points(scores: Sequence[float], labels: Sequence[bool]) -> dict[str, list[float]] | None:
    """The ROC curve (``fpr``, ``tpr`` from ``sklearn.metrics.roc_curve``) of the finite scores; None with one class."""
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    keep = np.isfinite(s)
    s, y = s[keep], y[keep]
    if y.all() or not y.any():
        return None
    from sklearn.metrics import roc_curve

    fpr, tpr, _ = roc_curve(y.astype(int), s)
    return {"fpr": [round(float(v), 5) for v in fpr], "tpr": [round(float(v), 5) for v in tpr]}


def auroc_interval(
    scores: Sequence[float], labels: Sequence[bool], n_boot: int = 1000, confidence: float = 0.95, seed: int = 0
) -> tuple[float, float] | None:
    """Percentile bootstrap interval of the AUROC, resampling members and non-members separately.

    Args:
        scores: Per-question scores (higher = more likely seen); non-finite ones are left out.
        labels: True = seen.
        n_boot: Bootstrap draws.
        confidence: Coverage of the interval.
        seed: Seed of the draws.

    Returns:
        ``(low, high)``, or None when a class has no scored question.
    """
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    keep = np.isfinite(s)
    pos, neg = s[keep & y], s[keep & ~y]
    if not pos.size or not neg.size or n_boot < 1:
        return None
    rng = np.random.default_rng(seed)
    aucs = auroc_draws(
        pos, neg, rng.integers(0, pos.size, (n_boot, pos.size)), rng.integers(0, neg.size, (n_boot, neg.size))
    )
    alpha = (1 - confidence) / 2
    low, high = np.quantile(aucs, [alpha, 1 - alpha])
    return float(low), float(high)


#: Largest P x N whose draws :func:`auroc_draws` counts pairwise (one [B, P] x [P, N] product); above it the product's
#: O(B P N) costs more than the cumulative counts' O(B (P + N)). Measured on a 2-core AMD EPYC, pairwise against
#: cumulative: 2.4x faster at 50 x 50 (B = 6,000, the evidence page's), 1.7x at 100 x 100, even at 200 x 200, 1.7x
#: slower at 660 x 660.
PAIRWISE_MAX = 20_000


def auroc_draws(pos: np.ndarray, neg: np.ndarray, pos_idx: np.ndarray, neg_idx: np.ndarray) -> np.ndarray:
    """AUROC of each bootstrap draw: P(member > non-member) + 0.5 P(tie), by the Mann-Whitney U statistic.

    A draw only repeats items of ``pos`` and ``neg``, so its U needs no ranking of the draw itself. With c_b the
    draw's counts of each member [P] and d_b of each non-member [N], 2 U_b = c_b^T W d_b, where W[i, j] is 2 when
    member i scores above non-member j, 1 on a tie and 0 below. Small sides take that as one matrix product over all
    draws; larger ones count cumulatively instead: with the members sorted once, the drawn members at or below each
    non-member's value are a cumulative count of the draw's member counts. Every term is an integer (sums far below
    2^53), so 2 U is exact in float64 on both paths and equals the rank-sum computation (``scipy.stats.rankdata``) bit
    for bit (tests/test_verdicts.py checks both paths against it and against scikit-learn).

    Args:
        pos: Member scores [P].
        neg: Non-member scores [N].
        pos_idx: Draws of member indices [B, P].
        neg_idx: Draws of non-member indices [B, N].

    Returns:
        The AUROC of each draw [B].
    """
    if pos.size * neg.size <= PAIRWISE_MAX:
        twice_u = _twice_u_pairwise(pos, neg, pos_idx, neg_idx)
    else:
        twice_u = _twice_u_cumulative(pos, neg, pos_idx, neg_idx)
    return twice_u / 2 / (pos_idx.shape[1] * neg_idx.shape[1])


#: The counts of read-only draws already counted, by the draw's identity: a bootstrap that scores many readings on
#: the same shared draws (metrics/seeds.py draws each page's once) counts them once. An entry leaves with its draw.
_COUNTED: dict[int, np.ndarray] = {}


def _draw_counts(idx: np.ndarray, n: int) -> np.ndarray:
    """How often each of ``n`` items occurs in each draw: ``idx`` [B, K] -> counts [B, n] (float64, for BLAS)."""
    # kept only for a read-only array that owns its data: a writeable draw, or a view of one, may change later
    shared = not idx.flags.writeable and idx.base is None
    if shared and id(idx) in _COUNTED and _COUNTED[id(idx)].shape[1] == n:
        return _COUNTED[id(idx)]
    draws = idx.shape[0]
    flat = (np.arange(draws)[:, None] * n + idx).ravel()  # [B * K]: item j of draw b at b * n + j
    counts = np.bincount(flat, minlength=draws * n).reshape(draws, n).astype(np.float64)
    if shared:
        counts.flags.writeable = False
        _COUNTED[id(idx)] = counts
        weakref.finalize(idx, _COUNTED.pop, id(idx), None)  # the id may be reused once the draw is gone
    return counts


def _twice_u_pairwise(pos: np.ndarray, neg: np.ndarray, pos_idx: np.ndarray, neg_idx: np.ndarray) -> np.ndarray:
    """2 U of each draw as c_b^T W d_b [B] (see :func:`auroc_draws`)."""
    w = 2.0 * (pos[:, None] > neg[None, :]) + (pos[:, None] == neg[None, :])  # [P, N]: 2 above, 1 tied, 0 below
    members, nonmembers = _draw_counts(pos_idx, pos.size), _draw_counts(neg_idx, neg.size)  # [B, P], [B, N]
    return np.einsum("bn,bn->b", members @ w, nonmembers)  # [B]


def _twice_u_cumulative(pos: np.ndarray, neg: np.ndarray, pos_idx: np.ndarray, neg_idx: np.ndarray) -> np.ndarray:
    """2 U of each draw from cumulative member counts [B] (see :func:`auroc_draws`)."""
    order = np.argsort(pos, kind="stable")
    ranked = pos[order]  # [P] ascending
    place = np.empty(pos.size, np.int64)
    place[order] = np.arange(pos.size)  # item -> its place among the sorted members
    draws, n_pos = pos_idx.shape
    width = pos.size + 1
    rows = np.arange(draws)[:, None] * width  # [B, 1]: each draw's block of counts
    counts = np.bincount((rows + place[pos_idx] + 1).ravel(), minlength=draws * width)
    # [B * (P+1)], flat: drawn members among the k smallest; int32 and one flat gather halve the memory traffic
    at_or_below = counts.reshape(draws, width).cumsum(axis=1, dtype=np.int32).ravel()
    below = np.searchsorted(ranked, neg, side="left")  # [N] members strictly below each non-member
    upto = np.searchsorted(ranked, neg, side="right")  # [N] members at or below it
    le = at_or_below[rows + upto[neg_idx]]  # [B, N] drawn members <= each drawn non-member
    lt = at_or_below[rows + below[neg_idx]]  # [B, N] drawn members < it
    # 2 U = sum of 2 (n_pos - le) + (le - lt): an integer
    return (2 * n_pos - le - lt).sum(axis=1, dtype=np.int64)  # [B]
