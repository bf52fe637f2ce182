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
