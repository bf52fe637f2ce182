import math

import pytest
import torch

from contamlab.decoding.lne import lne_step, n_block


def test_the_sampler_greedy_entropy_is_the_lne_by_hand():
    """The entropy that sets n_block: the HF sampler's greedy pass, checked against a teacher-forced recomputation."""
    from contamlab.config import load_domain
    from contamlab.decoding.sampler import HFSampler
    from contamlab.models.tiny import build_tiny_model, train_tokenizer

    domain = load_domain("arith", generator={"n_train": 100, "n_test": 4}, prompt={"n_shot": 1})
    tok = train_tokenizer([domain.prompt(q) + domain.target(q) for q in domain.train], 300)
    model = build_tiny_model(len(tok), hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, seed=3).eval()
    sampler = HFSampler(model, tok, stop=(), max_new_tokens=9, batch_rows=8)
    ids = sampler.encode([domain.prompt(q) for q in domain.test])
    out = sampler.decode(ids, m=1, temperature=1.0, seed=0, greedy=True)
    for prompt, (response,), (lne,) in zip(ids, out, sampler.last_entropy):
        # Steps run until EOS (which the response omits) or the budget; EOS's own step counts.
        steps = len(response) + (len(response) < 9)
        full = torch.tensor([prompt + response + [tok.eos_token_id]])
        with torch.no_grad():
            logits = model(full).logits[0, len(prompt) - 1 : len(prompt) - 1 + steps].double()  # [T, V]
        p = torch.softmax(logits, -1)
        by_hand = float(-(p * p.log()).sum(-1).mean())  # Eq. 1: mean over steps of H(p_t), nats, temperature 1
        assert lne == pytest.approx(by_hand, abs=1e-5)
        assert 0.0 < lne < math.log(len(tok))


def test_lne_blocking_uses_the_greedy_entropy():
    """LNE.n_blocks turns each question's greedy entropy into Eq. 10's n_block."""
    from contamlab.decoding.lne import LNEBlocking

    blocks = LNEBlocking(t_task=7, beta=2.0).n_blocks([0.0, 1.0, 2.5, 0.3])
    assert blocks.tolist() == [7, 3, 0, 5]  # floor(7 * (1 - LNE / 2)), clipped: 7, 3.5, <0, 5.95


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
    assert n_block(0.1, t_task=4) == 3  # heavy contamination: 4 * (1 - 0.1 / 2) = 3.8, floored


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
