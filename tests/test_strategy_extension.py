"""A new strategy is one module plus one YAML: this test module is the module, ``YAML`` below is the YAML.

It bans the greedy trajectory's first token at the first generated position (a toy, not a paper method), and runs
on the HF backend through the real pipeline without touching any contamlab file.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest
import torch
from omegaconf import OmegaConf

from contamlab.config import build, load_domain
from contamlab.decoding.pipeline import greedy_set, sample_set
from contamlab.decoding.sampler import HFSampler
from contamlab.decoding.strategy import StepHook, Strategy
from contamlab.models.tiny import build_tiny_model, train_tokenizer

# What would be configs/strategy/first_ban.yaml (``python evaluate.py strategy=first_ban``).
YAML = f"""
_target_: {__name__}.FirstTokenBan
name: first_ban
"""


@dataclass(frozen=True)
class FirstTokenBanHook(StepHook):
    """Bans each question's greedy first token at step 0."""

    first: torch.Tensor  # [Q] int64: each question's greedy first token

    def __call__(self, logits: torch.Tensor, generated: torch.Tensor, owner: torch.Tensor) -> torch.Tensor:
        """``logits [R, V]``; rows at step 0 lose their question's greedy first token."""
        if generated.shape[1] > 0:
            return logits
        out = logits.clone()
        out[torch.arange(out.shape[0]), self.first[owner]] = float("-inf")  # [R]
        return out

    # StepHook.vllm_args is None: on sampler=vllm the sampler names the hook and asks for sampler=hf.


@dataclass(frozen=True)
class FirstTokenBan(Strategy):
    """Toy strategy: never start like the greedy response."""

    name: str = "first_ban"

    def step_fn(self, greedy_ids, greedy_entropy):
        """The hook over the questions' greedy first tokens."""
        return FirstTokenBanHook(torch.tensor([g[0] if g else 0 for g in greedy_ids], dtype=torch.long))


@pytest.fixture(scope="module")
def world():
    domain = load_domain("arith", generator={"n_train": 200, "n_test": 4})
    tok = train_tokenizer([domain.prompt(q) + domain.target(q) for q in domain.train], 400)
    model = build_tiny_model(len(tok), hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64, seed=3).eval()
    return domain, tok, model


def test_a_strategy_defined_outside_the_package_runs_on_hf(world, tmp_path):
    domain, tok, model = world
    strategy = build(OmegaConf.create(YAML), "strategy")
    assert isinstance(strategy, FirstTokenBan)
    sampler = HFSampler(model, tok, stop=domain.format.stop, max_new_tokens=8, batch_rows=32)
    key = {"source": "random-tiny"}
    greedy = greedy_set(sampler, domain, domain.test, key, str(tmp_path), chunk_questions=2, progress=False)
    samples = sample_set(
        sampler,
        domain,
        domain.test,
        strategy,
        m=3,
        temperature=0.7,
        seed=1,
        model_key=key,
        cache_root=str(tmp_path),
        greedy=greedy,
        chunk_questions=2,
        progress=False,
    )
    for s, g in zip(samples, greedy):
        assert s.m == 3 and all(row and row[0] != g.greedy_ids[0] for row in s.sample_ids)
