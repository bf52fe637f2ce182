"""What every job reads from the Hydra config: the model store and the sampling setup, as typed objects.

The jobs are the only code that reads the config; these helpers turn its nodes into the dataclasses and keyword
arguments of the layers below.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from contamlab.config import build, group_choice
from contamlab.decoding.pipeline import SamplingSetup
from contamlab.models.store import ModelStore


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


def model_store(cfg: DictConfig) -> ModelStore:
    """The model store of a train or evaluate config (``model``, ``finetune``, ``base``, ``seed``, ``paths``)."""
    return ModelStore(
        models_dir=str(cfg.paths.models_dir),
        model=build(cfg.model, "model"),
        seed=int(cfg.seed),
        finetune=_plain(cfg.get("finetune")),
        base=_plain(cfg.get("base")),
        cache_dir=cfg.paths.get("cache_dir"),
        option=group_choice(cfg, "model"),
    )


def sampling_setup(cfg: DictConfig) -> SamplingSetup:
    """How an evaluate config samples: the built ``sampler`` backend and the run's m, τ, budget, seed, cache."""
    node = OmegaConf.create({k: v for k, v in cfg.sampler.items() if k != "common_noise"})
    if node.get("dtype") == "auto":
        # vLLM's own auto is the checkpoint's dtype; the sample cache and results.json record contamlab's
        # (bf16 on CUDA, fp32 on a CPU), so the engine gets that one
        node.dtype = model_store(cfg).dtype
    return SamplingSetup(
        factory=build(node, "sampler"),
        backend=str(cfg.sampler.get("name", "hf")),
        m=int(cfg.m),
        temperature=float(cfg.temperature),
        max_new_tokens=int(cfg.max_new_tokens),
        seed=int(cfg.seed),
        chunk_questions=int(cfg.chunk_questions),
        common_noise=common_noise(cfg),
        cache_dir=str(cfg.paths.cache_dir),
    )


def common_noise(cfg: DictConfig) -> bool:
    """Whether the run shares one random stream between the clean and the strategy batches (opt-in)."""
    return bool(cfg.sampler.get("common_noise", False))


def tracking_run(cfg: DictConfig, out_dir: Path, group: str, name: str) -> AbstractContextManager[Any]:
    """The job's W&B run (None without W&B) from the ``logger`` group, with the resolved config, finished on exit."""
    return build(cfg.logger, "logger").run(out_dir, group, name, lambda: OmegaConf.to_container(cfg, resolve=True))
