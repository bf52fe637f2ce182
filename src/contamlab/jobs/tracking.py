"""The W&B run of one evaluate.py job: offline unless ``WANDB_MODE`` / ``logger.wandb.mode`` says otherwise.

Both the restoration metrics (:mod:`contamlab.jobs.evaluate`) and detection (:mod:`contamlab.jobs.detect`) log
through it, so every job's run is configured, grouped and finished the same way.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf


@contextmanager
def wandb_run(cfg: DictConfig, out_dir: Path, group: str, name: str) -> Iterator[Any]:
    """A W&B run (None when ``logger=csv`` or the mode is disabled), always finished on exit.

    Args:
        cfg: The job's config (its ``logger.wandb`` node; the whole config is logged).
        out_dir: Where the run's files go.
        group: The run group when ``logger.wandb.group`` is not set.
        name: The run's name.
    """
    wandb_cfg = cfg.logger.get("wandb")
    if not wandb_cfg or wandb_cfg.get("mode") == "disabled":
        yield None
        return
    import wandb

    run = wandb.init(
        project=wandb_cfg.project,
        entity=wandb_cfg.get("entity"),
        mode=wandb_cfg.mode,
        group=wandb_cfg.get("group") or group,
        name=name,
        dir=str(out_dir),
        config=OmegaConf.to_container(cfg, resolve=True),
    )
    try:
        yield run
    finally:
        wandb.finish()
