"""The lm-eval internals that ``contamlab.data.lm_eval.compat`` relies on, checked against the installed lm-eval.

Each test names what changed and what to re-check, so that an lm-eval upgrade fails here, loudly, instead of in a
prompt or a grade that is silently different. The version test fails on any other version than the one the compat
module was written for: re-check every item of :data:`RECHECK`, then move ``PINNED_VERSION`` and the pin in
pyproject.toml together.
"""

import inspect
import json
import re
from pathlib import Path

import pytest

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is an optional extra: pip install 'contamlab[lm-eval]'")

from contamlab.data.lm_eval import compat  # noqa: E402
from contamlab.data.lm_eval.domain import FEWSHOT_SEED  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
#: What compat.py takes from lm-eval's internals, each with the compat function that uses it.
RECHECK = (
    "lm_eval.tasks._yaml_loader.load_yaml(path, *, resolve_func) -> compat.load_yaml",
    "lm_eval.tasks._index.TaskIndex._iter_yaml_files and _IGNORE_DIRS -> compat.yaml_files, compat.IGNORED_DIRS",
    "TaskManager's built-in folder (Path(lm_eval.tasks.manager.__file__).parent) -> compat.tasks_folder",
    "ConfigurableTask._filters (ensembles with .name and .apply) -> compat.filter_ensembles",
    "ConfigurableTask.build_qa_turn / resolve_field / fewshot_cfg, as fewshot_context uses them -> "
    "compat.fewshot_target",
    "lm_eval.utils.env (a jinja2 Environment) and apply_template's env.from_string -> compat.templates_compiled_once",
    "lm_eval.defaults.DEFAULT_OTHER_SEED -> contamlab.data.lm_eval.domain.FEWSHOT_SEED",
)


def changed(what: str, user: str, detail: str) -> str:
    """The failure message: what lm-eval changed, which compat function relies on it, and what to do."""
    return (
        f"lm-eval {lm_eval.__version__} changed {what}, which {user} relies on: {detail}. Re-check {user} against "
        f"this lm-eval (contamlab.data.lm_eval.compat was written for lm-eval {compat.PINNED_VERSION})."
    )


def test_the_installed_lm_eval_is_the_version_compat_was_written_for():
    recheck = "\n  - ".join(RECHECK)
    assert lm_eval.__version__ == compat.PINNED_VERSION, (
        f"lm-eval {lm_eval.__version__} is installed; contamlab.data.lm_eval.compat was written for "
        f"{compat.PINNED_VERSION}. Re-check each internal it uses (the other tests of this file check their shape):"
        f"\n  - {recheck}\nthen set compat.PINNED_VERSION and the lm-eval pin in pyproject.toml to the new version."
    )
    pins = re.findall(r'"lm-eval==([^"]+)"', (REPO / "pyproject.toml").read_text())
    assert pins == [compat.PINNED_VERSION], (
        f"pyproject.toml pins lm-eval {pins}, compat.PINNED_VERSION is {compat.PINNED_VERSION}: move them together"
    )


def test_the_yaml_loader():
    from lm_eval.tasks import _yaml_loader

    user = "compat.load_yaml"
    load = getattr(_yaml_loader, "load_yaml", None)
    assert callable(load), changed("lm_eval.tasks._yaml_loader.load_yaml", user, "it is gone")
    params = inspect.signature(load).parameters
    first = next(iter(params.values()))
    assert first.kind in (first.POSITIONAL_ONLY, first.POSITIONAL_OR_KEYWORD), changed(
        "load_yaml's signature", user, f"its first parameter is {first}, not the path"
    )
    assert "resolve_func" in params and params["resolve_func"].default is True, changed(
        "load_yaml's signature", user, f"resolve_func is {params.get('resolve_func')}, not a flag defaulting to True"
    )
    cfg = compat.load_yaml(compat.tasks_folder() / "gsm8k" / "gsm8k-cot.yaml", resolve_func=False)
    assert isinstance(cfg, dict) and cfg.get("task") == "gsm8k_cot", changed(
        "what load_yaml returns", user, f"gsm8k-cot.yaml reads as {type(cfg).__name__} {str(cfg)[:200]}"
    )


def test_the_task_index_walks_folders_in_compats_order(tmp_path):
    from lm_eval.tasks import _index

    user = "compat.yaml_files"
    index = getattr(_index, "TaskIndex", None)
    walk = getattr(index, "_iter_yaml_files", None)
    assert callable(walk), changed("lm_eval.tasks._index.TaskIndex._iter_yaml_files", user, "it is gone")
    ignored = getattr(_index, "_IGNORE_DIRS", None)
    assert ignored == compat.IGNORED_DIRS, changed(
        "the folders the task index skips", "compat.IGNORED_DIRS", f"_IGNORE_DIRS is {ignored!r}"
    )
    for name in ("b/z.yaml", "a.yaml", "B/a.yaml", "a/b/c.yaml", "__pycache__/x.yaml", "a/.ipynb_checkpoints/y.yaml"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("task: x\n")
    theirs, ours = list(walk(tmp_path)), compat.yaml_files(tmp_path)
    assert theirs == ours, changed("the order or the set of files the task index reads", user, f"{theirs} != {ours}")
    from lm_eval.tasks import manager

    assert Path(manager.__file__).parent == compat.tasks_folder(), changed(
        "the folder of the built-in tasks", "compat.tasks_folder", f"TaskManager reads {Path(manager.__file__).parent}"
    )


@pytest.fixture(scope="module")
def gsm8k_cot(tmp_path_factory):
    """lm-eval's ``gsm8k_cot`` through its public API, on one local document."""
    from lm_eval.tasks import TaskManager

    data = tmp_path_factory.mktemp("gsm8k") / "test.jsonl"
    data.write_text(json.dumps({"question": "What is 2 + 2?", "answer": "2 + 2 = 4.\n#### 4"}) + "\n")
    manager = TaskManager(include_defaults=False, include_path=str(compat.tasks_folder() / "gsm8k"))
    files = {"data_files": {"test": str(data)}}
    spec = {"task": "gsm8k_cot", "dataset_path": "json", "dataset_name": None, "dataset_kwargs": files}
    return manager.load({"group": "contamlab_compat", "task": [spec]})["tasks"]["gsm8k_cot"]


def test_a_tasks_filter_ensembles(gsm8k_cot):
    user = "compat.filter_ensembles"
    assert isinstance(vars(gsm8k_cot).get("_filters"), list), changed(
        "where a task keeps its filter ensembles", user, "ConfigurableTask has no list _filters"
    )
    ensembles = compat.filter_ensembles(gsm8k_cot)
    names = [getattr(f, "name", None) for f in ensembles]
    assert names == ["strict-match", "flexible-extract"], changed(
        "the filter ensembles built from gsm8k_cot's filter_list", user, f"names {names}"
    )
    assert all(callable(getattr(f, "apply", None)) for f in ensembles), changed(
        "the filter ensemble's interface", user, "an ensemble has no apply(instances)"
    )


def test_a_fewshot_examples_target(gsm8k_cot):
    from lm_eval.api.task import ConfigurableTask

    user = "compat.fewshot_target"
    turn = inspect.signature(ConfigurableTask.build_qa_turn).parameters
    missing = {"q", "c", "a", "gen_prefix", "tgt_delim", "few_delim"} - set(turn)
    assert not missing, changed("ConfigurableTask.build_qa_turn's parameters", user, f"{sorted(missing)} are gone")
    assert "build_qa_turn(" in inspect.getsource(ConfigurableTask.fewshot_context), changed(
        "how fewshot_context renders an example", user, "it no longer calls build_qa_turn"
    )
    assert callable(getattr(ConfigurableTask, "resolve_field", None)), changed(
        "ConfigurableTask.resolve_field", user, "it is gone"
    )
    shots = gsm8k_cot.fewshot_cfg
    missing = {"doc_to_choice", "doc_to_target", "gen_prefix", "target_delimiter"} - set(dir(shots))
    assert not missing, changed("the task's fewshot_cfg", user, f"{sorted(missing)} are gone")
    # the example as the harness's own prompt shows it: its text, then what fewshot_target gives
    example = shots.samples[0]
    text = gsm8k_cot.doc_to_text(example)
    gsm8k_cot.set_fewshot_seed(seed=FEWSHOT_SEED)
    context = gsm8k_cot.fewshot_context(list(gsm8k_cot.eval_docs)[0], num_fewshot=2)
    target = compat.fewshot_target(gsm8k_cot, example, text, None)
    assert target.startswith(" There are 15 trees") and context.startswith(text + target), changed(
        "the text of a few-shot example", user, f"the prompt starts {context[:300]!r}, the example gives {target!r}"
    )


def test_the_fewshot_seed_is_lm_evals_default():
    from lm_eval import defaults

    seed = getattr(defaults, "DEFAULT_OTHER_SEED", None)
    assert seed == FEWSHOT_SEED, changed(
        "lm_eval.defaults.DEFAULT_OTHER_SEED", "contamlab.data.lm_eval.domain.FEWSHOT_SEED", f"it is {seed!r}"
    )


def test_the_jinja_environment_patch():
    import jinja2
    from lm_eval import utils

    user = "compat.templates_compiled_once"
    assert isinstance(getattr(utils, "env", None), jinja2.Environment), changed(
        "lm_eval.utils.env", user, "it is not a jinja2 Environment"
    )
    assert "env.from_string(" in inspect.getsource(utils.apply_template), changed(
        "how lm_eval.utils.apply_template compiles a template", user, "it no longer calls env.from_string"
    )
    assert "from_string" not in vars(utils.env), changed("lm_eval.utils.env", user, "from_string is already patched")
    with compat.templates_compiled_once():
        assert utils.env.from_string("{{ x }}") is utils.env.from_string("{{ x }}"), changed(
            "lm_eval.utils.env", user, "its from_string compiles each time inside the block"
        )
        assert utils.apply_template("{{ x }}+{{ x }}", {"x": 2}) == "2+2"
    assert "from_string" not in vars(utils.env), changed("lm_eval.utils.env", user, "the patch outlived its block")


def test_nothing_but_compat_touches_lm_evals_internals():
    """lm-eval's private modules and attributes are used in compat.py only: one place to re-check on an upgrade."""
    private = re.compile(r"\blm_eval(?:\.\w+)*\._\w+|\._filters\b|\butils\.env\b")
    src = REPO / "src" / "contamlab"
    touching = [
        f"{path.relative_to(REPO)}:{number}: {line.strip()}"
        for path in sorted(src.rglob("*.py"))
        if path != src / "data" / "lm_eval" / "compat.py"
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if private.search(line) and not line.lstrip().startswith("#")
    ]
    assert not touching, "lm-eval internals outside contamlab.data.lm_eval.compat:\n" + "\n".join(touching)
