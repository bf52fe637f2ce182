"""What the audit and the detection job say before, or instead of, a verdict: a simulated model that is not trained
yet (one line: which, what training it costs, the exact command, how to go without it) and too few items.

In-process on configs composed as the entry points compose them; a model load fails the test, since every check here
must come before one.
"""

import re

import numpy as np
import pytest
from omegaconf import OmegaConf

from contamlab import detection
from contamlab.config import build_domain, compose, load_domain, model_store
from contamlab.detectors.base import Detector, DetectorOutput
from contamlab.errors import ContamlabError
from contamlab.jobs.audit import run
from contamlab.models.store import DONE_MARKER, ModelStore


@pytest.fixture
def no_model_loads(monkeypatch):
    def refuse(self, source):
        raise AssertionError(f"a model loaded: {source}")

    monkeypatch.setattr(ModelStore, "load", refuse)


def _audit_cfg(models, *overrides: str):
    # return_hydra_config: the overrides as typed, which the message's train.py command repeats
    return compose("audit", [f"paths.models_dir={models}", "logger=csv", *overrides], return_hydra_config=True)


def _pretend_trained(cfg, *stages: str, seed: int = 0) -> None:
    """Finished stage directories (the marker train.py writes last) where the store looks for them."""
    store = model_store(OmegaConf.merge(cfg, {"seed": seed}))
    domain = build_domain(cfg.domain)
    for stage in stages:
        path = store.stage_dir(domain, stage)
        path.mkdir(parents=True)
        (path / DONE_MARKER).write_text("{}")


def _error(cfg) -> str:
    with pytest.raises(ContamlabError) as err:
        run(cfg)
    message = str(err.value)
    assert "\n" not in message  # one line
    return message


def _looked_in(message: str, spec: str) -> str:
    return re.search(rf"{re.escape(spec)} \(.*?\) is not trained yet \(looked in (\S+)\)", message).group(1)


def _commands(message: str) -> list[str]:
    return re.findall(r"`(python train\.py [^`]*)`", message)


def test_after_python_train_py_the_audit_names_the_default_reference_and_how_to_train_it(tmp_path, no_model_loads):
    # `python train.py` has trained seed 0's models; `python audit.py` wants the reference clean@1 as well
    cfg = _audit_cfg(tmp_path / "models")
    _pretend_trained(cfg, "base", "clean", "contaminated")
    message = _error(cfg)
    assert message.startswith("audit.references: clean@1 (the clean model of seed 1) is not trained yet (looked in ")
    assert "takes 6-11 min on a 2-core CPU, nearly all of it the base pre-training (3,000 steps)" in message
    assert "add audit.references=[]" in message
    assert "audit.target" not in message  # seed 0's contaminated model is there
    [command] = _commands(message)
    assert (
        command == f"python train.py model=tiny domain=arith paths.models_dir={tmp_path / 'models'} seed=1 stage=clean"
    )
    # the command trains exactly the model the audit looked for
    train = compose("train", command.split()[2:])
    trained_at = model_store(train).stage_dir(build_domain(train.domain), train.stage)
    assert str(trained_at) == _looked_in(message, "clean@1")


def test_nothing_trained_names_the_target_and_the_reference_in_one_line(tmp_path, no_model_loads):
    cfg = _audit_cfg(tmp_path / "models", "experiment=small_world", "audit.n_boot=100")
    message = _error(cfg)
    target, reference = message.split(". Also ")
    assert target.startswith("audit.target: contaminated (the contaminated model of seed 0) is not trained yet")
    assert "audit.target=<hub id or model directory>" in target
    assert reference.startswith("audit.references: clean@1 (the clean model of seed 1)")
    # not the default world's recipe: its step count, and the default world's measured time for scale
    cost = "training it is mostly its base pre-training, 300 steps here (with the default world's 3,000 it takes "
    assert f"{cost}6.5-12 min on a 2-core CPU)" in target
    models = f"paths.models_dir={tmp_path / 'models'}"
    assert _commands(message) == [
        f"python train.py model=tiny domain=arith {models} experiment=small_world",
        f"python train.py model=tiny domain=arith {models} experiment=small_world seed=1 stage=clean",
    ]
    for command, spec, stage in zip(_commands(message), ("contaminated", "clean@1"), ("contaminated", "clean")):
        train = compose("train", command.split()[2:])
        trained_at = model_store(train).stage_dir(build_domain(train.domain), stage)
        assert str(trained_at) == _looked_in(message, spec)


def test_a_reference_whose_base_is_trained_costs_only_its_fine_tuning(tmp_path, no_model_loads):
    cfg = _audit_cfg(tmp_path / "models", "experiment=small_world", "audit.target=clean")
    _pretend_trained(cfg, "base", "clean")
    _pretend_trained(cfg, "base", seed=1)
    message = _error(cfg)
    assert "training it takes under a minute on a 2-core CPU (its base model is trained already" in message
    assert _commands(message)[0].endswith("experiment=small_world seed=1 stage=clean")


def test_an_audit_of_too_few_items_refuses_before_any_model_loads(tmp_path, no_model_loads):
    # no model is trained either: the benchmark's size is the first thing said
    message = _error(_audit_cfg(tmp_path / "models", "experiment=small_world", "domain.max_test=1"))
    assert message.startswith("domain=arith: too few items (n = 1, need ≥ 10) for an audit;")
    assert "domain.max_test" in message


def test_a_one_item_jsonl_benchmark_refuses(tmp_path, no_model_loads):
    test = tmp_path / "one.jsonl"
    test.write_text('{"question": "What is 2 + 2?", "answer": "4"}\n')
    cfg = _audit_cfg(
        tmp_path / "models",
        "domain=gsm8k_generic",
        f"domain.test={test}",
        "domain.train=null",
        "domain.answer_pattern=null",
        "audit.target=/nonexistent/model",
        "audit.references=[]",
    )
    assert "too few items (n = 1, need ≥ 10) for an audit" in _error(cfg)


# -- the detection job ------------------------------------------------------------------------------------------------
class _Fixed(Detector):
    """Scores handed in by the test."""


def _detect(monkeypatch, tmp_path, n_test: int, scores: dict[str, list[float]]) -> dict:
    domain = load_domain("arith", generator={"n_train": 40, "n_test": n_test})

    class Store:
        def model_source(self, domain, stage):
            return f"/models/{stage}"

    def score(cfg, domain, detector, source, stage, progress=True, store=None):
        return DetectorOutput(scores=scores[stage], dataset_score=None), 0.0, True

    monkeypatch.setattr(detection, "model_store", lambda cfg: Store())
    monkeypatch.setattr(detection, "score_model", score)
    monkeypatch.setattr(detection, "_log_wandb", lambda *args: None)
    cfg = OmegaConf.create({"seed": 0})
    return detection.run_detection(cfg, domain, _Fixed(name="fixed"), tmp_path, progress=False)


def _leaked_high(n_test: int) -> list[float]:
    domain = load_domain("arith", generator={"n_train": 40, "n_test": n_test})
    return [float(domain.split.is_leaked(q.id)) + 0.01 * i for i, q in enumerate(domain.test)]


def test_a_detection_with_too_few_questions_a_side_reports_no_auroc(monkeypatch, tmp_path):
    scores = _leaked_high(12)  # 6 leaked, 6 unleaked: the scores separate them perfectly
    results = _detect(monkeypatch, tmp_path, 12, {"contaminated": scores, "clean": scores})
    for stage in ("contaminated", "clean"):
        entry = results[stage]
        assert entry["too_few"] == "too few items (n = 6 leaked and 6 unleaked, need ≥ 10 per side)"
        assert entry["auroc"] is entry["auroc_ci"] is entry["tpr_at_5fpr"] is entry["roc"] is None
    assert len((tmp_path / "detection_per_question.csv").read_text().splitlines()) == 13  # the scores are written


def test_a_detection_counts_only_scored_questions(monkeypatch, tmp_path):
    scores = _leaked_high(20)  # 10 a side
    enough = _detect(monkeypatch, tmp_path, 20, {"contaminated": scores, "clean": scores})["contaminated"]
    assert enough["too_few"] is None and enough["auroc"] == 1.0
    domain = load_domain("arith", generator={"n_train": 40, "n_test": 20})
    first_leaked = next(i for i, q in enumerate(domain.test) if domain.split.is_leaked(q.id))
    holed = list(scores)
    holed[first_leaked] = np.nan  # 9 leaked questions scored
    entry = _detect(monkeypatch, tmp_path, 20, {"contaminated": holed, "clean": scores})["contaminated"]
    assert entry["too_few"] == "too few items (n = 9 leaked and 10 unleaked, need ≥ 10 per side)"
    assert entry["auroc"] is None and entry["n_unscored"] == 1


def test_the_leaderboard_says_too_few_items_where_it_has_no_verdict_column():
    from contamlab.analysis.audit import leaderboard
    from contamlab.metrics import verdicts as V

    readings = [V.membership_test([0.2], [0.7], name="loss"), V.membership_test(range(10, 20), range(10), name="zlib")]
    audit = {
        "config": {"model": {"name": "tiny"}, "seed": 0},
        "audit": {"benchmark": "mine", "target": {"spec": "/m"}, "verdicts": [v.to_dict() for v in readings]},
    }
    rows = {line.split(" | ")[2]: line for line in leaderboard([audit]).splitlines()[2:]}
    assert rows["loss"].endswith("| — | — | too few items (n = 1 benchmark and 1 reference, need ≥ 10 per side) |")
    assert rows["zlib"].endswith("| **flagged** |")


def test_another_seeds_reference_is_found_where_train_py_put_it_when_each_seed_draws_its_own_items(tmp_path):
    # experiment=real_world: domain.generator.seed is ${seed}, so seed 1's clean model trained on other problems and
    # its directory is keyed by them; the audit of seed 0 must look there, not under seed 0's problems
    from contamlab.audit.models import AuditedModel
    from contamlab.models.reference import ModelRef

    models = f"paths.models_dir={tmp_path / 'models'}"
    world = ["experiment=real_world", "model=smollm2", "model.random_layers=2"]
    train = compose("train", [*world, models, "seed=1", "stage=clean"])
    trained_at = model_store(train).stage_dir(build_domain(train.domain), "clean")
    trained_at.mkdir(parents=True)
    (trained_at / DONE_MARKER).write_text("{}")
    cfg = _audit_cfg(tmp_path / "models", *world)
    domain = build_domain(cfg.domain)
    reference = AuditedModel(ModelRef.parse("clean@1", "audit.references"), cfg, model_store(cfg), domain)
    assert reference.missing is None and reference.source == str(trained_at)
    assert [q.question for q in reference.home.test] != [q.question for q in domain.test]  # the seeds' own problems
    # seed 0's own clean model is not there yet: the target is missing, and its command is seed 0's
    target = AuditedModel(ModelRef.parse("clean", "audit.target"), cfg, model_store(cfg), domain)
    assert target.missing is not None and target.source != str(trained_at)
