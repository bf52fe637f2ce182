"""The error-rate audit's statistics: how often a reading flags when nothing leaked, and how often it flags a leak.

A fixed threshold (p < α, an AUROC above 0.5, CoDeC's bands) says nothing of how a reading behaves on the model it
audits. The error-rate audit (:mod:`contamlab.audit.error_rates`) measures it there, on a pool of items the model cannot
have seen:

- the **null**: the reading on random disjoint splits of the pool, one side in the benchmark's place and the other in
  the non-members' (both unseen), so its false-alarm rate at the audit's threshold is a count, not an assumption;
- the **power**: the reading on *twins*, copies of the audited model LoRA-fine-tuned on a random half of the pool at a
  stated dose, the leaked half in the benchmark's place and the other half in the non-members';
- the **detection dose**: the smallest dose whose power reaches a stated level. A reading that reaches it at no dose
  gives no verdict: "not contaminated" from a reading that misses a known leak on this very model means nothing.

Rates come with their Clopper-Pearson interval (``scipy.stats.binomtest``): with three twins a power of 3/3 is
[0.29, 1] at 95 %, and the report says so.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from contamlab.metrics.verdicts import Verdict


@dataclass(frozen=True)
class Rate:
    """``flagged`` of ``total`` readings flagged: a false-alarm rate on the null, or a power on twins.

    Attributes:
        flagged: Readings that flagged.
        total: Readings that gave a verdict (those with too few items or no score are not counted).
    """

    flagged: int
    total: int

    @property
    def rate(self) -> float | None:
        """``flagged / total``; None when no reading gave a verdict."""
        return self.flagged / self.total if self.total else None

    def interval(self, confidence: float = 0.95) -> list[float] | None:
        """The exact (Clopper-Pearson) interval of the rate; None when no reading gave a verdict."""
        if not self.total:
            return None
        from scipy.stats import binomtest

        ci = binomtest(self.flagged, self.total).proportion_ci(confidence, method="exact")
        return [float(ci.low), float(ci.high)]

    def to_dict(self, confidence: float = 0.95) -> dict[str, Any]:
        """JSON-able form, with the rate and its interval."""
        return {"flagged": self.flagged, "total": self.total, "rate": self.rate, "interval": self.interval(confidence)}

    def __str__(self) -> str:
        return f"{self.flagged}/{self.total}"


def pool_splits(n_pool: int, n_a: int, n_b: int, draws: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Random disjoint index pairs ``(A, B)`` of a pool of ``n_pool`` items, A of ``n_a`` and B of ``n_b`` items.

    A pool smaller than ``n_a + n_b`` gives sides shrunk in proportion (at least one item each), so that every split
    uses the whole pool and neither side repeats an item.

    Args:
        n_pool: Items in the pool.
        n_a: Items on side A (the benchmark's place).
        n_b: Items on side B (the non-members' place).
        draws: Number of splits.
        seed: Seed of the generator.

    Returns:
        ``draws`` pairs of sorted index arrays.
    """
    if n_pool < 2:
        raise ValueError(f"a pool of {n_pool} item(s) cannot be split in two")
    if n_a + n_b > n_pool:
        n_a = min(n_pool - 1, max(1, round(n_pool * n_a / (n_a + n_b))))
        n_b = n_pool - n_a
    rng = np.random.default_rng(seed)
    splits = []
    for _ in range(draws):
        order = rng.permutation(n_pool)
        splits.append((np.sort(order[:n_a]), np.sort(order[n_a : n_a + n_b])))
    return splits


def false_alarms(read: Callable[[np.ndarray, np.ndarray], Verdict], splits: Sequence[tuple]) -> Rate:
    """How often a reading flags on splits of unseen items: its false-alarm rate at its own threshold.

    Args:
        read: The reading with side A's item indices in the benchmark's place and side B's in the non-members'.
        splits: From :func:`pool_splits`.

    Returns:
        Flagged splits among those that gave a verdict.
    """
    flags = [read(a, b).flagged for a, b in splits]
    return power(flags)


def power(flags: Sequence[bool | None]) -> Rate:
    """Flagged among readings that gave a verdict (None = no verdict: too few items, nothing scored)."""
    given = [f for f in flags if f is not None]
    return Rate(sum(bool(f) for f in given), len(given))


def detection_dose(powers: Mapping[str, Rate], min_power: float) -> str | None:
    """The first dose whose power reaches ``min_power``; None if none does.

    ``powers`` must list the doses weakest first (the audit sorts them: ``audit.error_rates.doses``), so the dose
    returned is the weakest detected.
    """
    for dose, rate in powers.items():
        if rate.rate is not None and rate.rate >= min_power:
            return dose
    return None


def with_error_rates(
    verdict: Verdict,
    null: Rate | None,
    powers: Mapping[str, Rate],
    min_power: float,
    confidence: float = 0.95,
) -> Verdict:
    """The audit's verdict with its split null (a level check) and power; no verdict where it is underpowered.

    Args:
        verdict: The plain audit's reading.
        null: The share of random splits of one pool of unseen items that it flags (None: not measured). Both halves
            of a split are exchangeable, so a valid test flags about α of them for any model: this checks the test's
            level. It is not the model's false-alarm rate under the shifts a real audit has (style, source, in-domain
            tuning), and its splits are one set per pool, not independent audits.
        powers: Its power on the twins at each dose, weakest dose first (empty: no twins).
        min_power: The power a reading must reach at some dose to keep its verdict.
        confidence: Coverage of the rates' intervals.

    Returns:
        A copy with ``detail["error_rates"]`` (null, power per dose, detection dose) and, where the reading gives a
        verdict but reaches ``min_power`` at no dose, ``flagged`` None and a verdict that says why.
    """
    dose = detection_dose(powers, min_power)
    record = {
        "null": null.to_dict(confidence) if null is not None else None,
        "power": {d: r.to_dict(confidence) for d, r in powers.items()},
        "detection_dose": dose,
        "min_power": min_power,
    }
    detail = {**verdict.detail, "error_rates": record}
    if verdict.flagged is None or not powers:
        return dataclasses.replace(verdict, detail=detail)
    words = f"level check: {null} splits of one unseen pool flagged" if null is not None else "level not checked"
    if dose is None:
        best = max(powers.items(), key=lambda kv: kv[1].rate or 0.0)
        plain = "flagged" if verdict.flagged else "not flagged"
        text = (
            f"underpowered on this model: it detects a known leak in at most {best[1]} twins ({best[0]}), below "
            f"the power {min_power:g} a verdict needs; no verdict (the plain reading: {plain}; {words})"
        )
        return dataclasses.replace(verdict, verdict=text, flagged=None, detail=detail)
    text = f"{verdict.verdict}; {words}, power {powers[dose]} at {dose}"
    return dataclasses.replace(verdict, verdict=text, detail=detail)
