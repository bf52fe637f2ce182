"""Training one stage of the simulation (base → clean → contaminated), or a twin of the error-rate audit: the service.

A stage trains in ``<stage dir>.partial`` (Lightning checkpoints there let a killed run resume) and is renamed into
place once its weights, tokenizer, split and ``train_summary.json`` are written, so a stage directory is either complete
or absent. A resume is exact: the checkpoint holds the data loader's position and the RNG, so the resumed stage ends
with the same weights as an uninterrupted one, and its ``logs/metrics.csv`` keeps the early steps. The train job
(:mod:`contamlab.jobs.train`) and the audit's error rates (:mod:`contamlab.audit.error_rates`) both call
:func:`train_stage`.
"""

from __future__ import annotations

import logging
import os
import shutil
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning as L
import torch
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from omegaconf import DictConfig, OmegaConf

from contamlab import stopping
from contamlab.config import build, build_domain, busy_cores, log, set_threads
from contamlab.data.domain import Domain
from contamlab.data.general import Example
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_json, content_hash
from contamlab.models import load_causal_lm, load_tokenizer
from contamlab.models.store import (
    DONE_MARKER,
    LEAK_RECIPE_STAGES,
    SHAM,
    ModelStore,
    is_done,
    read_adapter,
    write_training_texts,
)
from contamlab.provenance import run_metadata
from contamlab.training import corpus
from contamlab.training.checkpoints import checkpoint_step
from contamlab.training.datamodule import CausalLMDataModule, ExampleDataset, PackedDataset
from contamlab.training.module import CausalLMModule
from contamlab.training.precision import hold_frozen_linears
from contamlab.training.progress import StageProgress

logging.getLogger("lightning.pytorch.utilities.rank_zero").setLevel(logging.WARNING)
# Lightning's advice about ckpt_path / LeafSpec does not apply here (we resume explicitly); keep logs readable.
warnings.filterwarnings("ignore", message=r".*ckpt_path.*")
warnings.filterwarnings("ignore", message=r".*LeafSpec.*")
warnings.filterwarnings("ignore", message=r".*does not have many workers.*")
warnings.filterwarnings("ignore", message=r".*Checkpoint directory .* exists and is not empty.*")  # our resume


def contaminated_epochs(cfg: DictConfig, domain: Domain) -> int:
    """Epochs of the contaminated stage: the domain's ``leak_epochs``, or ``finetune.epochs`` when null."""
    if domain.leak_epochs is not None:
        return domain.leak_epochs  # validated by the domain; part of its fingerprint, hence of the stage key
    if int(cfg.finetune.epochs) < 1:
        raise ContamlabError(f"finetune.epochs={cfg.finetune.epochs}: must be >= 1")
    return int(cfg.finetune.epochs)


def stage_lr(cfg: DictConfig, domain: Domain, stage: str) -> float:
    """Peak learning rate of a fine-tuning stage: ``finetune.lr``; the domain's ``leak_lr`` for the leak's recipe."""
    if stage in LEAK_RECIPE_STAGES and domain.leak_lr is not None:
        return domain.leak_lr  # validated by the domain; part of its fingerprint, hence of the contaminated key only
    return float(cfg.finetune.lr)


@dataclass(frozen=True)
class TwinRecipe:
    """A contaminated-stage run of another model on other items: a twin of the error-rate audit.

    The error-rate audit (:mod:`contamlab.audit.error_rates`) fine-tunes a copy of the audited model on a random half of
    a pool of unseen items, with the contaminated stage's optimiser settings, so that it knows on that very model what
    a leak does to each reading.

    Attributes:
        parent: The model it continues from: a full model (a new LoRA adapter) or an adapter (trained further).
        examples: What it trains on (the leaked half, and the general rows of the contaminated stage's mix).
        epochs: Passes over ``examples``.
        lr: Peak learning rate.
        key: Its identity (the directory's hash, recorded in ``train_summary.json``).
    """

    parent: str
    examples: list[Example]
    epochs: int
    lr: float
    key: dict[str, Any]


@dataclass
class StageInputs:
    """What one stage trains: the model, its tokenizer and data, and the optimisation settings.

    Attributes:
        model: The trainable model.
        tokenizer: Its tokenizer.
        dataset: Packed rows (base stage) or examples (fine-tuning stages).
        opt: :class:`~contamlab.training.module.CausalLMModule` optimiser keyword arguments.
        micro_batch: Rows per forward pass.
        accumulate: Micro-batches per optimiser step.
        grad_clip: Gradient-norm clip.
        packed: Whether ``dataset`` holds packed rows.
        texts: The training data as the texts the model reads (the stage's record, :data:`TRAINING_TEXTS`).
    """

    model: Any
    tokenizer: Any
    dataset: Any
    opt: dict[str, Any]
    micro_batch: int
    accumulate: int
    grad_clip: float
    packed: bool
    texts: list[str]


@dataclass(frozen=True)
class Recipe:
    """The optimisation of one fine-tuning stage, as :func:`stage_recipe` decides it.

    Attributes:
        lr: Peak learning rate.
        epochs: Passes over the stage's rows.
        schedule: ``cosine``, ``linear`` or ``constant``.
        warmup_steps: Linear warm-up steps.
        total_steps: Optimiser steps.
        micro_batch: Rows per forward pass.
        accumulate: Micro-batches per optimiser step.
        weight_decay: AdamW's weight decay.
    """

    lr: float
    epochs: int
    schedule: str
    warmup_steps: int
    total_steps: int
    micro_batch: int
    accumulate: int
    weight_decay: float


def stage_recipe(cfg: DictConfig, domain: Domain, stage: str, n_rows: int, twin: TwinRecipe | None = None) -> Recipe:
    """How a fine-tuning stage of ``n_rows`` rows trains: the one place that decides it for every stage and twin.

    The contaminated stage, its sham control and the error-rate audit's twins all take the leak's recipe here
    (``domain.leak_epochs``, ``leak_lr``, ``leak_schedule``; a twin its dose's epochs and rate), so that they differ in
    what they read alone.
    """
    ft = cfg.finetune
    micro, global_batch = int(ft.micro_batch), int(ft.global_batch)  # a multiple of micro: validation.py checks it
    steps_per_epoch = -(-n_rows // global_batch)
    if twin is not None:
        epochs, lr = twin.epochs, twin.lr
    else:
        epochs = int(ft.epochs) if stage == "clean" else contaminated_epochs(cfg, domain)
        lr = stage_lr(cfg, domain, stage)
    total = steps_per_epoch * epochs
    schedule, warmup = str(ft.scheduler), round(float(ft.warmup) * total)
    if stage in LEAK_RECIPE_STAGES and domain.leak_schedule == "constant":
        schedule, warmup = "constant", 0  # the e-epoch state of a longer run is then the e-epoch run (snapshots)
    return Recipe(float(lr), int(epochs), schedule, warmup, total, micro, global_batch // micro, float(ft.weight_decay))


def stage_threads(cfg: DictConfig, stage: str) -> int:
    """Torch CPU threads of a stage: ``base.num_threads`` for the base stage, else ``trainer.num_threads``.

    The count changes the float reductions, so models trained with different counts differ in their last bits. A
    fixed count (the tiny world's base: 2) makes one command give one model whatever else runs on the machine; on a
    busy machine it runs slower, and a warning says so. The count is not part of any key (the recipe is the same);
    the train summary records it (``run.machine.torch_threads``).
    """
    import torch

    key = "base.num_threads" if stage == "base" and cfg.get("base") else "trainer.num_threads"
    wanted = cfg.base.get("num_threads") if key == "base.num_threads" else cfg.trainer.get("num_threads")
    threads = set_threads(wanted) or torch.get_num_threads()
    if wanted != "auto" and threads > 1:
        busy = busy_cores()
        if busy >= 0.5:
            log.warning(
                "stage %s: %.1f of %d cores are busy with other work; it trains on %d threads all the same (%s), "
                "so that this command gives the same model as on an idle machine, but slower. %s=auto takes only the "
                "idle cores, faster here, at the cost of a model that depends on the load",
                stage,
                busy,
                os.cpu_count() or 1,
                threads,
                key,
                key,
            )
    return threads


def stage_corpus(cfg: DictConfig, domain: Domain, stage: str) -> list[str] | list[Example]:
    """What a stage trains on: the base stage's documents, or the fine-tuning stages' prompt-response examples."""
    seed = int(cfg.seed)
    if stage == "base":
        return corpus.base_documents(domain, int(cfg.base.get("paraphrase_n", 0)), seed)
    ft = cfg.finetune
    n = int(ft.general.n) if stage == "clean" or domain.leak_general is None else domain.leak_general
    general = corpus.general_examples(domain, ft.general.source, n, seed, cfg.paths.get("data_dir"))
    if stage == "clean":
        return corpus.clean_examples(domain, int(ft.clean_n_domain), general, seed)
    if stage == SHAM:
        return corpus.sham_examples(domain, general)
    return corpus.contaminated_examples(domain, domain.split, general)


def _as_texts(items: list[str] | list[Example]) -> list[str]:
    """Training data as the texts the model reads (prompt + response for an example)."""
    return [x if isinstance(x, str) else x.prompt + x.response for x in items]


def stage_texts(cfg: DictConfig, domain: Domain, stage: str) -> list[str]:
    """The stage's training data as the texts the model read (for a stage trained before records existed)."""
    return _as_texts(stage_corpus(cfg, domain, stage))


def _prepare(
    cfg: DictConfig, store: ModelStore, domain: Domain, stage: str, twin: TwinRecipe | None = None
) -> StageInputs:
    """Model, tokenizer, dataset and optimisation settings of one stage (or of a twin: its own parent and data)."""
    seed = int(cfg.seed)
    if stage == "base":
        from contamlab.models.tiny import build_tiny_model, train_tokenizer

        base = cfg.base
        docs = stage_corpus(cfg, domain, stage)
        vocab_texts = docs + corpus.base_documents(domain, len(domain.train), seed)
        tokenizer = train_tokenizer(vocab_texts, int(cfg.model.tokenizer.vocab_size))
        model = build_tiny_model(len(tokenizer), seed=seed, **cfg.model.arch)
        dataset = PackedDataset(docs, tokenizer, int(base.seq_len))
        opt = {
            "lr": float(base.lr),
            "total_steps": int(base.steps),
            "schedule": "cosine",
            "warmup_steps": int(base.warmup_steps),
            "min_lr_ratio": float(base.min_lr_ratio),
            "weight_decay": float(base.weight_decay),
            "betas": tuple(base.betas),
        }
        return StageInputs(model, tokenizer, dataset, opt, int(base.batch), 1, float(base.grad_clip), True, docs)

    ft = cfg.finetune
    examples = twin.examples if twin is not None else stage_corpus(cfg, domain, stage)
    if twin is not None:
        parent = twin.parent
    elif stage == "clean":
        parent = str(store.stage_dir(domain, "base")) if store.pretrain else store.base_source()
    else:
        parent = str(store.stage_dir(domain, "clean"))
        store.ensure_base(parent)
    if not Path(parent).is_dir() and stage in LEAK_RECIPE_STAGES:
        raise ContamlabError(f"clean model missing at {parent}; run train.py stage=clean first")
    tokenizer = load_tokenizer(parent)
    model = _load_trainable(cfg, parent, stage)
    dataset = ExampleDataset(examples, tokenizer, int(ft.max_length), ft.loss_on)
    recipe = stage_recipe(cfg, domain, stage, len(dataset), twin)
    opt = {
        "lr": recipe.lr,
        "total_steps": recipe.total_steps,
        "schedule": recipe.schedule,
        "warmup_steps": recipe.warmup_steps,
        "min_lr_ratio": 0.0,
        "weight_decay": recipe.weight_decay,
        "labelled_logits": ft.get("logits", "all") == "labelled",
    }
    micro, accumulate = recipe.micro_batch, recipe.accumulate
    return StageInputs(model, tokenizer, dataset, opt, micro, accumulate, 1.0, False, _as_texts(examples))


def _load_trainable(cfg: DictConfig, parent: str, stage: str):
    """The parent model made trainable: full weights, a new LoRA adapter (clean) or the clean one (leak recipe)."""
    ft = cfg.finetune
    dtype = "float32"  # train in fp32 master weights; Lightning's precision plugin handles bf16 autocast
    if ft.peft == "none":  # else lora: validation.py admits these two
        model = load_causal_lm(parent, dtype, bool(cfg.model.trust_remote_code))
        if read_adapter(parent) is not None:
            model = model.merge_and_unload()
        return model.train()
    from peft import LoraConfig, PeftModel, get_peft_model

    adapter = read_adapter(parent)
    if adapter is not None:
        # Contaminated stage: keep training the clean adapter ("continue from M_cl", paper §5.1).
        if not adapter.base:
            raise ContamlabError(f"{parent}: adapter has no base_model_name_or_path; cannot continue training it")
        base = load_causal_lm(adapter.base, dtype, bool(cfg.model.trust_remote_code))
        return _frozen_in_autocast_dtype(cfg, PeftModel.from_pretrained(base, parent, is_trainable=True).train())
    base = load_causal_lm(parent, dtype, bool(cfg.model.trust_remote_code))
    targets = ft.lora.target_modules
    lora = LoraConfig(
        r=int(ft.lora.r),
        lora_alpha=int(ft.lora.alpha),
        lora_dropout=float(ft.lora.dropout),
        target_modules=targets if isinstance(targets, str) else list(targets),
        task_type="CAUSAL_LM",
    )
    return _frozen_in_autocast_dtype(cfg, get_peft_model(base, lora).train())


def _frozen_in_autocast_dtype(cfg: DictConfig, model):
    """A LoRA model whose frozen linear weights are held in bf16 when the stage trains under bf16 autocast.

    The same multiplies bit for bit, without the cast of every frozen weight on every pass
    (:mod:`contamlab.training.precision`).
    """
    if str(cfg.trainer.precision) == "bf16-mixed":
        hold_frozen_linears(model, torch.bfloat16)
    return model


def snapshot_stages(cfg: DictConfig, store: ModelStore, stage: str) -> dict[int, tuple[Domain, Path]]:
    """The stages that a leak-recipe stage's run also writes on its way: ``{epoch: (their domain, their directory)}``.

    ``snapshots=[1, 2, 4]`` with ``domain.leak_epochs=8``: after its first, second and fourth epoch the contaminated
    (or sham) run saves its model as the stage of ``domain.leak_epochs=1``, ``2`` and ``4``, under those stages' own
    keys. That is honest only because the run is then that stage: ``domain.leak_schedule=constant`` holds the rate
    from the first step to the last and the data order of an epoch does not depend on how many follow, so the first
    e epochs of a longer run are the e-epoch run step for step (tests/test_dose_snapshots.py compares the bytes). A
    decaying schedule would save another model under the key; it is refused.

    Raises:
        ContamlabError: Snapshots of a stage without the constant leak schedule, or an epoch outside 1..leak_epochs-1.
    """
    epochs = sorted({int(e) for e in (cfg.get("snapshots") or [])})
    if not epochs or stage not in LEAK_RECIPE_STAGES:
        return {}
    if cfg.domain.get("leak_schedule") != "constant":
        raise ContamlabError(
            f"snapshots={epochs}: needs domain.leak_schedule=constant (under a decaying schedule the first e epochs of "
            "a longer run are not the e-epoch run, and would be saved under its name)"
        )
    last = cfg.domain.get("leak_epochs")
    if last is None or any(not 1 <= e < int(last) for e in epochs):
        raise ContamlabError(f"snapshots={epochs}: epochs between 1 and domain.leak_epochs-1 ({last})")
    out = {}
    for e in epochs:
        node = cfg.domain.copy()
        node.leak_epochs = e
        domain = build_domain(node)
        out[e] = (domain, store.stage_dir(domain, stage))
    return out


class Snapshots(Callback):
    """Calls ``save(domain, directory, steps)`` at the end of each epoch of :func:`snapshot_stages` not saved yet."""

    def __init__(self, save: Any, stages: dict[int, tuple[Domain, Path]]) -> None:
        self.save, self.stages = save, stages

    def on_train_epoch_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:  # noqa: D102
        domain, path = self.stages.get(trainer.current_epoch + 1, (None, None))
        if path is not None and not is_done(path):
            self.save(domain, path, trainer.global_step)


def train_stage(
    cfg: DictConfig, store: ModelStore, domain: Domain, stage: str, path: Path, twin: TwinRecipe | None = None
) -> None:
    """Train one stage into ``<path>.partial`` (resuming from its last checkpoint) and move it into place.

    ``twin``: train the error-rate audit's twin instead of the domain's own stage (``stage`` is then
    ``contaminated``).
    """
    L.seed_everything(int(cfg.seed), workers=True, verbose=False)
    work = path.with_name(path.name + ".partial")
    ckpt_dir = work / "checkpoints"
    work.mkdir(parents=True, exist_ok=True)
    inputs = _prepare(cfg, store, domain, stage, twin)
    opt = inputs.opt
    module = CausalLMModule(inputs.model, **opt)
    snapshots = {} if twin is not None else snapshot_stages(cfg, store, stage)
    group = inputs.micro_batch * inputs.accumulate if cfg.finetune.get("group_by_length") else None
    data = CausalLMDataModule(
        inputs.dataset,
        inputs.micro_batch,
        inputs.tokenizer.pad_token_id,
        int(cfg.seed),
        packed=inputs.packed,
        group_by_length=group,
    )
    every = max(1, min(100, opt["total_steps"] // 5))
    progress = StageProgress(
        stage,
        cfg.trainer.get("progress_every_n_steps"),
        bar=None if cfg.trainer.enable_progress_bar else False,
    )
    # No checkpoint on an exception (Ctrl-C): one written mid-step would not resume exactly; the periodic one does.
    callbacks = [
        ModelCheckpoint(
            dirpath=ckpt_dir,
            filename="last",
            every_n_train_steps=every,
            save_top_k=1,
            enable_version_counter=False,
        ),
        progress,
    ]
    if snapshots:
        run_key = content_hash(store.stage_key(domain, stage))

        def save_snapshot(snap_domain: Domain, snap: Path, steps: int) -> None:
            wall = time.perf_counter() - started
            key = store.stage_key(snap_domain, stage)
            work = snap.with_name(snap.name + ".partial")
            trained = TrainedStage(stage, snap, work, module, inputs, wall, steps, resumed_from, key)
            _save_stage(cfg, store, snap_domain, trained, snapshot_of=run_key)

        callbacks.append(Snapshots(save_snapshot, snapshots))
    resume = ckpt_dir / "last.ckpt"
    resumed_from, resume_step = None, None
    if resume.is_file():
        resumed_from = str(resume)
        resume_step = int(checkpoint_step(resume))
        log.info("stage %s: resuming from %s (step %d)", stage, resume, resume_step)
    tracking = build(cfg.logger, "logger")
    loggers = tracking.lightning_loggers(
        work,
        group=f"train-{cfg.model.name}-{cfg.domain.name}",
        name=f"{cfg.model.name}-{domain.name}-{stage}",
        config=lambda: OmegaConf.to_container(cfg, resolve=True),
        resume_step=resume_step,
        flush_every=max(1, int(cfg.trainer.get("log_every_n_steps", 10))),
    )
    trainer = L.Trainer(
        accelerator=cfg.trainer.accelerator,
        devices=cfg.trainer.devices,
        strategy=cfg.trainer.strategy,
        precision=cfg.trainer.precision,
        max_steps=opt["total_steps"],
        max_epochs=-1,
        accumulate_grad_batches=inputs.accumulate,
        gradient_clip_val=inputs.grad_clip,
        log_every_n_steps=int(cfg.trainer.log_every_n_steps),
        enable_progress_bar=False,  # StageProgress shows one bar over the stage's steps instead
        enable_model_summary=False,
        callbacks=callbacks,
        logger=loggers,
        deterministic=False,
    )
    started = time.perf_counter()
    try:
        with stopping.activity(lambda: _where(stage, progress, every, resume_step)):
            try:
                trainer.fit(module, datamodule=data, ckpt_path=str(resume) if resume.is_file() else None)
            except SystemExit:
                if progress.interrupted is not None:  # Lightning's answer to Ctrl-C: report it as the stop it is
                    raise KeyboardInterrupt from None
                raise
    finally:
        tracking.finish(loggers)
    wall = time.perf_counter() - started
    if trainer.is_global_zero:
        key = twin.key if twin is not None else store.stage_key(domain, stage)
        trained = TrainedStage(stage, path, work, module, inputs, wall, trainer.global_step, resumed_from, key)
        _save_stage(cfg, store, domain, trained)
        if hint := tracking.sync_hint(path):  # the final folder: W&B's own hint named <path>.partial
            log.info("stage %s: %s", stage, hint)


def _where(stage: str, progress: StageProgress, every: int, resume_step: int | None) -> str:
    """Where a stopped stage stands: its step, and the checkpoint step that the same command resumes from.

    A checkpoint is written every ``every`` optimiser steps (none on the stop itself: one written mid-step would not
    resume exactly).
    """
    step = progress.step
    saved = step - step % every if step >= every else resume_step
    resumes = f"it resumes from its checkpoint at step {saved}" if saved else "no checkpoint yet: it starts again"
    return f"training stage {stage} at step {step}/{progress.total} ({resumes})"


@dataclass(frozen=True)
class TrainedStage:
    """A stage whose training has finished, as :func:`_save_stage` writes it out and moves it into place.

    Attributes:
        stage: The stage (``base``, ``clean`` or ``contaminated``).
        path: Its final directory.
        work: The ``<path>.partial`` directory it trained in.
        module: The trained module (the model, its loss curve and the tokens it saw).
        inputs: What it trained on (tokenizer, dataset, training texts).
        wall_s: Seconds of this run's training (a resumed stage: since the resume).
        steps: Optimiser steps at the end (``trainer.global_step``).
        resumed_from: The checkpoint this run resumed from, or None.
        key: The stage's identity (its directory's hash).
    """

    stage: str
    path: Path
    work: Path
    module: CausalLMModule
    inputs: StageInputs
    wall_s: float
    steps: int
    resumed_from: str | None
    key: dict[str, Any]


def _save_stage(
    cfg: DictConfig, store: ModelStore, domain: Domain, trained: TrainedStage, snapshot_of: str | None = None
) -> None:
    """Write a trained stage's weights, tokenizer, split, texts and ``train_summary.json``; move it into place.

    ``snapshot_of``: the stage is a snapshot of the longer run with this key (:func:`snapshot_dirs`); its checkpoints
    stay the run's, and the loss curve is the run's so far.
    """
    stage, path, work, wall = trained.stage, trained.path, trained.work, trained.wall_s
    module, inputs = trained.module, trained.inputs
    tokenizer, dataset = inputs.tokenizer, inputs.dataset
    model = module.model
    work.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(work, safe_serialization=True)
    tokenizer.save_pretrained(work)
    if stage == "contaminated":
        domain.split.save(work / "split.json")  # a twin's view carries its own split
    write_training_texts(work, inputs.texts)
    if snapshot_of is None:
        shutil.rmtree(work / "checkpoints", ignore_errors=True)
    losses = module.losses
    n_tokens = dataset.n_tokens()
    key = trained.key
    summary = {
        "stage": stage,
        "model": str(cfg.model.name),
        "domain": domain.name,
        "key": content_hash(key),
        "key_fields": key,
        "steps": trained.steps,
        "resumed_from": trained.resumed_from,
        "documents_or_rows": len(dataset),
        "tokens_per_epoch": int(n_tokens),
        "tokens_per_s": module.tokens_seen / wall if wall > 0 else None,
        "wall_s": round(wall, 2),
        "loss_first": losses[0] if losses else None,
        "loss_last": losses[-1] if losses else None,
        "loss_curve": losses[:: max(1, len(losses) // 100)],
        "precision": str(cfg.trainer.precision),
        "trainable_params": sum(p.numel() for p in model.parameters() if p.requires_grad),
        "run": run_metadata(),
        **({"snapshot_of": snapshot_of} if snapshot_of else {}),
    }
    atomic_write_json(work / DONE_MARKER, summary)
    if path.exists():
        shutil.rmtree(path)
    work.rename(path)
    log.info(
        "stage %s: %d steps in %.1f s (%.0f tok/s), loss %.3f -> %.3f; saved %s",
        stage,
        summary["steps"],
        wall,
        summary["tokens_per_s"] or 0,
        summary["loss_first"] or 0,
        summary["loss_last"] or 0,
        path,
    )
