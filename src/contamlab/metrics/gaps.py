"""Restoration metrics: G-AP, G-APP, A-PPG, SA-PPG and their sign components, with stratified bootstrap intervals.

Implements "Zero Gap Is Not Restoration: Stratified Per-Question Probability Evaluation and Step-wise Mitigation of
Benchmark Contamination", §3 (docs/methods/metrics.md). With r the solve probability of a question
(estimated as r̂ = c / m from m samples), s a mitigation strategy and M_cl the clean reference model:

- Eq. 2, G-AP: ``|mean_q r01_s(q) - mean_q r01_cl(q)|`` on one-sample 0/1 readouts (Eq. 1) -> :func:`g_ap`.
- Eq. 4, PPG: ``Δ(q) = r_s(q) - r_cl(q)``.
- Eq. 5, A-PPG: ``mean_q |Δ(q)|``; Eq. 7, G-APP: ``|mean_q Δ(q)|``.
- Eq. 8–11: ``Δ⁺ = mean_q max(Δ, 0)``, ``Δ⁻ = mean_q max(-Δ, 0)``, A-PPG = Δ⁺ + Δ⁻, G-APP = |Δ⁺ - Δ⁻|.
- Eq. 12: B equal-width bins of the clean solve probability, D_b = {q : r_cl(q) in [b/B, (b+1)/B)} with 0-based
  b = 0..B-1, the last bin closed at 1.
- Eq. 13, SA-PPG: the mean over non-empty bins of the bin's mean |Δ|; S-Δ⁺ and S-Δ⁻ (Table 4) are the same
  stratified average of max(Δ, 0) and max(-Δ, 0), so S-Δ⁺ + S-Δ⁻ = SA-PPG.

All of these are computed by :func:`gap_metrics`. Beyond the paper (**[ours]**, docs/methods/metrics.md):
:func:`bootstrap_intervals` (questions resampled within their clean bin, percentile intervals), :func:`per_bin_table`,
and :func:`readout_stability` (the paper's Figure 2: per-question gap between two sampling batches of the same
model).

Bin indices are best computed from integer counts with :func:`bin_index` (exact: ``c * B // m``);
:func:`bin_index_from_prob` is the float fallback used when only probabilities are available.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

METRIC_KEYS = ("g_app", "a_ppg", "sa_ppg", "delta_plus", "delta_minus", "s_delta_plus", "s_delta_minus")

# Tolerance (in units of one bin width) within which r * B is snapped to the nearest integer. For r = c / m the true
# value c * B / m is either an integer or at least 1 / m away from one, so snapping is exact for any m < 1e9, while
# the float error of c / m (about 1e-16 relative) is far below it.
_SNAP_TOL = 1e-9

# Bootstrap work is done in chunks of about this many resampled question entries, to bound memory for large N.
_CHUNK_ELEMENTS = 2_000_000


# ----------------------------------------------------------------------------------------------------- validation


def _check_bins(bins: int) -> int:
    if isinstance(bins, bool) or not isinstance(bins, (int, np.integer)) or bins < 1:
        raise ValueError(f"bins must be a positive integer, got {bins!r}")
    return int(bins)


def _as_integral(x: ArrayLike, name: str) -> np.ndarray:
    """Return ``x`` as an int64 array, rejecting non-integral values."""
    arr = np.asarray(x)
    if arr.dtype == bool or np.issubdtype(arr.dtype, np.integer):
        return arr.astype(np.int64)
    if not np.issubdtype(arr.dtype, np.floating):
        raise ValueError(f"{name} must be numeric integer counts, got dtype {arr.dtype}")
    if not np.all(np.isfinite(arr)) or not np.all(np.floor(arr) == arr):
        raise ValueError(f"{name} must hold whole numbers (counts); use bin_index_from_prob for probabilities")
    return arr.astype(np.int64)


def _as_prob(x: ArrayLike, name: str) -> np.ndarray:
    """Return ``x`` as a non-empty 1-D float64 array with every value in [0, 1]."""
    arr = np.asarray(x)
    if arr.dtype != bool and not np.issubdtype(arr.dtype, np.number):
        raise ValueError(f"{name} must be numeric, got dtype {arr.dtype}")
    arr = arr.astype(np.float64)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D (one value per question), got shape {arr.shape}")
    if arr.size == 0:
        raise ValueError(f"{name} is empty: need at least one question")
    bad = ~((arr >= 0.0) & (arr <= 1.0))  # also catches NaN
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{name} must hold solve probabilities in [0, 1]; {int(bad.sum())} value(s) outside, "
            f"first {arr[i]!r} at index {i}"
        )
    return arr


def _check_same_length(a: np.ndarray, b: np.ndarray, name_a: str, name_b: str) -> None:
    if a.shape[0] != b.shape[0]:
        raise ValueError(f"{name_a} and {name_b} differ in length ({a.shape[0]} vs {b.shape[0]} questions)")


def _prepare(
    r_strategy: ArrayLike, r_clean: ArrayLike, bins: int, clean_bins: ArrayLike | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """Validate the inputs; return (r_strategy, r_clean, clean bin index per question, bins)."""
    bins = _check_bins(bins)
    rs = _as_prob(r_strategy, "r_strategy")
    rc = _as_prob(r_clean, "r_clean")
    _check_same_length(rs, rc, "r_strategy", "r_clean")
    if clean_bins is None:
        b = bin_index_from_prob(rc, bins)
    else:
        b = _as_integral(clean_bins, "clean_bins")
        if b.ndim != 1:
            raise ValueError(f"clean_bins must be 1-D (one bin per question), got shape {b.shape}")
        _check_same_length(rs, b, "r_strategy", "clean_bins")
        if b.min() < 0 or b.max() >= bins:
            raise ValueError(f"clean_bins must lie in [0, {bins - 1}] for bins={bins}, got [{b.min()}, {b.max()}]")
    return rs, rc, b, bins


# ----------------------------------------------------------------------------------------------------------- bins


def bin_index(correct: ArrayLike, m: int | ArrayLike, bins: int = 50) -> np.ndarray:
    """Clean-probability bin of each question from integer counts, exactly (Eq. 12).

    The bin is ``b = (c * B) // m`` clamped to ``B - 1``, in integer arithmetic: r = c / m lies in
    ``[b / B, (b + 1) / B)``, and r = 1 falls in the last bin, which is closed at 1. No floating point is involved,
    so r = 0.2 (c = 10, m = 50, B = 50) lands in bin 10 and r = 0.58 (c = 29, m = 50) in bin 29.

    Args:
        correct: Number of correct samples per question, whole numbers in [0, m] (any shape).
        m: Samples per question: an int, or an array broadcastable against ``correct``; every value >= 1.
        bins: Number of equal-width bins B.

    Returns:
        int64 array of 0-based bin indices in [0, B - 1], shaped like ``correct`` broadcast against ``m``.

    Raises:
        ValueError: If the counts are not whole numbers, ``m`` < 1, a count is outside [0, m], or ``bins`` < 1.
    """
    bins = _check_bins(bins)
    c = _as_integral(correct, "correct")
    mm = _as_integral(m, "m")
    if mm.size and mm.min() < 1:
        raise ValueError(f"m (samples per question) must be >= 1, got {mm.min()}")
    try:
        c, mm = np.broadcast_arrays(c, mm)
    except ValueError as err:
        raise ValueError(f"correct (shape {c.shape}) and m (shape {mm.shape}) do not broadcast") from err
    if c.size and (c.min() < 0 or np.any(c > mm)):
        raise ValueError("correct must lie in [0, m] for every question")
    return np.minimum((c * bins) // mm, bins - 1).astype(np.int64)


def bin_index_from_prob(r: ArrayLike, bins: int = 50) -> np.ndarray:
    """Clean-probability bin of each question from float solve probabilities (Eq. 12).

    Computes ``floor(r * B)``, clamped to ``B - 1``, but first snaps ``r * B`` to the nearest integer when it lies
    within 1e-9 of it. Without the snap, float rounding misplaces values that sit exactly on a bin edge: for
    r = 29 / 50 and B = 50, ``(29 / 50) * 50`` evaluates to 28.999999999999996 and a plain floor gives bin 28
    instead of 29.

    Caveat: the snap is exact for probabilities of the form c / m with m < 1e9 (c * B / m is then an integer or at
    least 1 / m from one), but a value that truly lies within 1e-9 of a bin edge, below it, is moved up one bin.
    Prefer :func:`bin_index` on the integer counts whenever they are available.

    Args:
        r: Solve probabilities in [0, 1] (any shape).
        bins: Number of equal-width bins B.

    Returns:
        int64 array of 0-based bin indices in [0, B - 1], shaped like ``r``.

    Raises:
        ValueError: If a value is outside [0, 1] or NaN, or ``bins`` < 1.
    """
    bins = _check_bins(bins)
    arr = np.asarray(r, dtype=np.float64)
    bad = ~((arr >= 0.0) & (arr <= 1.0))
    if bad.any():
        raise ValueError(f"r must hold solve probabilities in [0, 1]; {int(bad.sum())} value(s) outside")
    x = arr * bins
    nearest = np.rint(x)
    snapped = np.where(np.abs(x - nearest) <= _SNAP_TOL, nearest, np.floor(x))
    return np.clip(snapped, 0, bins - 1).astype(np.int64)


# -------------------------------------------------------------------------------------------------------- metrics


def _group(b: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Sort questions by bin; return (order, bin id, start offset and size of each non-empty bin)."""
    order = np.argsort(b, kind="stable")
    ids, starts, sizes = np.unique(b[order], return_index=True, return_counts=True)
    return order, ids, starts, sizes


def _batch_metrics(
    rs: np.ndarray, rc: np.ndarray, starts: np.ndarray, sizes: np.ndarray, keys: Sequence[str] = METRIC_KEYS
) -> dict[str, np.ndarray]:
    """Gap metrics for each row of ``[D, N]`` arrays whose columns are grouped by bin (contiguous runs).

    Args:
        rs: ``[D, N]`` strategy solve probabilities.
        rc: ``[D, N]`` clean solve probabilities.
        starts: Column offset of each non-empty bin's run.
        sizes: Length of each run.
        keys: The metrics to compute (of :data:`METRIC_KEYS`); a bootstrap of one metric computes only its own.

    Returns:
        Each metric of ``keys`` as a ``[D]`` array.
    """
    delta = rs - rc

    def pos() -> np.ndarray:
        return np.maximum(delta, 0.0)

    def neg() -> np.ndarray:
        return np.maximum(-delta, 0.0)

    def absd() -> np.ndarray:
        return pos() + neg()  # one of the two is 0, so this is |Δ| exactly

    def strat(x: np.ndarray) -> np.ndarray:
        # Eq. 13: mean within each non-empty bin, then the plain mean over those bins.
        return (np.add.reduceat(x, starts, axis=1) / sizes).mean(axis=1)

    metrics: dict[str, Callable[[], np.ndarray]] = {
        "g_app": lambda: np.abs(delta.mean(axis=1)),
        "a_ppg": lambda: absd().mean(axis=1),
        "sa_ppg": lambda: strat(absd()),
        "delta_plus": lambda: pos().mean(axis=1),
        "delta_minus": lambda: neg().mean(axis=1),
        "s_delta_plus": lambda: strat(pos()),
        "s_delta_minus": lambda: strat(neg()),
    }
    return {key: metrics[key]() for key in keys}


def gap_metrics(
    r_strategy: ArrayLike, r_clean: ArrayLike, bins: int = 50, clean_bins: ArrayLike | None = None
) -> dict[str, float]:
    """Per-question restoration metrics of one strategy against the clean model (Eq. 4–13).

    Args:
        r_strategy: ``[N]`` solve probabilities r̂ of the contaminated model under the strategy, in [0, 1].
        r_clean: ``[N]`` solve probabilities r̂ of the clean model on the same questions, in [0, 1].
        bins: Number B of equal-width clean-probability bins for SA-PPG (paper: 50).
        clean_bins: Optional ``[N]`` 0-based bin of each question, e.g. ``bin_index(c_clean, m, bins)`` from the
            clean model's counts (exact). When None, bins come from ``r_clean`` via :func:`bin_index_from_prob`.

    Returns:
        ``g_app`` (|mean Δ|), ``a_ppg`` (mean |Δ|), ``sa_ppg`` (mean over non-empty bins of the bin's mean |Δ|),
        ``delta_plus`` / ``delta_minus`` (mean of max(±Δ, 0)) and ``s_delta_plus`` / ``s_delta_minus`` (their
        stratified averages), all Python floats, with Δ = r_strategy - r_clean.

    Raises:
        ValueError: If an array is empty, not 1-D, holds a value outside [0, 1], or the lengths differ; or if
            ``clean_bins`` is not integral or outside [0, bins - 1].
    """
    rs, rc, b, _ = _prepare(r_strategy, r_clean, bins, clean_bins)
    order, _, starts, sizes = _group(b)
    out = _batch_metrics(rs[order][None, :], rc[order][None, :], starts, sizes)
    return {key: float(out[key][0]) for key in METRIC_KEYS}


def metric_draws(
    r_strategy: ArrayLike, r_clean: ArrayLike, clean_bins: ArrayLike, draws: np.ndarray, metric: str = "sa_ppg"
) -> np.ndarray:
    """One metric of :data:`METRIC_KEYS` in each of K resamples of the questions, each kept within its clean bin.

    The draws of :func:`contamlab.metrics.seeds.two_level_strata` with the clean bins as strata: every row lists N
    question indices grouped by bin in ascending order, and a column's bin is the same in every row (so the SA-PPG
    weights, Eq. 13, stay fixed, as in :func:`bootstrap_intervals`).

    Args:
        r_strategy: ``[N]`` strategy solve probabilities in [0, 1].
        r_clean: ``[N]`` clean solve probabilities in [0, 1].
        clean_bins: ``[N]`` 0-based clean bins (any B: only their grouping is read).
        draws: ``[K, N]`` question indices, as above.
        metric: A key of :data:`METRIC_KEYS`.

    Returns:
        ``[K]`` values of the metric.

    Raises:
        ValueError: On an unknown metric, or draws whose columns do not keep their bin across rows or are not
            grouped by ascending bin.
    """
    if metric not in METRIC_KEYS:
        raise ValueError(f"metric must be one of {', '.join(METRIC_KEYS)}, got {metric!r}")
    rs, rc = _as_prob(r_strategy, "r_strategy"), _as_prob(r_clean, "r_clean")
    _check_same_length(rs, rc, "r_strategy", "r_clean")
    b = _as_integral(clean_bins, "clean_bins")
    idx = np.asarray(draws)
    column_bins = b[idx[0]]  # [N]
    if idx.ndim != 2 or idx.shape[1] != rs.size or np.any(b[idx] != column_bins) or np.any(np.diff(column_bins) < 0):
        raise ValueError("draws must be [K, N] indices grouped by ascending clean bin, each column within one bin")
    _, starts, sizes = np.unique(column_bins, return_index=True, return_counts=True)
    return _batch_metrics(rs[idx], rc[idx], starts, sizes, (metric,))[metric]


def g_ap(r01_strategy: ArrayLike, r01_clean: ArrayLike) -> float:
    """G-AP (Eq. 2): gap of aggregate performance on discrete one-sample readouts.

    Args:
        r01_strategy: ``[N]`` 0/1 correctness of one sample per question from the strategy (bool or numbers;
            any readout in [0, 1] is accepted, and with solve probabilities this equals G-APP).
        r01_clean: ``[N]`` 0/1 correctness of one sample per question from the clean model.

    Returns:
        ``|mean r01_strategy - mean r01_clean|``.

    Raises:
        ValueError: If an array is empty, not 1-D, holds a value outside [0, 1], or the lengths differ.
    """
    a = _as_prob(r01_strategy, "r01_strategy")
    c = _as_prob(r01_clean, "r01_clean")
    _check_same_length(a, c, "r01_strategy", "r01_clean")
    return float(abs(a.mean() - c.mean()))


# ------------------------------------------------------------------------------------------------------ bootstrap


def bootstrap_intervals(
    r_strategy: ArrayLike,
    r_clean: ArrayLike,
    bins: int = 50,
    clean_bins: ArrayLike | None = None,
    draws: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
    r01_strategy: ArrayLike | None = None,
    r01_clean: ArrayLike | None = None,
) -> dict[str, tuple[float, float]]:
    """Stratified percentile-bootstrap confidence intervals for every metric of :func:`gap_metrics` (and G-AP).

    Each draw resamples questions with replacement within each clean-probability bin, so every non-empty bin keeps
    its size (and the SA-PPG bin weights stay fixed); a resampled question carries its strategy and clean readouts
    (and its r01 readouts) together. Draws are vectorised: one ``[draws, N]`` index matrix, in chunks for large N.

    Args:
        r_strategy: ``[N]`` strategy solve probabilities in [0, 1].
        r_clean: ``[N]`` clean solve probabilities in [0, 1].
        bins: Number B of clean-probability bins.
        clean_bins: Optional ``[N]`` 0-based clean bins (see :func:`gap_metrics`).
        draws: Number of bootstrap draws (>= 1).
        confidence: Two-sided level of the interval, in (0, 1); the bounds are the (1 - confidence) / 2 and
            (1 + confidence) / 2 quantiles of the draws.
        seed: Seed of the ``numpy.random.Generator``; equal seeds give equal intervals.
        r01_strategy: Optional ``[N]`` one-sample 0/1 readouts of the strategy; with ``r01_clean`` adds ``g_ap``.
        r01_clean: Optional ``[N]`` one-sample 0/1 readouts of the clean model.

    Returns:
        Metric name -> (lower, upper) for every key of :func:`gap_metrics`, plus ``g_ap`` when r01 arrays are given.

    Raises:
        ValueError: On invalid metric inputs (see :func:`gap_metrics`), ``draws`` < 1, ``confidence`` outside
            (0, 1), or only one of the two r01 arrays.
    """
    rs, rc, b, _ = _prepare(r_strategy, r_clean, bins, clean_bins)
    if isinstance(draws, bool) or not isinstance(draws, (int, np.integer)) or draws < 1:
        raise ValueError(f"draws must be a positive integer, got {draws!r}")
    if not 0.0 < float(confidence) < 1.0:
        raise ValueError(f"confidence must lie strictly between 0 and 1, got {confidence!r}")
    if (r01_strategy is None) != (r01_clean is None):
        raise ValueError("give both r01_strategy and r01_clean for a G-AP interval, or neither")
    with_gap = r01_strategy is not None
    if with_gap:
        a01 = _as_prob(r01_strategy, "r01_strategy")
        c01 = _as_prob(r01_clean, "r01_clean")
        _check_same_length(rs, a01, "r_strategy", "r01_strategy")
        _check_same_length(rs, c01, "r_strategy", "r01_clean")

    order, _, starts, sizes = _group(b)
    n = rs.shape[0]
    # Column j of a draw picks uniformly among the positions of its own bin in the bin-sorted order.
    low = np.repeat(starts, sizes)
    high = low + np.repeat(sizes, sizes)
    rs_sorted, rc_sorted = rs[order], rc[order]
    if with_gap:
        a01_sorted, c01_sorted = a01[order], c01[order]

    rng = np.random.Generator(np.random.PCG64(seed))
    chunk = max(1, _CHUNK_ELEMENTS // n)
    stats: dict[str, list[np.ndarray]] = {key: [] for key in METRIC_KEYS}
    if with_gap:
        stats["g_ap"] = []
    for done in range(0, draws, chunk):
        k = min(chunk, draws - done)
        idx = rng.integers(low, high, size=(k, n))
        for key, val in _batch_metrics(rs_sorted[idx], rc_sorted[idx], starts, sizes).items():
            stats[key].append(val)
        if with_gap:
            stats["g_ap"].append(np.abs(a01_sorted[idx].mean(axis=1) - c01_sorted[idx].mean(axis=1)))

    tail = (1.0 - float(confidence)) / 2.0
    out: dict[str, tuple[float, float]] = {}
    for key, parts in stats.items():
        lo, hi = np.quantile(np.concatenate(parts), [tail, 1.0 - tail])
        out[key] = (float(lo), float(hi))
    return out


def paired_difference(
    r_a: ArrayLike,
    r_b: ArrayLike,
    r_clean: ArrayLike,
    bins: int = 50,
    clean_bins: ArrayLike | None = None,
    metric: str = "sa_ppg",
    draws: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> tuple[float, float, float]:
    """``metric(a) - metric(b)`` for two strategies on the same questions, with a paired bootstrap interval.

    Both strategies are scored against the same clean readouts; each draw resamples questions within their clean
    bin (as :func:`bootstrap_intervals`) and uses the same resampled questions for both, so the question-to-question
    variation they share cancels out of the difference. **[ours]**, for claims such as "TED ≈ Identity".

    Args:
        r_a: ``[N]`` solve probabilities of strategy a.
        r_b: ``[N]`` solve probabilities of strategy b.
        r_clean: ``[N]`` clean solve probabilities.
        bins: Number B of clean-probability bins.
        clean_bins: Optional ``[N]`` 0-based clean bins.
        metric: A key of :data:`METRIC_KEYS`.
        draws: Bootstrap draws.
        confidence: Two-sided level of the interval.
        seed: Seed of the draws.

    Returns:
        ``(difference, lower, upper)``.
    """
    if metric not in METRIC_KEYS:
        raise ValueError(f"metric must be one of {', '.join(METRIC_KEYS)}, got {metric!r}")
    ra, rc, b, _ = _prepare(r_a, r_clean, bins, clean_bins)
    rb = _as_prob(r_b, "r_b")
    _check_same_length(ra, rb, "r_a", "r_b")
    order, _, starts, sizes = _group(b)
    ra, rb, rc = ra[order], rb[order], rc[order]
    point = (
        _batch_metrics(ra[None], rc[None], starts, sizes, (metric,))[metric]
        - _batch_metrics(rb[None], rc[None], starts, sizes, (metric,))[metric]
    )
    low = np.repeat(starts, sizes)
    high = low + np.repeat(sizes, sizes)
    rng = np.random.Generator(np.random.PCG64(seed))
    idx = rng.integers(low, high, size=(draws, ra.size))  # [D, N]
    diff = (
        _batch_metrics(ra[idx], rc[idx], starts, sizes, (metric,))[metric]
        - _batch_metrics(rb[idx], rc[idx], starts, sizes, (metric,))[metric]
    )
    tail = (1.0 - float(confidence)) / 2.0
    lo, hi = np.quantile(diff, [tail, 1.0 - tail])
    return float(point[0]), float(lo), float(hi)


# ---------------------------------------------------------------------------------------------- tables, Figure 2


def per_bin_table(
    r_strategy: ArrayLike, r_clean: ArrayLike, bins: int = 50, clean_bins: ArrayLike | None = None
) -> list[dict[str, Any]]:
    """One row per non-empty clean-probability bin, in bin order (the terms of Eq. 13).

    Args:
        r_strategy: ``[N]`` strategy solve probabilities in [0, 1].
        r_clean: ``[N]`` clean solve probabilities in [0, 1].
        bins: Number B of clean-probability bins.
        clean_bins: Optional ``[N]`` 0-based clean bins (see :func:`gap_metrics`).

    Returns:
        Rows with keys ``bin`` (0-based index), ``lo`` / ``hi`` (bin edges b / B, (b + 1) / B), ``n`` (questions),
        ``mean_r_clean``, ``mean_r_strategy``, ``mean_abs_delta``, ``mean_delta_plus``, ``mean_delta_minus``. The
        mean of ``mean_abs_delta`` over the rows is SA-PPG.

    Raises:
        ValueError: On invalid inputs (see :func:`gap_metrics`).
    """
    rs, rc, b, bins = _prepare(r_strategy, r_clean, bins, clean_bins)
    order, ids, starts, sizes = _group(b)
    rs, rc = rs[order], rc[order]
    delta = rs - rc

    def mean(x: np.ndarray) -> np.ndarray:
        return np.add.reduceat(x, starts) / sizes

    cols = {
        "mean_r_clean": mean(rc),
        "mean_r_strategy": mean(rs),
        "mean_abs_delta": mean(np.abs(delta)),
        "mean_delta_plus": mean(np.maximum(delta, 0.0)),
        "mean_delta_minus": mean(np.maximum(-delta, 0.0)),
    }
    rows = []
    for i, (bin_id, size) in enumerate(zip(ids.tolist(), sizes.tolist())):
        row: dict[str, Any] = {"bin": bin_id, "lo": bin_id / bins, "hi": (bin_id + 1) / bins, "n": size}
        row.update({key: float(col[i]) for key, col in cols.items()})
        rows.append(row)
    return rows


def _as_correct_matrix(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 2 or arr.shape[0] == 0 or arr.shape[1] == 0:
        raise ValueError(f"{name} must be a non-empty [N, m] array of sample correctness, got shape {arr.shape}")
    if arr.dtype != bool:
        if not np.issubdtype(arr.dtype, np.number) or not np.all((arr == 0) | (arr == 1)):
            raise ValueError(f"{name} must be boolean (or 0/1) sample correctness")
        arr = arr != 0
    return arr


def readout_stability(correct_a: ArrayLike, correct_b: ArrayLike) -> dict[str, float]:
    """Readout stability between two independent sampling batches of the same model (paper Figure 2, §5.2.2).

    Args:
        correct_a: ``[N, m]`` boolean correctness of m samples per question, first batch.
        correct_b: ``[N, m]`` the same for a second, independent batch.

    Returns:
        ``gap_r01``: mean per-question |r01_a - r01_b| with r01 the correctness of sample 0 (the one-sample
        readout, m = 1); ``gap_rhat``: mean per-question |r̂_a - r̂_b| with r̂ the fraction correct over all m
        samples; ``m``: the number of samples per question (paper, Llama-2 / GSM8K, m = 50: 0.190 vs 0.041).

    Raises:
        ValueError: If an array is not a non-empty 2-D 0/1 array or the shapes differ.
    """
    a = _as_correct_matrix(correct_a, "correct_a")
    b = _as_correct_matrix(correct_b, "correct_b")
    if a.shape != b.shape:
        raise ValueError(f"correct_a and correct_b differ in shape ({a.shape} vs {b.shape})")
    gap_r01 = np.abs(a[:, 0].astype(np.float64) - b[:, 0].astype(np.float64)).mean()
    gap_rhat = np.abs(a.mean(axis=1) - b.mean(axis=1)).mean()
    return {"gap_r01": float(gap_r01), "gap_rhat": float(gap_rhat), "m": int(a.shape[1])}
