"""Local copies of an lm-eval task's dataset: which files, which splits they must hold, and the task's overrides."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from contamlab.errors import ContamlabError

__all__ = ["LOCAL_COPIES", "file_overrides", "fewshot_source", "local_files", "needed_splits"]

#: Local copies of task datasets under ``CONTAMLAB_DATA_DIR``, by ``(dataset_path, dataset_name)``: used when
#: ``domain.data_files`` is null, so that every GSM8K task (gsm8k, gsm8k_cot, gsm8k_cot_zeroshot …) runs offline.
LOCAL_COPIES: dict[tuple[str, str | None], dict[str, str]] = {
    ("openai/gsm8k", "main"): {"train": "gsm8k/train.jsonl", "test": "gsm8k/test.jsonl"},
}
#: ``datasets`` builders of local data files, by suffix.
_BUILDERS = {".jsonl": "json", ".json": "json", ".csv": "csv", ".parquet": "parquet"}


def local_files(cfg: dict, data_files: Mapping[str, str] | None, data_dir: str | None) -> dict[str, str]:
    """The local files of the task's splits, ``{split: absolute path}``; empty where the hub serves the dataset.

    Args:
        cfg: The task's YAML config.
        data_files: ``domain.data_files`` (None: the task's known local copy, if present).
        data_dir: Root of relative paths and of the known copies (None = ``CONTAMLAB_DATA_DIR``).

    Raises:
        ContamlabError: A named file that does not exist.
    """
    root = data_dir or os.environ.get("CONTAMLAB_DATA_DIR")
    if data_files is None:
        known = LOCAL_COPIES.get((str(cfg.get("dataset_path")), cfg.get("dataset_name")))
        if not known or not root or not all((Path(root) / f).is_file() for f in known.values()):
            return {}
        data_files = known
    resolved = {}
    for split, file in dict(data_files).items():
        path = Path(os.path.expanduser(str(file)))
        if not path.is_absolute() and root:
            path = Path(root) / path
        if not path.is_file():
            raise ContamlabError(f"domain.data_files.{split}={file}: file not found ({path})")
        resolved[str(split)] = str(path)
    return resolved


def fewshot_source(cfg: dict) -> str | None:
    """The split the harness draws few-shot examples from (ConfigurableTask.fewshot_docs); None: the task's list."""
    shots = cfg.get("fewshot_config") or {}
    if shots.get("split") or cfg.get("fewshot_split"):
        return shots.get("split") or cfg.get("fewshot_split")
    if shots.get("samples") is not None:
        return None
    return cfg.get("training_split") or cfg.get("validation_split") or cfg.get("test_split")


def needed_splits(cfg: dict, num_fewshot: int) -> list[str]:
    """The splits local files must hold: the one the task evaluates, and the few-shot examples' if it draws some."""
    source = fewshot_source(cfg) if num_fewshot > 0 else None
    return list(dict.fromkeys(s for s in (cfg.get("test_split") or cfg.get("validation_split"), source) if s))


def file_overrides(cfg: dict, files: dict[str, str], num_fewshot: int, task_name: str) -> dict[str, Any]:
    """The task's dataset as ``datasets`` builds it from local files, and the task's splits that they lack.

    Args:
        cfg: The task's YAML config.
        files: The local files, ``{split: path}`` (:func:`local_files`).
        num_fewshot: Few-shot examples per prompt (the few-shot split is needed only above 0).
        task_name: The task's name, for the messages.

    Returns:
        Keys to override in the task's config.

    Raises:
        ContamlabError: Files of several or unknown formats, or a split the task reads missing.
    """
    builders = {_BUILDERS.get(Path(f).suffix.lower()) for f in files.values()}
    if None in builders or len(builders) != 1:
        raise ContamlabError(
            f"domain.data_files: give files of one format, .jsonl/.json, .csv or .parquet (got "
            f"{', '.join(Path(f).name for f in files.values())})"
        )
    evaluated = cfg.get("test_split") or cfg.get("validation_split")
    for split in needed_splits(cfg, num_fewshot):
        if split not in files:
            why = "evaluates" if split == evaluated else f"draws its {num_fewshot} few-shot examples from"
            raise ContamlabError(
                f"domain.data_files: lm-eval task {task_name} {why} its {split!r} split; give "
                f"domain.data_files.{split}" + ("" if split == evaluated else " (or domain.num_fewshot=0)")
            )
    overrides: dict[str, Any] = {
        "dataset_path": builders.pop(),
        "dataset_name": None,
        "dataset_kwargs": {"data_files": {split: [file] for split, file in files.items()}},
    }
    for key in ("training_split", "validation_split", "test_split"):
        if cfg.get(key) and cfg[key] not in files:  # a split it never reads here: none to load
            overrides[key] = None
    return overrides
