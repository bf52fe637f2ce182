"""CDD: Contamination Detection via output Distribution (Dong et al. 2024, ACL Findings §3; docs/methods/detectors.md).

A model that memorised a question answers it the same way every time: the edit distances of its samples to the greedy
output pile up near zero. Peak(x) = share of samples within ``alpha * l`` token edits of the greedy output (l = the
longest of the 100-token-truncated sequences); x is flagged iff Peak > ``xi``. Non-code task rule: the continuation is
cut at the domain's stop markers, stripped and re-tokenised without special tokens. The samples are the sampler's
cached ones (identity strategy), shared with every other job on the same model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from contamlab.decoding.ted import token_edit_distance
from contamlab.detectors.base import DetectionContext, Detector, DetectorOutput
from contamlab.errors import ContamlabError


def cdd_peakedness(
    samples: Sequence[Sequence[int]], greedy: Sequence[int], alpha: float = 0.05, max_tokens: int = 100
) -> float:
    """CDD's peakedness of the output distribution: the share of samples within ``alpha * l`` edits of the greedy.

    Args:
        samples: Token ids of each sampled completion.
        greedy: Token ids of the greedy completion.
        alpha: Relative edit-distance threshold (0.05 default; 0 in CDD's real-world mode).
        max_tokens: Every sequence (greedy and samples) is truncated to this many tokens first.

    Returns:
        ``#{i : ED(s_i, greedy) <= alpha * l} / n``, l the longest truncated sequence among greedy and samples.

    Raises:
        ValueError: If there is no sample or an argument is invalid.
    """
    if not samples:
        raise ValueError("cdd_peakedness: no samples")
    if alpha < 0:
        raise ValueError(f"detector.alpha must be non-negative, got {alpha!r}")
    if max_tokens < 1:
        raise ValueError(f"max_tokens must be positive, got {max_tokens!r}")
    reference = list(greedy)[:max_tokens]
    truncated = [list(sample)[:max_tokens] for sample in samples]
    longest = max(len(reference), *(len(ids) for ids in truncated))  # l
    threshold = alpha * longest
    close = sum(1 for ids in truncated if token_edit_distance(ids, reference) <= threshold)
    return close / len(samples)


def cdd_flag(peak: float, xi: float = 0.01) -> bool:
    """CDD's decision: contaminated iff Peak > ξ (strict)."""
    return peak > xi


@dataclass(frozen=True)
class CDDDetector(Detector):
    """CDD on the cached greedy output and m samples per question.

    Attributes:
        alpha: Relative edit-distance threshold (0.05; 0 in CDD's real-world mode).
        xi: Flag threshold on Peak (0.01; 0.2 in the real-world mode).
        max_tokens: Truncation of every sequence before the edit distance (100).
    """

    name: str = "cdd"
    alpha: float = 0.05
    xi: float = 0.01
    max_tokens: int = 100

    needs_samples: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.alpha < 0 or not 0 <= self.xi <= 1:
            raise ContamlabError(
                f"detector.alpha={self.alpha}, detector.xi={self.xi}: need alpha >= 0 and 0 <= xi <= 1"
            )

    def _ids(self, ctx: DetectionContext, text: str) -> list[int]:
        clean = ctx.domain.format.truncate(text).strip()
        return list(ctx.tokenizer(clean, add_special_tokens=False)["input_ids"])[: self.max_tokens]

    def score(self, ctx: DetectionContext) -> DetectorOutput:
        """Peak per question (the score), flagged share per dataset."""
        if ctx.samples is None:
            raise ContamlabError("detector=cdd needs the sampler's samples; run it through evaluate.py")
        _, samples, _ = ctx.samples()
        by_id = {s.id: s for s in samples}
        peaks, flags = [], []
        for q in ctx.questions:
            if q.id not in by_id:
                raise ContamlabError(f"detector=cdd: the cached samples lack question {q.id}; delete the sample cache")
            row = by_id[q.id]
            if not row.m:
                raise ContamlabError("detector=cdd: no samples per question (set m >= 1)")
            greedy = self._ids(ctx, row.greedy_text)
            sampled = [self._ids(ctx, t) for t in row.sample_texts]
            peak = cdd_peakedness(sampled, greedy, self.alpha, self.max_tokens)
            peaks.append(peak)
            flags.append(cdd_flag(peak, self.xi))
        return DetectorOutput(
            peaks,
            float(np.mean(flags)),
            {"cdd_flag": [int(f) for f in flags]},
            {"mean_peak": float(np.mean(peaks)), "m": samples[0].m if samples else 0},
        )
