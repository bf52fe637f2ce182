"""The two-level bootstrap over seeds (:mod:`contamlab.metrics.seeds`): a hand-computed case, and a slow loop."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from contamlab.metrics.gaps import metric_draws
from contamlab.metrics.seeds import two_level_auroc, two_level_strata


def test_seeds_that_disagree_give_an_interval_that_spans_them():
    """Seed A separates perfectly (AUROC 1 in every item draw), seed B is perfectly reversed (0 in every draw).

    By hand: a replicate draws two seeds with replacement, so its mean is 1 (AA, probability 1/4), 0.5 (AB or BA, 1/2)
    or 0 (BB, 1/4); the 95 % interval is [0, 1]. Averaging item draws over the fixed seeds would give [0.5, 0.5].
    """
    a = (np.array([5.0, 6.0, 7.0]), np.array([1.0, 2.0, 3.0]))
    b = (np.array([1.0, 2.0, 3.0]), np.array([5.0, 6.0, 7.0]))
    mean, (low, high), per_seed = two_level_auroc([a, b], n_boot=4000, seed=1)
    assert per_seed == [1.0, 0.0] and mean == 0.5
    assert (low, high) == (0.0, 1.0)
    # the replicate means take the three values with probabilities 1/4, 1/2, 1/4: the 30th and 70th percentiles
    # fall inside the middle half, at 0.5 (within Monte Carlo error of 4,000 replicates)
    _, (q30, q70), _ = two_level_auroc([a, b], n_boot=4000, seed=1, confidence=0.4)
    assert (q30, q70) == (0.5, 0.5)


def test_seeds_that_agree_give_about_the_item_level_interval():
    rng = np.random.default_rng(0)
    seeds = [(rng.normal(0.5, 1, 50), rng.normal(0, 1, 50)) for _ in range(3)]
    mean, (low, high), per_seed = two_level_auroc(seeds, n_boot=2000, seed=0)
    assert mean == pytest.approx(np.mean([roc_auc_score([1] * 50 + [0] * 50, np.r_[p, n]) for p, n in seeds]))
    assert low < mean < high and high - low < 0.25


def pairwise_auroc(p: np.ndarray, n: np.ndarray) -> float:
    """P(member > non-member) + 0.5 P(tie) over every pair (no ranks)."""
    return float((p[:, None] > n[None, :]).mean() + 0.5 * (p[:, None] == n[None, :]).mean())


def slow_two_level(seeds, n_boot, rng):
    """The same bootstrap as plain loops over pairs, with its own random stream."""
    out = []
    for _ in range(n_boot):
        values = []
        for _ in range(len(seeds)):
            pos, neg = seeds[rng.integers(len(seeds))]
            p = pos[rng.integers(0, pos.size, pos.size)]
            n = neg[rng.integers(0, neg.size, neg.size)]
            values.append(pairwise_auroc(p, n))
        out.append(np.mean(values))
    return np.quantile(out, [0.025, 0.975])


def test_the_interval_matches_a_slow_independent_loop():
    """Three seeds that disagree in size of effect: both intervals agree within Monte Carlo error (B = 1500 each)."""
    rng = np.random.default_rng(7)
    seeds = [(rng.normal(shift, 1, 30), rng.normal(0, 1, 30)) for shift in (0.0, 0.6, 1.2)]
    _, (low, high), _ = two_level_auroc(seeds, n_boot=1500, seed=3)
    slow_low, slow_high = slow_two_level(seeds, 1500, np.random.default_rng(11))
    assert low == pytest.approx(slow_low, abs=0.03) and high == pytest.approx(slow_high, abs=0.03)
    # and it is wider than averaging item draws over the three fixed seeds would be
    fixed = []
    for _ in range(1500):
        draws = []
        for pos, neg in seeds:
            p, n = pos[rng.integers(0, 30, 30)], neg[rng.integers(0, 30, 30)]
            draws.append(pairwise_auroc(p, n))
        fixed.append(np.mean(draws))
    fixed_low, fixed_high = np.quantile(fixed, [0.025, 0.975])
    assert high - low > 1.3 * (fixed_high - fixed_low)


def test_strata_keep_their_sizes_in_every_draw():
    """Seed A: items 1, 1 in stratum 0 and 5, 5 in stratum 1; any draw within strata keeps two of each, so the mean
    is 3 in every draw (unstratified draws would range over 1..5). Seed B: all items 0 -> 0. By hand the replicate
    means are 3 (AA, 1/4), 1.5 (AB/BA, 1/2), 0 (BB, 1/4): the 95 % interval is [0, 3]."""
    labels = [np.array([1, 0, 1, 0]), np.array([0, 0, 0])]
    values = [np.array([5.0, 1.0, 5.0, 1.0]), np.zeros(3)]

    def mean(s, idx):
        # the columns come grouped by stratum: seed A's first two columns are always stratum 0's items
        if s == 0:
            assert np.all(values[0][idx[:, :2]] == 1.0) and np.all(values[0][idx[:, 2:]] == 5.0)
        return values[s][idx].mean(axis=1)

    point, (low, high), per_seed = two_level_strata(labels, mean, n_boot=4000, seed=2)
    assert per_seed == [3.0, 0.0] and point == 1.5 and (low, high) == (0.0, 3.0)
    _, (q30, q70), _ = two_level_strata(labels, mean, n_boot=4000, seed=2, confidence=0.4)
    assert (q30, q70) == (1.5, 1.5)


def slow_sa_ppg(r_s, r_c, bins):
    """SA-PPG (Eq. 13) as plain loops: each non-empty bin's mean |r_s - r_c|, then the mean over bins."""
    groups = {}
    for a, c, b in zip(r_s, r_c, bins):
        groups.setdefault(b, []).append(abs(a - c))
    return sum(sum(g) / len(g) for g in groups.values()) / len(groups)


def test_paired_sa_ppg_interval_matches_a_slow_independent_loop():
    """Identity − RailCap's SA-PPG over three seeds that disagree: two_level_strata with metric_draws against plain
    loops (seeds with replacement, then questions within their clean bin), within Monte Carlo error (B = 1500)."""
    rng = np.random.default_rng(5)
    seeds = []
    for excess in (0.05, 0.2, 0.35):
        c = rng.integers(0, 9, 60)  # clean correct counts of m = 8
        r_c, bins = c / 8, (c * 50) // 8
        r_id = np.clip(r_c + excess + rng.normal(0, 0.1, 60), 0, 1)
        r_rc = np.clip(r_c + rng.normal(0, 0.1, 60), 0, 1)
        seeds.append((r_id, r_rc, r_c, bins))

    def stat(s, idx):
        r_id, r_rc, r_c, b = seeds[s]
        return metric_draws(r_id, r_c, b, idx) - metric_draws(r_rc, r_c, b, idx)

    point, (low, high), per_seed = two_level_strata([s[3] for s in seeds], stat, n_boot=1500, seed=3)
    assert per_seed == pytest.approx([slow_sa_ppg(a, c, b) - slow_sa_ppg(r, c, b) for a, r, c, b in seeds])
    slow = np.random.default_rng(13)
    out = []
    for _ in range(1500):
        values = []
        for _ in range(3):
            r_id, r_rc, r_c, b = seeds[slow.integers(3)]
            pick = np.concatenate([slow.choice(np.flatnonzero(b == k), (b == k).sum()) for k in np.unique(b)])
            values.append(slow_sa_ppg(r_id[pick], r_c[pick], b[pick]) - slow_sa_ppg(r_rc[pick], r_c[pick], b[pick]))
        out.append(np.mean(values))
    slow_low, slow_high = np.quantile(out, [0.025, 0.975])
    assert low == pytest.approx(slow_low, abs=0.02) and high == pytest.approx(slow_high, abs=0.02)
    assert low < point < high and high - low > 0.1  # the seeds disagree: the interval spans them


def test_metric_draws_refuse_draws_that_leave_their_bin():
    r = np.array([0.0, 0.5, 1.0])
    bins = np.array([0, 1, 1])
    assert metric_draws(r, np.zeros(3), bins, np.array([[0, 2, 1]]), "a_ppg") == pytest.approx([0.5])
    with pytest.raises(ValueError, match="grouped by ascending clean bin"):
        metric_draws(r, np.zeros(3), bins, np.array([[1, 0, 2]]))
