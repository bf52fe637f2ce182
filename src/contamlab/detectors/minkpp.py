"""Min-K%++ (Zhang et al. 2024, arXiv 2404.02936, Eq. 3-4; docs/methods/detectors.md).

Each token's log-prob is standardised by the vocabulary-wide moments of the next-token distribution,
``z_t = (ℓ_t - μ_t) / σ_t`` with ``μ_t = Σ_v p_v log p_v`` and ``σ_t² = Σ_v p_v (log p_v)² - μ_t²`` (fp32, σ >= 1e-6);
the score is the mean of the lowest ``max(1, floor(k·T))`` values of z. Default k = 20%.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from contamlab.detectors.mink import MinKDetector, lowest_k_mean
from contamlab.detectors.scoring import TokenStats


def minkpp_score(logprobs: np.ndarray, mu: np.ndarray, sigma: np.ndarray, k: float = 0.2) -> float:
    """Min-K%++ score of one text; higher = more likely seen."""
    z = (logprobs.astype(np.float64) - mu) / np.maximum(sigma, 1e-6)  # [T]
    return lowest_k_mean(z, k)


@dataclass(frozen=True)
class MinKPPDetector(MinKDetector):
    """Min-K%++: Min-K% on standardised token log-probs (``k``: the fraction of the lowest ones averaged)."""

    name: str = "minkpp"
    reads_moments: ClassVar[bool] = True

    def sample_score(self, stats: TokenStats, text: str) -> float:
        """Mean of the lowest k-fraction of standardised token log-probs."""
        return minkpp_score(stats.logprobs, stats.mu, stats.sigma, self.k)
