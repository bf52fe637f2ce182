"""A ConStat-style contamination test (Dekoninck et al., NeurIPS 2024, arXiv 2405.16281), rephrased-benchmark form.

Contamination is performance that does not generalise: a contaminated model scores higher on the original
benchmark D than its score on a rephrased benchmark D' predicts, where the prediction h comes from reference models
that did not see D. With S(·) the greedy accuracy:

    h = the map from S_ref(D') to S_ref(D) over the reference models
        (one reference: the shift h(s) = s + S_ref(D) - S_ref(D'); two or more: the least-squares line)
    Ŝ_clean = h(S_M(D'))                  the estimated uncontaminated score of the tested model M
    δ = S_M(D) - Ŝ_clean                  the contamination effect
    p = (1 + #{b : δ*_b <= 0}) / (B + 1)  over B bootstrap draws of the questions (all models resampled alike)

The interval of Ŝ_clean and δ is the bootstrap percentile interval. Per question the detector scores
``correct(D) - correct(D')`` (higher = more likely seen), so it also gets an AUROC. On the simulation the reference
is the clean model (plus any ``references`` given) and the truth is known: the clean model's own S(D), which the
job reports next to Ŝ_clean. D' is the domain's first paraphrased version (arith: a full rewrite that is not a leak
text; GSM8K: the PQ rephrasings).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from contamlab.detectors.base import RUNTIME, DetectionContext, Detector, DetectorOutput
from contamlab.detectors.benbench import greedy_continuations
from contamlab.detectors.paraphrase import reference_versions
from contamlab.errors import ContamlabError


def difficulty_map(ref_rephrased: Sequence[float], ref_original: Sequence[float]):
    """h: the reference models' map from D' accuracy to D accuracy (a shift for one reference, else a line)."""
    x = np.asarray(ref_rephrased, dtype=np.float64)
    y = np.asarray(ref_original, dtype=np.float64)
    if x.size == 0:
        raise ValueError("difficulty_map: no reference model")
    if x.size == 1 or np.ptp(x) == 0:
        shift = float(np.mean(y - x))
        return lambda s: s + shift
    slope, intercept = np.polyfit(x, y, 1)
    return lambda s: slope * s + intercept


def constat_test(
    tested: tuple[np.ndarray, np.ndarray],
    references: Sequence[tuple[np.ndarray, np.ndarray]],
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """The test on per-question correctness.

    Args:
        tested: ``(correct on D [N], correct on D' [N])`` of the tested model (0/1, questions aligned).
        references: The same pair for each reference model.
        n_boot: Bootstrap draws of the questions.
        confidence: Coverage of the intervals.
        seed: Seed of the draws.

    Returns:
        ``score_original``, ``score_rephrased``, ``estimated_clean`` (Ŝ_clean) and ``effect`` (δ), each with a
        ``_ci`` interval, ``p_value`` and ``n_boot``.
    """
    if not references:
        raise ContamlabError("ConStat needs at least one reference model")
    models = [tested, *references]
    d = np.stack([np.asarray(m[0], dtype=np.float64) for m in models])  # [M, N]
    dp = np.stack([np.asarray(m[1], dtype=np.float64) for m in models])  # [M, N]
    n = d.shape[1]

    def estimate(sd: np.ndarray, sdp: np.ndarray) -> tuple[float, float]:
        h = difficulty_map(sdp[1:], sd[1:])
        est = float(h(sdp[0]))
        return est, float(sd[0] - est)

    est, effect = estimate(d.mean(axis=1), dp.mean(axis=1))
    idx = np.random.default_rng(seed).integers(0, n, (n_boot, n))  # [B, N]
    sd_b, sdp_b = d[:, idx].mean(axis=2), dp[:, idx].mean(axis=2)  # [M, B] each
    draws = np.array([estimate(sd_b[:, b], sdp_b[:, b]) for b in range(n_boot)])  # [B, 2]
    alpha = (1 - confidence) / 2

    def ci(values: np.ndarray) -> list[float]:
        return [float(v) for v in np.quantile(values, [alpha, 1 - alpha])]

    return {
        "score_original": float(d[0].mean()),
        "score_original_ci": ci(sd_b[0]),
        "score_rephrased": float(dp[0].mean()),
        "estimated_clean": est,
        "estimated_clean_ci": ci(draws[:, 0]),
        "effect": effect,
        "effect_ci": ci(draws[:, 1]),
        "p_value": float((1 + np.sum(draws[:, 1] <= 0)) / (n_boot + 1)),
        "n_boot": n_boot,
        "n_references": len(references),
    }


@dataclass(frozen=True)
class ConStatDetector(Detector):
    """Greedy accuracy on the original and a rephrased benchmark; the test runs in the job over both models.

    Attributes:
        references: Further reference models (hub ids or paths) beside the clean model.
        max_new_tokens: Greedy answer budget (the run's ``max_new_tokens``).
        n_boot: Bootstrap draws.
        confidence: Coverage of the intervals.
        seed: Seed of the bootstrap.
        batch_size: Prompts per generation batch.
    """

    name: str = "constat"
    references: list[str] = field(default_factory=list)
    max_new_tokens: int = 256
    n_boot: int = 1000
    confidence: float = 0.95
    seed: int = 0
    batch_size: int = field(default=64, metadata=RUNTIME)

    #: The job hands :meth:`compare` the tested model's output and its references' (the clean model first).
    compares_models: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.n_boot < 1 or not 0 < self.confidence < 1:
            raise ContamlabError(f"detector.n_boot={self.n_boot}, confidence={self.confidence}: need >= 1, (0, 1)")

    def _correct(self, ctx: DetectionContext, questions) -> list[int]:
        tok = ctx.tokenizer
        prompts = [list(tok(ctx.domain.prompt(q), add_special_tokens=True)["input_ids"]) for q in questions]
        out = greedy_continuations(
            ctx.model, prompts, self.max_new_tokens, tok.pad_token_id, tok.eos_token_id, self.batch_size
        )
        texts = [tok.decode(ids, skip_special_tokens=True) for ids in out]
        return [int(ctx.domain.is_correct(text, q)) for text, q in zip(texts, questions)]

    def score(self, ctx: DetectionContext) -> DetectorOutput:
        """Per question correct(D) - correct(D'); the dataset score is S(D) - S(D')."""
        questions = list(ctx.questions)
        versions, about = reference_versions(ctx.domain, "test", questions, None)
        if not versions:
            raise ContamlabError(f"detector=constat: domain={ctx.domain.name} has no rephrased benchmark")
        rephrased = versions[0]
        missing = [i for i, q in enumerate(rephrased) if q is None]
        if missing:
            raise ContamlabError(f"detector=constat: {len(missing)} questions have no rephrased version")
        original = self._correct(ctx, questions)
        other = self._correct(ctx, rephrased)
        return DetectorOutput(
            [float(a - b) for a, b in zip(original, other)],
            float(np.mean(original) - np.mean(other)),
            {"correct_original": original, "correct_rephrased": other},
            {"score_original": float(np.mean(original)), "score_rephrased": float(np.mean(other)), "rephrased": about},
        )

    def compare(self, tested: DetectorOutput, references: Sequence[DetectorOutput]) -> dict[str, Any]:
        """:func:`constat_test` of the tested model against the references (the clean model first)."""

        def pair(out: DetectorOutput) -> tuple[np.ndarray, np.ndarray]:
            return np.asarray(out.columns["correct_original"]), np.asarray(out.columns["correct_rephrased"])

        return constat_test(pair(tested), [pair(r) for r in references], self.n_boot, self.confidence, self.seed)
