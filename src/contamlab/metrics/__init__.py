"""Restoration metrics of "Zero Gap Is Not Restoration" §3. Pure: numbers in, numbers out.

Readouts r̂ and r⁰¹ (:mod:`.readouts`); G-AP, G-APP, A-PPG, SA-PPG (:mod:`.gaps`); their assembly per leaked /
unleaked group (:mod:`.assembly`).
"""

from contamlab.metrics.assembly import compute_metrics
from contamlab.metrics.gaps import (
    bin_index,
    bin_index_from_prob,
    bootstrap_intervals,
    g_ap,
    gap_metrics,
    paired_difference,
    per_bin_table,
    readout_stability,
)
from contamlab.metrics.readouts import discrete_readout, solve_probabilities

__all__ = [
    "bin_index",
    "bin_index_from_prob",
    "bootstrap_intervals",
    "compute_metrics",
    "discrete_readout",
    "g_ap",
    "gap_metrics",
    "paired_difference",
    "per_bin_table",
    "readout_stability",
    "solve_probabilities",
]
