"""Metrics. Pure: numbers in, numbers out; imports nothing of contamlab but ``errors``.

Restoration metrics of "Zero Gap Is Not Restoration" §3: readouts r̂ and r⁰¹ (:mod:`.readouts`); G-AP, G-APP, A-PPG,
SA-PPG (:mod:`.gaps`); their assembly per leaked / unleaked group (:mod:`.assembly`). Detector evaluation: AUROC,
TPR@5%FPR, FPR@95%TPR (:mod:`.roc`, imported on its own: it loads scikit-learn).
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
from contamlab.metrics.readouts import discrete_readout, question_readouts, solve_probabilities

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
    "question_readouts",
    "readout_stability",
    "solve_probabilities",
]
