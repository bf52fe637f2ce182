"""Audit verdicts on hand-built cases; every statistic against an independent computation (by hand, sklearn, scipy).

Every reading needs at least ten items a side (MIN_ITEMS_PER_SIDE), so the hand-built cases repeat a small pattern
ten times where the pattern gives the same statistic.
"""

import math

import numpy as np
import pytest
from scipy.stats import mannwhitneyu, norm
from sklearn.metrics import roc_auc_score

from contamlab.detectors import benbench, codec, constat, ngram
from contamlab.metrics import roc
from contamlab.metrics import verdicts as V
from contamlab.metrics.roc import MIN_ITEMS_PER_SIDE, auroc_draws

FAST = V.Settings(n_boot=400)


# -- CoDeC ----------------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("labels", "score", "band", "flagged"),
    [
        ([1, 1, 1, 1, 0] * 2, 4 / 5, "strong evidence of contamination", True),  # 0.8 is in the strong band
        ([1, 1, 1, 0, 0] * 2, 3 / 5, "grey zone", False),  # the grey zone flags nothing
        ([1, 0, 0, 0] * 3, 1 / 4, "no evidence of contamination", False),
        ([1, math.nan, 0] * 5, 1 / 2, "no evidence of contamination", False),  # a dropped sample does not count
    ],
)
def test_codec_bands_read_the_hand_computed_fraction(labels, score, band, flagged):
    v = codec.codec_bands(labels, FAST)
    assert v.value == pytest.approx(score)
    assert v.detail["band"] == band and v.flagged is flagged
    assert v.n == sum(1 for x in labels if x == x)
    assert v.interval[0] <= v.value <= v.interval[1]


@pytest.mark.parametrize(
    ("references", "gap", "flagged"),
    [([0.5, 0.65], 0.9 - 0.65, True), ([0.75], 0.9 - 0.75, False), ([], None, None)],
)
def test_codec_against_references_uses_the_best_reference_and_a_20_point_margin(references, gap, flagged):
    labels = [1] * 9 + [0]  # 0.9 by hand
    v = codec.codec_against_references(labels, references, settings=FAST)
    assert v.flagged is flagged
    if gap is None:
        assert v.value is None and v.verdict == "no reference model"
    else:
        assert v.value == pytest.approx(gap) and v.reference == max(references)


# -- membership: AUROC and the Mann-Whitney test ----------------------------------------------------------------------
def test_membership_test_auroc_and_p_value_by_hand():
    members, nonmembers = [i + 0.5 for i in range(10)], [float(i) for i in range(10)]
    v = V.membership_test(members, nonmembers, FAST, name="loss")
    # member i + 0.5 beats the non-members 0..i: 1 + 2 + ... + 10 = 55 of the 100 pairs, AUROC 0.55 and U = 55.
    # The normal approximation (no ties, continuity-corrected): z = (55 - 50 - 0.5) / sqrt(10 x 10 x 21 / 12).
    assert v.value == pytest.approx(0.55)
    assert v.value == pytest.approx(roc_auc_score([1] * 10 + [0] * 10, members + nonmembers))
    assert v.p_value == pytest.approx(norm.sf(4.5 / math.sqrt(175)), rel=1e-9)
    assert v.p_value == pytest.approx(mannwhitneyu(members, nonmembers, alternative="greater").pvalue, rel=1e-9)
    assert v.flagged is False  # p = 0.37
    assert v.name == "loss" and v.detail == {"n_benchmark": 10, "n_reference_items": 10}


def test_membership_test_flags_separated_groups_and_skips_nan():
    members = [float(x) for x in range(10, 20)] + [math.nan]
    v = V.membership_test(members, list(range(10)), FAST)
    assert v.value == 1.0 and v.n == 20
    assert v.p_value == pytest.approx(mannwhitneyu(range(10, 20), range(10), alternative="greater").pvalue)
    # n = 10 + 10 takes the normal approximation with continuity correction: U = 100, mean 50, var 10 x 10 x 21 / 12
    assert v.p_value == pytest.approx(norm.sf((100 - 50 - 0.5) / math.sqrt(10 * 10 * 21 / 12)), rel=1e-6)
    assert v.flagged is True


@pytest.fixture(params=["pairwise", "cumulative"])
def auroc_path(request, monkeypatch):
    """Both ways auroc_draws counts U: pairwise (small sides) and cumulative (large ones), forced by the threshold."""
    monkeypatch.setattr(roc, "PAIRWISE_MAX", 10**9 if request.param == "pairwise" else 0)
    return request.param


def test_auroc_draws_equal_sklearn_on_every_resample(auroc_path):
    rng = np.random.default_rng(3)
    pos, neg = rng.normal(0.5, 1, 30), rng.normal(0, 1, 25)
    pos[:5] = neg[:5]  # ties across the groups
    pos_idx, neg_idx = rng.integers(0, 30, (20, 30)), rng.integers(0, 25, (20, 25))
    got = auroc_draws(pos, neg, pos_idx, neg_idx)
    for b in range(20):
        p, n = pos[pos_idx[b]], neg[neg_idx[b]]
        assert got[b] == pytest.approx(roc_auc_score([1] * 30 + [0] * 25, np.concatenate([p, n])))


def test_auroc_draws_with_ties_everywhere_equal_the_rank_sum_bit_for_bit(auroc_path):
    from scipy.stats import rankdata

    rng = np.random.default_rng(4)
    pos, neg = rng.integers(0, 6, 40).astype(float), rng.integers(0, 5, 35).astype(float)  # ties within and across
    pos_idx, neg_idx = rng.integers(0, 40, (300, 40)), rng.integers(0, 35, (300, 35))
    got = auroc_draws(pos, neg, pos_idx, neg_idx)
    ranks = rankdata(np.concatenate([pos[pos_idx], neg[neg_idx]], axis=1), axis=-1)  # the slow path: rank each draw
    expected = (ranks[:, :40].sum(axis=1) - 40 * 41 / 2) / (40 * 35)
    assert np.array_equal(got, expected)
    for b in (0, 1, 299):
        labels = [1] * 40 + [0] * 35
        assert got[b] == pytest.approx(roc_auc_score(labels, np.concatenate([pos[pos_idx[b]], neg[neg_idx[b]]])))


def test_membership_vs_references_difference_and_its_test():
    rng = np.random.default_rng(0)
    members, nonmembers = rng.normal(1.0, 1, 60), rng.normal(0, 1, 60)
    ref = (rng.normal(0, 1, 60), rng.normal(0, 1, 60))
    v = V.membership_vs_references((members, nonmembers), [ref], FAST)
    labels = [1] * 60 + [0] * 60
    own = roc_auc_score(labels, np.concatenate([members, nonmembers]))
    other = roc_auc_score(labels, np.concatenate(ref))
    assert v.value == pytest.approx(own - other) and v.reference == pytest.approx(other)
    assert v.flagged is True and v.p_value < 0.05
    same = V.membership_vs_references((members, nonmembers), [(members, nonmembers)], FAST)
    assert same.value == 0.0 and same.p_value == 1.0 and same.flagged is False  # every draw's difference is 0
    assert V.membership_vs_references((members, nonmembers), [], FAST).flagged is None


# -- BenBench -------------------------------------------------------------------------------------------------------
def test_benbench_delta_by_hand_alone_and_against_a_reference():
    # perplexity: original 2, paraphrase 3 on every item: Δ = (3 - 2) / 2 x 100 = 50 % (the original favoured)
    v = benbench.benbench_delta_test("ppl", ([2.0] * 10, [3.0] * 10), settings=FAST)
    assert v.value == pytest.approx(50.0) and v.interval == pytest.approx([50.0, 50.0])
    assert v.p_value == pytest.approx(1 / (FAST.n_boot + 1)) and v.flagged is True
    # n-gram accuracy: means 0.7 and 0.3 -> (0.7 - 0.3) / 0.7 x 100
    v = benbench.benbench_delta_test("ngram_5", ([0.8, 0.6] * 5, [0.4, 0.2] * 5), settings=FAST)
    assert v.value == pytest.approx(0.4 / 0.7 * 100)
    # a reference model with the same Δ: the paraphrase is just harder, nothing is flagged
    same = benbench.benbench_delta_test("ppl", ([2.0] * 10, [3.0] * 10), [([4.0] * 10, [6.0] * 10)], FAST)
    assert same.value == pytest.approx(0.0) and same.flagged is False
    above = benbench.benbench_delta_test("ppl", ([2.0] * 10, [3.0] * 10), [([4.0] * 10, [5.0] * 10)], FAST)
    assert above.value == pytest.approx(50.0 - 25.0) and above.reference == pytest.approx(25.0) and above.flagged
    zero = benbench.benbench_delta_test("ngram_5", ([0.0] * 10, [0.2] * 10), settings=FAST)
    assert zero.value is None and zero.flagged is None


def test_delta_train_test_by_hand():
    train = ([2.0] * 10, [4.0] * 10)  # Δ_train = 100 %
    test = ([2.0] * 10, [3.0] * 10)  # Δ_test = 50 %
    v = benbench.delta_train_test("ppl", train, test, FAST)
    assert v.value == pytest.approx(50.0) and v.interval == pytest.approx([50.0, 50.0])
    assert v.verdict == "the train split is favoured over the test split" and v.flagged is None


# -- ConStat, overlap, mitigation -------------------------------------------------------------------------------------
def test_constat_verdict_reads_the_test_and_needs_a_reference():
    test = {
        "p_value": 0.01,
        "effect": 0.2,
        "effect_ci": [0.1, 0.3],
        "score_original": 0.7,
        "score_rephrased": 0.4,
        "estimated_clean": 0.5,
        "estimated_clean_ci": [0.4, 0.6],
        "method": "simplified",
        "n_references": 1,
    }
    v = constat.constat_verdict(test, FAST)
    assert v.flagged is True and v.value == 0.2 and v.p_value == 0.01 and v.interval == [0.1, 0.3]
    assert "simplified test" in v.verdict and "1 reference model)" in v.verdict
    assert "the authors' spline test" in constat.constat_verdict({**test, "method": "spline"}, FAST).verdict
    assert constat.constat_verdict({**test, "p_value": 0.2}, FAST).flagged is False
    # an exact tie computed as a mean of float differences (0.3 - 0.2 - 0.1 = -2.8e-17) reads as 0, not -0
    tie = constat.constat_verdict({**test, "effect": float(np.mean([0.3 - 0.2 - 0.1] * 3))}, FAST)
    assert tie.value == 0.0 and math.copysign(1.0, tie.value) == 1.0
    none = constat.constat_verdict(None, FAST, raw=(0.7, 0.4))
    assert none.flagged is None and none.value == pytest.approx(0.3)


def test_overlap_verdict_counts_items_with_any_overlap():
    v = ngram.overlap_verdict([0.0, 0.5, math.nan, 0.0] * 5, 13, FAST)
    assert v.value == pytest.approx(1 / 3) and v.n == 15 and v.flagged is True
    assert ngram.overlap_verdict([0.0] * 10, 13, FAST).flagged is False


def test_overlap_against_nonmembers_by_a_hand_fisher_test():
    # 8 of 20 benchmark items hit the corpus, 1 of 20 non-members: 9 hits among 40 items
    bench, non = [0.3] * 8 + [0.0] * 12, [0.1] + [0.0] * 19
    v = ngram.overlap_vs_nonmembers(bench, non + [math.nan], 13, FAST)
    # one-sided Fisher exact test: P(X >= 8) for X hypergeometric (40 items, 9 hits, 20 drawn for the benchmark)
    p = sum(math.comb(9, k) * math.comb(31, 20 - k) for k in (8, 9)) / math.comb(40, 20)
    assert v.p_value == pytest.approx(p) and p < 0.05 and v.flagged is True
    assert v.value == pytest.approx(8 / 20 - 1 / 20) and v.n == 40
    assert v.interval[0] < v.value < v.interval[1]
    assert v.detail == {"hits": 8, "n_benchmark": 20, "hits_nonmembers": 1, "n_reference_items": 20}
    # a templated benchmark's chance hits: as many among the non-members, nothing flagged (the any-hit rule would)
    chance = ngram.overlap_vs_nonmembers([0.2] * 3 + [0.0] * 17, [0.2] * 3 + [0.0] * 17, 13, FAST)
    assert chance.flagged is False and chance.value == 0.0 and chance.p_value > 0.5
    assert ngram.overlap_verdict([0.2] * 3 + [0.0] * 17, 13, FAST).flagged is True
    assert ngram.overlap_vs_nonmembers([0.0] * 5, [0.0] * 20, 13, FAST).flagged is None  # too few benchmark items


def test_mitigation_share_by_hand():
    v = V.mitigation_share([1.0, 0.5] * 5, [0.5, 0.5] * 5, "railcap", FAST)
    assert v.value == pytest.approx((0.75 - 0.5) / 0.75)
    assert v.detail == pytest.approx({"identity": 0.75, "mitigated": 0.5, "removed": 0.25})
    assert v.flagged is None and "not a proof of contamination" in v.verdict


# -- too few items: no statistic, no verdict -------------------------------------------------------------------------
def test_a_one_item_benchmark_is_too_few_items_not_an_auroc_of_zero():
    # the case that read as a finding: one benchmark item against one reference item gave AUROC 0 [0, 0], p = 1
    v = V.membership_test([0.2], [0.7], FAST, name="loss")
    assert v.verdict == "too few items (n = 1 benchmark and 1 reference, need ≥ 10 per side)"
    assert (v.value, v.interval, v.p_value, v.flagged) == (None, None, None, None)
    assert v.n == 2 and v.detail == {"too_few": {"benchmark": 1, "reference": 1}}


def test_ten_items_a_side_is_the_boundary():
    assert MIN_ITEMS_PER_SIDE == 10
    high, low = [float(x) for x in range(10, 20)], [float(x) for x in range(10)]
    assert V.membership_test(high, low, FAST).value == 1.0
    assert V.membership_test(high[:9], low, FAST).verdict.startswith("too few items (n = 9 benchmark and 10 ")
    assert V.membership_test(high, low[:9], FAST).verdict.startswith("too few items (n = 10 benchmark and 9 ")
    # unscored (NaN) items do not count
    assert V.membership_test([*high[:9], math.nan], low, FAST).flagged is None


@pytest.mark.parametrize(
    ("reading", "words"),
    [
        (lambda: codec.codec_bands([1] * 9, FAST), "n = 9 scored, need ≥ 10)"),
        (lambda: codec.codec_against_references([1] * 9, [0.1], settings=FAST), "n = 9 scored, need ≥ 10)"),
        (
            lambda: V.membership_vs_references(([1.0] * 9, [0.0] * 12), [([0.5] * 9, [0.5] * 12)], FAST),
            "n = 9 benchmark and 12 reference, need ≥ 10 per side)",
        ),
        (
            lambda: benbench.benbench_delta_test("ppl", ([2.0] * 9, [3.0] * 9), settings=FAST),
            "n = 9 with a paraphrase, need ≥ 10)",
        ),
        (
            lambda: benbench.delta_train_test("ppl", ([2.0] * 20, [4.0] * 20), ([2.0] * 3, [3.0] * 3), FAST),
            "n = 20 train and 3 test, need ≥ 10 per side)",
        ),
        (lambda: ngram.overlap_verdict([1.0, 0.0], 13, FAST), "n = 2 scored, need ≥ 10)"),
        (lambda: V.mitigation_share([1.0] * 4, [0.5] * 4, "railcap", FAST), "n = 4, need ≥ 10)"),
    ],
)
def test_every_reading_reports_too_few_items_instead_of_a_verdict(reading, words):
    v = reading()
    assert v.verdict.startswith("too few items (") and v.verdict.endswith(words), v.verdict
    assert (v.value, v.interval, v.p_value, v.flagged) == (None, None, None, None)


def test_shared_draws_are_counted_once_and_a_writeable_draw_every_time():
    rng = np.random.default_rng(5)
    pos, neg = rng.normal(1, 1, 12), rng.normal(0, 1, 10)
    pos_idx, neg_idx = rng.integers(0, 12, (50, 12)), rng.integers(0, 10, (50, 10))
    first = auroc_draws(pos, neg, pos_idx, neg_idx)
    pos_idx[:] = 0  # a writeable draw changed in place: its new counts, not the old ones
    expected = [roc_auc_score([1] * 12 + [0] * 10, np.concatenate([pos[i], neg[j]])) for i, j in zip(pos_idx, neg_idx)]
    assert auroc_draws(pos, neg, pos_idx, neg_idx) == pytest.approx(expected)
    assert not np.allclose(first, expected)
    shared = pos_idx.copy()
    shared.flags.writeable = False  # as metrics/seeds.py hands its draws out
    for _ in range(2):  # counted, then from the kept counts
        assert auroc_draws(pos, neg, shared, neg_idx) == pytest.approx(expected)
    assert id(shared) in roc._COUNTED
    key = id(shared)
    del shared  # the entry leaves with its draw
    assert key not in roc._COUNTED
    view = pos_idx.view()
    view.flags.writeable = False  # read-only, but its base may still change: never kept
    auroc_draws(pos, neg, view, neg_idx)
    assert id(view) not in roc._COUNTED
