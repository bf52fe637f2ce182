import math

import pytest
import torch

from contamlab.decoding.railcap import build_table, railcap_reference_step, railcap_step

INF = math.inf


def _step(logits, history, owner, table, mode="cap"):
    generated = torch.tensor(history, dtype=torch.long).reshape(len(history), -1)
    return railcap_step(logits.clone(), generated, torch.tensor(owner), table, mode)


# --- table --------------------------------------------------------------------------------------------------------


def test_table_windows_of_one_trajectory():
    table = build_table([[5, 6, 7, 8, 9]], n=2)
    pairs = {(tuple(g.tolist()), int(s)) for g, s, v in zip(table.grams[0], table.succ[0], table.valid[0]) if v}
    assert pairs == {((5, 6), 7), ((6, 7), 8), ((7, 8), 9)}  # T - n = 3 windows


def test_table_pads_short_questions():
    table = build_table([[1, 2, 3, 4, 5], [1, 2], []], n=2)
    assert table.grams.shape == (3, 3, 2)
    assert table.valid.sum(1).tolist() == [3, 0, 0]
    assert table.num_questions == 3 and table.num_windows == 3


@pytest.mark.parametrize(
    ("duplicates", "expected"),
    [("all", {(1, 2): {3, 9}}), ("first", {(1, 2): {3}}), ("last", {(1, 2): {9}})],
)
def test_table_duplicates(duplicates, expected):
    # (1, 2) occurs twice: followed by 3, then by 9.
    table = build_table([[1, 2, 3, 1, 2, 9]], n=2, duplicates=duplicates)
    got: dict = {}
    for g, s, v in zip(table.grams[0], table.succ[0], table.valid[0]):
        if v:
            got.setdefault(tuple(g.tolist()), set()).add(int(s))
    assert got[(1, 2)] == expected[(1, 2)]
    assert got[(2, 3)] == {1} and got[(3, 1)] == {2}


def test_invalid_arguments():
    with pytest.raises(ValueError, match="strategy.n"):
        build_table([[1, 2, 3]], n=0)
    with pytest.raises(ValueError, match="strategy.duplicates"):
        build_table([[1, 2, 3]], n=1, duplicates="most")
    table = build_table([[1, 2, 3]], n=1)
    with pytest.raises(ValueError, match="strategy.mode"):
        _step(torch.zeros(1, 4), [[1]], [0], table, mode="clip")


# --- step ---------------------------------------------------------------------------------------------------------

# Question 0 greedy: 0 1 2 3 4 5; n = 2 windows (0,1)->2, (1,2)->3, (2,3)->4, (3,4)->5.
GREEDY = [[0, 1, 2, 3, 4, 5], [6, 7, 6, 8, 6, 7]]
ROW = torch.tensor([[1.0, 0.5, 4.0, 3.0, 2.0, 0.0, -1.0, -2.0, -3.0]])  # max 4.0 at token 2, runner-up 3.0


def test_caps_the_successor_to_the_runner_up():
    table = build_table(GREEDY, n=2)
    out = _step(ROW, [[5, 0, 1]], [0], table)  # trailing (0, 1) -> successor 2
    expected = ROW.clone()
    expected[0, 2] = 3.0
    assert torch.equal(out, expected)


def test_cap_never_raises_a_logit():
    table = build_table(GREEDY, n=2)
    out = _step(ROW, [[2, 3]], [0], table)  # (2, 3) -> successor 4, logit 2.0 < runner-up 3.0
    assert torch.equal(out, ROW)


def test_ban_sets_minus_inf():
    table = build_table(GREEDY, n=2)
    out = _step(ROW, [[2, 3]], [0], table, mode="ban")
    expected = ROW.clone()
    expected[0, 4] = -INF
    assert torch.equal(out, expected)


def test_no_cap_before_n_tokens():
    table = build_table(GREEDY, n=2)
    for history in ([[]], [[1]]):  # t = 0, 1 < n; (1,) would start the window (1, 2)
        assert torch.equal(_step(ROW, history, [0], table, mode="ban"), ROW)
    assert not torch.equal(_step(ROW, [[0, 1]], [0], table, mode="ban"), ROW)  # t = n: active


def test_no_cap_on_non_matching_context():
    table = build_table(GREEDY, n=2)
    for history in ([[1, 0]], [[0, 2]], [[5, 6]], [[6, 7]]):  # (6, 7) is question 1's, not question 0's
        assert torch.equal(_step(ROW, history, [0], table, mode="ban"), ROW)


def test_short_trajectory_never_caps():
    table = build_table([[1, 2, 3], [1, 2]], n=3)
    assert table.num_windows == 0
    rows = ROW.repeat(2, 1)
    assert torch.equal(_step(rows, [[1, 2, 3], [1, 2, 3]], [0, 1], table, mode="ban"), rows)
    mixed = build_table([[0, 1, 2, 3, 4], [0, 1, 2]], n=3)  # question 1 (T = n) has no window
    out = _step(rows, [[0, 1, 2], [0, 1, 2]], [0, 1], mixed, mode="ban")
    assert out[0, 3] == -INF and torch.equal(out[1], ROW[0])


def test_duplicates_in_the_step():
    logits = torch.tensor([[0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0, 0.0, 0.0, 4.0, 1.0]])  # 3 max, 9 runner-up
    expected = {"all": {3: 4.0, 9: 4.0}, "first": {3: 4.0, 9: 4.0}, "last": {3: 5.0, 9: 4.0}}
    for duplicates, values in expected.items():
        table = build_table([[1, 2, 3, 1, 2, 9]], n=2, duplicates=duplicates)
        out = _step(logits, [[1, 2]], [0], table)
        assert {tok: float(out[0, tok]) for tok in values} == values
    for duplicates, banned in {"all": {3, 9}, "first": {3}, "last": {9}}.items():
        table = build_table([[1, 2, 3, 1, 2, 9]], n=2, duplicates=duplicates)
        out = _step(logits, [[1, 2]], [0], table, mode="ban")
        assert {i for i in range(11) if out[0, i] == -INF} == banned


def test_tie_for_the_max_leaves_the_successor():
    table = build_table(GREEDY, n=2)
    logits = torch.tensor([[1.0, 0.0, 4.0, 4.0, 2.0, 0.0, 0.0, 0.0, 0.0]])  # tokens 2 and 3 tie at 4.0
    assert torch.equal(_step(logits, [[0, 1]], [0], table), logits)  # v2 = 4.0: the cap is a no-op
    logits = torch.tensor([[1.0, 0.0, 4.0, 6.0, 6.0, 0.0, 0.0, 0.0, 0.0]])  # 3 and 4 tie at the max
    out = _step(logits, [[0, 1]], [0], table)  # successor 2 (4.0) is below v2 = 6.0
    assert torch.equal(out, logits)
    out = _step(logits, [[2, 3]], [0], table)  # successor 4 ties the max; v2 = 6.0 too
    assert torch.equal(out, logits)


def test_rows_are_independent_with_shuffled_owner():
    table = build_table(GREEDY, n=2)
    logits = torch.arange(9, dtype=torch.float32).repeat(5, 1)  # max 8 (token 8), runner-up 7
    history = [
        [6, 7],  # question 1: (6, 7) -> 6 (logit 6.0 < 7.0, unchanged in cap mode)
        [0, 1],  # question 0: (0, 1) -> 2
        [7, 6],  # question 1: (7, 6) -> 8, the max: capped to 7.0
        [0, 1],  # question 1: no (0, 1) window there
        [4, 5],  # question 0: (4, 5) is the last bigram, no successor
    ]
    owner = [1, 0, 1, 1, 0]
    out = _step(logits, history, owner, table)
    expected = logits.clone()
    expected[2, 8] = 7.0
    assert torch.equal(out, expected)
    out = _step(logits, history, owner, table, mode="ban")
    expected = logits.clone()
    expected[0, 6] = expected[1, 2] = expected[2, 8] = -INF
    assert torch.equal(out, expected)


def test_modifies_in_place_and_returns_logits():
    table = build_table(GREEDY, n=2)
    logits = ROW.clone()
    out = railcap_step(logits, torch.tensor([[0, 1]]), torch.tensor([0]), table, "ban")
    assert out is logits and logits[0, 2] == -INF


# --- against the literal Algorithm 1 ------------------------------------------------------------------------------


@pytest.mark.parametrize("n", range(1, 8))
def test_vectorised_step_equals_reference(n):
    gen = torch.Generator().manual_seed(1000 + n)
    vocab = 10  # small, so that n-grams repeat with different successors

    def randint(low, high):
        return int(torch.randint(low, high, (1,), generator=gen))

    for trial in range(12):
        n_questions = randint(1, 5)
        greedy = [torch.randint(0, vocab, (randint(0, 25),), generator=gen).tolist() for _ in range(n_questions)]
        n_rows = randint(1, 12)
        owner = torch.randint(0, n_questions, (n_rows,), generator=gen)
        t = randint(0, 14)
        history = torch.randint(0, vocab, (n_rows, t), generator=gen)
        if trial % 2:
            logits = torch.randint(-2, 3, (n_rows, vocab), generator=gen).float()  # many ties
        else:
            logits = torch.randn(n_rows, vocab, generator=gen)
        for r in range(n_rows):  # put most rows back on their question's greedy trajectory
            g = greedy[int(owner[r])]
            span = min(t, len(g))
            if span and randint(0, 10) < 8:
                start = randint(0, len(g) - span + 1)
                history[r, t - span :] = torch.tensor(g[start : start + span])
                if start + span < len(g) and randint(0, 2):
                    logits[r, g[start + span]] += 3.0  # make the rail token the max, so the cap bites
        for duplicates in ("all", "first", "last"):
            table = build_table(greedy, n, duplicates)
            for mode in ("cap", "ban"):
                out = railcap_step(logits.clone(), history.clone(), owner, table, mode)
                for r in range(n_rows):
                    ref = railcap_reference_step(
                        logits[r], history[r].tolist(), greedy[int(owner[r])], n, mode, duplicates
                    )
                    assert torch.equal(out[r], ref), (n, trial, duplicates, mode, r)


def test_reference_follows_algorithm_1():
    out = railcap_reference_step(ROW[0], [0, 1], GREEDY[0], n=2, mode="cap")
    assert float(out[2]) == 3.0
    assert torch.equal(railcap_reference_step(ROW[0], [1], GREEDY[0], n=2), ROW[0])
