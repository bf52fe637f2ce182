"""The LightningModule for causal-LM training (pre-training, full fine-tuning and LoRA alike)."""

from __future__ import annotations

import math
import time

import lightning as L
import torch
from torch import nn

from contamlab.training.loss import labelled_loss

FUSED_DTYPES = (torch.float32, torch.float16, torch.bfloat16)


def lr_lambda(schedule: str, warmup_steps: int, total_steps: int, min_ratio: float = 0.0):
    """The LR multiplier per optimiser step: linear warm-up, then cosine / linear decay to ``min_ratio``, or flat.

    Args:
        schedule: ``cosine``, ``linear`` or ``constant``.
        warmup_steps: Steps of linear warm-up from 0.
        total_steps: Total optimiser steps of the run.
        min_ratio: Final multiplier of the decay (the tiny base model decays to 0.1; fine-tuning to 0).
    """
    if schedule not in ("cosine", "linear", "constant"):
        raise ValueError(f"scheduler={schedule!r}: use cosine, linear or constant")

    def multiplier(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / max(1, warmup_steps)
        if schedule == "constant":
            return 1.0
        progress = min(1.0, (step - warmup_steps) / max(1, total_steps - warmup_steps))
        decay = 0.5 * (1 + math.cos(math.pi * progress)) if schedule == "cosine" else 1.0 - progress
        return min_ratio + (1 - min_ratio) * decay

    return multiplier


class CausalLMModule(L.LightningModule):
    """Next-token cross-entropy on the labelled tokens of each batch (labels −100 are ignored).

    Args:
        model: A ``transformers`` causal LM (optionally wrapped by peft; only trainable parameters are optimised).
        lr: Peak learning rate.
        total_steps: Optimiser steps of the run (for the schedule).
        schedule: ``cosine``, ``linear`` or ``constant``.
        warmup_steps: Warm-up optimiser steps.
        min_lr_ratio: Final LR multiplier.
        weight_decay: AdamW weight decay.
        betas: AdamW betas.
        labelled_logits: Project only the labelled positions onto the vocabulary (:mod:`.loss`); False: the model's
            own ``labels=`` loss, every position projected.
    """

    def __init__(
        self,
        model: nn.Module,
        lr: float,
        total_steps: int,
        schedule: str = "cosine",
        warmup_steps: int = 0,
        min_lr_ratio: float = 0.0,
        weight_decay: float = 0.0,
        betas: tuple[float, float] = (0.9, 0.999),
        labelled_logits: bool = False,
    ) -> None:
        super().__init__()
        self.model = model
        self.lr = lr
        self.total_steps = total_steps
        self.schedule = schedule
        self.warmup_steps = warmup_steps
        self.min_lr_ratio = min_lr_ratio
        self.weight_decay = weight_decay
        self.betas = tuple(betas)
        self.labelled_logits = labelled_logits
        # A LoRA stage's checkpoints keep only the trainable weights (the adapter): the frozen base is reloaded from
        # the parent model on resume, bit for bit. SmolLM2's full state is 0.5 GB a checkpoint, Gemma-3's 1 GB.
        self.frozen = {name for name, p in self.named_parameters() if not p.requires_grad}
        self.strict_loading = not self.frozen
        self.losses: list[float] = []  # per optimiser step, for train_summary.json
        self.tokens_seen = 0
        self._t0 = time.perf_counter()

    def training_step(self, batch: dict[str, torch.Tensor], batch_idx: int) -> torch.Tensor:
        """One micro-batch: mean cross-entropy over its labelled tokens."""
        ids, mask, labels = batch["input_ids"], batch["attention_mask"], batch["labels"]
        if self.labelled_logits:
            loss = labelled_loss(self.model, ids, mask, labels)
        else:
            loss = self.model(input_ids=ids, attention_mask=mask, labels=labels).loss
        n_tokens = int(batch["attention_mask"].sum())
        self.tokens_seen += n_tokens
        elapsed = max(1e-9, time.perf_counter() - self._t0)
        self.log("train/loss", loss, prog_bar=True, on_step=True)
        self.log("train/tokens_per_s", self.tokens_seen / elapsed, prog_bar=True, on_step=True)
        accumulate = self.trainer.accumulate_grad_batches
        if (batch_idx + 1) % accumulate == 0:
            # Once per optimiser step, here rather than in on_train_batch_end: a checkpoint written at this step's
            # end (ModelCheckpoint runs before the module's hook) must hold this step's loss. Divided as Lightning
            # divides the loss it hands to on_train_batch_end, the value this curve has always recorded.
            self.losses.append(float(loss.detach() / accumulate))
        return loss

    def on_train_start(self) -> None:
        """Reset the throughput clock (a resumed run counts from its own start)."""
        self._t0 = time.perf_counter()
        self.tokens_seen = 0

    def on_save_checkpoint(self, checkpoint: dict) -> None:
        """Keep the loss history and the torch RNG (dropout, e.g. LoRA's) with the checkpoint; drop frozen weights.

        Lightning restores weights, optimiser, scheduler and loop progress but not the global RNG; a resumed stage
        draws the same dropout masks as an uninterrupted one only if it continues the same stream.
        """
        if self.frozen:
            checkpoint["state_dict"] = {k: v for k, v in checkpoint["state_dict"].items() if k not in self.frozen}
        checkpoint["contamlab"] = {
            "losses": list(self.losses),
            "torch_rng": torch.get_rng_state(),
            "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
        }

    def on_load_checkpoint(self, checkpoint: dict) -> None:
        """Restore what :meth:`on_save_checkpoint` kept (checkpoints without it load as before)."""
        state = checkpoint.get("contamlab")
        if not state:
            return
        self.losses = list(state["losses"])
        torch.set_rng_state(state["torch_rng"])
        if state["cuda_rng"] and torch.cuda.is_available():
            torch.cuda.set_rng_state_all(state["cuda_rng"])

    def configure_optimizers(self):
        """AdamW on the trainable parameters with a per-step LR schedule."""
        params = [p for p in self.model.parameters() if p.requires_grad]
        # The fused kernel (one pass over all parameters per step) where torch has one: 2 % of the tiny base
        # stage's step on two CPU cores (docs/performance.md); the same update up to float rounding.
        fused = all(p.device.type in ("cpu", "cuda") and p.dtype in FUSED_DTYPES for p in params) or None
        if "mixed" in str(self.trainer.precision):
            # Lightning's mixed-precision plugin refuses to clip the gradients of an optimizer that unscales them
            # itself, as the fused kernel does: the plain loop here (the same update).
            fused = None
        optimizer = torch.optim.AdamW(params, lr=self.lr, weight_decay=self.weight_decay, betas=self.betas, fused=fused)
        scheduler = torch.optim.lr_scheduler.LambdaLR(
            optimizer, lr_lambda(self.schedule, self.warmup_steps, self.total_steps, self.min_lr_ratio)
        )
        return {"optimizer": optimizer, "lr_scheduler": {"scheduler": scheduler, "interval": "step"}}
