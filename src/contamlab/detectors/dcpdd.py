"""DC-PDD: Divergence-based Calibration for Pretraining Data Detection (Zhang et al., EMNLP 2024, arXiv 2409.14781).

A text's token probabilities are calibrated by how frequent each token is in a reference corpus. With p_i the
model's probability of the text's i-th token and f(v) the smoothed corpus frequency of token v
(Laplace: ``f(v) = (count(v) + 1) / (N + |V|)``, N tokens in the corpus, |V| the vocabulary):

    α_i = p_i · log(1 / f(x_i))            for the first occurrence of each token id in the text only
    α_i ← min(α_i, a)                     (the upper bound a, 0.01 in the paper)
    β(x) = mean_i α_i                     (higher = more likely seen)

The per-question score is β; the dataset score is its mean. The frequencies come from a corpus: on the default
world, the pretraining corpus that train.py recorded for the base stage (``corpus: pretraining``); for a pretrained
model, whose corpus is unknown, general text (``corpus: openorca``; ``auto`` picks between the two); or a JSONL file of
texts (``text`` field) the user gives. The token probabilities are the cached pass Loss / Zlib / Min-K%
share.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from contamlab.data.general import load_openorca
from contamlab.detectors.base import (
    RUNTIME,
    DetectionContext,
    Detector,
    DetectorOutput,
    check_text_mode,
    question_text,
    read_texts,
)
from contamlab.detectors.membership import token_stats
from contamlab.errors import ContamlabError

OPENORCA_ROWS = 100_000  # corpus=openorca reads every row up to this many (the offline sample has 284)


def token_frequencies(corpus_ids: Sequence[Sequence[int]], vocab_size: int) -> np.ndarray:
    """``[V]`` Laplace-smoothed token frequencies ``(count + 1) / (N + V)`` of a tokenised corpus."""
    counts = np.zeros(vocab_size, dtype=np.float64)
    for ids in corpus_ids:
        np.add.at(counts, np.asarray(ids, dtype=np.int64), 1.0)
    return (counts + 1.0) / (counts.sum() + vocab_size)


def first_occurrences(ids: Sequence[int]) -> list[int]:
    """Positions of the first occurrence of each distinct id, in order."""
    seen: set[int] = set()
    out = []
    for i, token in enumerate(ids):
        if token not in seen:
            seen.add(token)
            out.append(i)
    return out


def dcpdd_score(logprobs: np.ndarray, ids: Sequence[int], freq: np.ndarray, a: float = 0.01) -> float:
    """β of one text.

    Args:
        logprobs: ``[T]`` log-probs of the scored tokens ``ids``.
        ids: ``[T]`` the scored token ids (the text's ids after the first).
        freq: ``[V]`` smoothed corpus frequencies.
        a: Upper bound of each α.
    """
    if len(logprobs) != len(ids):
        raise ValueError(f"dcpdd_score: {len(logprobs)} log-probs for {len(ids)} ids")
    if not len(ids):
        return math.nan
    keep = first_occurrences(ids)
    p = np.exp(np.asarray(logprobs, dtype=np.float64)[keep])  # [K]
    f = freq[np.asarray(ids, dtype=np.int64)[keep]]  # [K]
    alpha = np.minimum(p * -np.log(f), a)  # [K]
    # the mean as a minus the mean shortfall below a: a text whose every token is clipped scores exactly a, whatever
    # its length (alpha.mean() of K copies of a rounds to a ± an ulp that depends on K, and the AUROC of texts that
    # tie in principle would then rank them by that rounding)
    return float(a - (a - alpha).mean())


@dataclass(frozen=True)
class DCPDDDetector(Detector):
    """DC-PDD with the frequency corpus as a setting.

    Attributes:
        corpus: ``auto`` (``pretraining`` where the model has a recorded base stage, else ``openorca``),
            ``pretraining`` (the base stage's recorded training texts; the tiny world), ``openorca`` (the OpenOrca
            rows: general text, for a pretrained model whose corpus is unknown) or a JSONL path (``text``).
        a: Upper bound of α (0.01).
        text: What is scored: ``document`` (question block + reference response), ``question`` or ``answer``.
        batch_tokens: Rows x padded length per forward pass (None: 1,024 on a CPU, 8,192 on an accelerator).
    """

    name: str = "dcpdd"
    corpus: str = "auto"
    a: float = 0.01
    text: str = "document"
    batch_tokens: int | None = field(default=None, metadata=RUNTIME)

    def __post_init__(self) -> None:
        if not self.a > 0:
            raise ContamlabError(f"detector.a={self.a}: the upper bound must be positive")
        check_text_mode(self.text)

    def corpus_texts(self, ctx: DetectionContext) -> tuple[list[str], str]:
        """The reference corpus and its name."""
        corpus = self.corpus
        lineage: dict[str, list[str]] = {}
        if corpus in ("auto", "pretraining"):  # the recorded texts are read only when they may be the corpus
            lineage = (ctx.lineage() if ctx.lineage is not None else None) or {}  # None: a model trained elsewhere
        if corpus == "auto":
            corpus = "pretraining" if lineage.get("base") else "openorca"
        if corpus == "openorca":
            # Every row of the general data (the local sample offline): a pretrained model's own corpus is unknown,
            # and general text is the paper's reference corpus. The fine-tuning stages mix in a few of these rows.
            rows = load_openorca(OPENORCA_ROWS, seed=0, warn_short=False)
            return [e.prompt + e.response for e in rows], f"OpenOrca ({len(rows)} rows, general text)"
        if corpus == "pretraining":
            if not lineage.get("base"):
                raise ContamlabError(
                    "detector=dcpdd corpus=pretraining needs the base stage's recorded training texts (the tiny "
                    "world); for other models set detector.corpus=<a .jsonl file of reference texts>"
                )
            return lineage["base"], "pretraining corpus (base stage)"
        return read_texts(self.corpus, "detector.corpus"), str(Path(self.corpus).expanduser())

    def score(self, ctx: DetectionContext) -> DetectorOutput:
        """β per question."""
        texts = [question_text(ctx.domain, q, self.text) for q in ctx.questions]
        stats = token_stats(ctx, texts, self.batch_tokens)
        tok = ctx.tokenizer
        corpus, source = self.corpus_texts(ctx)
        freq = token_frequencies(tok(corpus, add_special_tokens=False)["input_ids"], len(tok))
        ids = tok(texts, add_special_tokens=True)["input_ids"]
        scores = [dcpdd_score(st.logprobs, list(row)[1:], freq, self.a) for st, row in zip(stats, ids)]
        finite = [s for s in scores if not math.isnan(s)]
        return DetectorOutput(
            scores,
            float(np.mean(finite)) if finite else None,
            {},
            {"corpus": source, "corpus_texts": len(corpus), "dropped": len(scores) - len(finite)},
        )
