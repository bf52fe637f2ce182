"""The faster LoRA step against the slower one, on a random two-layer SmolLM2 under the real-LM world's recipe.

- The frozen base held in bf16 (:mod:`contamlab.training.precision`) gives the same multiplies as autocast's casts:
  the adapter's bytes are identical with and without it.
- The loss at labelled positions only (``finetune.logits: labelled``, :mod:`contamlab.training.loss`) sums over fewer
  rows: the loss curve stays within float rounding of the full projection's (a stated tolerance), and the stage key
  tells the two apart.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from test_real_world import TINY_REAL_WORLD

from contamlab import stages
from contamlab.config import compose, model_store


def _train(tmp: Path, name: str, *overrides: str) -> Path:
    from jobs import run_job

    cfg = compose(
        "train",
        [*TINY_REAL_WORLD, f"paths.models_dir={tmp / name}", f"paths.cache_dir={tmp / 'cache'}", "stage=clean",
         f"paths.output_dir={tmp / name / 'run'}", *overrides],
    )  # fmt: skip
    return run_job("train", cfg)["clean"]


def _sha(path: Path) -> str:
    return hashlib.sha1((path / "adapter_model.safetensors").read_bytes()).hexdigest()


def test_the_frozen_base_in_bf16_trains_the_same_bytes(data_dir, tmp_path, monkeypatch):
    cast: list[int] = []
    hold = stages.hold_frozen_linears
    monkeypatch.setattr(stages, "hold_frozen_linears", lambda model, dtype: cast.append(hold(model, dtype)))
    fast = _train(tmp_path, "fast")
    assert cast and cast[0] > 1_000_000  # the two layers' attention and MLP weights (the tied embedding stays)
    monkeypatch.setattr(stages, "hold_frozen_linears", lambda model, dtype: 0)  # autocast casts every pass again
    slow = _train(tmp_path, "slow")
    assert _sha(fast) == _sha(slow)


def test_the_labelled_logits_keep_the_loss_curve_and_their_own_key(data_dir, tmp_path):
    labelled = _train(tmp_path, "labelled", "finetune.logits=labelled")
    full = _train(tmp_path, "full", "finetune.logits=all")
    curves = [json.loads((p / "train_summary.json").read_text())["loss_curve"] for p in (labelled, full)]
    assert len(curves[0]) == len(curves[1]) >= 1
    # bf16 autocast: the same mean over the same tokens, summed in another order
    assert curves[0] == pytest.approx(curves[1], rel=2e-3)
    keys = [model_store(compose("train", [*TINY_REAL_WORLD, f"finetune.logits={v}"])) for v in ("labelled", "all")]
    assert keys[0].finetune["logits"] == "labelled" and labelled.name != full.name
    assert "logits" not in keys[1]._finetune_key()  # the full projection keeps the directories it always had
