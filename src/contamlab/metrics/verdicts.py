"""Audit verdicts: one released model, one benchmark, no clean twin and no leaked/unleaked split.

Each function turns one method's measurements into a dataset-level statistic with a percentile-bootstrap interval,
a p-value where the method has a test, and a verdict in the method's own terms. ``flagged`` is the yes/no reading
the meta-audit scores against the simulation's truth (None where the method gives no verdict, e.g. without a
reference model). The readings (docs/audit.md):

- CoDeC (Zawalski et al. 2025, arXiv 2510.27055, "How to interpret the score"): the dataset score in its bands,
  >= 0.8 strong evidence, 0.6-0.8 grey zone, < 0.6 none (:func:`codec_bands`); and against reference models with
  clean training data, flagged more than 20 points above the best of them (:func:`codec_against_references`).
- Per-item membership scores (Loss, Zlib, Min-K%, Min-K%++, DC-PDD, ReCaLL, CDD): a score means something only
  against non-members. Benchmark items (label 1) against reference items the model cannot have seen (label 0): the
  AUROC, its interval and the one-sided Mann-Whitney U p-value (:func:`membership_test`); with reference models,
  the target's AUROC minus the highest reference AUROC over common bootstrap draws (:func:`membership_vs_references`).
- BenBench (Xu et al. 2024, §3.3): Δ, the relative drop of a metric from the original items to their paraphrases,
  with an item bootstrap; against reference models, the same difference test (:func:`benbench_delta_test`).
- ConStat (Dekoninck et al. 2024): its own test (:func:`contamlab.detectors.constat.constat_test`), read here.
- The mitigated score: the mean solve probability under identity and under a strategy, and the share the strategy
  removes (:func:`mitigation_share`). A reading, never a flag: decoding-time mitigation also lowers honest scores.

No reading is computed from fewer than :data:`~contamlab.metrics.roc.MIN_ITEMS_PER_SIDE` items on a side: it then
reports "too few items (n = …, need ≥ 10 per side)" with no value, interval, p-value or flag.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from contamlab.metrics.roc import auroc_draws, too_few_items

CODEC_STRONG = 0.8
CODEC_GREY = 0.6
CODEC_MARGIN = 0.2


@dataclass(frozen=True)
class Settings:
    """The level of the tests and the bootstrap of every interval.

    Attributes:
        alpha: Level of the tests (a p-value below it flags).
        n_boot: Bootstrap draws.
        confidence: Coverage of the intervals.
        seed: Seed of the draws.
    """

    alpha: float = 0.05
    n_boot: int = 1000
    confidence: float = 0.95
    seed: int = 0

    def draws(self, *sizes: int) -> list[np.ndarray]:
        """Bootstrap index draws ``[n_boot, size]`` for each group size, in order, from one generator."""
        rng = np.random.default_rng(self.seed)
        return [rng.integers(0, size, (self.n_boot, size)) for size in sizes]


@dataclass
class Verdict:
    """One audit reading.

    Attributes:
        name: The reading (``codec/bands``, ``loss``, ``benbench/ppl`` …).
        statistic: What ``value`` is, in words.
        value: The dataset-level statistic (None when it could not be computed).
        interval: Its percentile-bootstrap interval ``[low, high]``.
        p_value: The test's p-value (None where the method has no test).
        verdict: The method's own words.
        flagged: Whether the reading says "contaminated"; None when it gives no verdict.
        reference: The reference models' value of the statistic (the best of them), when any were given.
        n: Items behind the statistic.
        detail: Further numbers (JSON-able).
    """

    name: str
    statistic: str
    value: float | None
    interval: list[float] | None
    p_value: float | None
    verdict: str
    flagged: bool | None
    reference: float | None = None
    n: int = 0
    detail: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """JSON-able form."""
        return asdict(self)


def _finite(values: Sequence[float]) -> np.ndarray:
    v = np.asarray(values, dtype=np.float64)
    return v[np.isfinite(v)]


def _too_few(name: str, statistic: str, *sides: tuple[str, int]) -> Verdict | None:
    """The reading with no value and no verdict when a side has too few items (None when every side has enough)."""
    why = too_few_items(*sides)
    if why is None:
        return None
    counts = {what or "items": int(n) for what, n in sides}
    return Verdict(name, statistic, None, None, None, why, None, n=sum(counts.values()), detail={"too_few": counts})


def percentile_interval(draws: np.ndarray, confidence: float = 0.95) -> list[float]:
    """The central ``confidence`` interval of bootstrap draws."""
    alpha = (1 - confidence) / 2
    low, high = np.quantile(draws, [alpha, 1 - alpha])
    return [float(low), float(high)]


def bootstrap_mean(values: Sequence[float], settings: Settings = Settings()) -> tuple[float | None, list[float] | None]:
    """The mean of the finite values and its percentile-bootstrap interval ((None, None) when there are none)."""
    v = _finite(values)
    if not v.size:
        return None, None
    (idx,) = settings.draws(v.size)  # [B, N]
    return float(v.mean()), percentile_interval(v[idx].mean(axis=1), settings.confidence)


# -- CoDeC ------------------------------------------------------------------------------------------------------------
def codec_band(score: float) -> str:
    """The CoDeC guide's band of a dataset score."""
    if score >= CODEC_STRONG:
        return "strong evidence of contamination"
    if score >= CODEC_GREY:
        return "grey zone"
    return "no evidence of contamination"


def codec_bands(labels: Sequence[float], settings: Settings = Settings()) -> Verdict:
    """CoDeC's dataset score (the share of samples whose confidence drops in context) read by the guide's bands.

    Args:
        labels: Per-sample labels (1 = confidence dropped in context; a fraction when averaged over context seeds);
            NaN = dropped (too short).
        settings: The bootstrap of the interval.

    Returns:
        ``flagged`` iff the score is in the strong band (>= 0.8); the grey zone (0.6-0.8) flags nothing.
    """
    n = int(_finite(labels).size)
    if not n:
        return Verdict("codec/bands", "CoDeC score", None, None, None, "no sample long enough to score", None)
    too_few = _too_few("codec/bands", "CoDeC score", ("scored", n))
    if too_few:
        return too_few
    score, interval = bootstrap_mean(labels, settings)
    band = codec_band(score)
    return Verdict(
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
    settings: Settings = Settings(),
) -> Verdict:
    """CoDeC against reference models with clean training data: flagged more than ``margin`` above the best of them.

    The guide's rule: read a score beside models known not to have seen the benchmark, and treat a model more than
    20 points above them as contaminated. No reference: no verdict.
    """
    n = int(_finite(labels).size)
    too_few = _too_few("codec/reference", "CoDeC score - best reference", ("scored", n)) if n else None
    if too_few:
        return too_few
    score, interval = bootstrap_mean(labels, settings)
    refs = [float(r) for r in reference_scores if r is not None]
    if score is None or not refs:
        why = "no reference model" if score is not None else "no sample long enough to score"
        return Verdict("codec/reference", "CoDeC score - best reference", None, None, None, why, None, n=n)
    best = max(refs)
    gap = score - best
    flagged = gap > margin
    words = "more" if flagged else "not more"
    return Verdict(
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


# -- AUROC of two groups ----------------------------------------------------------------------------------------------
def membership_test(
    members: Sequence[float],
    nonmembers: Sequence[float],
    settings: Settings = Settings(),
    name: str = "membership",
) -> Verdict:
    """Benchmark items against reference items the model cannot have seen, by one membership score.

    Args:
        members: Scores of the benchmark items (higher = more likely seen); NaN = unscored.
        nonmembers: Scores of the reference (non-member) items.
        settings: Test level and bootstrap.
        name: The reading's name (the detector's).

    Returns:
        The AUROC of benchmark vs reference items with its interval, and the one-sided Mann-Whitney U p-value
        (H1: benchmark items score higher); flagged iff p < settings.alpha.
    """
    pos, neg = _finite(members), _finite(nonmembers)
    if not pos.size or not neg.size:
        return Verdict(name, "AUROC benchmark vs reference items", None, None, None, "no scored items", None)
    too_few = _too_few(name, "AUROC benchmark vs reference items", ("benchmark", pos.size), ("reference", neg.size))
    if too_few:
        return too_few
    auc = float(auroc_draws(pos, neg, np.arange(pos.size)[None], np.arange(neg.size)[None])[0])
    interval = percentile_interval(auroc_draws(pos, neg, *settings.draws(pos.size, neg.size)), settings.confidence)
    from scipy.stats import mannwhitneyu  # here, as in auroc_draws: a module import would cost every job a second

    p = float(mannwhitneyu(pos, neg, alternative="greater").pvalue)
    flagged = p < settings.alpha
    verdict = (
        f"benchmark items score as more familiar than reference items (p = {p:.2g} < {settings.alpha})"
        if flagged
        else f"benchmark items not distinguishable from reference items (p = {p:.2g})"
    )
    return Verdict(
        name,
        "AUROC benchmark vs reference items",
        auc,
        interval,
        p,
        verdict,
        flagged,
        n=int(pos.size + neg.size),
        detail={"n_benchmark": int(pos.size), "n_reference_items": int(neg.size)},
    )


def _one_sided_p(differences: np.ndarray) -> float:
    """Bootstrap p-value of H0: difference <= 0, ``(1 + #{d <= 0}) / (B + 1)`` (ConStat's form)."""
    return float((1 + np.sum(differences <= 0)) / (differences.size + 1))


def membership_vs_references(
    target: tuple[Sequence[float], Sequence[float]],
    references: Sequence[tuple[Sequence[float], Sequence[float]]],
    settings: Settings = Settings(),
    name: str = "membership/reference",
) -> Verdict:
    """The target's benchmark-vs-reference AUROC minus the highest reference model's, over common draws.

    Every model scored the same items, so each bootstrap draw resamples the same benchmark and reference items for
    all models. Items unscored by any model are left out.

    Args:
        target: ``(benchmark item scores, reference item scores)`` of the audited model.
        references: The same pair for each reference model (aligned item for item with the target's).
        settings: Test level and bootstrap.
        name: The reading's name.

    Returns:
        flagged iff the one-sided bootstrap p-value of ``difference <= 0`` is below alpha; no verdict without a
        reference model.
    """
    statistic = "AUROC - best reference AUROC"
    if not references:
        return Verdict(name, statistic, None, None, None, "no reference model", None)
    models = [target, *references]
    mem = np.stack([np.asarray(m[0], np.float64) for m in models])  # [M, P]
    non = np.stack([np.asarray(m[1], np.float64) for m in models])  # [M, N]
    mem = mem[:, np.isfinite(mem).all(axis=0)]
    non = non[:, np.isfinite(non).all(axis=0)]
    if not mem.shape[1] or not non.shape[1]:
        return Verdict(name, statistic, None, None, None, "no item scored by every model", None)
    too_few = _too_few(name, statistic, ("benchmark", mem.shape[1]), ("reference", non.shape[1]))
    if too_few:
        return too_few
    full = (np.arange(mem.shape[1])[None], np.arange(non.shape[1])[None])
    aucs = np.array([auroc_draws(mem[k], non[k], *full)[0] for k in range(len(models))])  # [M]
    idx = settings.draws(mem.shape[1], non.shape[1])
    boot = np.stack([auroc_draws(mem[k], non[k], *idx) for k in range(len(models))])  # [M, B]
    diff = boot[0] - boot[1:].max(axis=0)  # [B]
    best = float(aucs[1:].max())
    value = float(aucs[0] - best)
    p = _one_sided_p(diff)
    flagged = p < settings.alpha
    verdict = (
        f"AUROC {aucs[0]:.3f} above the references' {best:.3f} (p = {p:.2g} < {settings.alpha})"
        if flagged
        else f"AUROC {aucs[0]:.3f} not above the references' {best:.3f} (p = {p:.2g})"
    )
    return Verdict(
        name,
        statistic,
        value,
        percentile_interval(diff, settings.confidence),
        p,
        verdict,
        flagged,
        reference=best,
        n=int(mem.shape[1] + non.shape[1]),
        detail={"auroc": float(aucs[0]), "reference_aurocs": [float(a) for a in aucs[1:]]},
    )


# -- BenBench ---------------------------------------------------------------------------------------------------------
def relative_drop(metric: str, ori: float, ref: float) -> float:
    """BenBench's Δ in percent, positive = the original is more predictable (NaN when ori <= 0).

    Accuracies: (ori - ref) / ori x 100; perplexity (lower is better): (ref - ori) / ori x 100.
    """
    if not ori > 0:
        return float("nan")
    return (ref - ori) / ori * 100.0 if metric == "ppl" else (ori - ref) / ori * 100.0


def _delta_draws(metric: str, ori: np.ndarray, ref: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Δ of each draw: ori, ref [N] per item; idx [B, N] -> [B]."""
    o, r = ori[idx].mean(axis=1), ref[idx].mean(axis=1)  # [B] each
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (r - o) / o * 100.0 if metric == "ppl" else (o - r) / o * 100.0
    return np.where(o > 0, out, np.nan)


def benbench_delta_test(
    metric: str,
    target: tuple[Sequence[float], Sequence[float]],
    references: Sequence[tuple[Sequence[float], Sequence[float]]] = (),
    settings: Settings = Settings(),
) -> Verdict:
    """BenBench's Δ_test of one metric with an item bootstrap, alone or against reference models.

    Args:
        metric: ``ppl`` (answer perplexity) or an n-gram accuracy (``ngram_5`` …).
        target: ``(metric on the original items [N], its mean over the paraphrased versions [N])`` of the model.
        references: The same pair for each reference model (the same items).
        settings: Test level and bootstrap.

    Returns:
        Without references: flagged iff Δ > 0 at level alpha (bootstrap p of Δ <= 0). A paraphrase that is easier
        or harder than its original moves Δ for every model, so with references the statistic is Δ minus the
        highest reference Δ, flagged iff that difference is > 0 at level alpha.
    """
    name = f"benbench/{metric}"
    models = [target, *references]
    ori = np.stack([np.asarray(m[0], np.float64) for m in models])  # [M, N]
    ref = np.stack([np.asarray(m[1], np.float64) for m in models])  # [M, N]
    keep = np.isfinite(ori).all(axis=0) & np.isfinite(ref).all(axis=0)
    ori, ref = ori[:, keep], ref[:, keep]
    if not keep.any():
        return Verdict(name, f"Δ {metric} (%)", None, None, None, "no item with a paraphrase scored", None)
    n = int(keep.sum())
    too_few = _too_few(name, f"Δ {metric} (%)", ("with a paraphrase", n))
    if too_few:
        return too_few
    deltas = [relative_drop(metric, float(o.mean()), float(r.mean())) for o, r in zip(ori, ref)]
    (idx,) = settings.draws(n)
    boot = np.stack([_delta_draws(metric, o, r, idx) for o, r in zip(ori, ref)])  # [M, B]
    detail = {"delta": deltas[0], "ori": float(ori[0].mean()), "ref": float(ref[0].mean())}
    if not np.isfinite(deltas[0]):
        return Verdict(name, f"Δ {metric} (%)", None, None, None, f"{metric} is 0 on the original items", None, n=n)
    if not references:
        draws = boot[0][np.isfinite(boot[0])]
        p = _one_sided_p(draws)
        flagged = p < settings.alpha
        return Verdict(
            name,
            f"Δ {metric} (%): original vs paraphrases",
            deltas[0],
            percentile_interval(draws, settings.confidence),
            p,
            f"the original is {'more' if flagged else 'not more'} predictable than its paraphrases (p = {p:.2g})",
            flagged,
            n=n,
            detail=detail,
        )
    best = float(np.nanmax(deltas[1:]))
    diff = boot[0] - np.nanmax(boot[1:], axis=0)  # [B]
    diff = diff[np.isfinite(diff)]
    p = _one_sided_p(diff)
    flagged = p < settings.alpha
    return Verdict(
        name,
        f"Δ {metric} - best reference Δ (points)",
        deltas[0] - best,
        percentile_interval(diff, settings.confidence),
        p,
        f"Δ {deltas[0]:.1f}% {'above' if flagged else 'not above'} the references' {best:.1f}% (p = {p:.2g})",
        flagged,
        reference=best,
        n=n,
        detail={**detail, "reference_deltas": [float(d) for d in deltas[1:]]},
    )


def delta_train_test(
    metric: str,
    train: tuple[Sequence[float], Sequence[float]],
    test: tuple[Sequence[float], Sequence[float]],
    settings: Settings = Settings(),
) -> Verdict:
    """BenBench's δ_train-test = Δ_train - Δ_test of one metric, train and test items resampled separately.

    A reading of which split the model favours, not a test-set flag: positive means the train split is the more
    predictable relative to its paraphrases (the model trained on it more closely than on the test split).
    """
    name = f"benbench/delta_train_test_{metric}"
    parts = []
    for ori, ref in (train, test):
        o, r = np.asarray(ori, np.float64), np.asarray(ref, np.float64)
        keep = np.isfinite(o) & np.isfinite(r)
        parts.append((o[keep], r[keep]))
    if not parts[0][0].size or not parts[1][0].size:
        return Verdict(name, f"δ_train-test {metric}", None, None, None, "a split has no scored item", None)
    too_few = _too_few(name, f"δ_train-test {metric}", ("train", parts[0][0].size), ("test", parts[1][0].size))
    if too_few:
        return too_few
    value = relative_drop(metric, parts[0][0].mean(), parts[0][1].mean()) - relative_drop(
        metric, parts[1][0].mean(), parts[1][1].mean()
    )
    idx = settings.draws(parts[0][0].size, parts[1][0].size)
    draws = [_delta_draws(metric, o, r, i) for (o, r), i in zip(parts, idx)]
    diff = draws[0] - draws[1]
    diff = diff[np.isfinite(diff)]
    if not np.isfinite(value):
        why = f"{metric} is 0 on the original items of a split"
        return Verdict(name, f"δ_train-test {metric}", None, None, None, why, None)
    interval = percentile_interval(diff, settings.confidence) if diff.size else None
    favoured = interval is not None and interval[0] > 0
    return Verdict(
        name,
        f"δ_train-test {metric} (points)",
        float(value),
        interval,
        None,
        "the train split is favoured over the test split" if favoured else "neither split favoured",
        None,
        n=int(parts[0][0].size + parts[1][0].size),
    )


# -- ConStat ----------------------------------------------------------------------------------------------------------
_CONSTAT_METHODS = {"spline": "the authors' spline test", "simplified": "simplified test, fewer than 5 references"}


def constat_verdict(
    test: dict[str, Any] | None, settings: Settings = Settings(), raw: tuple[float, float] | None = None
) -> Verdict:
    """ConStat's reading of :func:`~contamlab.detectors.constat.constat_test` (None: no reference model).

    Args:
        test: The test's output against the reference models.
        settings: The level (``alpha``).
        raw: ``(S(D), S(D'))`` of the target, reported when there is no reference.
    """
    if test is None:
        value = None if raw is None else raw[0] - raw[1]
        return Verdict(
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
    return Verdict(
        "constat",
        "effect S(D) - Ŝ_clean",
        effect,
        list(test["effect_ci"]),
        p,
        f"the score {words} to the rephrased benchmark: S(D) {test['score_original']:.3f} against an estimated "
        f"uncontaminated {test['estimated_clean']:.3f} (p = {p:.2g}; {_CONSTAT_METHODS[test['method']]}, "
        f"{test['n_references']} reference model{'s' if test['n_references'] != 1 else ''})",
        flagged,
        detail={
            k: test[k] for k in ("score_original", "score_rephrased", "estimated_clean", "estimated_clean_ci", "method")
        },
    )


# -- overlap and mitigation -------------------------------------------------------------------------------------------
def overlap_verdict(overlaps: Sequence[float], n: int = 13, settings: Settings = Settings()) -> Verdict:
    """n-gram overlap with a corpus: the share of items sharing an n-gram with it; flagged iff any item does."""
    statistic = f"share of items with a {n}-gram in the corpus"
    share, interval = bootstrap_mean([float(v > 0) for v in _finite(overlaps)], settings)
    if share is None:
        return Verdict("ngram", statistic, None, None, None, "no item", None)
    too_few = _too_few("ngram", statistic, ("scored", len(_finite(overlaps))))
    if too_few:
        return too_few
    hits = int(np.sum(_finite(overlaps) > 0))
    return Verdict(
        "ngram",
        statistic,
        share,
        interval,
        None,
        f"{hits} of {len(_finite(overlaps))} items share a {n}-gram with the corpus",
        hits > 0,
        n=len(_finite(overlaps)),
    )


def overlap_vs_nonmembers(
    overlaps: Sequence[float], nonmember_overlaps: Sequence[float], n: int = 13, settings: Settings = Settings()
) -> Verdict:
    """The n-gram overlap of the benchmark set against that of non-member items, by the share of items with a hit.

    Templated benchmarks (the synthetic domains, any benchmark written from patterns) share long n-grams with
    training text they never contributed to, so :func:`overlap_verdict`'s any-hit rule flags every model that saw the
    templates. Items the model cannot have seen, matched against the same corpus, give the rate of such chance hits;
    the benchmark is flagged when its share exceeds theirs.

    Args:
        overlaps: Per benchmark item, the overlap share (> 0: the item has an n-gram in the corpus); NaN = unscored.
        nonmember_overlaps: The same for the non-member items.
        n: The n-gram length (for the words).
        settings: Test level and bootstrap.

    Returns:
        The share difference (benchmark − non-members) with its bootstrap interval and the one-sided Fisher exact
        test's p-value (H1: benchmark items hit more often); flagged iff p < settings.alpha.
    """
    bench, non = _finite(overlaps) > 0, _finite(nonmember_overlaps) > 0
    name, statistic = "ngram/nonmembers", f"share of items with a {n}-gram in the corpus, benchmark − non-members"
    if not bench.size or not non.size:
        return Verdict(name, statistic, None, None, None, "no scored items", None)
    too_few = _too_few(name, statistic, ("benchmark", bench.size), ("reference", non.size))
    if too_few:
        return too_few
    from scipy.stats import fisher_exact  # here, as in membership_test: a module import would cost every job a second

    hits, hits_non = int(bench.sum()), int(non.sum())
    table = [[hits, bench.size - hits], [hits_non, non.size - hits_non]]
    p = float(fisher_exact(table, alternative="greater").pvalue)
    idx, idx_non = settings.draws(bench.size, non.size)  # [B, N], [B, M]
    differences = bench[idx].mean(axis=1) - non[idx_non].mean(axis=1)  # [B]
    flagged = p < settings.alpha
    counts = f"{hits} of {bench.size} benchmark items, {hits_non} of {non.size} non-members"
    return Verdict(
        name,
        statistic,
        float(bench.mean() - non.mean()),
        percentile_interval(differences, settings.confidence),
        p,
        f"{counts} share a {n}-gram with the corpus: "
        + (f"more than chance (p = {p:.2g} < {settings.alpha})" if flagged else f"no more than chance (p = {p:.2g})"),
        flagged,
        n=int(bench.size + non.size),
        detail={
            "hits": hits,
            "n_benchmark": int(bench.size),
            "hits_nonmembers": hits_non,
            "n_reference_items": int(non.size),
        },
    )


def mitigation_share(
    identity: Sequence[float], mitigated: Sequence[float], name: str, settings: Settings = Settings()
) -> Verdict:
    """The share of the mean solve probability that a decoding-time strategy removes (paired item bootstrap).

    Not a contamination test: a strategy that suppresses the greedy path also costs an honest model some accuracy.
    """
    a, b = np.asarray(identity, np.float64), np.asarray(mitigated, np.float64)
    too_few = _too_few(f"mitigation/{name}", "share of the score removed", ("", int(a.size)))
    if too_few:
        return too_few
    s_id, s_mit = float(a.mean()), float(b.mean())
    (idx,) = settings.draws(a.size)
    ia, ib = a[idx].mean(axis=1), b[idx].mean(axis=1)  # [B]
    with np.errstate(divide="ignore", invalid="ignore"):
        shares = (ia - ib) / ia
    shares = shares[np.isfinite(shares)]
    share = (s_id - s_mit) / s_id if s_id > 0 else None
    return Verdict(
        f"mitigation/{name}",
        "share of the score removed",
        share,
        percentile_interval(shares, settings.confidence) if shares.size and share is not None else None,
        None,
        f"mean solve probability {s_id:.3f} under identity, {s_mit:.3f} under {name} "
        "(what decoding-time mitigation removes; not a proof of contamination)",
        None,
        n=int(a.size),
        detail={"identity": s_id, "mitigated": s_mit, "removed": s_id - s_mit},
    )
