"""Restoration metrics (paper §3, docs/methods/metrics.md): hand-computed values, properties, an oracle."""

import math
from fractions import Fraction

import numpy as np
import pytest

from contamlab.metrics import (
    bin_index,
    bin_index_from_prob,
    bootstrap_intervals,
    g_ap,
    gap_metrics,
    per_bin_table,
    readout_stability,
)
from contamlab.metrics.gaps import METRIC_KEYS

# ------------------------------------------------------------------------------------------------- oracle (slow)


def slow_metrics(r_strategy, r_clean, bins):
    """Literal Eq. 4-13: plain loops over questions, bins in a dict, bin edges in exact rationals."""
    groups = {}
    deltas = []
    for rs, rc in zip(r_strategy, r_clean):
        d = float(rs) - float(rc)
        deltas.append(d)
        # r_clean is c/m with small m: recover the rational, then floor(r * B), last bin closed at 1.
        b = math.floor(Fraction(float(rc)).limit_denominator(1000) * bins)
        b = min(b, bins - 1)
        groups.setdefault(b, []).append(d)
    n = len(deltas)
    total = 0.0
    abs_total = 0.0
    pos_total = 0.0
    neg_total = 0.0
    for d in deltas:
        total += d
        abs_total += abs(d)
        pos_total += max(d, 0.0)
        neg_total += max(-d, 0.0)
    sa = sp = sn = 0.0
    for members in groups.values():
        sa += sum(abs(d) for d in members) / len(members)
        sp += sum(max(d, 0.0) for d in members) / len(members)
        sn += sum(max(-d, 0.0) for d in members) / len(members)
    k = len(groups)
    return {
        "g_app": abs(total / n),
        "a_ppg": abs_total / n,
        "sa_ppg": sa / k,
        "delta_plus": pos_total / n,
        "delta_minus": neg_total / n,
        "s_delta_plus": sp / k,
        "s_delta_minus": sn / k,
    }


def random_case(rng, n=None, m=None):
    n = int(rng.integers(1, 200)) if n is None else n
    m = int(rng.choice([1, 7, 10, 16, 50])) if m is None else m
    c_clean = rng.binomial(m, rng.beta(0.6, 0.9, n))
    c_strategy = rng.binomial(m, rng.beta(0.9, 0.6, n))
    return c_strategy / m, c_clean / m, c_clean, m


# --------------------------------------------------------------------------------------------------------- bins


def test_bin_index_exact_boundaries():
    assert bin_index(10, 50, 50) == 10  # r = 0.2
    assert bin_index(50, 50, 50) == 49  # r = 1 lands in the last bin, closed at 1
    assert bin_index(0, 50, 50) == 0
    assert bin_index(3, 10, 10) == 3  # r = 0.3, m = 10, B = 10
    assert bin_index(29, 50, 50) == 29  # r = 0.58, although (29 / 50) * 50 == 28.999999999999996 in floats
    assert math.floor((29 / 50) * 50) == 28  # the float pitfall the exact arithmetic avoids
    # m = 50, B = 50: every count is its own bin, except c = m.
    assert bin_index(np.arange(51), 50, 50).tolist() == list(range(50)) + [49]
    # m = 16, B = 10: b = c*10 // 16, by hand.
    assert bin_index(np.arange(17), 16, 10).tolist() == [0, 0, 1, 1, 2, 3, 3, 4, 5, 5, 6, 6, 7, 8, 8, 9, 9]
    # m per question.
    assert bin_index([1, 1, 4], [2, 4, 4], 4).tolist() == [2, 1, 3]
    assert bin_index(np.array([True, False]), 1, 50).tolist() == [49, 0]


def test_bin_index_from_prob_matches_exact_counts():
    assert bin_index_from_prob(0.3, 10) == 3
    assert bin_index_from_prob(29 / 50, 50) == 29  # snapped, not floored to 28
    assert bin_index_from_prob(0.58 - 1e-6, 50) == 28  # a value truly below the edge stays below
    assert bin_index_from_prob(0.2, 50) == 10
    assert bin_index_from_prob(1.0, 50) == 49
    assert bin_index_from_prob(np.arange(17) / 16, 10).tolist() == bin_index(np.arange(17), 16, 10).tolist()
    for bins in (7, 10, 50):
        for m in range(1, 121):
            c = np.arange(m + 1)
            expected = [min(math.floor(Fraction(int(k), m) * bins), bins - 1) for k in c]
            assert bin_index(c, m, bins).tolist() == expected
            assert bin_index_from_prob(c / m, bins).tolist() == expected


# ------------------------------------------------------------------------------------------------- hand examples


def test_six_question_example_by_hand():
    r_clean = [0.0, 0.0, 0.0, 0.5, 0.5, 1.0]
    r_strategy = [0.0, 0.2, 0.4, 0.8, 0.3, 0.6]
    # Δ = [0, +0.2, +0.4, +0.3, -0.2, -0.4]; B = 10 bins of r_clean: [0, 0, 0, 5, 5, 9].
    # bin 0: mean|Δ| = (0 + 0.2 + 0.4) / 3 = 0.2;  Δ⁺ 0.2,  Δ⁻ 0
    # bin 5: mean|Δ| = (0.3 + 0.2) / 2 = 0.25;     Δ⁺ 0.15, Δ⁻ 0.1
    # bin 9: mean|Δ| = 0.4 / 1 = 0.4;              Δ⁺ 0,    Δ⁻ 0.4
    # SA-PPG = (0.2 + 0.25 + 0.4) / 3 = 0.85 / 3;  S-Δ⁺ = 0.35 / 3;  S-Δ⁻ = 0.5 / 3
    # A-PPG = 1.5 / 6 = 0.25;  Δ⁺ = 0.9 / 6 = 0.15;  Δ⁻ = 0.6 / 6 = 0.1;  G-APP = |0.3 / 6| = 0.05
    got = gap_metrics(r_strategy, r_clean, bins=10)
    expected = {
        "g_app": 0.05,
        "a_ppg": 0.25,
        "sa_ppg": 0.85 / 3,
        "delta_plus": 0.15,
        "delta_minus": 0.1,
        "s_delta_plus": 0.35 / 3,
        "s_delta_minus": 0.5 / 3,
    }
    assert set(got) == set(METRIC_KEYS)
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-12), key
    # The same bins from exact counts (m = 10).
    assert gap_metrics(r_strategy, r_clean, 10, clean_bins=bin_index([0, 0, 0, 5, 5, 10], 10, 10)) == got

    rows = per_bin_table(r_strategy, r_clean, bins=10)
    assert [(r["bin"], r["n"]) for r in rows] == [(0, 3), (5, 2), (9, 1)]
    assert rows[1]["lo"] == pytest.approx(0.5) and rows[1]["hi"] == pytest.approx(0.6)
    assert rows[2]["hi"] == pytest.approx(1.0)
    assert [r["mean_abs_delta"] for r in rows] == pytest.approx([0.2, 0.25, 0.4])
    assert [r["mean_delta_plus"] for r in rows] == pytest.approx([0.2, 0.15, 0.0])
    assert [r["mean_delta_minus"] for r in rows] == pytest.approx([0.0, 0.1, 0.4])
    assert [r["mean_r_clean"] for r in rows] == pytest.approx([0.0, 0.5, 1.0])
    assert [r["mean_r_strategy"] for r in rows] == pytest.approx([0.2, 0.55, 0.6])
    assert np.mean([r["mean_abs_delta"] for r in rows]) == pytest.approx(got["sa_ppg"])


def test_cancellation_example():
    # Paper §3.2.2: half the questions at +δ, half at -δ: G-APP = 0 while A-PPG = δ; no question restored.
    delta = 0.2
    r_clean = np.full(10, 0.5)
    r_strategy = r_clean + np.where(np.arange(10) % 2 == 0, delta, -delta)
    got = gap_metrics(r_strategy, r_clean)
    assert got["g_app"] == pytest.approx(0.0, abs=1e-15)
    assert got["a_ppg"] == pytest.approx(delta)
    assert got["delta_plus"] == pytest.approx(delta / 2)
    assert got["delta_minus"] == pytest.approx(delta / 2)
    assert got["sa_ppg"] == pytest.approx(delta)  # one bin


def test_all_zero_strategy():
    # Paper §3.3 / Table 2: r ≡ 0 gives A-PPG = mean r_cl but SA-PPG = mean over bins of the bin's mean r_cl.
    got = gap_metrics([0, 0, 0, 0, 0], [0, 0, 0, 0, 1])
    assert got["a_ppg"] == pytest.approx(0.2)
    assert got["sa_ppg"] == pytest.approx(0.5)  # bins {0: mean 0, 49: mean 1}

    rng = np.random.default_rng(3)
    c = rng.binomial(50, rng.beta(0.4, 1.0, 500))
    r_clean = c / 50
    got = gap_metrics(np.zeros(500), r_clean, clean_bins=bin_index(c, 50))
    by_bin = {}
    for ci, r in zip(c.tolist(), r_clean.tolist()):
        by_bin.setdefault(min(ci, 49), []).append(r)
    assert got["a_ppg"] == pytest.approx(r_clean.mean())
    assert got["delta_minus"] == pytest.approx(r_clean.mean())
    assert got["g_app"] == pytest.approx(r_clean.mean())
    assert got["delta_plus"] == 0.0
    assert got["s_delta_plus"] == 0.0
    assert got["sa_ppg"] == pytest.approx(np.mean([np.mean(v) for v in by_bin.values()]))
    assert got["s_delta_minus"] == pytest.approx(got["sa_ppg"])
    assert got["sa_ppg"] > got["a_ppg"]  # stratification penalises the trivial strategy


def test_zero_iff_every_question_restored():
    rng = np.random.default_rng(4)
    r = rng.integers(0, 51, 100) / 50
    got = gap_metrics(r, r)
    assert all(value == 0.0 for value in got.values())
    for i in (0, 57, 99):
        moved = r.copy()
        moved[i] = (moved[i] + 0.02) if moved[i] < 1 else 0.98
        got = gap_metrics(moved, r)
        assert got["a_ppg"] > 0
        assert got["sa_ppg"] > 0


# ------------------------------------------------------------------------------------------- properties, oracle


def test_matches_slow_oracle_and_identities_on_random_inputs():
    rng = np.random.default_rng(5)
    for _ in range(50):
        r_strategy, r_clean, c_clean, m = random_case(rng)
        bins = int(rng.choice([1, 5, 10, 50]))
        got = gap_metrics(r_strategy, r_clean, bins)
        assert gap_metrics(r_strategy, r_clean, bins, clean_bins=bin_index(c_clean, m, bins)) == pytest.approx(got)
        slow = slow_metrics(r_strategy, r_clean, bins)
        for key in METRIC_KEYS:
            assert got[key] == pytest.approx(slow[key], abs=1e-12), key
        assert got["g_app"] <= got["a_ppg"] + 1e-12
        assert got["s_delta_plus"] + got["s_delta_minus"] == pytest.approx(got["sa_ppg"], abs=1e-12)
        assert got["delta_plus"] + got["delta_minus"] == pytest.approx(got["a_ppg"], abs=1e-12)
        assert got["delta_plus"] - got["delta_minus"] == pytest.approx(np.mean(r_strategy - r_clean), abs=1e-12)
        assert got["g_app"] == pytest.approx(abs(got["delta_plus"] - got["delta_minus"]), abs=1e-12)


def test_g_ap():
    assert g_ap([1, 0, 1, 1], [0, 0, 1, 0]) == pytest.approx(0.5)
    assert g_ap(np.array([True, False]), np.array([False, True])) == 0.0  # cancellation under 0/1 too
    assert g_ap([0.5, 0.5], [0.0, 0.0]) == pytest.approx(0.5)  # with probabilities it is G-APP


# ---------------------------------------------------------------------------------------------------- bootstrap


def gsm8k_like(seed=7):
    rng = np.random.default_rng(seed)
    r_strategy, r_clean, c_clean, m = random_case(rng, n=1319, m=50)
    r01_strategy = rng.random(1319) < r_strategy
    r01_clean = rng.random(1319) < r_clean
    return r_strategy, r_clean, c_clean, r01_strategy, r01_clean


def test_bootstrap_deterministic_and_contains_point():
    r_strategy, r_clean, c_clean, r01_s, r01_c = gsm8k_like()
    kwargs = {"clean_bins": bin_index(c_clean, 50), "draws": 300, "r01_strategy": r01_s, "r01_clean": r01_c}
    a = bootstrap_intervals(r_strategy, r_clean, seed=1, **kwargs)
    b = bootstrap_intervals(r_strategy, r_clean, seed=1, **kwargs)
    c = bootstrap_intervals(r_strategy, r_clean, seed=2, **kwargs)
    assert a == b
    assert a != c
    assert set(a) == set(METRIC_KEYS) | {"g_ap"}
    point = gap_metrics(r_strategy, r_clean, clean_bins=kwargs["clean_bins"])
    point["g_ap"] = g_ap(r01_s, r01_c)
    for key, (lo, hi) in a.items():
        assert lo < point[key] < hi, key
    assert "g_ap" not in bootstrap_intervals(r_strategy, r_clean, draws=10)
    # A wider level gives a wider interval.
    wide = bootstrap_intervals(r_strategy, r_clean, seed=1, confidence=0.99, **kwargs)
    assert wide["sa_ppg"][0] <= a["sa_ppg"][0] and wide["sa_ppg"][1] >= a["sa_ppg"][1]


def test_bootstrap_resamples_within_bins():
    # One question per bin: resampling within bins can only redraw the same data, so every interval is a point.
    r_clean = np.array([0.0, 0.2, 0.4, 0.6, 1.0])
    r_strategy = np.array([0.1, 0.1, 0.9, 0.2, 0.3])
    point = gap_metrics(r_strategy, r_clean)
    for key, (lo, hi) in bootstrap_intervals(r_strategy, r_clean, draws=50).items():
        assert lo == pytest.approx(point[key]) and hi == pytest.approx(point[key]), key


# --------------------------------------------------------------------------------------------------- Figure 2


def test_readout_stability_by_hand():
    a = np.array([[1, 1, 0, 0], [0, 1, 1, 1], [1, 0, 0, 0], [0, 0, 0, 0]], dtype=bool)
    b = np.array([[0, 1, 1, 0], [1, 1, 1, 0], [1, 1, 0, 0], [0, 0, 0, 0]], dtype=bool)
    # r01 (sample 0): a = [1, 0, 1, 0], b = [0, 1, 1, 0] -> |gap| = [1, 1, 0, 0], mean 0.5
    # r̂: a = [.5, .75, .25, 0], b = [.5, .75, .5, 0] -> |gap| = [0, 0, .25, 0], mean 0.0625
    got = readout_stability(a, b)
    assert got == {"gap_r01": 0.5, "gap_rhat": 0.0625, "m": 4}
    assert readout_stability(a.astype(int), b.astype(int)) == got


# -------------------------------------------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("r_strategy", "r_clean", "kwargs", "match"),
    [
        ([0.1, 0.2], [0.1], {}, "differ in length"),
        ([], [], {}, "empty"),
        ([0.1, 1.2], [0.1, 0.2], {}, r"r_strategy must hold solve probabilities in \[0, 1\]"),
        ([0.1, 0.2], [-0.1, 0.2], {}, "r_clean must hold"),
        ([0.1, float("nan")], [0.1, 0.2], {}, "outside"),
        ([[0.1, 0.2]], [[0.1, 0.2]], {}, "1-D"),
        (["a"], [0.1], {}, "numeric"),
        ([0.1, 0.2], [0.1, 0.2], {"bins": 0}, "bins must be a positive integer"),
        ([0.1, 0.2], [0.1, 0.2], {"clean_bins": [0, 50]}, r"clean_bins must lie in \[0, 49\]"),
        ([0.1, 0.2], [0.1, 0.2], {"clean_bins": [0.5, 1]}, "whole numbers"),
        ([0.1, 0.2], [0.1, 0.2], {"clean_bins": [0]}, "differ in length"),
    ],
)
def test_gap_metrics_validation(r_strategy, r_clean, kwargs, match):
    with pytest.raises(ValueError, match=match):
        gap_metrics(r_strategy, r_clean, **kwargs)
    with pytest.raises(ValueError, match=match):
        per_bin_table(r_strategy, r_clean, **kwargs)


def test_other_validation():
    with pytest.raises(ValueError, match=r"correct must lie in \[0, m\]"):
        bin_index([51], 50)
    with pytest.raises(ValueError, match="m .* must be >= 1"):
        bin_index([0], 0)
    with pytest.raises(ValueError, match="whole numbers"):
        bin_index([0.5], 50)
    with pytest.raises(ValueError, match="bins"):
        bin_index([1], 50, bins=0)
    with pytest.raises(ValueError, match="outside"):
        bin_index_from_prob([1.5])
    with pytest.raises(ValueError, match="differ in length"):
        g_ap([1, 0], [1])
    with pytest.raises(ValueError, match="draws"):
        bootstrap_intervals([0.1], [0.1], draws=0)
    with pytest.raises(ValueError, match="confidence"):
        bootstrap_intervals([0.1], [0.1], confidence=1.0)
    with pytest.raises(ValueError, match="both r01_strategy and r01_clean"):
        bootstrap_intervals([0.1], [0.1], r01_strategy=[1])
    with pytest.raises(ValueError, match="differ in length"):
        bootstrap_intervals([0.1, 0.2], [0.1, 0.2], r01_strategy=[1], r01_clean=[0])
    with pytest.raises(ValueError, match="differ in shape"):
        readout_stability(np.ones((2, 3), bool), np.ones((2, 4), bool))
    with pytest.raises(ValueError, match=r"\[N, m\]"):
        readout_stability(np.ones(3, bool), np.ones(3, bool))
    with pytest.raises(ValueError, match="0/1"):
        readout_stability(np.full((2, 2), 2), np.ones((2, 2)))


def test_paired_difference_against_the_slow_oracle():
    from contamlab.metrics import paired_difference

    rng = np.random.default_rng(3)
    r_a, r_clean, c_clean, m = random_case(rng, n=120, m=16)
    r_b = np.clip(r_a + rng.normal(0, 0.05, r_a.size).round(4), 0, 1)
    bins = bin_index(c_clean, m, 10)
    point, lo, hi = paired_difference(r_a, r_b, r_clean, 10, bins, "sa_ppg", draws=400, seed=1)
    oracle = slow_metrics(r_a, r_clean, 10)["sa_ppg"] - slow_metrics(r_b, r_clean, 10)["sa_ppg"]
    assert point == pytest.approx(oracle, abs=1e-12) and lo <= point <= hi
    # The same strategy twice: every draw's difference is exactly 0.
    assert paired_difference(r_a, r_a, r_clean, 10, bins, draws=50) == (0.0, 0.0, 0.0)
    # Pairing removes the shared question-to-question spread: its interval is narrower than the unpaired one.
    ci_a = bootstrap_intervals(r_a, r_clean, 10, bins, 400, 0.95, 1)["sa_ppg"]
    ci_b = bootstrap_intervals(r_b, r_clean, 10, bins, 400, 0.95, 2)["sa_ppg"]
    assert hi - lo < max(ci_a[1] - ci_a[0], ci_b[1] - ci_b[0])
    with pytest.raises(ValueError, match="metric"):
        paired_difference(r_a, r_b, r_clean, metric="g_ap")
