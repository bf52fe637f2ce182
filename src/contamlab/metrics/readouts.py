"""Readouts of a sample set: the solve probability r̂ and the one-response 0/1 readout r⁰¹.

"Zero Gap Is Not Restoration" §3.1 (docs/methods/metrics.md). Each question has m samples, each correct or
not, and a *kept* mask: a filtering strategy (TED) drops samples, every other strategy keeps all of them.

- Eq. 3, r̂(q) = correct kept samples / kept samples (0 when none is kept: TED's rule).
- Eq. 1, r⁰¹(q) = the correctness of ONE response whose expectation is r̂(q). The paper draws one fresh response; we
  read one of the stored samples (**[ours]**): sample 0 when every sample is kept (the m samples are exchangeable),
  else one kept sample drawn uniformly with a seeded generator, and 0 when none is kept. Reading sample 0 and
  zeroing it when the filter dropped it would estimate correct kept / m instead, not r̂.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from contamlab.errors import ContamlabError


def _as_matrix(x: ArrayLike, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=bool)
    if arr.ndim != 2:
        raise ValueError(f"{name} must be [questions, m], got shape {arr.shape}")
    return arr


def solve_probabilities(correct: ArrayLike, kept: ArrayLike) -> np.ndarray:
    """r̂ per question (Eq. 3): correct kept samples / kept samples, 0 where nothing is kept.

    Args:
        correct: ``[N, m]`` correctness of every sample.
        kept: ``[N, m]`` which samples count (all True unless the strategy filters).

    Returns:
        ``[N]`` float64 solve probabilities.
    """
    c, k = _as_matrix(correct, "correct"), _as_matrix(kept, "kept")
    if c.shape != k.shape:
        raise ValueError(f"correct and kept differ in shape ({c.shape} vs {k.shape})")
    n_kept = k.sum(axis=1)  # [N]
    hits = (c & k).sum(axis=1)  # [N]
    return np.divide(hits, n_kept, out=np.zeros(len(c)), where=n_kept > 0)


def discrete_readout(correct: ArrayLike, kept: ArrayLike, seed: int) -> np.ndarray:
    """r⁰¹ per question (Eq. 1): the correctness of one kept sample, so that E[r⁰¹] = r̂.

    Sample 0 when every sample of the question is kept; otherwise one kept sample drawn uniformly (seeded); 0 when
    none is kept.

    Args:
        correct: ``[N, m]`` correctness of every sample.
        kept: ``[N, m]`` which samples count.
        seed: Seed of the draw among the kept samples (one uniform per question, in question order).

    Returns:
        ``[N]`` float64 array of 0.0 / 1.0.
    """
    c, k = _as_matrix(correct, "correct"), _as_matrix(kept, "kept")
    if c.shape != k.shape:
        raise ValueError(f"correct and kept differ in shape ({c.shape} vs {k.shape})")
    u = np.random.default_rng(seed).random(len(c))  # [N]: drawn for every question, so each keeps its own draw
    out = np.zeros(len(c))
    for q in range(len(c)):
        survivors = np.flatnonzero(k[q])
        if survivors.size == 0:
            continue
        pick = 0 if survivors.size == k.shape[1] else survivors[int(u[q] * survivors.size)]
        out[q] = float(c[q, pick])
    return out


def question_readouts(samples: Sequence[Any], seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(r̂, r⁰¹, correct-sample counts) per question of a sample set.

    Args:
        samples: One record per question with ``m``, ``sample_correct`` and ``kept_mask()``
            (:class:`~contamlab.decoding.samples.QuestionSamples`).
        seed: Draws r⁰¹'s sample among a filter's survivors.
    """
    m = max((s.m for s in samples), default=0)
    if m == 0 or any(s.m != m for s in samples):
        raise ContamlabError(
            f"every question needs the same positive number of samples (got {sorted({s.m for s in samples})})"
        )
    correct = np.array([s.sample_correct for s in samples], dtype=bool)  # [N, m]
    kept = np.array([s.kept_mask() for s in samples], dtype=bool)  # [N, m]
    return solve_probabilities(correct, kept), discrete_readout(correct, kept, seed), correct.sum(axis=1)
