"""Model loading: hub ids, local directories, peft adapters, the SmolLM2 package and the tiny world's model."""

from __future__ import annotations

from pathlib import Path

from omegaconf import DictConfig

from contamlab.errors import ContamlabError
from contamlab.models.loading import load_causal_lm, load_tokenizer

__all__ = ["base_source", "load_causal_lm", "load_tokenizer", "model_identity"]


def model_identity(source: str, model_cfg: DictConfig) -> dict:
    """What identifies a model's outputs in every cache (samples, detector scores): source, revision, dtype.

    A local directory is named by its resolved path plus the name, size and mtime of its files, so a model
    retrained in place never reuses stale samples (cheap: no file is read).
    """
    path = Path(source)
    identity = {"source": source, "revision": model_cfg.get("revision"), "dtype": str(model_cfg.get("dtype"))}
    if path.exists():
        files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
        identity["source"] = str(path.resolve())
        identity["files"] = [[p.name, p.stat().st_size, int(p.stat().st_mtime)] for p in files]
    return identity


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
