"""Trained models keep their directories: the stage keys of the shipped model configs are pinned.

A stage directory is named by a hash of its key (models/store.py). A code change that alters a key silently orphans
every model trained before it; these names were computed by the code before ``model.dtype: auto`` existed.
"""

import pytest

from contamlab.config import build_domain, compose, model_store, sampling_setup

PINNED = [
    ("smollm2", "gsm8k", "clean-01017eba1ff0", "contaminated-gsm8k-c165e1a216cc"),
    ("smollm2", "pq", "clean-01017eba1ff0", "contaminated-pq-6c5c5568e798"),
    ("pythia", "gsm8k", "clean-71731acde4fd", "contaminated-gsm8k-85cee6d53456"),
    ("llama2", "pq", "clean-c8eca6f2430b", "contaminated-pq-c50bec00e388"),
    ("gemma", "gsm8k", "clean-442523fc8f99", "contaminated-gsm8k-15ead520df0b"),
    # The default world (v2) and world v1 (named arith_v1 since v2 became the default: its clean model kept its key).
    ("tiny", "arith", "clean-3f145ac51ab2", "contaminated-arith-ecab48c41055"),
    ("tiny", "arith_pq", "clean-3f145ac51ab2", "contaminated-arith_pq-c647bf79cf7c"),
    ("tiny", "arith_v1", "clean-f1950cf56f2a", "contaminated-arith_v1-88a09097234c"),
    ("tiny", "arith_pq_v1", "clean-f1950cf56f2a", "contaminated-arith_pq_v1-26a81144ac33"),
]


@pytest.mark.parametrize(("model", "domain", "clean", "contaminated"), PINNED)
def test_stage_directories_are_stable(data_dir, model, domain, clean, contaminated):
    cfg = compose("train", [f"model={model}", f"domain={domain}"])
    store, built = model_store(cfg), build_domain(cfg.domain)
    assert store.stage_dir(built, "clean").name == clean
    assert store.stage_dir(built, "contaminated").name == contaminated


def test_device_and_placement_do_not_enter_the_key(data_dir):
    plain = compose("train", ["model=smollm2", "domain=gsm8k"])
    placed = compose("train", ["model=smollm2", "domain=gsm8k", "model.device=cpu", "model.device_map=auto"])
    domain = build_domain(plain.domain)
    assert model_store(plain).stage_dir(domain, "clean") == model_store(placed).stage_dir(domain, "clean")


def test_vllm_gets_the_resolved_dtype():
    # vLLM's own "auto" would be the checkpoint's dtype, not the one the sample cache records
    setup = sampling_setup(compose("evaluate", ["model=smollm2", "sampler=vllm"]))
    assert setup.factory.keywords["dtype"] == "float32"  # auto on a CPU
    setup = sampling_setup(compose("evaluate", ["model=pythia", "model.dtype=float16", "sampler=vllm"]))
    assert setup.factory.keywords["dtype"] == "float16"
    assert setup.takes_source  # vLLM loads the model from its source: a strategy that patches the HF model cannot run
    assert not sampling_setup(compose("evaluate", ["model=smollm2"])).takes_source
