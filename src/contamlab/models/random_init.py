"""A randomly initialised model with a packaged model's architecture and fewer decoder layers **[ours]**.

Tests and plumbing checks (``model=smollm2 model.random_layers=2``) run the real-LM path (the packaged model's
config, tokenizer, LoRA targets, chat template) without the real weights: no tensor of the GGUF is read or
dequantised, only its metadata (or the config and tokenizer of a converted directory already in the cache). The
model is built with ``torch.manual_seed(SEED)``, so a given layer count always gives the same weights, and cached
beside the converted model under ``<cache_dir>/<kind>/random-<N>layers-seed<SEED>``.
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path
from typing import Any

from contamlab.errors import ContamlabError
from contamlab.models.packaged import MARKER_FILENAME, PackagedGGUF, build_dir

logger = logging.getLogger(__name__)

#: The seed every random model is built with (part of the directory's name).
SEED = 0
#: Written last into a finished directory: its presence is what certifies the directory as complete.
RANDOM_MARKER = "RANDOM_INIT_COMPLETE.json"


def random_dir_name(layers: int) -> str:
    """The directory name of the random model with ``layers`` decoder layers."""
    return f"random-{layers}layers-seed{SEED}"


def random_model_dir(packaged: PackagedGGUF, cache_dir: str | os.PathLike[str], layers: int) -> Path:
    """Return a directory holding a random model with ``packaged``'s architecture and ``layers`` decoder layers.

    Built on first use with :func:`~contamlab.models.packaged.build_dir` (a temp dir renamed into place), as the
    converted model is, so an interrupted build never leaves a half-written directory under the final name.

    Args:
        packaged: The packaged model whose config and tokenizer are used.
        cache_dir: The model's cache directory (``<paths.cache_dir>/<kind>``), created if missing.
        layers: Decoder layers of the random model (at least 1, at most the packaged model's).

    Returns:
        ``cache_dir / random_dir_name(layers)``, loadable with ``AutoModelForCausalLM.from_pretrained`` and
        ``AutoTokenizer.from_pretrained``.

    Raises:
        ContamlabError: ``layers`` is out of range.
        PackagedModelNotInstalledError: The GGUF is needed (no converted directory in the cache) and missing.
    """
    cache = Path(cache_dir)
    target = cache / random_dir_name(layers)
    if (target / RANDOM_MARKER).is_file():
        return target
    info = build_dir(target, RANDOM_MARKER, lambda tmp: _build(packaged, cache, layers, tmp), "build_seconds")
    if info is not None:
        logger.info("Built a random %d-layer %s at %s in %.1f s", layers, packaged.title, target, info["build_seconds"])
    return target


def shrink_config(config: Any, layers: int) -> Any:
    """A copy of ``config`` with ``layers`` decoder layers, its per-layer lists (``layer_types``) cut to match.

    A per-layer list keeps its last ``layers`` entries: Gemma 3's pattern (five sliding-window layers, then a global
    one) ends on a global layer, so two layers already exercise both kinds of attention.

    Raises:
        ContamlabError: ``layers`` is below 1 or above the config's own count.
    """
    total = int(config.num_hidden_layers)
    if not 1 <= layers <= total:
        raise ContamlabError(f"model.random_layers={layers}: must be between 1 and {total} (the model's layer count)")
    values = config.to_dict()
    values.pop("quantization_config", None)  # a GGUF-read config may carry one; nothing here is quantised
    for name, value in values.items():
        if isinstance(value, list) and len(value) == total:
            values[name] = value[-layers:]
    values["num_hidden_layers"] = layers
    return type(config).from_dict(values)


def _build(packaged: PackagedGGUF, cache: Path, layers: int, out_dir: Path) -> dict[str, Any]:
    """Write the random model and the packaged tokenizer into ``out_dir``; return the marker's provenance record."""
    import torch
    import transformers
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    converted = cache / packaged.converted_name
    if (converted / MARKER_FILENAME).is_file():  # the real model was converted already: its files are plain
        config = AutoConfig.from_pretrained(converted)
        tokenizer = AutoTokenizer.from_pretrained(converted)
        source = converted.name
    else:
        # Only the GGUF's metadata is read (config and vocabulary); its tensors are never dequantised.
        parts = packaged.find_parts()
        gguf = parts[0] if len(parts) == 1 else packaged.assemble(parts, out_dir / "gguf" / packaged.gguf_filename)
        config = AutoConfig.from_pretrained(gguf.parent, gguf_file=gguf.name)
        tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
        # As the conversion does: the GGUF has no context length for the tokenizer (~1e30 makes truncation a no-op).
        tokenizer.model_max_length = config.max_position_embeddings
        shutil.rmtree(out_dir / "gguf", ignore_errors=True)
        source = gguf.name
    config = shrink_config(config, layers)
    torch.manual_seed(SEED)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.save_pretrained(out_dir, safe_serialization=True)
    tokenizer.save_pretrained(out_dir)
    return {
        "random_layers": layers,
        "seed": SEED,
        "config_from": source,
        "n_parameters": sum(p.numel() for p in model.parameters()),
        "dtype": "float32",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
    }
