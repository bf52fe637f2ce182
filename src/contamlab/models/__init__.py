"""Model loading: hub ids, local directories, peft adapters, the SmolLM2 package and the tiny world's model."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from contamlab.errors import ContamlabError
from contamlab.models.loading import load_causal_lm, load_tokenizer

__all__ = ["base_source", "load_causal_lm", "load_tokenizer"]


def base_source(model_cfg: DictConfig, cache_dir: str | Path) -> str:
    """The pretrained base a non-tiny model fine-tunes from: a hub id / path, or the converted SmolLM2 dir."""
    kind = model_cfg.kind
    if kind == "hf":
        if not model_cfg.get("source"):
            raise ContamlabError(f"model={model_cfg.name}: set model.source to a hub id or a local directory")
        return str(model_cfg.source)
    if kind == "smollm2":
        from contamlab.models.smollm2 import converted_dir

        return str(converted_dir(Path(cache_dir) / "smollm2"))
    if kind == "tiny":
        raise ContamlabError("model=tiny has no pretrained base; train.py builds it in the base stage")
    raise ContamlabError(f"model.kind={kind!r}: use hf, smollm2 or tiny")
