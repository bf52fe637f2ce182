"""Every use of lm-eval's internals: the one place that breaks when the pinned lm-eval changes them.

The rest of the domain uses lm-eval's public API (``TaskManager``, ``ConfigurableTask``'s documented methods,
``Instance``, ``postprocess_generated_text``). What lm-eval does not offer publicly is done here, each against the
lm-eval version of :data:`PINNED_VERSION`:

- the task YAML loader (``lm_eval.tasks._yaml_loader.load_yaml``) and the order in which the task index walks a
  folder (``TaskIndex._iter_yaml_files``), so that one task is found without indexing all 14,000 files;
- the folder of the built-in tasks (``lm_eval/tasks`` beside the package);
- the task's filter ensembles (``task._filters``, built from its ``filter_list``);
- the text a few-shot example puts after the question (``ConfigurableTask.build_qa_turn``, as ``fewshot_context``
  calls it);
- a runtime patch of lm-eval's Jinja environment (``lm_eval.utils.env``) that compiles each template once.

``tests/test_lm_eval_compat.py`` checks each of these against the installed lm-eval and fails, naming what changed,
when an upgrade moves one.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from contamlab.errors import ContamlabError

__all__ = [
    "IGNORED_DIRS",
    "INSTALL_HINT",
    "PINNED_VERSION",
    "fewshot_target",
    "filter_ensembles",
    "lm_eval_version",
    "load_yaml",
    "require_lm_eval",
    "tasks_folder",
    "templates_compiled_once",
    "yaml_files",
]

INSTALL_HINT = "pip install 'contamlab[lm-eval]'"
#: The lm-eval version this module was written and checked against (the ``lm-eval`` extra pins it).
PINNED_VERSION = "0.4.13"
#: Folders the task index skips (``lm_eval.tasks._index._IGNORE_DIRS``).
IGNORED_DIRS = frozenset({"__pycache__", ".ipynb_checkpoints"})


def require_lm_eval() -> None:
    """Fail in one line, with the install command, where lm-eval is not installed.

    Raises:
        ContamlabError: lm-eval is not importable.
    """
    if importlib.util.find_spec("lm_eval") is None:
        raise ContamlabError(f"domain=lm_eval needs lm-evaluation-harness, which is not installed: {INSTALL_HINT}")


def lm_eval_version() -> str:
    """The installed lm-eval's version (``lm_eval.__version__``)."""
    from lm_eval import __version__

    return str(__version__)


def tasks_folder() -> Path:
    """The folder of lm-eval's built-in task YAMLs (``TaskManager``'s default include path)."""
    import lm_eval

    return Path(lm_eval.__file__).parent / "tasks"


def yaml_files(root: Path) -> list[Path]:
    """A folder's task YAMLs in the order of lm-eval's task index (``TaskIndex._iter_yaml_files``).

    Args:
        root: An existing folder of task YAMLs.
    """
    found = (p for p in root.glob("**/*.yaml") if not IGNORED_DIRS & set(p.parts))
    return sorted(found, key=lambda p: p.as_posix())


def load_yaml(path: Path, resolve_func: bool) -> dict[str, Any]:
    """A task YAML as lm-eval reads it, includes resolved (``lm_eval.tasks._yaml_loader.load_yaml``).

    Args:
        path: The YAML file.
        resolve_func: Resolve ``!function`` tags to callables (as ``TaskManager`` loads a task); False parses only,
            as the task index does.
    """
    from lm_eval.tasks._yaml_loader import load_yaml as lm_eval_load_yaml

    return lm_eval_load_yaml(path, resolve_func=resolve_func)


def filter_ensembles(task: Any) -> list[Any]:
    """The task's filter ensembles (``strict-match`` …), each with a ``name`` and ``apply(instances)``.

    lm-eval builds them from the task's ``filter_list`` into ``task._filters``; ``apply_filters`` applies each to the
    task's own instances, which a single response checked alone is not, so they are read here.
    """
    return list(task._filters)


def fewshot_target(task: Any, doc: dict, text: str, choices: list | None) -> str:
    """The text a few-shot example of ``task`` puts after the rendering ``text`` of ``doc``.

    The example is built as ``ConfigurableTask.fewshot_context`` builds one (``build_qa_turn`` with the few-shot
    config's target, choices and ``gen_prefix``), without the few-shot delimiter; what follows ``text`` is the target
    delimiter and the target.

    Args:
        task: A ``ConfigurableTask``.
        doc: One of its documents.
        text: ``task.doc_to_text(doc)``.
        choices: ``task.doc_to_choice(doc)``, or None for a task without choices.
    """
    shots = task.fewshot_cfg
    turn = task.build_qa_turn(
        q=text,
        c=task.doc_to_choice(doc, shots.doc_to_choice) if shots.doc_to_choice else choices,
        a=task.doc_to_target(doc, shots.doc_to_target),
        gen_prefix=task.resolve_field(doc, shots.gen_prefix),
        tgt_delim=shots.target_delimiter,
        few_delim="",
    )
    return "".join(m.to_text() for m in turn)[len(text) :]


# lm-eval renders every template with ``env.from_string(template).render(doc)`` (lm_eval.utils.apply_template), which
# compiles the template anew for each document: 2-3 ms a template, 30 s for GSM8K-CoT's 8-shot prompts on a 2-core
# CPU, and a check of a response compiles doc_to_target again. A compiled template renders the same text, so the
# templates are compiled once per process while contamlab calls lm-eval.
_COMPILED: dict[str, Any] = {}


@contextmanager
def templates_compiled_once() -> Iterator[None]:
    """Within the block, lm-eval's Jinja environment compiles each template once (then reuses it).

    The environment's ``from_string`` is shadowed by an instance attribute and restored on exit; nested blocks
    share the outermost one's patch.
    """
    from lm_eval import utils

    env = utils.env
    if "from_string" in vars(env):  # already inside (a nested call)
        yield
        return
    compile_template = env.from_string

    def from_string(source: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs or not isinstance(source, str):
            return compile_template(source, *args, **kwargs)
        if source not in _COMPILED:
            _COMPILED[source] = compile_template(source)
        return _COMPILED[source]

    env.from_string = from_string
    try:
        yield
    finally:
        del env.from_string  # the Environment's own method again
