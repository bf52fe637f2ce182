"""LNE-blocking: entropy-scaled blocking of the argmax at the first generated positions.

Implements Hou et al. 2025, "LNE-Blocking" (arXiv 2509.15218; docs/methods/strategies.md). The
length-normalised entropy LNE = (1/N) sum_i H(p_i) of one greedy pass (Eq. 1, natural log, temperature 1; recorded by
the sampler's greedy decode, ``HFSampler.last_entropy``, and by vLLM's entropy processor) sets the
blocking strength n_block = floor(T_task * clip(1 - LNE/beta, 0, 1)) (Eq. 10, beta = 2, T_task = 7 for arithmetic);
the blocked pass then masks the single argmax token at each of the first n_block generated positions (Eq. 9).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from contamlab.decoding.strategy import StepHook, Strategy
from contamlab.errors import ContamlabError

ROUNDINGS = ("floor", "round")
# The vLLM request key of LNE-blocking's n_block (read by :mod:`~contamlab.decoding.vllm_processors`).
LNE_KEY = "contamlab_lne"

# Slack for floating-point representation error in T_task * LNEbar, so that a product that is an integer on paper
# (e.g. 5 * 0.8) is not floored one below it.
_EPS = 1e-9


def n_block(lne: float, t_task: int = 7, beta: float = 2.0, rounding: str = "floor") -> int:
    """Blocking count of one question (Eq. 10): ``T_task * clip(1 - LNE / beta, 0, 1)``, rounded.

    Args:
        lne: The question's LNE: the mean entropy of its greedy pass, as the sampler records it.
        t_task: Task threshold T_task (7 for arithmetic reasoning, 4 for code).
        beta: Normaliser of the LNE (paper: 2).
        rounding: ``floor`` (default) or ``round`` (half up, not banker's rounding).

    Returns:
        The number of leading generated positions whose argmax is blocked, in ``[0, t_task]``.

    Raises:
        ValueError: If an argument is invalid.
    """
    if rounding not in ROUNDINGS:
        raise ValueError(f"strategy.rounding must be one of {', '.join(ROUNDINGS)}, got {rounding!r}")
    if isinstance(t_task, bool) or not isinstance(t_task, int) or t_task < 0:
        raise ValueError(f"strategy.t_task must be a non-negative integer, got {t_task!r}")
    if not beta > 0:
        raise ValueError(f"strategy.beta must be positive, got {beta!r}")
    if math.isnan(lne):
        raise ValueError("n_block: the LNE is NaN")
    strength = min(max(1.0 - lne / beta, 0.0), 1.0)
    scaled = t_task * strength
    return math.floor(scaled + _EPS) if rounding == "floor" else math.floor(scaled + 0.5 + _EPS)


def lne_step(logits: Tensor, step: int, owner: Tensor, n_blocks: Tensor) -> Tensor:
    """Block the argmax of every row still inside its question's first n_block positions (Eq. 9).

    Args:
        logits: ``[R, V]`` logits of this step; modified in place.
        step: 0-based count of tokens generated so far (the same for every row).
        owner: ``[R]`` int64 question index of each row into ``n_blocks``.
        n_blocks: ``[Q]`` int64 blocking count of each question (:func:`n_block`).

    Returns:
        ``logits``, with the argmax of each row with ``step < n_blocks[owner]`` set to -inf (one token per row).
    """
    if logits.ndim != 2 or owner.shape != (logits.shape[0],):
        raise ValueError("lne_step expects logits [R, V] and owner [R]")
    device = logits.device
    active = step < n_blocks.to(device).index_select(0, owner.to(device))  # [R]
    top = logits.argmax(dim=-1, keepdim=True)  # [R, 1]
    # Inactive rows write back their own max, so the update needs no row selection (and no host sync).
    src = torch.where(active[:, None], float("-inf"), logits.gather(1, top))  # [R, 1]
    logits.scatter_(1, top, src)  # [R, V]
    return logits


def lne_args(n_block: int) -> dict[str, Any]:
    """The ``extra_args`` entry of LNE-blocking with ``n_block`` blocked leading positions (Eq. 10's output)."""
    return {LNE_KEY: {"n_block": int(n_block)}}


@dataclass(frozen=True)
class LNEBlocking(Strategy):
    """LNE-blocking (Hou et al. 2025).

    Masks the argmax at the first n_block positions, n_block from the greedy pass's mean entropy; then samples at
    τ (``decode=sample``, ours) or decodes greedily (``decode=greedy``, the original).
    """

    name: str = "lne"
    beta: float = 2.0
    t_task: int = 7
    decode: str = "sample"
    rounding: str = "floor"

    def __post_init__(self) -> None:
        if self.decode not in ("sample", "greedy"):
            raise ContamlabError(f"strategy.decode={self.decode!r}: use sample or greedy")
        if self.beta <= 0 or self.t_task < 0:
            raise ContamlabError(f"strategy.beta={self.beta}, t_task={self.t_task}: need beta > 0, t_task >= 0")
        if self.rounding not in ("floor", "round"):
            raise ContamlabError(f"strategy.rounding={self.rounding!r}: use floor or round")

    @property
    def greedy_decode(self) -> bool:
        """``decode=greedy``: the original method's single blocked greedy response."""
        return self.decode == "greedy"

    def n_blocks(self, greedy_entropy: Sequence[float]) -> torch.Tensor:
        """n_block per question ([Q] int64)."""
        counts = [n_block(e, self.t_task, self.beta, self.rounding) for e in greedy_entropy]
        return torch.tensor(counts, dtype=torch.long, device="cpu")  # moved to the logits' device by LNEHook.to

    def step_fn(self, greedy_ids, greedy_entropy):
        """Block the argmax while the row's step is below its question's n_block."""
        return LNEHook(self.n_blocks(greedy_entropy))


@dataclass(frozen=True)
class LNEHook(StepHook):
    """LNE-blocking's per-step hook: the n_block of every question ([Q] int64)."""

    n_blocks: torch.Tensor

    def __call__(self, logits, generated, owner):
        """Block the argmax while a row's step is below its question's n_block (see :func:`lne_step`)."""
        return lne_step(logits, generated.shape[1], owner, self.n_blocks)

    def to(self, device: torch.device | str) -> LNEHook:
        """The hook with its counts on ``device`` (the sampler calls it once per decode, not once per step)."""
        return LNEHook(self.n_blocks.to(device))

    def vllm_args(self, n_questions: int) -> list[dict[str, Any]]:
        """Each question's n_block as vLLM ``extra_args`` (:func:`lne_args`)."""
        if self.n_blocks.shape[0] != n_questions:
            raise ValueError(f"LNE n_blocks has {self.n_blocks.shape[0]} questions, the call {n_questions}")
        return [lne_args(int(k)) for k in self.n_blocks.tolist()]
