"""Membership-inference baselines' shared pass: one cached, batched forward pass serves Loss, Zlib, Min-K%, Min-K%++.

As in docs/methods/detectors.md, each baseline is a function of the per-token log-probs ℓ_t of the whole text
(Min-K%++ also of the vocabulary moments μ_t, σ_t). The token statistics are computed once per (model, texts) and
cached as parquet, so a grid ``detector=loss,zlib,mink,minkpp`` runs the model once. Dataset-level score = the mean
per-sample score (CoDeC's protocol for baselines).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from contamlab.detectors.base import RUNTIME, DetectionContext, Detector, DetectorOutput, check_text_mode, question_text
from contamlab.detectors.scoring import TokenStats, score_sequences
from contamlab.io import atomic_path, content_hash

STATS_VERSION = 2  # 2: Min-K%++ sigma from the centred second moment (float32 cancellation)


def _save_stats(path: Path, stats: Sequence[TokenStats]) -> None:
    columns = {"logprobs": pa.array([s.logprobs.tolist() for s in stats], pa.list_(pa.float32()))}
    if stats and stats[0].mu is not None:
        columns["mu"] = pa.array([s.mu.tolist() for s in stats], pa.list_(pa.float32()))
        columns["sigma"] = pa.array([s.sigma.tolist() for s in stats], pa.list_(pa.float32()))
    with atomic_path(path) as tmp:
        pq.write_table(pa.table(columns), tmp)


def _load_stats(path: Path, n: int, moments: bool) -> list[TokenStats] | None:
    try:
        table = pq.read_table(path).to_pydict()
    except (OSError, pa.ArrowException):
        return None
    if len(table.get("logprobs", [])) != n or (moments and "mu" not in table):
        return None
    if "mu" not in table:
        return [TokenStats(np.asarray(lp, np.float32)) for lp in table["logprobs"]]
    return [
        TokenStats(np.asarray(lp, np.float32), np.asarray(mu, np.float32), np.asarray(sd, np.float32))
        for lp, mu, sd in zip(table["logprobs"], table["mu"], table["sigma"])
    ]


def token_stats(
    ctx: DetectionContext, texts: Sequence[str], batch_tokens: int | None = None, moments: bool = False
) -> list[TokenStats]:
    """Per-token log-probs of ``texts`` under the context's model, and the vocabulary moments if asked (cached).

    The moments (Min-K%++'s μ_t, σ_t) cost a quarter more than the log-probs alone (docs/performance.md). They are
    computed when ``moments`` or ``ctx.moments`` (another detector of the job will read them from the cache) asks;
    a cached pass with them serves a request without.
    """
    want = moments or ctx.moments
    paths = {}
    for with_moments in (True, False):
        key = {"v": STATS_VERSION, "model": ctx.model_key, "texts": content_hash(list(texts), 24)}
        if not with_moments:
            key["moments"] = False  # the key of a pass with the moments is that of before they became optional
        paths[with_moments] = (
            Path(ctx.cache_dir) / "token_stats" / f"{content_hash(key)}.parquet" if ctx.cache_dir else None
        )
    for with_moments in (True, False) if not want else (True,):
        path = paths[with_moments]
        if path is not None and path.is_file():
            cached = _load_stats(path, len(texts), with_moments)
            if cached is not None:
                return cached
    tokenizer = ctx.tokenizer
    ids = [list(x) for x in tokenizer(list(texts), add_special_tokens=True)["input_ids"]]
    stats = score_sequences(
        ctx.model, ids, tokenizer.pad_token_id, moments=want, batch_tokens=batch_tokens, progress=ctx.progress
    )
    if paths[want] is not None:
        _save_stats(paths[want], stats)
    return stats


@dataclass(frozen=True)
class MembershipDetector(Detector):
    """Base of the per-sample baselines: score every text from its token statistics.

    Attributes:
        text: What is scored: ``document`` (question block + reference response, the default: the whole training
            text), ``question`` or ``answer``.
        batch_tokens: Rows x padded length per forward pass (None: 1,024 on a CPU, 8,192 on an accelerator).
    """

    text: str = "document"
    batch_tokens: int | None = field(default=None, metadata=RUNTIME)

    def __post_init__(self) -> None:
        check_text_mode(self.text)

    def sample_score(self, stats: TokenStats, text: str) -> float:
        """One sample's score, higher = more likely a member."""
        raise NotImplementedError

    def score(self, ctx: DetectionContext) -> DetectorOutput:
        """Score every question from one shared forward pass."""
        texts = [question_text(ctx.domain, q, self.text) for q in ctx.questions]
        stats = token_stats(ctx, texts, self.batch_tokens, self.reads_moments)
        scores = [self.sample_score(s, t) if len(s.logprobs) else math.nan for s, t in zip(stats, texts)]
        finite = [s for s in scores if not math.isnan(s)]
        return DetectorOutput(
            scores,
            float(np.mean(finite)) if finite else None,
            {"n_tokens": [len(s.logprobs) for s in stats]},
            {"dropped": len(scores) - len(finite)},
        )
