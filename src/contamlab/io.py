"""Atomic file writes and content hashes: the two primitives every cache in contamlab is built on.

Also :func:`looks_like_path`, which tells a local path from a hub id without importing torch (config validation).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """A temp path beside ``path`` to write to: renamed onto ``path`` if the block succeeds, removed if it fails.

    Readers never see a half-written file (parquet chunks, safetensors, PNGs and the text writers below use it).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(fd)
    try:
        yield Path(tmp)
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600 files; give the usual permissions
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, flushed to disk before the rename."""
    with atomic_path(path) as tmp, open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically: readers never see half of it."""
    atomic_write_bytes(path, text.encode("utf-8"))


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _strict(data: Any) -> Any:
    """NaN and ±inf become null: strict JSON has no such numbers (json.dumps would write NaN)."""
    if isinstance(data, float) and not math.isfinite(data):
        return None
    if isinstance(data, dict):
        return {k: _strict(v) for k, v in data.items()}
    if isinstance(data, list | tuple):
        return [_strict(v) for v in data]
    return data


def atomic_write_json(path: str | Path, data: Any, indent: int | None = 2) -> None:
    """Write strict JSON atomically (sorted keys, so equal data gives equal bytes; NaN and ±inf as null).

    ``indent=None`` writes one line: a large artifact's per-item lists then take a tenth of the bytes.
    """
    text = json.dumps(_strict(data), indent=indent, sort_keys=True, default=str, allow_nan=False)
    atomic_write_text(path, text + "\n")


def content_hash(data: Any, length: int = 12) -> str:
    """A short, stable hash of JSON-serialisable data (dict key order does not matter)."""
    blob = json.dumps(data, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:length]


def looks_like_path(source: str) -> bool:
    """Whether a model source is meant as a filesystem path rather than a hub id (``owner/name``)."""
    return source.startswith((".", "/", "~")) or os.sep in source and source.count("/") > 1
