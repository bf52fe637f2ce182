import pytest
import torch

from contamlab.decoding.ted import ted_readout, ted_survivors, token_edit_distance
from contamlab.detectors.cdd import cdd_peakedness

GREEDY = [1, 2, 3, 4, 5, 6]


def test_token_edit_distance():
    assert token_edit_distance([1, 2, 3], [1, 2, 3]) == 0
    assert token_edit_distance([1, 2, 3], [1, 3]) == 1
    assert token_edit_distance([1, 2, 3], [3, 2, 1]) == 2
    assert token_edit_distance([], [7, 8]) == 2
    assert token_edit_distance(torch.tensor([1, 2]), [1, 2]) == 0  # tensor elements compare by value


def test_survivors_threshold():
    samples = [
        [1, 2, 3, 4, 5, 6],  # ED 0: dropped
        [1, 2, 3, 4, 9, 9],  # ED 2: dropped (<= tau)
        [1, 2, 3, 9, 9, 9],  # ED 3: survives
        [9, 9, 9, 9, 9, 9],  # ED 6: survives
    ]
    assert ted_survivors(samples, GREEDY, tau=2) == [False, False, True, True]
    assert ted_survivors(samples, GREEDY, tau=0) == [False, True, True, True]


def test_survivors_drop_duplicates():
    samples = [[9, 9, 9], [7, 7, 7], [9, 9, 9], [1, 2, 3, 4, 5, 6], [7, 7, 7]]
    assert ted_survivors(samples, GREEDY) == [True, True, False, False, False]
    assert ted_survivors(samples, GREEDY, dedup=False) == [True, True, True, False, True]
    # With texts, duplicates are identical texts even when the token lists differ.
    texts = ["a", "b", "a", "c", "d"]
    assert ted_survivors(samples, GREEDY, texts=texts) == [True, True, False, False, True]


def test_survivors_truncate_to_greedy_length():
    # A sample equal to the greedy output plus a long tail: truncated to L0 = 6 tokens it has ED 0.
    samples = [GREEDY + [9] * 20, [1, 2, 3, 9, 9, 9, 1, 2]]
    assert ted_survivors(samples, GREEDY) == [False, True]
    # max_tokens truncates the greedy first: L0 = 3, so [1, 2, 3, ...] is within distance 0.
    assert ted_survivors(samples, GREEDY, max_tokens=3) == [False, False]


def test_survivors_rejects_mismatched_texts():
    with pytest.raises(ValueError):
        ted_survivors([[1], [2]], GREEDY, texts=["a"])


def test_readout():
    assert ted_readout([True, False, True, True], [True, True, False, True]) == (2 / 3, 3)
    assert ted_readout([True, True], [False, False]) == (0.0, 0)
    assert ted_readout([], []) == (0.0, 0)


def test_cdd_peakedness():
    greedy = list(range(20))
    samples = [
        list(range(20)),  # ED 0
        list(range(19)) + [99],  # ED 1
        list(range(18)) + [99, 99],  # ED 2
        [99] * 20,  # ED 20
    ]
    # l = 20, alpha * l = 1.0: ED 0 and ED 1 count (non-strict).
    assert cdd_peakedness(samples, greedy, alpha=0.05) == pytest.approx(0.5)
    assert cdd_peakedness(samples, greedy, alpha=0.0) == pytest.approx(0.25)
    # A longer sample raises l: 40 tokens, alpha * l = 2.0, ED 2 now counts (and the long sample has ED 20).
    assert cdd_peakedness([*samples[:3], list(range(20)) + [7] * 20], greedy) == pytest.approx(0.75)


def test_cdd_truncates_to_max_tokens():
    greedy = list(range(120))
    samples = [list(range(100)) + [7] * 50]  # identical within the first 100 tokens
    assert cdd_peakedness(samples, greedy) == 1.0
    with pytest.raises(ValueError):
        cdd_peakedness([], greedy)
