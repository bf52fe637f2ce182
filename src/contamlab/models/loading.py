"""Loading causal LMs from a hub id, a local directory (full weights or a peft adapter), or a packaged GGUF.

``trust_remote_code`` stays off unless a model config turns it on explicitly. transformers is imported by the
functions that load (3-4 s of CPU on a small machine), not with the module: the model store and every config's
validation import this module, and a bad config value is reported before transformers loads.
"""

from __future__ import annotations

import json
import os
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import torch

from contamlab.errors import ContamlabError
from contamlab.io import looks_like_path
from contamlab.models.placement import DTYPES, resolve_dtype

# peft asks transformers for a deprecated property on every adapter load: one FutureWarning a load, nothing to act on.
warnings.filterwarnings("ignore", message=r".*is_gradient_checkpointing.*", category=FutureWarning)

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

__all__ = ["DTYPES", "convert_gguf", "load_causal_lm", "load_tokenizer", "looks_like_path", "resolve_dtype"]


@dataclass(frozen=True)
class Adapter:
    """A peft LoRA adapter directory's record: the base it applies to (None when unrecorded) and its rank."""

    base: str | None
    rank: int


def read_adapter(path: str | Path) -> Adapter | None:
    """The adapter record of ``path`` when it is a peft adapter directory, else None (a full model, a hub id)."""
    config = Path(str(path)) / "adapter_config.json"
    if not config.is_file():
        return None
    record = json.loads(config.read_text())
    base = record.get("base_model_name_or_path")
    return Adapter(_locate_base(str(base), config.parent) if base else None, int(record.get("r", 8)))


def _locate_base(base: str, adapter_dir: Path) -> str:
    """The recorded base of an adapter, a relative directory found from the adapter's checkout when not from here.

    Training records a local base as it was given, relative to the run's working directory (the repository root, so
    that a checkout and its ``outputs/`` move between machines as one). A job that runs in another directory and
    reads those adapters (``CONTAMLAB_MODELS_DIR`` and ``CONTAMLAB_CACHE_DIR`` pointing into the checkout) finds the
    base from the adapter directory's ancestors. A hub id, an absolute path and a base found from here are kept.
    """
    path = Path(base)
    if path.is_absolute() or not looks_like_path(base) or path.exists():
        return base
    for parent in adapter_dir.resolve().parents:
        if (parent / path).is_dir():
            return str(parent / path)
    return base  # not found anywhere: load_causal_lm names the recorded path


def load_tokenizer(source: str | Path, trust_remote_code: bool = False, **kwargs: Any) -> PreTrainedTokenizerBase:
    """Load a tokenizer and make sure it can pad (EOS doubles as padding when the model has no pad token)."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(str(source), trust_remote_code=trust_remote_code, **kwargs)
    except (OSError, ValueError) as err:
        raise _not_found(source, err) from None
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    return tokenizer


def load_causal_lm(
    source: str | Path,
    dtype: str = "float32",
    trust_remote_code: bool = False,
    revision: str | None = None,
    base: str | Path | None = None,
    device: str | torch.device = "cpu",
    device_map: str | None = None,
    merge: bool = False,
) -> PreTrainedModel:
    """Load a causal LM for inference (``eval()`` mode) on ``device``.

    Args:
        source: A hub id, a local model directory, or a local peft adapter directory.
        dtype: ``float32``, ``bfloat16``, ``float16`` or ``auto`` (bf16 on CUDA, fp32 elsewhere).
        trust_remote_code: Allow code from the model repository (off by default, for security).
        revision: Hub revision (branch, tag or commit) for reproducible loads.
        base: For an adapter directory, the base model to apply it to (default: the adapter's own record).
        device: Where the weights go (a resolved device: :func:`contamlab.models.placement.resolve_device`).
        device_map: accelerate's device map (``auto`` spreads a model over every GPU); ``device`` is then ignored.
        merge: For an adapter in float32, fold its weights into the base's (``merge_and_unload``): the same function
            up to float rounding, without the adapter's extra matmuls and Python layers at every forward. Training
            keeps the adapter separate; in bf16 or fp16 it stays separate too, because a small weight update rounds
            away when added to a low-precision weight.

    Raises:
        ContamlabError: unknown id, missing directory, or the hub unreachable while offline.
    """
    torch_dtype = resolve_dtype(dtype, device)
    path = Path(str(source))
    adapter = read_adapter(path) if path.is_dir() else None
    if adapter is not None:
        from peft import PeftModel

        base_source = base or adapter.base
        if not base_source:
            raise ContamlabError(f"{path}: adapter has no base_model_name_or_path; pass the base model explicitly")
        if looks_like_path(str(base_source)) and not Path(str(base_source)).is_dir():
            raise ContamlabError(
                f"{path}: its base {base_source} is not found from {Path.cwd()} nor from the adapter's checkout; "
                "run from the directory that trained it, or rebuild the base there (paths.cache_dir)"
            )
        model = load_causal_lm(base_source, dtype, trust_remote_code, revision, device=device, device_map=device_map)
        # the adapter's weights load onto the base's devices (peft follows the base's device map)
        model = PeftModel.from_pretrained(model, str(path))
        if merge and torch_dtype == torch.float32:
            model = model.merge_and_unload()
        return model.eval()
    if looks_like_path(str(source)) and not path.is_dir():
        raise ContamlabError(f"model directory {path} not found (train it first with train.py, or fix the path)")
    from transformers import AutoModelForCausalLM

    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(source),
            dtype=torch_dtype,
            trust_remote_code=trust_remote_code,
            revision=revision,
            **({"device_map": device_map} if device_map else {}),
        )
    except (OSError, ValueError) as err:
        raise _not_found(source, err) from None
    if not device_map:
        model = model.to(torch.device(device))
    return model.eval()


def convert_gguf(gguf: Path, out_dir: Path) -> dict[str, Any]:
    """Dequantize ``gguf`` into a plain fp32 transformers checkpoint (safetensors) plus its tokenizer in ``out_dir``.

    The packaged models' conversion (:mod:`contamlab.models.packaged`).

    Args:
        gguf: Path of the GGUF file.
        out_dir: Existing, empty directory to write into.

    Returns:
        Provenance metadata for the completion marker.
    """
    import transformers
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    gguf_model = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.float32)

    # The GGUF-loaded model carries a GGUF quantizer whose is_serializable() is False, so save_pretrained
    # refuses it even though the weights are already dense fp32. Rebuild a plain model from a config
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
    # truncation=True a no-op; use the model's trained context instead (SmolLM2 8192, Gemma-3-270m 32768, as upstream).
    tokenizer.model_max_length = model.config.max_position_embeddings
    tokenizer.save_pretrained(out_dir)

    pickles = sorted(p.name for p in out_dir.iterdir() if p.suffix in {".bin", ".pt", ".pth", ".pkl"})
    if pickles or not (out_dir / "model.safetensors").is_file():
        raise RuntimeError(f"Unexpected checkpoint files in {out_dir}: {sorted(os.listdir(out_dir))}")
    return {
        "source_gguf": gguf.name,
        "source_gguf_bytes": gguf.stat().st_size,
        "n_parameters": n_params,
        "dtype": "float32",
        "transformers_version": transformers.__version__,
        "torch_version": torch.__version__,
    }


def _not_found(source: str | Path, err: Exception) -> ContamlabError:
    offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")
    first = str(err).splitlines()[0][:200].rstrip(". ") if str(err) else type(err).__name__
    hint = (
        "the hub is disabled (HF_HUB_OFFLINE=1): download the model elsewhere and pass its local directory"
        if offline
        else "check the id (owner/name), your network, and HF_TOKEN for gated models"
    )
    return ContamlabError(f"cannot load model {str(source)!r}: {first}. {hint}")
