"""Readouts (r̂, r⁰¹) on hand-built sample sets, TED's filter included, and the independent random streams."""

import numpy as np
import pytest

from contamlab.decoding.samples import QuestionSamples
from contamlab.decoding.streams import CLEAN, CLEAN_2, strategy_role, stream_seed
from contamlab.metrics import discrete_readout, solve_probabilities
from contamlab.metrics.readouts import question_readouts as _readouts


def row(qid, correct, kept=None):
    m = len(correct)
    return QuestionSamples(qid, [], "", False, [[1]] * m, ["x"] * m, list(correct), list(kept or []))


def test_solve_probability_by_hand():
    rows = [
        row("a", [True, False, True, False]),  # no filter: 2 / 4
        row("b", [True, True, False, False], [False, True, True, False]),  # kept 2, correct kept 1: 1 / 2
        row("c", [True, True, True, True], [False] * 4),  # nothing survives: 0 (TED's rule)
        row("d", [False, True, False, False], [False, True, False, False]),  # the one survivor is right: 1
    ]
    r_hat, r01, counts = _readouts(rows, seed=0)
    assert r_hat.tolist() == [0.5, 0.5, 0.0, 1.0]
    assert counts.tolist() == [2, 2, 4, 1]  # correct samples, kept or not (the clean model's bins use these)
    # Unfiltered: sample 0. No survivor: 0. One survivor: that sample, whatever the seed.
    assert r01[0] == 1.0 and r01[2] == 0.0 and r01[3] == 1.0


def test_filtered_readout_reads_a_survivor_not_sample_zero():
    # Sample 0 is correct but filtered out; both survivors are wrong. r̂ = 0, so r⁰¹ must be 0 for every seed
    # (reading sample 0 would give 1; zeroing it because it was filtered is right here only by luck).
    rows = [row("q", [True, False, False, True], [False, True, True, False])]
    assert {_readouts(rows, seed=s)[1][0] for s in range(20)} == {0.0}
    # Sample 0 is wrong and filtered; every survivor is right: r̂ = 1, so r⁰¹ = 1 (the old readout gave 0).
    rows = [row("q", [False, True, True, True], [False, True, True, True])]
    assert {_readouts(rows, seed=s)[1][0] for s in range(20)} == {1.0}


def test_readout_mean_over_seeds_is_the_solve_probability():
    """E[r⁰¹] = r̂ for a filtering strategy: the mean over many seeds lands on r̂, not on correct-kept / m."""
    rng = np.random.default_rng(7)
    correct = rng.random((40, 8)) < 0.5  # [N, m]
    kept = rng.random((40, 8)) < 0.4  # [N, m]: TED-like survivors, some rows with none
    rows = [row(f"q{i}", c.tolist(), k.tolist()) for i, (c, k) in enumerate(zip(correct, kept))]
    r_hat = _readouts(rows, seed=0)[0]
    draws = np.stack([_readouts(rows, seed=s)[1] for s in range(2000)])  # [S, N]
    # Independent expectations: r̂ per question from the masks directly, and the old estimator for contrast.
    by_hand = np.array([(c & k).sum() / k.sum() if k.any() else 0.0 for c, k in zip(correct, kept)])
    np.testing.assert_allclose(r_hat, by_hand)
    se = np.sqrt(by_hand * (1 - by_hand) / 2000) + 1e-9
    assert np.all(np.abs(draws.mean(axis=0) - by_hand) < 5 * se + 1e-3)
    # The old readout (sample 0 if it survived) estimates correct-kept / m instead: far off here.
    old = (correct[:, 0] & kept[:, 0]).astype(float)
    assert abs(old.mean() - by_hand.mean()) > 0.15


def test_pure_readouts_match_the_job():
    correct = np.array([[1, 0, 1], [0, 0, 1]], dtype=bool)
    kept = np.array([[1, 1, 1], [1, 0, 1]], dtype=bool)
    assert solve_probabilities(correct, kept).tolist() == [2 / 3, 0.5]
    assert discrete_readout(correct, kept, 0)[0] == 1.0  # all kept: sample 0
    with pytest.raises(ValueError, match="shape"):
        solve_probabilities(correct, kept[:1])


def test_streams_are_independent_by_role():
    seeds = {role: stream_seed(0, role) for role in (CLEAN, CLEAN_2, strategy_role("identity"), strategy_role("ted"))}
    assert len(set(seeds.values())) == 4 and all(0 <= s < 2**30 for s in seeds.values())
    assert stream_seed(0, CLEAN) != stream_seed(1, CLEAN)  # the run seed moves every stream
    assert stream_seed(0, CLEAN) == stream_seed(0, CLEAN)  # and a role's stream is reproducible
    # Common random numbers (opt-in): the clean and strategy batches share the run seed; the second clean batch
    # stays independent of the first.
    assert stream_seed(5, CLEAN, True) == stream_seed(5, strategy_role("railcap"), True) == 5
    assert stream_seed(5, CLEAN_2, True) == stream_seed(5, CLEAN_2) != 5
