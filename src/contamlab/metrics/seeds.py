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

from collections.abc import Sequence

import numpy as np

from contamlab.metrics.roc import auroc_draws


def two_level_auroc(
    seeds: Sequence[tuple[np.ndarray, np.ndarray]], n_boot: int = 2000, seed: int = 0, confidence: float = 0.95
) -> tuple[float, tuple[float, float], list[float]]:
    """The mean AUROC over seeds with its two-level bootstrap interval.

    Args:
        seeds: Per seed, (member scores [P_s], non-member scores [N_s]), finite, each side non-empty.
        n_boot: Bootstrap replicates.
        seed: Seed of the draws.
        confidence: Coverage of the interval.

    Returns:
        ``(mean of the seeds' AUROCs, (low, high), the per-seed AUROCs)``.
    """
    rng = np.random.default_rng(seed)
    n_seeds = len(seeds)
    if n_seeds == 0:
        raise ValueError("two_level_auroc: no seeds")
    points, item_draws = [], []
    for pos, neg in seeds:
        pos, neg = np.asarray(pos, np.float64), np.asarray(neg, np.float64)
        everything = (np.arange(pos.size)[None, :], np.arange(neg.size)[None, :])
        points.append(float(auroc_draws(pos, neg, *everything)[0]))
        # one independent item draw per (replicate, place among the S drawn seeds): a seed drawn twice in a replicate
        # gets two item draws of its own
        idx_pos = rng.integers(0, pos.size, (n_boot * n_seeds, pos.size))
        idx_neg = rng.integers(0, neg.size, (n_boot * n_seeds, neg.size))
        item_draws.append(auroc_draws(pos, neg, idx_pos, idx_neg).reshape(n_boot, n_seeds))  # [B, S]
    table = np.stack(item_draws)  # [S seeds, B, S places]
    picked = rng.integers(0, n_seeds, (n_boot, n_seeds))  # [B, S]: which seed fills each place
    replicates = table[picked, np.arange(n_boot)[:, None], np.arange(n_seeds)[None, :]].mean(axis=1)  # [B]
    alpha = (1 - confidence) / 2
    low, high = np.quantile(replicates, [alpha, 1 - alpha])
    return float(np.mean(points)), (float(low), float(high)), points
