"""The ConStat-style test (performance on the original vs a rephrased benchmark, against reference models) by hand."""

import numpy as np
import pytest

from contamlab.detectors.base import DetectorOutput
from contamlab.detectors.constat import ConStatDetector, constat_test, difficulty_map


# -- ConStat --------------------------------------------------------------------------------------------------------
def test_constat_estimate_and_effect_by_hand():
    tested = (np.array([1, 1, 1, 0]), np.array([1, 0, 0, 0]))  # S(D) 0.75, S(D') 0.25
    ref = (np.array([1, 1, 0, 0]), np.array([1, 0, 0, 0]))  # S(D) 0.5, S(D') 0.25: h(s) = s + 0.25
    out = constat_test(tested, [ref], n_boot=200, seed=0)
    assert out["estimated_clean"] == pytest.approx(0.5) and out["effect"] == pytest.approx(0.25)
    low, high = out["estimated_clean_ci"]
    assert low <= 0.5 <= high
    h = difficulty_map([0.25, 0.5], [0.5, 1.0])  # two references: the line s -> 2 s
    assert h(0.3) == pytest.approx(0.6)
    same = constat_test(ref, [ref], n_boot=199, seed=0)  # a model against itself: no effect in any draw
    assert same["effect"] == 0.0 and same["p_value"] == pytest.approx(1.0)
    strong = constat_test((np.ones(50), np.zeros(50)), [(np.zeros(50), np.zeros(50))], n_boot=99)
    assert strong["p_value"] == pytest.approx(1 / 100)  # (1 + 0) / (B + 1)


def test_constat_detector_compare_uses_correctness_columns():
    def output(d, dp):
        return DetectorOutput([a - b for a, b in zip(d, dp)], None, {"correct_original": d, "correct_rephrased": dp})

    det = ConStatDetector(n_boot=50)
    got = det.compare(output([1, 1, 1, 0], [1, 0, 0, 0]), [output([1, 1, 0, 0], [1, 0, 0, 0])])
    assert got["estimated_clean"] == pytest.approx(0.5) and got["n_references"] == 1


# -- the authors' spline statistic ------------------------------------------------------------------------------------
def _authors_constat(scores_model, scores_model_ref, ref_models, ref_models_ref, n_bootstrap, random_performance):
    """eth-sri/ConStat ``ConStat.return_functions_test`` transcribed loop for loop, with scipy's own GCV λ.

    The authors copied scipy's ``make_smoothing_spline`` to get the λ it picks; scipy's private
    ``_compute_optimal_gcv_parameter`` is that same code, so wrapping it recovers their λ independently of
    contamlab's hat-matrix GCV.
    """
    from scipy.interpolate import _bsplines, make_smoothing_spline

    picked = []
    original = _bsplines._compute_optimal_gcv_parameter

    def spy(*args):
        picked.append(original(*args))
        return picked[-1]

    def fit_with_lam(x, y, w, lam=None):
        _bsplines._compute_optimal_gcv_parameter = spy
        try:
            fit = make_smoothing_spline(x, y, w=w, lam=lam)
        finally:
            _bsplines._compute_optimal_gcv_parameter = original
        return fit, (picked[-1] if lam is None else lam)

    estimations, ps = [], []
    np.random.seed(42)
    i = 0
    while i < n_bootstrap:
        i += 1
        indices_1 = np.random.choice(ref_models.shape[1], ref_models.shape[1], replace=True)
        indices_2 = np.random.choice(ref_models_ref.shape[1], ref_models_ref.shape[1], replace=True)
        if ref_models.shape[0] > 5:
            models_here = np.random.choice(ref_models.shape[0], ref_models.shape[0], replace=True)
            while len(np.unique(models_here)) < 5:
                models_here = np.random.choice(ref_models.shape[0], ref_models.shape[0], replace=True)
        else:
            models_here = np.arange(ref_models.shape[0])
        mean_scores1 = list(np.mean(ref_models[models_here][:, indices_1], axis=1))
        mean_scores2 = list(np.mean(ref_models_ref[models_here][:, indices_2], axis=1))
        r1, r2 = random_performance
        random_performance1 = r1 + np.random.normal(0, np.sqrt(r1 * (1 - r1) / len(indices_1)))
        random_performance2 = r2 + np.random.normal(0, np.sqrt(r2 * (1 - r2) / len(indices_2)))
        sorted_mean1 = np.sort([random_performance1] + mean_scores1)
        sorted_mean2 = np.sort([random_performance2] + mean_scores2)
        same_x_indices = np.where(np.diff(sorted_mean2) == 0)[0]
        sorted_mean1 = np.delete(sorted_mean1, same_x_indices)
        sorted_mean2 = np.delete(sorted_mean2, same_x_indices)
        if len(sorted_mean1) < 5:
            i -= 1
            continue
        weights = [1 for _ in range(sorted_mean1.shape[0])]
        fit, lam = fit_with_lam(sorted_mean2, sorted_mean1, np.array(weights))
        if sorted_mean2[0] != 0:
            sorted_mean1, sorted_mean2, weights = (
                np.append(0, sorted_mean1),
                np.append(0, sorted_mean2),
                [1e-8] + weights,
            )
        if sorted_mean2[-1] != 1:
            sorted_mean1, sorted_mean2, weights = (
                np.append(sorted_mean1, 1),
                np.append(sorted_mean2, 1),
                weights + [1e-8],
            )
        fit, _ = fit_with_lam(sorted_mean2, sorted_mean1, np.array(weights), lam=lam)
        estimate = min(max(float(fit(np.mean(scores_model_ref[indices_2]))), 0), 1)
        estimations.append(estimate)
        ps.append(np.mean(scores_model[indices_1]) - estimate)
    mean_ps = np.mean(ps)
    levels = [float(2 * mean_ps - np.quantile(ps, 1 - p / len(ps)) >= 0) for p in range(len(ps))]
    p_value = 1 if sum(levels) == 0 else float(np.argmax(levels) / len(ps))
    estimate = np.mean(estimations)
    return {
        "p_value": p_value,
        "estimated_contamination": estimate,
        "estimated_contamination_025": float(2 * estimate - np.quantile(estimations, 0.975)),
        "estimated_contamination_975": float(2 * estimate - np.quantile(estimations, 0.025)),
        "delta": mean_ps,
        "min_delta_095": float(2 * mean_ps - np.quantile(ps, 0.95)),
    }


def _reference_world(n_refs, n=60, n_rephrased=50, seed=1):
    """Reference models of graded skill: D' is a little harder than D for every one of them."""
    rng = np.random.default_rng(seed)
    skill = np.linspace(0.15, 0.85, n_refs)
    d = (rng.random((n_refs, n)) < skill[:, None]).astype(float)  # [R, N]
    dp = (rng.random((n_refs, n_rephrased)) < 0.8 * skill[:, None]).astype(float)  # [R, N']
    return d, dp, rng


@pytest.mark.parametrize("n_refs, random_performance", [(5, (0.0, 0.0)), (7, (0.0, 0.0)), (8, (0.25, 0.25))])
def test_spline_constat_equals_the_authors_algorithm(n_refs, random_performance):
    from contamlab.detectors.constat import constat_spline_test

    d, dp, rng = _reference_world(n_refs)
    tested = ((rng.random(60) < 0.75).astype(float), (rng.random(50) < 0.35).astype(float))  # D far above D'
    ours = constat_spline_test(tested, list(zip(d, dp)), n_boot=60, random_performance=random_performance)
    theirs = _authors_constat(tested[0], tested[1], d, dp, 60, random_performance)
    assert ours["method"] == "spline" and ours["n_references"] == n_refs
    # λ comes from two GCV implementations (bounded Brent, xatol 1e-5): equal to well below the bootstrap's noise.
    assert ours["effect"] == pytest.approx(theirs["delta"], abs=1e-4)
    assert ours["estimated_clean"] == pytest.approx(theirs["estimated_contamination"], abs=1e-4)
    assert ours["estimated_clean_ci"] == pytest.approx(
        [theirs["estimated_contamination_025"], theirs["estimated_contamination_975"]], abs=1e-4
    )
    assert ours["min_delta_095"] == pytest.approx(theirs["min_delta_095"], abs=1e-4)
    assert ours["p_value"] == theirs["p_value"]


def test_spline_constat_flags_a_gap_and_not_a_reference():
    from contamlab.detectors.constat import constat_spline_test

    d, dp, rng = _reference_world(7)
    refs = list(zip(d, dp))
    leaky = ((rng.random(60) < 0.9).astype(float), (rng.random(50) < 0.3).astype(float))
    flagged = constat_spline_test(leaky, refs, n_boot=100)
    assert flagged["effect"] > 0.3 and flagged["p_value"] < 0.05
    honest = constat_spline_test((d[3], dp[3]), refs, n_boot=100)  # one of the references: on the curve
    assert abs(honest["effect"]) < 0.1 and honest["p_value"] > 0.2


def test_detector_picks_the_spline_test_from_five_references():
    def output(d, dp):
        return DetectorOutput([a - b for a, b in zip(d, dp)], None, {"correct_original": d, "correct_rephrased": dp})

    d, dp, rng = _reference_world(5, n_rephrased=60)  # the simplified test pairs each question with its rephrasing
    refs = [output(list(a), list(b)) for a, b in zip(d, dp)]
    tested = output(list((rng.random(60) < 0.8).astype(float)), list((rng.random(60) < 0.3).astype(float)))
    assert ConStatDetector(n_boot=20).compare(tested, refs)["method"] == "spline"
    assert ConStatDetector(n_boot=20).compare(tested, refs[:4])["method"] == "simplified"
