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

import functools
from collections.abc import Callable, Sequence

import numpy as np

from contamlab.metrics.roc import auroc_draws

#: A statistic of one seed's items under bootstrap draws: ``(seed index, member draws [K, P], non-member draws [K, N])``
#: -> its value in each draw [K]. The identity draw (``arange``) gives the seed's point value. The draws are read-only:
#: every interval over the same sizes shares them.
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
    if len(sizes) == 0:
        raise ValueError("two_level: no seeds")
    sizes = tuple((int(p), int(n)) for p, n in sizes)
    draws, picked = _item_draws(sizes, n_boot, seed)
    points, item_draws = [], []
    for s, ((n_pos, n_neg), (idx_pos, idx_neg)) in enumerate(zip(sizes, draws)):
        points.append(float(statistic(s, np.arange(n_pos)[None, :], np.arange(n_neg)[None, :])[0]))
        item_draws.append(np.asarray(statistic(s, idx_pos, idx_neg)).reshape(n_boot, len(sizes)))  # [B, S]
    return _over_seeds(points, item_draws, picked, confidence)


@functools.lru_cache(maxsize=8)
def _item_draws(
    sizes: tuple[tuple[int, int], ...], n_boot: int, seed: int
) -> tuple[tuple[tuple[np.ndarray, np.ndarray], ...], np.ndarray]:
    """Every draw of :func:`two_level`, made once per sizes (they depend on nothing else).

    A page of intervals over the same items (every reading of a world, every model) shares them, read-only.

    Returns:
        Per seed (member draws [B*S, P], non-member draws [B*S, N]), and the seed drawn into each place [B, S].
    """
    rng = np.random.default_rng(seed)
    n_seeds = len(sizes)
    per_seed = []
    for n_pos, n_neg in sizes:
        # one independent item draw per (replicate, place among the S drawn seeds): a seed drawn twice in a replicate
        # gets two item draws of its own
        idx_pos = rng.integers(0, n_pos, (n_boot * n_seeds, n_pos))
        idx_neg = rng.integers(0, n_neg, (n_boot * n_seeds, n_neg))
        per_seed.append((_read_only(idx_pos), _read_only(idx_neg)))
    return tuple(per_seed), _read_only(_seed_picks(rng, n_boot, n_seeds))


def _read_only(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


def _seed_picks(rng: np.random.Generator, n_boot: int, n_seeds: int) -> np.ndarray:
    """The seed level's draws, after the item level's from the same generator: which seed fills each place [B, S]."""
    return rng.integers(0, n_seeds, (n_boot, n_seeds))


def _over_seeds(
    points: list[float], item_draws: list[np.ndarray], picked: np.ndarray, confidence: float
) -> tuple[float, tuple[float, float], list[float]]:
    """The seed level of a two-level bootstrap, once each seed's item draws are made.

    Args:
        points: Each seed's value on its own items.
        item_draws: Per seed, its statistic in ``[B, S]`` independent item draws (one per replicate and place).
        picked: Which seed fills each place of each replicate [B, S] (:func:`_seed_picks`).
        confidence: Coverage of the interval.
    """
    n_seeds, n_boot = len(points), item_draws[0].shape[0]
    table = np.stack(item_draws)  # [S seeds, B, S places]
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
#: the identity draw (the items in that order), which gives the seed's point value. The draws are read-only (shared).
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
    if len(strata) == 0:
        raise ValueError("two_level_strata: no seeds")
    labels = []
    for s, seed_labels in enumerate(strata):
        seed_labels = np.asarray(seed_labels)
        if seed_labels.ndim != 1 or seed_labels.size == 0:
            raise ValueError(f"two_level_strata: seed {s} has no items")
        labels.append(tuple(seed_labels.tolist()))
    orders, draws, picked = _strata_draws(tuple(labels), n_boot, seed)
    points = [float(statistic(s, order[None, :])[0]) for s, order in enumerate(orders)]
    item_draws = [np.asarray(statistic(s, d)).reshape(n_boot, len(strata)) for s, d in enumerate(draws)]  # [B, S]
    return _over_seeds(points, item_draws, picked, confidence)


@functools.lru_cache(maxsize=8)
def _strata_draws(
    strata: tuple[tuple[int, ...], ...], n_boot: int, seed: int
) -> tuple[tuple[np.ndarray, ...], tuple[np.ndarray, ...], np.ndarray]:
    """Every draw of :func:`two_level_strata`, which depend on the labels alone (drawn once per page, read-only).

    Returns:
        Per seed its items grouped by stratum [n], per seed its item draws [B*S, n], and the seed picks [B, S].
    """
    rng = np.random.default_rng(seed)
    n_seeds = len(strata)
    orders, draws = [], []
    for seed_labels in strata:
        labels = np.asarray(seed_labels)
        order = np.argsort(labels, kind="stable")  # [n]: the items grouped by stratum
        _, starts, sizes = np.unique(labels[order], return_index=True, return_counts=True)
        low = np.repeat(starts, sizes)  # [n]: where column j's stratum begins in `order`
        # one independent item draw per (replicate, place among the S drawn seeds)
        drawn = order[rng.integers(low, low + np.repeat(sizes, sizes), (n_boot * n_seeds, labels.size))]
        orders.append(_read_only(order))
        draws.append(_read_only(drawn))
    return tuple(orders), tuple(draws), _read_only(_seed_picks(rng, n_boot, n_seeds))
