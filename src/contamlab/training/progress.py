"""Training progress a person can read: one bar over a stage's optimiser steps, or log lines when not a terminal.

Lightning's bar counts batches per epoch ("Epoch 0/-2 … 45/338" under ``max_steps`` with ``max_epochs=-1``) and its
ETA covers one epoch; a redirected log shows nothing until the stage ends. This callback replaces it: a tqdm bar
over ``trainer.estimated_stepping_batches`` (a resumed run starts at its checkpoint's step), or, when stderr is not a
terminal, a log line every N steps. The log line's ETA comes from the rate of the last minute's steps, not from the
average since the start: the first step carries the start-up, and a machine that gets busier midway slows every
later step.
"""

from __future__ import annotations

import logging
import sys
import time
from collections import deque
from datetime import timedelta
from typing import TYPE_CHECKING, Any

import lightning as L
from lightning.pytorch.callbacks import Callback

if TYPE_CHECKING:
    from contamlab.training.module import CausalLMModule

log = logging.getLogger("contamlab")


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=round(max(0.0, seconds))))


class StageProgress(Callback):
    """A progress bar or periodic log lines for one training stage.

    Args:
        stage: The stage's name, shown with each update (``base``, ``clean``, ``contaminated``).
        every_n_steps: Optimiser steps between log lines (when no bar is shown); None: a tenth of the stage's steps.
        bar: Show a tqdm bar; None: when stderr is a terminal.
    """

    #: Seconds of recent steps the ETA's rate is measured over.
    RATE_WINDOW_S = 60.0

    def __init__(self, stage: str, every_n_steps: int | None = None, bar: bool | None = None) -> None:
        self.stage = stage
        self.every_n_steps = None if every_n_steps is None else max(1, int(every_n_steps))
        self.bar_wanted = sys.stderr.isatty() if bar is None else bar
        self._bar: Any = None
        self._total = 0
        self._start_step = 0
        self._last_step = 0
        self._t0 = 0.0
        self._recent: deque[tuple[float, int]] = deque()  # (time, step) after each step of the rate window
        self.interrupted: BaseException | None = None  # the KeyboardInterrupt Lightning caught, if any

    @property
    def step(self) -> int:
        """The last optimiser step finished (the checkpoint's step before the first one of a resumed run)."""
        return self._last_step

    @property
    def total(self) -> int:
        """The stage's optimiser steps."""
        return self._total

    def record(self, step: int, now: float | None = None) -> None:
        """Note that ``step`` finished at ``now`` (``time.perf_counter()``), for the ETA's recent rate."""
        now = time.perf_counter() if now is None else now
        self._recent.append((now, step))
        # Keep one point at or before the window's start, so the rate always spans the whole window.
        while len(self._recent) > 2 and now - self._recent[1][0] >= self.RATE_WINDOW_S:
            self._recent.popleft()

    def eta_s(self, step: int, now: float | None = None) -> float:
        """Seconds left at the rate of the recent steps (NaN until two steps have finished).

        The rate starts at the end of the first step, so start-up (data loading, the first allocations) is not in it.
        """
        if len(self._recent) < 2:
            return float("nan")
        now = time.perf_counter() if now is None else now
        t_old, step_old = self._recent[0]
        if step <= step_old or now <= t_old:
            return float("nan")
        return (self._total - step) * (now - t_old) / (step - step_old)

    def on_train_start(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Start the clock and the bar at the (possibly resumed) step."""
        self._total = int(trainer.estimated_stepping_batches)
        if self.every_n_steps is None:
            self.every_n_steps = max(1, self._total // 10)
        self._start_step = self._last_step = int(trainer.global_step)
        self._t0 = time.perf_counter()
        self._recent.clear()
        if self.bar_wanted:
            from tqdm.auto import tqdm

            self._bar = tqdm(
                total=self._total,
                initial=self._start_step,
                desc=f"stage {self.stage}",
                unit="step",
                dynamic_ncols=True,
                file=sys.stderr,
            )
        elif self._start_step:
            log.info("stage %s: resumed at step %d/%d", self.stage, self._start_step, self._total)

    def line(self, step: int, loss: float | None, tokens_per_s: float) -> str:
        """One log line: step, share done, loss, throughput, elapsed time and ETA (from the recent steps' rate)."""
        now = time.perf_counter()
        elapsed = now - self._t0
        eta = self.eta_s(step, now)
        parts = [f"stage {self.stage}: step {step}/{self._total} ({100 * step / max(1, self._total):.0f}%)"]
        if loss is not None:
            parts.append(f"loss {loss:.3f}")
        parts.append(f"{tokens_per_s:,.0f} tok/s")
        parts.append(f"elapsed {_clock(elapsed)}")
        parts.append(f"ETA {_clock(eta)}" if eta == eta else "ETA ?")
        return "  ".join(parts)

    def on_train_batch_end(
        self, trainer: L.Trainer, pl_module: CausalLMModule, outputs: Any, batch: Any, batch_idx: int
    ) -> None:
        """Advance by the optimiser steps taken (none on an accumulation micro-batch)."""
        step = int(trainer.global_step)
        if step == self._last_step:
            return
        advanced, self._last_step = step - self._last_step, step
        self.record(step)
        loss = outputs.get("loss") if isinstance(outputs, dict) else outputs
        loss = float(loss) if loss is not None else None
        elapsed = max(1e-9, time.perf_counter() - self._t0)
        tokens_per_s = pl_module.tokens_seen / elapsed
        if self._bar is not None:
            postfix = {"loss": f"{loss:.3f}"} if loss is not None else {}
            postfix["tok/s"] = f"{tokens_per_s:,.0f}"
            self._bar.set_postfix(postfix, refresh=False)
            self._bar.update(advanced)
        elif step % self.every_n_steps == 0 or step == self._total:
            log.info(self.line(step, loss, tokens_per_s))

    def _close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None

    def on_train_end(self, trainer: L.Trainer, pl_module: L.LightningModule) -> None:
        """Close the bar."""
        self._close()

    def on_exception(self, trainer: L.Trainer, pl_module: L.LightningModule, exception: BaseException) -> None:
        """Close the bar, so that the error message starts on its own line; remember a Ctrl-C.

        Lightning answers a ``KeyboardInterrupt`` with ``sys.exit(1)``; the training job reads :attr:`interrupted`
        to report the stop as one (exit 130, with the command that resumes).
        """
        self._close()
        if isinstance(exception, KeyboardInterrupt):
            self.interrupted = exception
