"""What every job reads from the Hydra config: the model store and the sampling setup, as typed objects.

The jobs are the only code that reads the config; these helpers turn its nodes into the dataclasses and keyword
arguments of the layers below.
"""

from __future__ import annotations

import logging
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from contamlab.config import build, group_choice
from contamlab.decoding.pipeline import SamplingSetup
from contamlab.models.store import ModelStore

log = logging.getLogger("contamlab")


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


def log_sync_hint(cfg: DictConfig, out_dir: Path) -> None:
    """The job's last line when it logged to W&B offline: where its runs are and how to upload them."""
    hint = build(cfg.logger, "logger").sync_hint(out_dir)
    if hint:
        log.info("%s", hint)


def tracking_run(cfg: DictConfig, out_dir: Path, group: str, name: str) -> AbstractContextManager[Any]:
    """The job's W&B run (None without W&B) from the ``logger`` group, with the resolved config, finished on exit."""
    return build(cfg.logger, "logger").run(out_dir, group, name, lambda: OmegaConf.to_container(cfg, resolve=True))


_bars_disabled = False  # whether library_output turned transformers' bars off (so that a later job may turn them on)


def library_output(progress: bool) -> None:
    """Keep the libraries' console output to what the job asked for (``progress``).

    transformers draws a bar for every model it loads ("Loading weights", 3-5 a job) and saves ("Writing model
    shards", one a training stage) whatever the job's ``progress``; they show only when it is true. An
    ``HF_HUB_DISABLE_PROGRESS_BARS`` of the user's is kept: bars turned off here are the only ones turned on again, by
    a later job of the same process (a multirun) that asks for progress. matplotlib's INFO records ("generated new
    fontManager", once a machine) are not the job's news: Hydra's logging config would print them.
    """
    global _bars_disabled
    import sys

    from huggingface_hub import utils as hub_utils

    # huggingface_hub's switch, not transformers': transformers reads it when it is imported, and importing it here
    # would cost a cached audit rerun a second for nothing. Once it is imported, its own switch is the one it reads.
    transformers = sys.modules.get("transformers.utils.logging")
    if not progress and not hub_utils.are_progress_bars_disabled():
        hub_utils.disable_progress_bars()
        if transformers is not None:
            transformers.disable_progress_bar()
        _bars_disabled = True
    elif progress and _bars_disabled:
        hub_utils.enable_progress_bars()
        if transformers is not None:
            transformers.enable_progress_bar()
        _bars_disabled = False
    # Nor are rouge-score's absl INFO records ("Using default tokenizer", once a BenBench run).
    for name in ("matplotlib", "absl"):
        logging.getLogger(name).setLevel(logging.WARNING)
