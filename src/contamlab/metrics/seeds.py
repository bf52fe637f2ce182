"""Intervals over independent replicates (seeds): the two-level bootstrap.

A study that repeats its experiment at S seeds has two sources of noise: which seeds were run, and which items each
seed drew. Resampling each seed's items and averaging the draws treats the S seeds as fixed, so its interval only
shrinks as seeds are added (about √S narrower than one seed's) even where the seeds disagree. The two-level (cluster)
bootstrap resamples both (Davison & Hinkley 1997, §3.8; Field & Welsh 2007): each replicate draws S seeds with
replacement, then, for each seed drawn, that seed's leaked and unleaked items with replacement (stratified), and
averages the drawn seeds' AUROCs. When the seeds agree, the interval is about the item-level one; when they disagree,
it spans them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from contamlab.metrics.roc import auroc_draws

#: A statistic of one seed's items under bootstrap draws: ``(seed index, member draws [K, P], non-member draws [K, N])``
#: -> its value in each draw [K]. The identity draw (``arange``) gives the seed's point value.
Statistic = Callable[[int, np.ndarray, np.ndarray], np.ndarray]


def two_level(
    sizes: Sequence[tuple[int, int]],
    statistic: Statistic,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, tuple[float, float], list[float]]:
    """Any per-seed statistic of members and non-members, averaged over seeds, with its two-level interval.

    Each replicate draws S seeds with replacement and, for each place, that seed's members and non-members with
    replacement (stratified); the replicate's value is the mean of the S drawn seeds' statistics. A statistic that
    reads several models' scores at the same drawn indices (a paired difference) is resampled paired.

    Args:
        sizes: Per seed, (members P_s, non-members N_s), each >= 1.
        statistic: See :data:`Statistic`.
        n_boot: Bootstrap replicates.
        seed: Seed of the draws.
        confidence: Coverage of the interval.

    Returns:
        ``(mean of the seeds' values, (low, high), the per-seed values)``.
    """
    rng = np.random.default_rng(seed)
    n_seeds = len(sizes)
    if n_seeds == 0:
        raise ValueError("two_level: no seeds")
    points, item_draws = [], []
    for s, (n_pos, n_neg) in enumerate(sizes):
        points.append(float(statistic(s, np.arange(n_pos)[None, :], np.arange(n_neg)[None, :])[0]))
        # one independent item draw per (replicate, place among the S drawn seeds): a seed drawn twice in a replicate
        # gets two item draws of its own
        idx_pos = rng.integers(0, n_pos, (n_boot * n_seeds, n_pos))
        idx_neg = rng.integers(0, n_neg, (n_boot * n_seeds, n_neg))
        item_draws.append(np.asarray(statistic(s, idx_pos, idx_neg)).reshape(n_boot, n_seeds))  # [B, S]
    return _over_seeds(points, item_draws, rng, confidence)


def _over_seeds(
    points: list[float], item_draws: list[np.ndarray], rng: np.random.Generator, confidence: float
) -> tuple[float, tuple[float, float], list[float]]:
    """The seed level of a two-level bootstrap, once each seed's item draws are made.

    Args:
        points: Each seed's value on its own items.
        item_draws: Per seed, its statistic in ``[B, S]`` independent item draws (one per replicate and place).
        rng: The generator of the item draws, continued here for the seeds.
        confidence: Coverage of the interval.
    """
    n_seeds, n_boot = len(points), item_draws[0].shape[0]
    table = np.stack(item_draws)  # [S seeds, B, S places]
    picked = rng.integers(0, n_seeds, (n_boot, n_seeds))  # [B, S]: which seed fills each place
    replicates = table[picked, np.arange(n_boot)[:, None], np.arange(n_seeds)[None, :]].mean(axis=1)  # [B]
    alpha = (1 - confidence) / 2
    low, high = np.quantile(replicates, [alpha, 1 - alpha])
    return float(np.mean(points)), (float(low), float(high)), points


def two_level_auroc(
    seeds: Sequence[tuple[np.ndarray, np.ndarray]], n_boot: int = 2000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, tuple[float, float], list[float]]:
    """The mean AUROC over seeds with its two-level bootstrap interval (:func:`two_level`).

    Args:
        seeds: Per seed, (member scores [P_s], non-member scores [N_s]), finite, each side non-empty.
        n_boot: Bootstrap replicates.
        seed: Seed of the draws.
        confidence: Coverage of the interval.

    Returns:
        ``(mean of the seeds' AUROCs, (low, high), the per-seed AUROCs)``.
    """
    data = [(np.asarray(p, np.float64), np.asarray(n, np.float64)) for p, n in seeds]

    def auroc(s: int, idx_pos: np.ndarray, idx_neg: np.ndarray) -> np.ndarray:
        return auroc_draws(*data[s], idx_pos, idx_neg)

    return two_level([(p.size, n.size) for p, n in data], auroc, n_boot, seed, confidence)


#: A statistic of one seed's items under stratified draws: ``(seed index, item draws [K, n])`` -> its value in each
#: draw [K]. The columns of a draw are grouped by stratum, in ascending label order; the first call of each seed gets
#: the identity draw (the items in that order), which gives the seed's point value.
StrataStatistic = Callable[[int, np.ndarray], np.ndarray]


def two_level_strata(
    strata: Sequence[np.ndarray],
    statistic: StrataStatistic,
    n_boot: int = 2000,
    seed: int = 0,
    confidence: float = 0.95,
) -> tuple[float, tuple[float, float], list[float]]:
    """:func:`two_level` with the items resampled within strata of any number (e.g. the clean model's SA-PPG bins).

    The restoration metrics of "Zero Gap Is Not Restoration" (Eq. 13) weight the clean model's solve-probability bins
    equally, and their bootstrap resamples questions within their bin so that the weights stay fixed
    (:func:`contamlab.metrics.gaps.bootstrap_intervals`). Over seeds the same holds one level down: each replicate
    draws S seeds with replacement and, for each place, that seed's items with replacement within each stratum; the
    replicate's value is the mean of the S drawn seeds' statistics.

    Args:
        strata: Per seed, the stratum label of each of its items ``[n_s]`` (integers).
        statistic: See :data:`StrataStatistic`; a paired difference reads both models at the same drawn items.
        n_boot: Bootstrap replicates.
        seed: Seed of the draws.
        confidence: Coverage of the interval.

    Returns:
        ``(mean of the seeds' values, (low, high), the per-seed values)``.
    """
    rng = np.random.default_rng(seed)
    n_seeds = len(strata)
    if n_seeds == 0:
        raise ValueError("two_level_strata: no seeds")
    points, item_draws = [], []
    for s, labels in enumerate(strata):
        labels = np.asarray(labels)
        if labels.ndim != 1 or labels.size == 0:
            raise ValueError(f"two_level_strata: seed {s} has no items")
        order = np.argsort(labels, kind="stable")  # [n]: the items grouped by stratum
        _, starts, sizes = np.unique(labels[order], return_index=True, return_counts=True)
        low = np.repeat(starts, sizes)  # [n]: where column j's stratum begins in `order`
        points.append(float(statistic(s, order[None, :])[0]))
        # one independent item draw per (replicate, place among the S drawn seeds)
        draws = order[rng.integers(low, low + np.repeat(sizes, sizes), (n_boot * n_seeds, labels.size))]
        item_draws.append(np.asarray(statistic(s, draws)).reshape(n_boot, n_seeds))  # [B, S]
    return _over_seeds(points, item_draws, rng, confidence)
