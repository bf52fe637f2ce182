import math

import pytest
import torch

from contamlab.decoding.lne import lne_step, mean_entropy, n_block


def test_uniform_logits_have_entropy_log_v():
    assert mean_entropy(torch.zeros(3, 50)) == pytest.approx(math.log(50), abs=1e-5)


def test_peaked_logits_have_entropy_near_zero():
    logits = torch.full((2, 100), -100.0)
    logits[:, 7] = 100.0
    assert mean_entropy(logits) == pytest.approx(0.0, abs=1e-6)


def test_entropy_is_the_mean_over_steps():
    peaked = torch.full((1, 4), -torch.inf)
    peaked[0, 0] = 0.0  # -inf logits contribute 0, not NaN
    logits = torch.cat([torch.zeros(1, 4), peaked])
    assert mean_entropy(logits) == pytest.approx(math.log(4) / 2, abs=1e-6)


def test_empty_trajectory_raises():
    with pytest.raises(ValueError):
        mean_entropy(torch.zeros(0, 10))


@pytest.mark.parametrize(
    ("lne", "rounding", "expected"),
    [
        (0.1, "floor", 6),  # floor(7 * 0.95) = floor(6.65)
        (0.1, "round", 7),
        (2.5, "floor", 0),  # clipped at 0
        (0.0, "floor", 7),
        (1.0, "floor", 3),  # 7 * 0.5 = 3.5
        (1.0, "round", 4),  # half up
        (-1.0, "floor", 7),  # clipped at 1
    ],
)
def test_n_block(lne, rounding, expected):
    assert n_block(lne, rounding=rounding) == expected


def test_n_block_exact_products_are_not_floored_down():
    assert n_block(0.4, t_task=5) == 4  # 5 * 0.8
    assert n_block(0.1, t_task=4) == 3  # the spec's heavy-contamination case, 3.8


def test_n_block_rejects_bad_arguments():
    with pytest.raises(ValueError, match="rounding"):
        n_block(0.1, rounding="ceil")
    with pytest.raises(ValueError, match="beta"):
        n_block(0.1, beta=0.0)


def test_lne_step_masks_the_argmax_while_step_below_n_block():
    n_blocks = torch.tensor([2, 0, 1])
    owner = torch.tensor([2, 0, 1, 0])
    base = torch.tensor(
        [
            [0.0, 3.0, 1.0],
            [2.0, 1.0, 0.0],
            [0.0, 1.0, 5.0],
            [1.0, 0.0, 4.0],
        ]
    )
    expected_masked = {0: {0, 1, 3}, 1: {1, 3}, 2: set()}  # rows with step < n_blocks[owner]
    argmax = [1, 0, 2, 2]
    for step, rows in expected_masked.items():
        out = lne_step(base.clone(), step, owner, n_blocks)
        expected = base.clone()
        for r in rows:
            expected[r, argmax[r]] = -torch.inf
        assert torch.equal(out, expected), step
