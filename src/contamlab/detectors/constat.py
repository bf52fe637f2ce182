"""ConStat (Dekoninck et al., NeurIPS 2024, arXiv 2405.16281), rephrased-benchmark form.

Contamination is performance that does not generalise: a contaminated model scores higher on the original
benchmark D than its score on a rephrased benchmark D' predicts, where the prediction h comes from reference models
that did not see D. With S(·) the greedy accuracy:

    h = the map from S_ref(D') to S_ref(D) over the reference models
    Ŝ_clean = h(S_M(D'))                  the estimated uncontaminated score of the tested model M
    δ = S_M(D) - Ŝ_clean                  the contamination effect

Two tests estimate h and the p-value of δ > 0:

- :func:`constat_spline_test`, the authors' statistic (eth-sri/ConStat ``ConStat.test``), for five or more reference
  models: each of B bootstrap draws resamples D, D' and the reference models, sorts the references' scores on D and
  on D' (h is monotone), adds a random-guessing model, fits a cubic smoothing spline with the GCV-optimal λ (then
  refits with near-zero-weight anchors at (0, 0) and (1, 1)) and records δ_b; the p-value is the smallest level at
  which the basic bootstrap lower bound of δ stays >= 0.
- :func:`simplified_constat_test`, for one to four references, where a spline cannot be fitted: h is a shift (one
  reference) or the least-squares line, and p = (1 + #{b : δ*_b <= 0}) / (B + 1) over B draws of the questions (all
  models resampled alike). It is not the authors' statistic and reports itself as ``method: simplified``.

Per question the detector scores ``correct(D) - correct(D')`` (higher = more likely seen), so it also gets an AUROC.
On the simulation the reference is the clean model (plus any ``references`` given) and the truth is known: the clean
model's own S(D), which the job reports next to Ŝ_clean. D' is the domain's first paraphrased version (arith: a full
rewrite that is not a leak text; GSM8K: the PQ rephrasings).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from scipy.interpolate import make_smoothing_spline
from scipy.optimize import minimize_scalar

from contamlab.detectors.base import RUNTIME, AuditScores, DetectionContext, Detector, DetectorOutput
from contamlab.detectors.continuation import greedy_continuations
from contamlab.detectors.paraphrase import reference_versions
from contamlab.errors import ContamlabError
from contamlab.metrics import verdicts as V


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


def simplified_constat_test(
    tested: tuple[np.ndarray, np.ndarray],
    references: Sequence[tuple[np.ndarray, np.ndarray]],
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> dict[str, Any]:
    """The simplified test on per-question correctness, for fewer than five reference models (not the authors').

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
        "method": "simplified",
    }


#: The authors' minimum: a smoothing spline needs five distinct points.
SPLINE_MIN_REFERENCES = 5


def gcv_lambda(x: np.ndarray, y: np.ndarray) -> float:
    """The smoothing parameter λ that minimises generalised cross-validation (Wahba 1990, eq. 4.3.1).

    GCV(λ) = (1/n) ||y - A(λ) y||² / (1 - tr A(λ) / n)², with A(λ) the hat matrix of the cubic smoothing spline with
    unit weights; its column k is the spline fitted to the k-th unit vector, evaluated at ``x``. λ is searched on
    (0, n) by bounded Brent minimisation, as scipy's ``make_smoothing_spline`` does when it picks λ itself (scipy
    does not return the λ it picked, and the authors' refit needs it).
    """
    n = len(x)
    unit = np.eye(n)

    def gcv(lam: float) -> float:
        hat = make_smoothing_spline(x, unit, lam=lam)(x)  # [n, n]: hat[i, k] = fit of e_k at x_i
        residual = y - hat @ y
        return float(np.mean(residual**2) / (1 - np.trace(hat) / n) ** 2)

    return float(minimize_scalar(gcv, bounds=(0, n), method="bounded").x)


def constat_spline_test(
    tested: tuple[np.ndarray, np.ndarray],
    references: Sequence[tuple[np.ndarray, np.ndarray]],
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int = 42,
    random_performance: tuple[float, float] = (0.0, 0.0),
    bootstrap_models: bool = True,
    p_value_delta: float = 0.0,
) -> dict[str, Any]:
    """ConStat's statistic as the authors released it (eth-sri/ConStat, ``constat/detection.py``, ``ConStat.test``).

    Each draw resamples the questions of D and of D' independently and, with more than five references, the
    reference models (until five distinct ones are drawn). It adds a random-guessing model at ``random_performance``
    (with its binomial noise), sorts the references' mean scores on D and on D' separately, keeps the last of tied
    D' scores, fits the GCV smoothing spline h (:func:`gcv_lambda`), refits with the same λ and anchors (0, 0), (1, 1)
    of weight 1e-8, and records Ŝ_clean = clip(h(S_M(D')), 0, 1) and δ = S_M(D) - Ŝ_clean. Draws with fewer than
    five distinct points are redrawn. The random stream is numpy's legacy ``RandomState(seed)``, called in the
    authors' order, so the same seed gives the authors' draws.

    Args:
        tested: ``(scores on D [N], scores on D' [N'])`` of the tested model (0/1 correctness).
        references: The same pair for each reference model (five or more).
        n_boot: Bootstrap draws (the authors: 1000).
        confidence: Coverage of the basic bootstrap intervals.
        seed: Seed of the draws (the authors: 42).
        random_performance: Expected score of random guessing on D and on D' (0 for free-form answers).
        bootstrap_models: Resample the reference models (only with more than five).
        p_value_delta: The effect tested against (the authors' ``p_value_delta``, 0).

    Returns:
        The keys of :func:`simplified_constat_test`, plus ``min_delta_095`` (the authors' one-sided 95 % lower bound
        of δ) and ``lam`` (the median λ); ``method`` is ``spline``.
    """
    if len(references) < SPLINE_MIN_REFERENCES:
        raise ContamlabError(
            f"ConStat's spline test needs {SPLINE_MIN_REFERENCES} or more reference models, got {len(references)}"
        )
    d_ref = np.stack([np.asarray(r[0], dtype=np.float64) for r in references])  # [R, N]
    dp_ref = np.stack([np.asarray(r[1], dtype=np.float64) for r in references])  # [R, N']
    d, dp = np.asarray(tested[0], dtype=np.float64), np.asarray(tested[1], dtype=np.float64)  # [N], [N']
    n_models, n1, n2 = d_ref.shape[0], d_ref.shape[1], dp_ref.shape[1]
    resample_models = bootstrap_models and n_models > SPLINE_MIN_REFERENCES
    rng = np.random.RandomState(seed)
    deltas, estimates, originals, lams = [], [], [], []
    while len(deltas) < n_boot:
        on_d, on_dp = rng.choice(n1, n1, replace=True), rng.choice(n2, n2, replace=True)
        models = np.arange(n_models)
        if resample_models:
            models = rng.choice(n_models, n_models, replace=True)
            while len(np.unique(models)) < SPLINE_MIN_REFERENCES:
                models = rng.choice(n_models, n_models, replace=True)
        y = d_ref[models][:, on_d].mean(axis=1)  # [R]: the references on D
        x = dp_ref[models][:, on_dp].mean(axis=1)  # [R]: the references on D'
        r1, r2 = random_performance
        y = np.r_[r1 + rng.normal(0, np.sqrt(r1 * (1 - r1) / n1)), y]
        x = np.r_[r2 + rng.normal(0, np.sqrt(r2 * (1 - r2) / n2)), x]
        x, y = np.sort(x), np.sort(y)  # h is monotone: the k-th score on D' maps to the k-th on D
        distinct = np.r_[np.diff(x) != 0, True]  # of tied D' scores keep the last
        x, y = x[distinct], y[distinct]
        if len(x) < SPLINE_MIN_REFERENCES:
            continue
        lam = gcv_lambda(x, y)
        weights = np.ones(len(x))
        if x[0] != 0:
            x, y, weights = np.r_[0.0, x], np.r_[0.0, y], np.r_[1e-8, weights]
        if x[-1] != 1:
            x, y, weights = np.r_[x, 1.0], np.r_[y, 1.0], np.r_[weights, 1e-8]
        h = make_smoothing_spline(x, y, w=weights, lam=lam)
        estimate = min(max(float(h(dp[on_dp].mean())), 0.0), 1.0)
        originals.append(float(d[on_d].mean()))
        estimates.append(estimate)
        deltas.append(originals[-1] - estimate)
        lams.append(lam)
    deltas_a, estimates_a = np.asarray(deltas), np.asarray(estimates)  # [B] each
    effect, est = float(deltas_a.mean()), float(estimates_a.mean())
    # p: the smallest level p / B at which the basic bootstrap lower bound 2 δ̄ - q(1 - p / B) is >= p_value_delta.
    bounds = 2 * effect - np.quantile(deltas_a, 1 - np.arange(n_boot) / n_boot)  # [B]
    reached = bounds >= p_value_delta
    alpha = (1 - confidence) / 2

    def basic(values: np.ndarray, centre: float) -> list[float]:
        high, low = np.quantile(values, [1 - alpha, alpha])
        return [float(2 * centre - high), float(2 * centre - low)]

    return {
        "score_original": float(d.mean()),
        "score_original_ci": [float(v) for v in np.quantile(originals, [alpha, 1 - alpha])],
        "score_rephrased": float(dp.mean()),
        "estimated_clean": est,
        "estimated_clean_ci": basic(estimates_a, est),
        "effect": effect,
        "effect_ci": basic(deltas_a, effect),
        "min_delta_095": float(2 * effect - np.quantile(deltas_a, 0.95)),
        "p_value": float(np.argmax(reached) / n_boot) if reached.any() else 1.0,
        "n_boot": n_boot,
        "n_references": n_models,
        "lam": float(np.median(lams)),
        "method": "spline",
    }


def constat_test(
    tested: tuple[np.ndarray, np.ndarray],
    references: Sequence[tuple[np.ndarray, np.ndarray]],
    n_boot: int = 1000,
    confidence: float = 0.95,
    seed: int | None = None,
    random_performance: tuple[float, float] = (0.0, 0.0),
    bootstrap_models: bool = True,
) -> dict[str, Any]:
    """The authors' spline test with five or more references, else the simplified one (same keys, own ``method``).

    ``seed`` None takes each test's own default; ``random_performance`` and ``bootstrap_models`` are the spline
    test's alone.
    """
    common: dict[str, Any] = {"n_boot": n_boot, "confidence": confidence, **({} if seed is None else {"seed": seed})}
    if len(references) >= SPLINE_MIN_REFERENCES:
        return constat_spline_test(
            tested, references, random_performance=random_performance, bootstrap_models=bootstrap_models, **common
        )
    return simplified_constat_test(tested, references, **common)


@dataclass(frozen=True)
class ConStatDetector(Detector):
    """Greedy accuracy on the original and a rephrased benchmark; the test runs in the job over both models.

    Attributes:
        references: Further reference models (hub ids or paths) beside the clean model.
        max_new_tokens: Greedy answer budget (the run's ``max_new_tokens``).
        n_boot: Bootstrap draws.
        confidence: Coverage of the intervals.
        seed: Seed of the bootstrap (the authors: 42).
        random_performance: Random guessing's score on D and D' (the spline test's extra model; 0 for free-form
            answers).
        bootstrap_models: Resample the reference models in the spline test (with more than five).
        batch_size: Prompts per generation batch.
    """

    name: str = "constat"
    references: list[str] = field(default_factory=list)
    max_new_tokens: int = 256
    n_boot: int = 1000
    confidence: float = 0.95
    seed: int = 42
    random_performance: list[float] = field(default_factory=lambda: [0.0, 0.0])
    bootstrap_models: bool = True
    batch_size: int = field(default=64, metadata=RUNTIME)

    #: The job hands :meth:`compare` the tested model's output and its references' (the clean model first).
    compares_models: ClassVar[bool] = True

    def __post_init__(self) -> None:
        if self.n_boot < 1 or not 0 < self.confidence < 1:
            raise ContamlabError(f"detector.n_boot={self.n_boot}, confidence={self.confidence}: need >= 1, (0, 1)")
        if len(self.random_performance) != 2 or not all(0 <= v <= 1 for v in self.random_performance):
            raise ContamlabError(
                f"detector.random_performance={list(self.random_performance)}: give [score on D, score on D'] in [0, 1]"
            )

    def _correct(self, ctx: DetectionContext, questions, which: str) -> list[int]:
        tok = ctx.tokenizer
        prompts = [list(tok(ctx.domain.prompt(q), add_special_tokens=True)["input_ids"]) for q in questions]
        out = greedy_continuations(
            ctx.model,
            prompts,
            self.max_new_tokens,
            tok.pad_token_id,
            tok.eos_token_id,
            self.batch_size,
            progress=ctx.progress,
            desc=f"constat: {which}",
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
        original = self._correct(ctx, questions, "original")
        other = self._correct(ctx, rephrased, "rephrased")
        return DetectorOutput(
            [float(a - b) for a, b in zip(original, other)],
            float(np.mean(original) - np.mean(other)),
            {"correct_original": original, "correct_rephrased": other},
            {"score_original": float(np.mean(original)), "score_rephrased": float(np.mean(other)), "rephrased": about},
        )

    def compare(self, tested: DetectorOutput, references: Sequence[DetectorOutput]) -> dict[str, Any]:
        """:func:`constat_test` of the tested model against the references (the clean model first).

        The authors' spline test with five or more references, else the simplified one.
        """

        def pair(out: DetectorOutput) -> tuple[np.ndarray, np.ndarray]:
            return np.asarray(out.columns["correct_original"]), np.asarray(out.columns["correct_rephrased"])

        return constat_test(
            pair(tested),
            [pair(r) for r in references],
            self.n_boot,
            self.confidence,
            self.seed,
            tuple(self.random_performance),
            self.bootstrap_models,
        )

    def reference_models(self) -> list[str]:
        """The configured ``references``, scored beside the clean model."""
        return [str(r) for r in self.references]

    def audit_readings(self, scores: AuditScores, settings: V.Settings) -> tuple[list[V.Verdict], dict[str, Any]]:
        """The test against the audit's references (no verdict without one)."""
        out = scores.target
        test = self.compare(out, scores.references) if scores.references else None
        raw = (out.extra["score_original"], out.extra["score_rephrased"])
        return [constat_verdict(test, settings, raw=raw)], {}


# -- its audit verdicts ------------------------------------------------------------------------------------------
CONSTAT_METHODS = {"spline": "the authors' spline test", "simplified": "simplified test, fewer than 5 references"}


def constat_verdict(
    test: dict[str, Any] | None, settings: V.Settings = V.DEFAULT_SETTINGS, raw: tuple[float, float] | None = None
) -> V.Verdict:
    """ConStat's reading of :func:`~contamlab.detectors.constat.constat_test` (None: no reference model).

    Args:
        test: The test's output against the reference models.
        settings: The level (``alpha``).
        raw: ``(S(D), S(D'))`` of the target, reported when there is no reference.
    """
    if test is None:
        value = None if raw is None else raw[0] - raw[1]
        return V.Verdict(
            "constat",
            "effect S(D) - Ŝ_clean",
            value,
            None,
            None,
            "no reference model: S(D) - S(D') alone cannot separate contamination from a harder rephrasing",
            None,
        )
    # The effect is a mean of differences of accuracies (multiples of 1 / n): round off the float noise that would
    # print an exact tie as -6.9e-18 (+ 0.0 turns -0.0 into 0.0).
    p, effect = float(test["p_value"]), round(float(test["effect"]), 12) + 0.0
    flagged = p < settings.alpha
    words = "does not generalise" if flagged else "generalises"
    return V.Verdict(
        "constat",
        "effect S(D) - Ŝ_clean",
        effect,
        list(test["effect_ci"]),
        p,
        f"the score {words} to the rephrased benchmark: S(D) {test['score_original']:.3f} against an estimated "
        f"uncontaminated {test['estimated_clean']:.3f} (p = {p:.2g}; {CONSTAT_METHODS[test['method']]}, "
        f"{test['n_references']} reference model{'s' if test['n_references'] != 1 else ''})",
        flagged,
        detail={
            k: test[k] for k in ("score_original", "score_rephrased", "estimated_clean", "estimated_clean_ci", "method")
        },
    )
