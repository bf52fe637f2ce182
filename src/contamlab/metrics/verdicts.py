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


#: The settings of a reading called without any (the audit's defaults).
DEFAULT_SETTINGS = Settings()


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


def finite(values: Sequence[float]) -> np.ndarray:
    """The finite values (NaN marks an item a detector could not score)."""
    v = np.asarray(values, dtype=np.float64)
    return v[np.isfinite(v)]


def too_few_verdict(name: str, statistic: str, *sides: tuple[str, int]) -> Verdict | None:
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
    v = finite(values)
    if not v.size:
        return None, None
    (idx,) = settings.draws(v.size)  # [B, N]
    return float(v.mean()), percentile_interval(v[idx].mean(axis=1), settings.confidence)


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
    pos, neg = finite(members), finite(nonmembers)
    if not pos.size or not neg.size:
        return Verdict(name, "AUROC benchmark vs reference items", None, None, None, "no scored items", None)
    too_few = too_few_verdict(
        name, "AUROC benchmark vs reference items", ("benchmark", pos.size), ("reference", neg.size)
    )
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


def one_sided_p(differences: np.ndarray) -> float:
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
    too_few = too_few_verdict(name, statistic, ("benchmark", mem.shape[1]), ("reference", non.shape[1]))
    if too_few:
        return too_few
    full = (np.arange(mem.shape[1])[None], np.arange(non.shape[1])[None])
    aucs = np.array([auroc_draws(mem[k], non[k], *full)[0] for k in range(len(models))])  # [M]
    idx = settings.draws(mem.shape[1], non.shape[1])
    boot = np.stack([auroc_draws(mem[k], non[k], *idx) for k in range(len(models))])  # [M, B]
    diff = boot[0] - boot[1:].max(axis=0)  # [B]
    best = float(aucs[1:].max())
    value = float(aucs[0] - best)
    p = one_sided_p(diff)
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


# -- mitigation ------------------------------------------------------------------------------------------------------


def mitigation_share(
    identity: Sequence[float], mitigated: Sequence[float], name: str, settings: Settings = Settings()
) -> Verdict:
    """The share of the mean solve probability that a decoding-time strategy removes (paired item bootstrap).

    Not a contamination test: a strategy that suppresses the greedy path also costs an honest model some accuracy.
    """
    a, b = np.asarray(identity, np.float64), np.asarray(mitigated, np.float64)
    too_few = too_few_verdict(f"mitigation/{name}", "share of the score removed", ("", int(a.size)))
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
