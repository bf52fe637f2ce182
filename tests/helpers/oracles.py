"""Slow, plain-loop oracles of the paper's metrics: what a committed artifact's numbers are checked against.

They read per-question columns only and share no code with ``contamlab.metrics``.
"""

from __future__ import annotations


def plain_metrics(
    r_s: list[float], r_c: list[float], bins: list[int], r01_s: list[int] | None = None, r01_c: list[int] | None = None
) -> dict[str, float]:
    """Eq. 8, 9 and 13 of "Zero Gap Is Not Restoration" as loops over questions, and Eq. 2 where r⁰¹ is given."""
    n = len(r_s)
    by_bin: dict[int, list[float]] = {}
    for a, c, b in zip(r_s, r_c, bins):
        by_bin.setdefault(b, []).append(abs(a - c))
    out = {
        "sa_ppg": sum(sum(v) / len(v) for v in by_bin.values()) / len(by_bin),
        "delta_plus": sum(max(a - c, 0.0) for a, c in zip(r_s, r_c)) / n,
        "delta_minus": sum(max(c - a, 0.0) for a, c in zip(r_s, r_c)) / n,
    }
    if r01_s is not None and r01_c is not None:
        out["g_ap"] = abs(sum(r01_s) - sum(r01_c)) / n
    return out
