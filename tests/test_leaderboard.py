"""Detector evaluation: ROC summaries (TPR at 1 % FPR, AUROC interval) against sklearn, and the leaderboard."""

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from contamlab.analysis.detectors import comparison_lines, leaderboard, leak_form
from contamlab.metrics.roc import auroc_interval, roc_metrics


# -- ROC summaries and the leaderboard -----------------------------------------------------------------------------
def test_tpr_at_1fpr_and_auroc_interval_against_sklearn():
    rng = np.random.default_rng(3)
    labels = np.r_[np.ones(120, bool), np.zeros(130, bool)]
    scores = rng.normal(size=250) + labels
    m = roc_metrics(scores, labels)
    neg = np.sort(scores[~labels])[::-1]
    threshold = neg[int(0.01 * 130)]  # at most 1 % of 130 negatives (one) may score at or above it
    assert m["tpr_at_1fpr"] == pytest.approx(np.mean(scores[labels] > threshold))
    low, high = auroc_interval(scores, labels, n_boot=60, seed=5)
    # Oracle: the same draws scored by sklearn.
    draw = np.random.default_rng(5)
    pos, negs = scores[labels], scores[~labels]
    p = pos[draw.integers(0, pos.size, (60, pos.size))]
    n = negs[draw.integers(0, negs.size, (60, negs.size))]
    aucs = [roc_auc_score(np.r_[np.ones(pos.size), np.zeros(negs.size)], np.r_[a, b]) for a, b in zip(p, n)]
    assert (low, high) == pytest.approx(tuple(np.quantile(aucs, [0.025, 0.975])))
    assert auroc_interval([1, 2, 3, 4], [False, False, True, True]) == (1.0, 1.0)


def _result(name, domain, auroc, clean, style="base"):
    entry = {"auroc": auroc, "auroc_ci": [auroc - 0.05, auroc + 0.05], "tpr_at_5fpr": 0.5, "tpr_at_1fpr": 0.1}
    return {
        "config": {"domain": {"name": domain, "leak_style": style}, "model": {"name": "tiny"}},
        "detection": {
            "detector": {"name": name},
            "contaminated": {**entry, "wall_s": 1.0},
            "clean": {"auroc": clean, "wall_s": 2.0},
        },
    }


def test_leaderboard_sorts_by_verbatim_auroc_and_shows_both_forms():
    results = [
        _result("loss", "arith", 0.77, 0.47),
        _result("ngram", "arith", 1.0, 0.52),
        _result("loss", "arith_pq", 0.60, 0.50, style="pq"),
    ]
    assert leak_form(results[2]) == "paraphrased" and leak_form(results[0]) == "verbatim"
    lines = leaderboard(results).splitlines()
    assert "AUROC verbatim [95% CI]" in lines[0] and "AUROC paraphrased [95% CI]" in lines[0]
    assert lines[2].startswith("| ngram | 1.000 [0.950, 1.050]")
    assert lines[3].startswith("| loss | 0.770 [0.720, 0.820] | 0.500 | 0.100 | 0.470 | 3.0 | 0.600")
    cmp = {
        "score_original": 0.735,
        "score_rephrased": 0.4,
        "estimated_clean": 0.49,
        "estimated_clean_ci": [0.415, 0.565],
        "truth_clean_score": 0.465,
        "covers_truth": True,
        "effect": 0.245,
        "effect_ci": [0.17, 0.32],
        "p_value": 0.001,
    }
    results[0]["detection"]["comparison"] = cmp
    assert "0.490 [0.415, 0.565] against the clean model's measured 0.465 (covers it)" in comparison_lines(results)[0]
