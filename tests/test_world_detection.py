"""The calibrated default world: the loss detector separates leaked from unleaked questions on the contaminated model,
and not on the clean control.

The fixture trains the default world with the real ``train.py`` (default config, ``domain=arith``) into the
repository's ``outputs/models``, where ``make train`` and ``make reproduce`` put it: a trained world is found by its
key in seconds; a fresh clone trains it once (about 6 minutes on 2 cores).
"""

import csv
import json
import os
import subprocess
import sys

import pytest
from e2e import REPO
from sklearn.metrics import roc_auc_score


@pytest.fixture(scope="session")
def default_world():
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = [sys.executable, str(REPO / "train.py"), "domain=arith", "logger=csv", "hydra.run.dir=outputs/hydra-test"]
    result = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return REPO


def test_loss_detector_on_the_calibrated_world(default_world, tmp_path):
    args = [
        sys.executable,
        str(REPO / "evaluate.py"),
        "strategy=none",
        "detector=loss",
        "logger=csv",
        "progress=false",
        f"paths.cache_dir={tmp_path / 'cache'}",
        f"hydra.run.dir={tmp_path / 'run'}",
    ]
    result = subprocess.run(args, cwd=REPO, capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stdout + result.stderr
    det = json.loads((tmp_path / "run" / "results.json").read_text())["detection"]
    assert det["counts"]["questions"] == 200 and det["counts"]["leaked"] == 100
    assert det["contaminated"]["auroc"] >= 0.6, det["contaminated"]
    assert 0.35 <= det["clean"]["auroc"] <= 0.65, det["clean"]
    # The AUROCs recomputed from the per-question scores with scikit-learn's own function.
    rows = list(csv.DictReader((tmp_path / "run" / "detection_per_question.csv").open()))
    leaked = [int(r["leaked"]) for r in rows]
    for stage in ("contaminated", "clean"):
        scores = [float(r[f"score_{stage}"]) for r in rows]
        assert roc_auc_score(leaked, scores) == pytest.approx(det[stage]["auroc"], abs=1e-9)
