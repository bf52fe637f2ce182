"""CoDeC: Contamination Detection via Context (Zawalski et al. 2025, arXiv 2510.27055; docs/methods/detectors.md).

Per sample x_i: a = token log-probs of x_i alone, b = those of the same target tokens after ``n_context`` other
samples of the dataset; confidence = mean log-prob over the window ``[skip_first : L - skip_last]`` (10 and 1 in the
authors' notebook). Seen data loses confidence in context: label 1 iff mean(a) > mean(b) (a tie gives 0). Dataset
score = the fraction of kept samples labelled 1 (about 0.8+ = strong contamination, 0.4-0.5 = unseen).
Per-question score (sample-level AUROC) = Δ_i = mean(a) - mean(b), averaged over context seeds.

The context input is built by concatenating token ids (optional BOS + context ids + separator ids + target ids), so
both passes score exactly the same target token ids; ``join: string`` reproduces the reference notebook (join the
strings with a blank line, tokenise, keep the last L_a log-probs). Samples with an empty window are dropped, counted.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from contamlab.detectors.base import (
    RUNTIME,
    AuditScores,
    DetectionContext,
    Detector,
    DetectorOutput,
    check_text_mode,
    question_text,
)
from contamlab.detectors.scoring import score_sequences
from contamlab.errors import ContamlabError
from contamlab.metrics import verdicts as V


def truncate_sample(text: str, max_chars: int = 2048) -> str:
    """Cut a sample longer than ``max_chars`` characters and drop its last (possibly cut) space-separated word."""
    if len(text) <= max_chars:
        return text
    return text[:max_chars].rsplit(" ", 1)[0]


def confidence_window(logprobs: np.ndarray, skip_first: int = 10, skip_last: int = 1) -> np.ndarray | None:
    """The scored log-probs ``logprobs[skip_first : L - skip_last]``, or None when that window is empty (dropped)."""
    stop = len(logprobs) - skip_last
    if stop <= skip_first:
        return None
    return logprobs[skip_first:stop]


def codec_delta(plain: np.ndarray, in_context: np.ndarray, skip_first: int = 10, skip_last: int = 1) -> float | None:
    """Δ_i = mean(a) - mean(b) over the confidence window (higher = more likely seen); None when too short.

    Args:
        plain: Log-probs of the target's tokens scored alone (a, length L_a).
        in_context: Log-probs of the same target tokens after the context (b, length L_a).
        skip_first: Log-probs skipped at the start of the target.
        skip_last: Log-probs skipped at the end.
    """
    if len(plain) != len(in_context):
        raise ValueError(f"codec_delta: {len(plain)} plain log-probs but {len(in_context)} in context")
    a = confidence_window(plain, skip_first, skip_last)
    if a is None:
        return None
    b = confidence_window(in_context, skip_first, skip_last)
    return float(np.mean(a, dtype=np.float64) - np.mean(b, dtype=np.float64))


def codec_label(delta: float) -> int:
    """The per-sample rule: 1 (contaminated) iff confidence drops in context, i.e. Δ > 0; a tie gives 0."""
    return int(delta > 0)


def draw_contexts(n: int, n_context: int, seed: int) -> list[list[int]]:
    """For each of ``n`` samples, ``n_context`` distinct other samples drawn uniformly (never the sample itself)."""
    if n_context < 1:
        raise ContamlabError(f"detector.n_context={n_context}: need at least one context example")
    if n_context > n - 1:
        raise ContamlabError(f"detector.n_context={n_context}: only {n - 1} other samples in the dataset")
    rng = random.Random(seed)
    out = []
    for i in range(n):
        picks = rng.sample(range(n - 1), n_context)
        out.append([j + (j >= i) for j in picks])  # skip i itself
    return out


def special_affixes(tokenizer, text: str) -> tuple[list[int], list[int], list[int]]:
    """(prefix, content, suffix) ids: what the tokenizer adds around ``text`` (e.g. BOS) and the text's own ids."""
    full = list(tokenizer(text, add_special_tokens=True)["input_ids"])
    bare = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    for start in range(len(full) - len(bare) + 1):
        if full[start : start + len(bare)] == bare:
            return full[:start], bare, full[start + len(bare) :]
    return [], full, []


def context_ids(tokenizer, target: str, contexts: Sequence[str], separator: str = "\n\n") -> tuple[list[int], int]:
    """Token-level join: prefix + (context ids + separator ids) x k + target ids + suffix.

    Returns:
        The ids and L_a (the number of target log-probs: len(target ids with special tokens) - 1). The last L_a
        positions of the joined input predict exactly the target's own ids after its first one.
    """
    prefix, body, suffix = special_affixes(tokenizer, target)
    sep = list(tokenizer(separator, add_special_tokens=False)["input_ids"])
    ids = list(prefix)
    for text in contexts:
        ids += list(tokenizer(text, add_special_tokens=False)["input_ids"]) + sep
    ids += body + suffix
    return ids, len(prefix) + len(body) + len(suffix) - 1


@dataclass(frozen=True)
class CoDeCDetector(Detector):
    """CoDeC with configurable context size, seeds and join mode.

    Attributes:
        n_context: Context examples before each target (the authors: 1).
        seeds: One context draw per seed; scores are averaged over seeds.
        skip_first: Target log-probs skipped at the start (10).
        skip_last: Target log-probs skipped at the end (1).
        join: ``tokens`` (ids concatenated; same target ids in both passes) or ``string`` (reference parity).
        separator: Text between samples (a blank line).
        text: What a sample is: ``question`` (the authors' choice for QA), ``answer`` or ``document``.
        max_chars: Samples longer than this are cut (2048 characters).
        max_samples: Score a random subset (Python random, seed 42) of at most this many samples; None = all.
        batch_tokens: Rows x padded length per forward pass (None: 1,024 on a CPU, 8,192 on an accelerator).
    """

    name: str = "codec"
    n_context: int = 1
    seeds: list[int] = field(default_factory=lambda: [0])
    skip_first: int = 10
    skip_last: int = 1
    join: str = "tokens"
    separator: str = "\n\n"
    text: str = "question"
    max_chars: int = 2048
    max_samples: int | None = None
    batch_tokens: int | None = field(default=None, metadata=RUNTIME)

    def __post_init__(self) -> None:
        if self.join not in ("tokens", "string"):
            raise ContamlabError(f"detector.join={self.join!r}: use tokens or string")
        if not self.seeds:
            raise ContamlabError("detector.seeds: give at least one seed")
        if self.skip_first < 0 or self.skip_last < 0:
            raise ContamlabError("detector.skip_first / skip_last must be non-negative")
        check_text_mode(self.text)

    def audit_readings(self, scores: AuditScores, settings: V.Settings) -> tuple[list[V.Verdict], dict[str, Any]]:
        """The guide's bands, and the score against the references' (CoDeC's two audit readings)."""
        labels = scores.target.columns["codec_label"]
        return [
            codec_bands(labels, settings),
            codec_against_references(labels, [r.dataset_score for r in scores.references], settings=settings),
        ], {"kept": scores.target.extra.get("kept")}

    def score(self, ctx: DetectionContext) -> DetectorOutput:
        """Two passes per sample and seed; Δ per question, the fraction labelled 1 per dataset."""
        n_all = len(ctx.questions)
        chosen = list(range(n_all))
        if self.max_samples is not None and n_all > int(self.max_samples):
            chosen = sorted(random.Random(42).sample(chosen, int(self.max_samples)))
        texts = [
            truncate_sample(question_text(ctx.domain, ctx.questions[i], self.text), self.max_chars) for i in chosen
        ]
        tok, pad = ctx.tokenizer, ctx.tokenizer.pad_token_id
        plain_ids = [list(x) for x in tok(texts, add_special_tokens=True)["input_ids"]]
        plain = score_sequences(ctx.model, plain_ids, pad, batch_tokens=self.batch_tokens, progress=ctx.progress)
        deltas = np.full((len(self.seeds), len(texts)), np.nan)  # [S, N]
        for s, seed in enumerate(self.seeds):
            draws = draw_contexts(len(texts), self.n_context, seed)
            joined, lengths = [], []
            for i, picks in enumerate(draws):
                if self.join == "tokens":
                    ids, n_target = context_ids(tok, texts[i], [texts[j] for j in picks], self.separator)
                else:
                    joined_text = self.separator.join([texts[j] for j in picks] + [texts[i]])
                    ids, n_target = list(tok(joined_text, add_special_tokens=True)["input_ids"]), len(plain_ids[i]) - 1
                joined.append(ids)
                lengths.append(n_target)
            stats = score_sequences(  # the context is read, not scored: only the target's positions are projected
                ctx.model,
                joined,
                pad,
                batch_tokens=self.batch_tokens,
                progress=ctx.progress,
                desc=f"codec[{seed}]",
                score_from=[len(ids) - max(n, 0) for ids, n in zip(joined, lengths)],
            )
            for i, (st, n_target) in enumerate(zip(stats, lengths)):
                a = plain[i].logprobs
                if n_target <= 0 or len(a) == 0:
                    continue  # too short to score: stays NaN, counted as dropped
                if n_target != len(a):
                    raise ContamlabError(
                        f"detector=codec: target length mismatch ({n_target} vs {len(a)} tokens) for sample {i}"
                    )
                delta = codec_delta(a, st.logprobs[-n_target:], self.skip_first, self.skip_last)
                if delta is not None:
                    deltas[s, i] = delta
        kept = ~np.isnan(deltas[0])  # [N]: dropping depends on the target's length only
        labels = (deltas > 0).astype(float)  # [S, N]
        per_seed = [float(labels[s, kept].mean()) if kept.any() else None for s in range(len(self.seeds))]
        scores = [math.nan] * n_all
        label_frac: list[float] = [math.nan] * n_all
        for col, i in enumerate(chosen):
            if kept[col]:
                scores[i] = float(deltas[:, col].mean())
                label_frac[i] = float(labels[:, col].mean())
        dataset = float(np.mean([p for p in per_seed if p is not None])) if kept.any() else None
        return DetectorOutput(
            scores,
            dataset,
            {"codec_label": label_frac},
            {
                "kept": int(kept.sum()),
                "dropped_too_short": int((~kept).sum()),
                "not_sampled": n_all - len(chosen),
                "per_seed_fraction": per_seed,
            },
        )


# -- its audit verdicts ------------------------------------------------------------------------------------------
CODEC_STRONG = 0.8


CODEC_GREY = 0.6


CODEC_MARGIN = 0.2


def codec_band(score: float) -> str:
    """The CoDeC guide's band of a dataset score."""
    if score >= CODEC_STRONG:
        return "strong evidence of contamination"
    if score >= CODEC_GREY:
        return "grey zone"
    return "no evidence of contamination"


def codec_bands(labels: Sequence[float], settings: V.Settings = V.DEFAULT_SETTINGS) -> V.Verdict:
    """CoDeC's dataset score (the share of samples whose confidence drops in context) read by the guide's bands.

    Args:
        labels: Per-sample labels (1 = confidence dropped in context; a fraction when averaged over context seeds);
            NaN = dropped (too short).
        settings: The bootstrap of the interval.

    Returns:
        ``flagged`` iff the score is in the strong band (>= 0.8); the grey zone (0.6-0.8) flags nothing.
    """
    n = int(V.finite(labels).size)
    if not n:
        return V.Verdict("codec/bands", "CoDeC score", None, None, None, "no sample long enough to score", None)
    too_few = V.too_few_verdict("codec/bands", "CoDeC score", ("scored", n))
    if too_few:
        return too_few
    score, interval = V.bootstrap_mean(labels, settings)
    band = codec_band(score)
    return V.Verdict(
        "codec/bands",
        "CoDeC score (share of samples less confident in context)",
        score,
        interval,
        None,
        f"{band} ({score:.2f}; bands: >= {CODEC_STRONG} strong, {CODEC_GREY}-{CODEC_STRONG} grey, < {CODEC_GREY} none)",
        score >= CODEC_STRONG,
        n=n,
        detail={"band": band},
    )


def codec_against_references(
    labels: Sequence[float],
    reference_scores: Sequence[float],
    margin: float = CODEC_MARGIN,
    settings: V.Settings = V.DEFAULT_SETTINGS,
) -> V.Verdict:
    """CoDeC against reference models with clean training data: flagged more than ``margin`` above the best of them.

    The guide's rule: read a score beside models known not to have seen the benchmark, and treat a model more than
    20 points above them as contaminated. No reference: no verdict.
    """
    n = int(V.finite(labels).size)
    too_few = V.too_few_verdict("codec/reference", "CoDeC score - best reference", ("scored", n)) if n else None
    if too_few:
        return too_few
    score, interval = V.bootstrap_mean(labels, settings)
    refs = [float(r) for r in reference_scores if r is not None]
    if score is None or not refs:
        why = "no reference model" if score is not None else "no sample long enough to score"
        return V.Verdict("codec/reference", "CoDeC score - best reference", None, None, None, why, None, n=n)
    best = max(refs)
    gap = score - best
    flagged = gap > margin
    words = "more" if flagged else "not more"
    return V.Verdict(
        "codec/reference",
        "CoDeC score - best reference",
        gap,
        [interval[0] - best, interval[1] - best],
        None,
        f"{score:.2f} is {words} than {margin * 100:.0f} points above the references (best {best:.2f})",
        flagged,
        reference=best,
        n=n,
        detail={"score": score, "score_interval": interval, "references": refs, "margin": margin},
    )
