"""The real-LM world's plumbing (experiment=real_world) on a random two-layer SmolLM2, and its membership truth.

No real weights: ``model.random_layers=2`` builds a randomly initialised model of SmolLM2's architecture from the
packaged GGUF's metadata and tokenizer (models/random_init.py), so the LoRA stages, the bf16 autocast and the
recorded training texts run as they do on the real model, in seconds.
"""

import csv
import dataclasses
import json
import shutil

import pytest

from contamlab.audit.nonmembers import nonmember_items
from contamlab.config import build_domain, compose, model_store
from contamlab.data.domain import Domain
from contamlab.errors import ContamlabError
from contamlab.io import content_hash
from contamlab.models.packaged import SMOLLM2
from contamlab.models.random_init import RANDOM_MARKER, random_dir_name, shrink_config
from contamlab.models.spec import HubModel, SmolLM2Model, TinyModel
from contamlab.models.store import read_training_texts
from contamlab.stages import stage_texts

# The real_world recipe at a plumbing size: 8 clean rows (one optimiser step), the 10 leaked questions once (two).
TINY_REAL_WORLD = [
    "experiment=real_world",
    "model=smollm2",
    "model.random_layers=2",
    "domain.generator.n_test=20",
    "domain.leak_epochs=1",
    "domain.leak_general=0",
    "finetune.clean_n_domain=8",
    "finetune.general.n=0",
    "finetune.max_length=128",
    "logger=csv",
    "trainer.enable_progress_bar=false",
]


def _found(questions: list[str], texts: list[str]) -> list[str]:
    """The questions that occur verbatim inside some training text."""
    return [q for q in questions if any(q in t for t in texts)]


@pytest.mark.xdist_group("random_smollm2")  # one worker builds the random model (conftest)
def test_real_world_trains_on_a_random_smollm2(data_dir, tmp_path, random_smollm2_in):
    from contamlab.jobs.train import run

    cache = tmp_path / "cache"
    random_smollm2_in(cache)  # the worker's build; the cleared cache below builds one here again
    cfg = compose("train", [*TINY_REAL_WORLD, f"paths.models_dir={tmp_path / 'models'}", f"paths.cache_dir={cache}"])
    stages = run(cfg)
    assert list(stages) == ["clean", "contaminated", "sham"]  # experiment=real_world trains the sham control too

    # The random base was built from the GGUF's metadata; the real model was never dequantised.
    base = cache / "smollm2" / random_dir_name(2)
    assert (base / RANDOM_MARKER).is_file()
    assert json.loads((base / "config.json").read_text())["num_hidden_layers"] == 2
    assert not (cache / "smollm2" / SMOLLM2.converted_name).exists()

    summaries = {stage: json.loads((path / "train_summary.json").read_text()) for stage, path in stages.items()}
    for stage, path in stages.items():
        summary = summaries[stage]
        adapter = json.loads((path / "adapter_config.json").read_text())  # LoRA: an adapter, not full weights
        assert adapter["base_model_name_or_path"] == str(base), stage
        assert summary["precision"] == "bf16-mixed", stage
        assert summary["steps"] >= 1, stage

    # A random model's stages are not the real model's: random_layers is part of the model key.
    real = model_store(compose("train", [*TINY_REAL_WORLD, "model.random_layers=null"]))
    assert "random_layers" not in real.model.key()
    domain = build_domain(cfg.domain)
    assert stages["clean"].name != real.stage_dir(domain, "clean").name
    assert stages["contaminated"].name != real.stage_dir(domain, "contaminated").name
    assert summaries["clean"]["key_fields"]["parent"]["random_layers"] == 2

    # The membership truth: the contaminated stage read every leaked test question and no unleaked one; the clean
    # stage read none.
    leaked = [q.question for q in domain.test if domain.split.is_leaked(q.id)]
    unleaked = [q.question for q in domain.test if not domain.split.is_leaked(q.id)]
    assert len(leaked) == len(unleaked) == 10
    contaminated = read_training_texts(stages["contaminated"])
    clean = read_training_texts(stages["clean"])
    assert contaminated and clean
    assert _found(leaked, contaminated) == leaked
    assert _found(unleaked, contaminated) == []
    assert _found(leaked + unleaked, clean) == []
    assert _found(leaked + unleaked, read_training_texts(stages["sham"])) == []  # fresh problems only

    # A cleared cache: the base the adapters point at is built again, with the same weights, when a job loads a
    # stage (the slow tier's twin below: when a stage trains on it)
    weights = (base / "model.safetensors").read_bytes()
    shutil.rmtree(base)
    model_store(cfg).load(str(stages["contaminated"]))
    assert (base / "model.safetensors").read_bytes() == weights


@pytest.mark.slow
def test_a_cleared_cache_is_built_again_for_a_stage_that_trains_on_it(data_dir, tmp_path):
    """The random base is rebuilt, byte for byte, when the contaminated stage trains after the cache was cleared.

    Slow tier: two builds of the random model (reading the GGUF's metadata, about 8 s each on 2 cores) and the stages.
    """
    from contamlab.jobs.train import run

    cache = tmp_path / "cache"
    cfg = compose("train", [*TINY_REAL_WORLD, f"paths.models_dir={tmp_path / 'models'}", f"paths.cache_dir={cache}"])
    stages = run(cfg)
    base = cache / "smollm2" / random_dir_name(2)
    weights = (base / "model.safetensors").read_bytes()
    shutil.rmtree(base)
    shutil.rmtree(stages["contaminated"])
    assert list(run(cfg)) == ["clean", "contaminated", "sham"]
    assert (base / "model.safetensors").read_bytes() == weights
    assert json.loads((stages["contaminated"] / "adapter_config.json").read_text())["base_model_name_or_path"] == str(
        base
    )


def test_random_layers_keeps_real_keys_and_is_checked():
    from transformers import Gemma3TextConfig

    # The key of the real model is the one from before the field existed (its trained stages keep their names).
    assert content_hash(SmolLM2Model(name="smollm2").key()) == "6d635ff2939c"
    assert SmolLM2Model(name="smollm2", random_layers=2).key()["random_layers"] == 2
    assert not any(f.name == "random_layers" for f in dataclasses.fields(HubModel) + dataclasses.fields(TinyModel))
    for bad in (0, -1, True, "2"):
        with pytest.raises(ContamlabError, match="model.random_layers"):
            SmolLM2Model(name="smollm2", random_layers=bad)

    # Gemma 3's per-layer attention kinds shrink with the layer count, keeping the pattern's global layer.
    config = Gemma3TextConfig(num_hidden_layers=12, vocab_size=64, hidden_size=16, intermediate_size=32)
    small = shrink_config(config, 2)
    assert small.num_hidden_layers == 2 and small.layer_types == ["sliding_attention", "full_attention"]
    assert config.num_hidden_layers == 12  # a copy
    with pytest.raises(ContamlabError, match="between 1 and 12"):
        shrink_config(config, 13)


# The worlds whose audits read generated non-members: (overrides, stages, the leak's training wording is verbatim).
WORLDS = {
    "real_world": (["experiment=real_world", "model=smollm2"], ("clean", "contaminated"), True),
    "real_world_pq": (["experiment=real_world_pq", "model=smollm2"], ("clean", "contaminated"), False),
    "small_world": (["experiment=small_world", "model=tiny"], ("base", "clean", "contaminated"), True),
}


@pytest.mark.parametrize("world", list(WORLDS))
def test_audit_nonmembers_are_in_no_training_text(data_dir, world):
    overrides, stages, verbatim = WORLDS[world]
    cfg = compose("train", overrides)
    domain: Domain = build_domain(cfg.domain)
    view, _ = nonmember_items(domain, "auto")
    assert view is not None
    nonmembers = [q.question for q in view.test]
    assert len(nonmembers) == len(domain.test)
    tests = {q.question for q in domain.test}
    assert not tests & set(nonmembers)

    texts = {stage: stage_texts(cfg, domain, stage) for stage in stages}
    for stage, stage_texts_ in texts.items():
        assert _found(nonmembers, stage_texts_) == [], f"{world}: a non-member is in the {stage} stage's texts"

    # The same check finds what the contaminated stage did train on: the leaked questions in their training wording
    # (verbatim: the test questions themselves), so an empty result above is not a check that cannot fail.
    trained = [q.question for q in domain.leaked_training_questions()]
    assert trained and _found(trained, texts["contaminated"]) == trained
    if verbatim:
        leaked = [q.question for q in domain.test if domain.split.is_leaked(q.id)]
        assert len(leaked) == len(domain.test) // 2 and _found(leaked, texts["contaminated"]) == leaked


@pytest.mark.slow
def test_a_shrunk_real_smollm2_world_leaks_what_it_should(data_dir, tmp_path):
    """Real SmolLM2 weights, the real_world recipe on 40 problems: loss separates the leaked half only after the leak.

    About 4 minutes on 2 cores (the real model's conversion included). The AUROCs are checked against sklearn's on
    the per-question scores the detection job writes.
    """
    from sklearn.metrics import roc_auc_score

    from contamlab.jobs.evaluate import run as evaluate
    from contamlab.jobs.train import run as train

    shrunk = ["experiment=real_world", "model=smollm2", "domain.generator.n_test=40", "logger=csv"]
    paths = [f"paths.models_dir={tmp_path / 'models'}", f"paths.cache_dir={tmp_path / 'cache'}"]
    train(compose("train", [*shrunk, *paths, "trainer.enable_progress_bar=false"]))
    out = tmp_path / "detect"
    out.mkdir()
    overrides = [*shrunk, *paths, f"paths.output_dir={out}", "strategy=none", "detector=loss", "progress=false"]
    result = evaluate(compose("evaluate", overrides))
    with (out / "detection_per_question.csv").open() as f:
        rows = list(csv.DictReader(f))
    leaked = [r["leaked"] == "1" for r in rows]
    assert sum(leaked) == 20
    for which in ("contaminated", "clean"):
        want = roc_auc_score(leaked, [float(r[f"score_{which}"]) for r in rows])
        assert result["detection"][which]["auroc"] == pytest.approx(want, abs=1e-3), which
    contaminated, clean = result["detection"]["contaminated"], result["detection"]["clean"]
    assert contaminated["auroc"] >= 0.8 and contaminated["auroc_ci"][0] > 0.5
    assert clean["auroc_ci"][0] < 0.5 < clean["auroc_ci"][1]
