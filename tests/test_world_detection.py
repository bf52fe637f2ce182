"""A verbatim leak is detectable: the loss detector separates leaked from unleaked questions on the contaminated
model, and not on the clean control.

Two worlds, each trained by train.py's job into a temporary directory: the small one (e2e.SMALL_WORLD, the
default tier), and the calibrated default world (``slow``: ``make test-slow``; ``make calibrate`` and ``make
reproduce`` check it too). The jobs run in-process (:mod:`jobs`); the entry points' own behaviour is tested elsewhere.
"""

import csv
import json

import pytest
from conftest import train_world
from e2e import SMALL_WORLD
from jobs import job_config, run_job
from sklearn.metrics import roc_auc_score


@pytest.fixture(scope="session")
def default_world(tmp_path_factory):
    """The calibrated default world, trained with train.py's defaults (about 7 minutes on 2 cores)."""
    tmp = tmp_path_factory.mktemp("default-world")
    train_world(tmp)
    return tmp


def _loss_detection(tmp_path, *overrides: str) -> dict:
    overrides = ("strategy=none", "detector=loss", "logger=csv", "progress=false", *overrides)
    run_job("evaluate", job_config("evaluate", tmp_path / "run", *overrides, f"paths.cache_dir={tmp_path / 'cache'}"))
    det = json.loads((tmp_path / "run" / "results.json").read_text())["detection"]
    # The AUROCs recomputed from the per-question scores with scikit-learn's own function.
    rows = list(csv.DictReader((tmp_path / "run" / "detection_per_question.csv").open()))
    leaked = [int(r["leaked"]) for r in rows]
    for stage in ("contaminated", "clean"):
        scores = [float(r[f"score_{stage}"]) for r in rows]
        assert roc_auc_score(leaked, scores) == pytest.approx(det[stage]["auroc"], abs=1e-9)
    return det


@pytest.mark.xdist_group("small_world")
def test_loss_detector_on_a_small_world(small_world, tmp_path):
    det = _loss_detection(tmp_path, *SMALL_WORLD, f"paths.models_dir={small_world / 'models'}")
    assert det["counts"]["questions"] == 100 and det["counts"]["leaked"] == 50
    assert det["contaminated"]["auroc"] >= 0.6, det["contaminated"]
    assert 0.35 <= det["clean"]["auroc"] <= 0.65, det["clean"]


@pytest.mark.slow
def test_loss_detector_on_the_calibrated_world(default_world, tmp_path):
    det = _loss_detection(tmp_path, f"paths.models_dir={default_world / 'models'}")
    assert det["counts"]["questions"] == 200 and det["counts"]["leaked"] == 100
    assert det["contaminated"]["auroc"] >= 0.6, det["contaminated"]
    assert 0.35 <= det["clean"]["auroc"] <= 0.65, det["clean"]
