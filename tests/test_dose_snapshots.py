"""The dose curve's snapshots and the sham control, trained for real on the tests' tiny world.

A snapshot at epoch e of a longer run is saved as the stage of ``domain.leak_epochs=e``, so it must be that run byte for
byte; the sham stage must share the contaminated stage's recipe and differ in its items alone.
"""

from __future__ import annotations

import json

import pytest
from jobs import run_train, train_config
from safetensors.numpy import load_file

from contamlab.config import build_domain, model_store
from contamlab.errors import ContamlabError
from contamlab.models.store import read_training_texts
from contamlab.stages import snapshot_stages

pytestmark = pytest.mark.xdist_group("dose_snapshots")
CONSTANT = ("domain.leak_schedule=constant", "finetune.general.n=2")


def _weights(stage_dir):
    return load_file(str(next(stage_dir.glob("*.safetensors"))))


def test_a_snapshot_is_the_shorter_run_byte_for_byte_and_the_sham_shares_its_recipe(tmp_path):
    long = run_train(tmp_path, *CONSTANT, "domain.leak_epochs=3", "snapshots=[1,2]", "sham=true")
    short = train_config(tmp_path, *CONSTANT, "domain.leak_epochs=2")
    store, domain = model_store(short), build_domain(short.domain)
    for stage in ("contaminated", "sham"):
        snap = store.stage_dir(domain, stage)
        summary = json.loads((snap / "train_summary.json").read_text())
        assert summary["snapshot_of"] == json.loads((long[stage] / "train_summary.json").read_text())["key"]
        assert not (snap / "checkpoints").exists()
        # the 2-epoch run trained on its own: the same bytes as the snapshot the 3-epoch run saved under its key
        snap_weights = _weights(snap)
        (snap / "train_summary.json").rename(snap / "moved.json")  # not done: train.py trains it afresh
        own = run_train(tmp_path, *CONSTANT, "domain.leak_epochs=2", "sham=true")[stage]
        assert own == snap
        fresh = _weights(own)
        assert snap_weights.keys() == fresh.keys()
        assert all((snap_weights[k] == fresh[k]).all() for k in fresh)
    # the sham: the contaminated stage's recipe field by field, other items
    summaries = {s: json.loads((long[s] / "train_summary.json").read_text()) for s in ("contaminated", "sham")}
    for field in ("steps", "documents_or_rows", "precision", "trainable_params"):
        assert summaries["contaminated"][field] == summaries["sham"][field], field
    keys = {s: summaries[s]["key_fields"] for s in summaries}
    assert {k: v for k, v in keys["sham"].items() if k != "stage"} == {
        k: v for k, v in keys["contaminated"].items() if k != "stage"
    }
    texts = {s: read_training_texts(long[s]) for s in summaries}
    n_leaked = len(domain.split.leaked)
    assert texts["sham"][n_leaked:] == texts["contaminated"][n_leaked:]  # the same general rows
    benchmark = [q.question for q in domain.test]
    assert not any(b in t for b in benchmark for t in texts["sham"])  # no test item, leaked or not, in any form
    assert all(any(b in t for b in benchmark) for t in texts["contaminated"][:n_leaked])


def test_snapshots_need_the_constant_schedule_and_epochs_inside_the_run(tmp_path):
    cfg = train_config(tmp_path, "domain.leak_epochs=3", "snapshots=[1]")
    with pytest.raises(ContamlabError, match="needs domain.leak_schedule=constant"):
        snapshot_stages(cfg, model_store(cfg), "contaminated")
    cfg = train_config(tmp_path, *CONSTANT, "domain.leak_epochs=3", "snapshots=[3]")
    with pytest.raises(ContamlabError, match=r"epochs between 1 and domain.leak_epochs-1 \(3\)"):
        snapshot_stages(cfg, model_store(cfg), "contaminated")
    assert snapshot_stages(cfg, model_store(cfg), "clean") == {}
