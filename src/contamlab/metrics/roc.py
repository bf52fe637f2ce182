"""Detector evaluation: AUROC, TPR at 5% FPR and FPR at 95% TPR of per-question scores, seen (1) vs unseen (0).

detection.md §3 (Min-K%++ / Shi et al. protocol): ``sklearn.metrics.roc_curve`` and ``auc`` with label 1 = member;
TPR@FPR = the largest TPR among ROC points with FPR <= the bound; FPR@TPR = the smallest FPR among points with
TPR >= the bound. Questions without a finite score are left out and counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from sklearn.metrics import auc, roc_curve


def roc_metrics(
    scores: Sequence[float], labels: Sequence[bool], fpr_bound: float = 0.05, tpr_bound: float = 0.95
) -> dict[str, Any]:
    """ROC summary of scores (higher = more likely seen) against labels (True = seen).

    Returns:
        ``auroc``, ``tpr_at_5fpr``, ``fpr_at_95tpr`` (None when only one class has a score), ``n_scored``,
        ``n_positive``, ``n_negative`` and ``n_unscored``.
    """
    s = np.asarray(scores, dtype=float)
    y = np.asarray(labels, dtype=bool)
    if s.shape != y.shape:
        raise ValueError(f"roc_metrics: {s.shape[0]} scores but {y.shape[0]} labels")
    keep = np.isfinite(s)  # NaN (unscored) and ±inf (e.g. an overflowing perplexity) are left out, counted
    s, y = s[keep], y[keep]
    out: dict[str, Any] = {
        "n_scored": int(keep.sum()),
        "n_positive": int(y.sum()),
        "n_negative": int((~y).sum()),
        "n_unscored": int((~keep).sum()),
        "auroc": None,
        "tpr_at_5fpr": None,
        "fpr_at_95tpr": None,
    }
    if y.all() or not y.any():
        return out
    fpr, tpr, _ = roc_curve(y.astype(int), s)
    out["auroc"] = float(auc(fpr, tpr))
    out["tpr_at_5fpr"] = float(tpr[fpr <= fpr_bound].max())
    out["fpr_at_95tpr"] = float(fpr[tpr >= tpr_bound].min())
    return out
