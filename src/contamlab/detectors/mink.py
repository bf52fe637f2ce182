"""Min-K% Prob (Shi et al., ICLR 2024, arXiv 2310.16789; docs/methods/detectors.md).

Sort the token log-probs ascending and average the lowest ``max(1, floor(k·T))``: a seen text has few very unlikely
tokens. Default k = 20%.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from contamlab.detectors.membership import MembershipDetector
from contamlab.detectors.scoring import TokenStats
from contamlab.errors import ContamlabError


def lowest_k_mean(values: np.ndarray, k: float) -> float:
    """Mean of the lowest ``max(1, floor(k·T))`` of ``values`` (T = their number)."""
    if values.size == 0:
        raise ValueError("lowest_k_mean: no values")
    count = max(1, math.floor(k * values.size))
    return float(np.mean(np.sort(values.astype(np.float64))[:count]))


def mink_score(logprobs: np.ndarray, k: float = 0.2) -> float:
    """Min-K% score of one text; higher = more likely seen."""
    return lowest_k_mean(logprobs, k)


def check_k(k: float) -> float:
    """Validate the fraction k (0 < k <= 1)."""
    if not 0.0 < float(k) <= 1.0:
        raise ContamlabError(f"detector.k={k}: must be a fraction in (0, 1]")
    return float(k)


@dataclass(frozen=True)
class MinKDetector(MembershipDetector):
    """Min-K% Prob.

    Attributes:
        k: Fraction of the lowest-probability tokens averaged.
    """

    name: str = "mink"
    k: float = 0.2

    def __post_init__(self) -> None:
        super().__post_init__()
        check_k(self.k)

    def sample_score(self, stats: TokenStats, text: str) -> float:
        """Mean of the lowest k-fraction of token log-probs."""
        return mink_score(stats.logprobs, self.k)
