"""Restoration metrics of "Zero Gap Is Not Restoration" §3: G-AP, G-APP, A-PPG, SA-PPG (see :mod:`.gaps`)."""

from contamlab.metrics.gaps import (
    bin_index,
    bin_index_from_prob,
    bootstrap_intervals,
    g_ap,
    gap_metrics,
    per_bin_table,
    readout_stability,
)

__all__ = [
    "bin_index",
    "bin_index_from_prob",
    "bootstrap_intervals",
    "g_ap",
    "gap_metrics",
    "per_bin_table",
    "readout_stability",
]
