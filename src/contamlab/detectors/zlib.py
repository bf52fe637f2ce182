"""Zlib membership score (Carlini et al. 2021, arXiv 2012.07805; docs/methods/detectors.md): score = -NLL / Z.

Z is the length in **bytes** of ``zlib.compress`` of the UTF-8 text at the default level: a text the model finds
likelier than its compressibility suggests is more likely memorised.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass

import numpy as np

from contamlab.detectors.membership import MembershipDetector
from contamlab.detectors.scoring import TokenStats


def zlib_entropy(text: str) -> int:
    """Z = number of bytes of the zlib-compressed UTF-8 text (default compression level)."""
    return len(zlib.compress(text.encode("utf-8")))


def zlib_score(logprobs: np.ndarray, text: str) -> float:
    """``-NLL / Z``; higher = more likely seen."""
    nll = -float(np.mean(logprobs, dtype=np.float64))
    return -nll / zlib_entropy(text)


@dataclass(frozen=True)
class ZlibDetector(MembershipDetector):
    """The Zlib baseline: NLL normalised by the zlib entropy of the text."""

    name: str = "zlib"

    def sample_score(self, stats: TokenStats, text: str) -> float:
        """-NLL / Z of the text."""
        return zlib_score(stats.logprobs, text)
