"""Loss / perplexity membership score (Yeom et al. 2018; docs/methods/detectors.md): -NLL = mean token log-prob."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from contamlab.detectors.membership import MembershipDetector
from contamlab.detectors.scoring import TokenStats


def loss_score(logprobs: np.ndarray) -> float:
    """``-NLL = (1/T) Σ_t ℓ_t``; higher = more likely seen (PPL = exp(NLL))."""
    return float(np.mean(logprobs, dtype=np.float64))


@dataclass(frozen=True)
class LossDetector(MembershipDetector):
    """The Loss baseline: mean log-prob of the whole text."""

    name: str = "loss"

    def sample_score(self, stats: TokenStats, text: str) -> float:
        """-NLL of the text."""
        return loss_score(stats.logprobs)
