"""train.py's job: run the stages a model needs (base → clean → contaminated [→ sham]), skipping finished ones.

Each stage trains in ``<stage dir>.partial`` (Lightning checkpoints there let a killed run resume) and is renamed
into place once its weights, tokenizer, split and ``train_summary.json`` are written, so a stage directory is
either complete or absent. A resume is exact: the checkpoint holds the data loader's position and the RNG, so the
resumed stage ends with the same weights as an uninterrupted one, and its ``logs/metrics.csv`` keeps the early steps.
A ``.partial`` directory whose config is not trained again is ignored (evaluate.py never reads one; ``make sync``
skips it).
"""

from __future__ import annotations

import sys
from pathlib import Path

from omegaconf import DictConfig

from contamlab.config import build_domain, log, model_store
from contamlab.console import library_output
from contamlab.errors import ContamlabError
from contamlab.models.store import SHAM, TRAINING_TEXTS, is_done, read_training_texts, write_training_texts
from contamlab.stages import stage_texts, stage_threads, train_stage
from contamlab.training.stage_lock import stage_lock


def run(cfg: DictConfig) -> dict[str, Path]:
    """Train every requested stage that is not finished yet; return the stage directories."""
    library_output(bool(cfg.trainer.enable_progress_bar) and sys.stderr.isatty())  # bars only where StageProgress's
    domain = build_domain(cfg.domain)
    domain.check_data()  # every data file read and checked before any model loads or any training starts
    store = model_store(cfg)
    stages = store.needed_stages()
    if cfg.stage == SHAM or cfg.get("sham"):
        stages = [*stages, SHAM]  # after the contaminated model: its matched control, on request
    if cfg.stage != "all":
        if cfg.stage not in stages:
            raise ContamlabError(f"stage={cfg.stage!r}: model={cfg.model.name} has stages {', '.join(stages)}")
        # a stage needs its parents (the sham needs the clean model only)
        stages = [s for s in stages[: stages.index(cfg.stage) + 1] if cfg.stage != SHAM or s != "contaminated"]
    out = {}
    for stage in stages:
        path = store.stage_dir(domain, stage)
        out[stage] = path
        if is_done(path):
            log.info("stage %s: done already at %s (skipped)", stage, path)
            if read_training_texts(path) is None:  # trained before stages recorded their data: same config, same texts
                write_training_texts(path, stage_texts(cfg, domain, stage))
                log.info("stage %s: recorded its training texts (%s)", stage, TRAINING_TEXTS)
            continue
        with stage_lock(path, stage):
            if is_done(path):  # another process trained it while this one waited for the lock
                log.info("stage %s: trained by another process meanwhile, at %s (skipped)", stage, path)
                continue
            log.info("stage %s: training into %s", stage, path)
            threads = stage_threads(cfg, stage)
            log.info("stage %s: %s torch threads", stage, threads)
            train_stage(cfg, store, domain, stage, path)
    return out
