"""The faster LoRA step against the slower one, on a random two-layer SmolLM2 under the real-LM world's recipe.

- The frozen base held in bf16 (:mod:`contamlab.training.precision`) gives the same multiplies as autocast's casts:
  the adapter's bytes are identical with and without it.
- The loss at labelled positions only (``finetune.logits: labelled``, :mod:`contamlab.training.loss`): each row's
  gradient is the same up to the GEMM's rounding, which on an AMD EPYC gives the same bytes and on an Intel Xeon
  with AMX does not (the product's blocking follows its row count). So ``logits: all`` keys as before the option
  existed and ``labelled`` keys a model of its own; the two adapters agree to within bf16 rounding.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import numpy as np
import pytest
from test_real_world import TINY_REAL_WORLD

from contamlab import stages
from contamlab.config import compose, model_store


def _train(tmp: Path, name: str, *overrides: str) -> Path:
    """The clean stage of the tiny real-LM world into ``tmp / name`` (the random base comes from ``tmp / 'cache'``)."""
    from jobs import run_job

    cfg = compose(
        "train",
        [*TINY_REAL_WORLD, f"paths.models_dir={tmp / name}", f"paths.cache_dir={tmp / 'cache'}", "stage=clean",
         f"paths.output_dir={tmp / name / 'run'}", *overrides],
    )  # fmt: skip
    return run_job("train", cfg)["clean"]


def _sha(path: Path) -> str:
    return hashlib.sha1((path / "adapter_model.safetensors").read_bytes()).hexdigest()


@pytest.mark.xdist_group("random_smollm2")  # one worker builds the random model (conftest)
def test_the_frozen_base_in_bf16_trains_the_same_bytes(data_dir, tmp_path, monkeypatch, random_smollm2_in):
    random_smollm2_in(tmp_path / "cache")
    cast: list[int] = []
    hold = stages.hold_frozen_linears
    monkeypatch.setattr(stages, "hold_frozen_linears", lambda model, dtype: cast.append(hold(model, dtype)))
    fast = _train(tmp_path, "fast")
    assert cast and cast[0] > 1_000_000  # the two layers' attention and MLP weights (the tied embedding stays)
    monkeypatch.setattr(stages, "hold_frozen_linears", lambda model, dtype: 0)  # autocast casts every pass again
    slow = _train(tmp_path, "slow")
    assert _sha(fast) == _sha(slow)


@pytest.mark.xdist_group("random_smollm2")  # one worker builds the random model (conftest)
def test_the_labelled_logits_train_the_same_adapter_and_all_keys_its_own(data_dir, tmp_path, random_smollm2_in):
    from safetensors.numpy import load_file

    random_smollm2_in(tmp_path / "cache")
    labelled = _train(tmp_path, "labelled", "finetune.logits=labelled")
    full = _train(tmp_path, "full", "finetune.logits=all")
    assert labelled.name != full.name  # `labelled` is a model of its own: bytes equal on some CPUs only
    a, b = (load_file(p / "adapter_model.safetensors") for p in (labelled, full))
    assert sorted(a) == sorted(b)
    for name in a:  # the same update, or apart by the rounding of a differently blocked bf16 product
        x, y = a[name], b[name]
        # Adam's first steps move each weight by about ±lr, so a gradient near 0 may flip: measured on an Intel
        # Xeon with AMX, 0.00-0.14 % of the elements flip sign and the tensors differ by at most 4.8 % (Frobenius);
        # a loss on the wrong positions would flip about half of them
        assert np.mean(np.sign(x) != np.sign(y)) < 0.005, name
        assert np.linalg.norm(x - y) <= 0.1 * np.linalg.norm(y), name
    curves = [json.loads((p / "train_summary.json").read_text())["loss_curve"] for p in (labelled, full)]
    assert len(curves[0]) == len(curves[1]) >= 1
    assert curves[0] == pytest.approx(curves[1], rel=1e-3)  # the logged mean, summed over fewer rows
    stores = [model_store(compose("train", [*TINY_REAL_WORLD, f"finetune.logits={v}"])) for v in ("labelled", "all")]
    assert stores[0]._finetune_key()["logits"] == "labelled" and "logits" not in stores[1]._finetune_key()
