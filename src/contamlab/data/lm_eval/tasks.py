"""Finding an lm-eval task's YAML as lm-eval's task index finds it, and checking that contamlab can read the task."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from contamlab.data.lm_eval.compat import load_yaml, tasks_folder, yaml_files
from contamlab.errors import ContamlabError

__all__ = ["OUTPUT_TYPES", "check_task", "task_yaml"]

#: The output types contamlab reads as questions with answers.
OUTPUT_TYPES = ("generate_until", "multiple_choice")
# A task name as a YAML file states it (only for suggestions: the lookup itself parses the YAML).
_TASK_LINE = re.compile(rb"^task:\s*['\"]?([\w.\-]+)", re.MULTILINE)


def _roots(include_path: str | Sequence[str] | None) -> list[Path]:
    """The folders of task YAMLs by lm-eval's precedence: the last ``include_path`` first, the built-in tasks last."""
    extra = [include_path] if isinstance(include_path, str) else list(include_path or [])
    return [*(Path(p).expanduser() for p in reversed(extra)), tasks_folder()]


def _yaml_files(root: Path) -> list[Path]:
    """A folder's task YAMLs in the index's order; a missing folder is the user's ``include_path``."""
    if not root.is_dir():
        raise ContamlabError(f"domain.include_path={root}: folder not found")
    return yaml_files(root)


def task_yaml(name: str, include_path: str | Sequence[str] | None = None) -> Path:
    """The YAML file that defines lm-eval task ``name``, chosen as lm-eval's task index chooses it.

    ``TaskManager()`` parses all 14,000 YAML files of the installed tasks before it loads one (10-20 s on a 2-core
    CPU). A task's file states its name (``task: <name>``), so only the files that hold the name are parsed, in the
    index's order: the ``include_path`` folders first (lm-eval lets them override the built-in tasks), each folder's
    files sorted by path, the first definition kept.

    Args:
        name: The task's name.
        include_path: A folder (or list) of the user's own task YAMLs, as ``lm_eval --include_path``.

    Raises:
        ContamlabError: No task of that name (with the closest names), or ``name`` is a group or a tag.
    """
    wanted, other = name.encode(), None
    roots = _roots(include_path)
    for root in roots:
        for path in _yaml_files(root):
            if wanted not in path.read_bytes():
                continue
            try:
                cfg = load_yaml(path, resolve_func=False)
            except Exception:  # the index skips a file it cannot parse, and so does this lookup
                continue
            if "class" in cfg or "group" not in cfg:
                if cfg.get("task") == name:
                    return path
                tags = cfg.get("tag") or []
                if name in ([tags] if isinstance(tags, str) else tags):
                    other = other or "a tag of several lm-eval tasks"
            elif cfg.get("group") == name:
                other = other or f"a group of lm-eval tasks ({path})"
    if other:
        raise ContamlabError(f"domain.task={name}: {other}; give one of its tasks")
    names = {n.decode() for root in roots for p in _yaml_files(root) for n in _TASK_LINE.findall(p.read_bytes())}
    close = difflib.get_close_matches(name, sorted(names), n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise ContamlabError(f"domain.task={name}: no such lm-eval task{hint}; `lm_eval ls tasks` lists them")


def check_task(task: Any, name: str) -> None:
    """Stop on a loaded task whose items contamlab cannot read or judge one response at a time.

    Args:
        task: The task lm-eval's ``TaskManager`` loaded.
        name: Its name, for the messages.

    Raises:
        ContamlabError: A Python-class task, one that runs the model's code, one context per choice, or repeats.
    """
    from lm_eval.api.task import ConfigurableTask

    if not isinstance(task, ConfigurableTask):
        raise ContamlabError(f"domain.task={name}: a Python-class lm-eval task; contamlab reads YAML-configured ones")
    if task.config.unsafe_code:
        raise ContamlabError(f"domain.task={name}: the task runs the model's code to score it; contamlab does not")
    if task.multiple_input:
        raise ContamlabError(f"domain.task={name}: one context per choice (Winogrande-style) is not supported")
    if (task.config.repeats or 1) > 1:
        raise ContamlabError(
            f"domain.task={name}: the task votes over {task.config.repeats} responses per question; contamlab "
            "judges each response alone (use the task without repeats)"
        )
