"""Each committed study artifact is what its ``make`` target rebuilds.

The targets' commands are echoed (``make PY="echo python"``: the shell loops run, nothing else does), each artifact's
run is found among them, and the models the artifact names are the ones those commands train and read: the stage keys
are composed from the echoed overrides and compared with the keys the artifact recorded. A recipe default changed after
a study ran (as ``finetune.logits: labelled`` was, after the evidence study) fails here until the target pins the old
value or the study is run again.
"""

from __future__ import annotations

import functools
import json
import shlex
import subprocess
from pathlib import Path

import pytest
from e2e import stamp

REPO = Path(__file__).resolve().parents[1]
EVIDENCE = sorted((REPO / "results" / "evidence").glob("*.json"))
SHIFT = sorted((REPO / "results" / "shift").glob("*.json"))
RESTORATION = sorted((REPO / "results" / "restoration").glob("*.json"))
# Settings that name no model: left out of the composed configs (the sweeps among them are not single values)
NOT_KEYS = ("hydra.", "trainer.", "progress=", "detector", "strategy=", "m=", "snapshots=")
STAGES = ("clean", "contaminated", "sham")


@functools.cache
def echoed(*targets: str) -> tuple[tuple[str, ...], ...]:
    """The commands ``make <targets>`` runs, each without its leading ``python``."""
    done = subprocess.run(
        ["make", "-s", "--no-print-directory", "-C", str(REPO), *targets, "PY=echo python", stamp()],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout[-1500:] + done.stderr[-1500:]
    return tuple(tuple(shlex.split(line)[1:]) for line in done.stdout.splitlines() if line.startswith("python "))


def _settings(args: tuple[str, ...]) -> dict[str, str]:
    """A command's overrides, with the seed's default (0) where it gives none."""
    return {"seed": "0", **dict(a.split("=", 1) for a in args if "=" in a and not a.startswith("-"))}


def _naming(args: tuple[str, ...]) -> dict[str, str]:
    """The overrides that decide which models a command names."""
    return {k: v for k, v in _settings(args).items() if not f"{k}=".startswith(NOT_KEYS)}


def _matching(commands, program: str, **want: str) -> list[tuple[str, ...]]:
    """The commands of ``program`` whose settings include ``want``."""
    return [c for c in commands if c[0] == program and all(_settings(c).get(k) == v for k, v in want.items())]


def _find(commands, program: str, **want: str) -> tuple[str, ...]:
    """The one command of ``program`` whose settings include ``want``."""
    found = _matching(commands, program, **want)
    assert len(found) == 1, f"{program} {want}: {len(found)} commands of the target match"
    return found[0]


_NAMES: dict[tuple[str, tuple[str, ...]], dict[str, str]] = {}


def _keys(task: str, overrides: tuple[str, ...], stages: tuple[str, ...]) -> dict[str, str]:
    """Each stage's directory name (``<stage>[-<domain>]-<key>``) under the config ``overrides`` compose."""
    from omegaconf import OmegaConf

    from contamlab.config import build_domain, compose, model_store

    kept = [o for o in overrides if "=" in o and not o.startswith(("-", *NOT_KEYS))]
    cfg = compose(task, ["audit.references=[]", *kept] if task == "audit" else kept)
    # what a stage's key reads: two tasks that agree on it name the same models (a domain's items take seconds)
    parts = OmegaConf.to_container(OmegaConf.masked_copy(cfg, ["model", "domain", "base", "finetune", "seed"]))
    seen = (json.dumps(parts, sort_keys=True, default=str), stages)
    if seen not in _NAMES:
        store, domain = model_store(cfg), build_domain(cfg.domain)
        _NAMES[seen] = {stage: store.stage_dir(domain, stage).name for stage in stages}
    return _NAMES[seen]


def _key(name: str) -> str:
    return name.rsplit("-", 1)[-1]


def _at_dose(args: tuple[str, ...], dose: int | str) -> tuple[str, ...]:
    return (*(a for a in args if not a.startswith("domain.leak_epochs=")), f"domain.leak_epochs={dose}")


@pytest.mark.parametrize("path", EVIDENCE, ids=lambda p: p.stem)
def test_make_evidence_full_trains_and_scores_the_models_of_each_evidence_artifact(path):
    a = json.loads(path.read_text())
    commands = echoed("evidence-full")
    world = {"experiment": a["experiment"], "model": a["model"], "seed": str(a["seed"])}
    train = _find(commands, "train.py", **world)
    # the top dose: the lower ones are snapshots of its run (tests/test_dose_snapshots.py), under their own keys
    dose = max(a["detect"], key=int)
    made = _keys("train", _at_dose(train, dose), STAGES)
    assert _key(made["clean"]) == a["train"]["clean"]["key"], f"{path.name}: clean model {made['clean']}"
    for stage in ("contaminated", "sham"):
        assert _key(made[stage]) == a["train"][f"{stage}@{dose}"]["key"], f"{path.name}: {stage} at {dose}"
    for top in _detections(commands, world, dose):
        assert _keys("evaluate", top, STAGES) == made, f"{path.name}: detection reads other models than trained"
    scored = set()
    for dose in a["detect"]:  # each dose's detections name that dose's models of the same run
        for detect in _detections(commands, world, dose):
            assert _naming(detect) == _naming(_at_dose(train, dose)), f"{path.name}: dose {dose}"
            views = _settings(detect)["detector.text"].removeprefix("choice(").removesuffix(")").split(",")
            scored |= {f"{d}/{v}" for d in _settings(detect)["detector"].split(",") for v in views}
    assert set(a["readings"]) == scored, f"{path.name}: in one of the two only: {sorted(scored ^ set(a['readings']))}"


def _detections(commands, world: dict[str, str], dose: str) -> list[tuple[str, ...]]:
    """The target's detection sweeps of one world at one dose: the main one and, where the part has it, ``-more``."""
    found = _matching(commands, "evaluate.py", **world, **{"domain.leak_epochs": str(dose)})
    assert 1 <= len(found) <= 2, f"evaluate.py {world} at {dose}: {len(found)} commands of the target match"
    return found


@pytest.mark.parametrize("path", SHIFT, ids=lambda p: p.stem)
def test_make_shift_null_runs_each_shift_artifact_on_its_models(path):
    from contamlab.studies.shift import DETECTORS

    a = json.loads(path.read_text())
    commands = echoed("shift-null", "shift-null-seeds", "shift-null-gemma3")
    out = f"results/shift/{path.name}"
    runs = [c for c in commands if c[:3] == ("-m", "contamlab.studies.shift", "run") and out in c]
    assert len(runs) == 1, f"no shift-null target writes {out}"
    run = runs[0]
    # the same audits (the command may differ in settings that keep the models, such as a pinned default)
    assert run[run.index("--draws") + 1] == str(a["draws"])
    assert ("--choice" in run) == bool(a.get("choices")), "the choice condition differs between target and artifact"
    given = _keys("audit", run, ("clean", "sham"))
    assert given == {m: Path(a["models"][m]).name for m in given}
    # the training the target runs first makes those very models
    world = {k: v for k, v in _settings(run).items() if k in ("experiment", "model", "seed")}
    assert _keys("train", _find(commands, "train.py", **world), ("clean", "sham")) == given
    detectors = run[run.index("--detectors") + 1].split(",") if "--detectors" in run else list(DETECTORS)
    assert {r["reading"].split("/")[0] for r in a["readings"]} == set(detectors)


@pytest.mark.parametrize("path", RESTORATION, ids=lambda p: p.stem)
def test_make_restoration_and_dose_gap_train_the_models_of_each_restoration_artifact(path):
    a = json.loads(path.read_text())
    commands = echoed("restoration", "dose-gap")
    world = {"experiment": a["experiment"], "model": a["model"], "seed": str(a["seed"])}
    trains = [c for c in commands if c[0] == "train.py" and all(_settings(c).get(k) == v for k, v in world.items())]
    assert trains, f"{path.name}: no target trains {world}"
    made = [_keys("train", _at_dose(c, a["dose"]), STAGES) for c in trains]
    want = {"clean": a["train"]["clean"]["key"], "contaminated": a["train"]["contaminated"]["key"]}
    assert want in [{k: _key(m[k]) for k in want} for m in made], f"{path.name}: {made}"
    sweep = [c for c in commands if c[0] == "evaluate.py" and all(_settings(c).get(k) == v for k, v in world.items())]
    assert any(str(a["m"]) == _settings(c)["m"] and str(a["dose"]) in _settings(c)["domain.leak_epochs"].split(",")
               for c in sweep), f"{path.name}: no sweep at m = {a['m']}, dose {a['dose']}"  # fmt: skip
