"""TED post-hoc filtering: token edit distance of samples to the greedy output (CDD's peakedness: detectors/cdd.py).

Implements Dong et al. 2024, "Generalization or Memorization: Data Contamination and Trustworthy Evaluation for
Large Language Models" (ACL Findings; docs/methods/strategies.md), following the released TED.py / CDD.py:
- TED (paper §4): truncate the greedy output to its first 100 tokens (length L0) and every sample to L0 tokens,
  drop samples within ``tau`` = 2 token edits of the greedy output and exact duplicates; the question's score is
  c / m over the m survivors, 0 when none survives.
- CDD (paper §3): truncate every sequence to 100 tokens, l = the longest; Peak = fraction of samples with
  ED <= alpha * l (non-strict).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from rapidfuzz.distance import Levenshtein

from contamlab.decoding.strategy import Strategy
from contamlab.errors import ContamlabError


def _ids(tokens: Sequence[int]) -> list[int]:
    # Plain ints: rapidfuzz compares elements by hash, and a 0-d tensor hashes by identity, not value.
    return [int(tok) for tok in tokens]


def token_edit_distance(a: Sequence[int], b: Sequence[int]) -> int:
    """Levenshtein distance between two token-id sequences (unit insert / delete / substitute).

    Args:
        a: First token-id sequence.
        b: Second token-id sequence.

    Returns:
        The number of token edits turning ``a`` into ``b``.
    """
    return int(Levenshtein.distance(_ids(a), _ids(b)))


def ted_survivors(
    samples: Sequence[Sequence[int]],
    greedy: Sequence[int],
    texts: Sequence[str] | None = None,
    tau: int = 2,
    dedup: bool = True,
    max_tokens: int = 100,
) -> list[bool]:
    """Which samples survive TED's peakedness exclusion and duplicate removal.

    Args:
        samples: Token ids of each sampled completion (prompt excluded).
        greedy: Token ids of the greedy completion.
        texts: The completions' texts; duplicates are identical texts when given, identical token lists otherwise.
        tau: Samples with ED <= ``tau`` to the greedy output are dropped (absolute, in tokens).
        dedup: Keep only the first surviving copy of each identical completion.
        max_tokens: The greedy output is truncated to its first ``max_tokens`` tokens (length L0), every sample to
            L0 tokens, before the edit distance.

    Returns:
        One flag per sample, True for survivors.

    Raises:
        ValueError: If an argument is invalid.
    """
    if tau < 0:
        raise ValueError(f"strategy.tau must be non-negative, got {tau!r}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be positive, got {max_tokens!r}")
    if texts is not None and len(texts) != len(samples):
        raise ValueError(f"ted_survivors: {len(samples)} samples but {len(texts)} texts")
    reference = _ids(greedy)[:max_tokens]
    length = len(reference)  # L0
    survivors: list[bool] = []
    seen: set[Hashable] = set()
    for index, sample in enumerate(samples):
        ids = _ids(sample)
        keep = Levenshtein.distance(ids[:length], reference) > tau
        if keep and dedup:
            # Dedup among the distance survivors: the kept copy is the first one that survives.
            key: Hashable = texts[index] if texts is not None else tuple(ids)
            keep = key not in seen
            seen.add(key)
        survivors.append(keep)
    return survivors


def ted_readout(correct: Sequence[bool], survivors: Sequence[bool]) -> tuple[float, int]:
    """TED's per-question solve probability c / m over the survivors.

    Args:
        correct: Correctness of each sample.
        survivors: The flags of :func:`ted_survivors`.

    Returns:
        ``(c / m, m)`` with m the number of survivors and c the correct ones among them; ``(0.0, 0)`` when no sample
        survives (TED.py scores such a question 0).

    Raises:
        ValueError: If the two sequences differ in length.
    """
    if len(correct) != len(survivors):
        raise ValueError(f"ted_readout: {len(correct)} correctness flags but {len(survivors)} survivor flags")
    m = sum(1 for keep in survivors if keep)
    c = sum(1 for ok, keep in zip(correct, survivors) if keep and ok)
    return (c / m if m else 0.0), m


@dataclass(frozen=True)
class TED(Strategy):
    """TED (Dong et al. 2024).

    Drops samples within ``tau`` tokens of the greedy output and exact duplicates; r̂ = c / m over the survivors,
    0 when none survive.
    """

    name: str = "ted"
    tau: int = 2
    dedup: bool = True
    max_tokens: int = 100

    def __post_init__(self) -> None:
        if self.tau < 0:
            raise ContamlabError(f"strategy.tau={self.tau}: must be >= 0 (a token edit distance; 0 drops only copies)")
        if self.max_tokens < 1:
            raise ContamlabError(f"strategy.max_tokens={self.max_tokens}: must be >= 1")

    def sampling_params(self) -> dict:
        """Identity's sampling settings: TED samples without a hook, then filters.

        Its batch still draws from its own random stream (:func:`~contamlab.decoding.streams.strategy_role`), unless
        ``sampler.common_noise`` shares one.
        """
        return {"name": "identity"}

    def keep(self, sample_ids, sample_texts, greedy_ids):
        """TED's survivors."""
        return ted_survivors(sample_ids, greedy_ids, sample_texts, self.tau, self.dedup, self.max_tokens)
