"""Where a job's metrics go: the ``logger`` group, built through its ``_target_`` into a :class:`Tracking`.

A CSV log is always written next to the run; W&B is added when ``logger=wandb`` (offline unless ``WANDB_MODE`` /
``logger.wandb.mode`` says otherwise). Training (Lightning loggers), restoration metrics
(:mod:`contamlab.jobs.evaluate`) and detection (:mod:`contamlab.detection`) all log through it, so every job's run
is configured, grouped and finished the same way.

W&B's own console output (a header per run, history and summary panels, its ``wandb sync`` hint: 30-60 lines a job)
is off unless ``logger.wandb.verbose=true`` asks for it; a job names its offline runs in
one line of its own instead (:meth:`Tracking.sync_hint`), which names the folder the runs end up in: a training
stage's W&B hint would name its ``.partial`` work directory, gone once the stage is saved.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from contamlab.config import build

log = logging.getLogger("contamlab")


@dataclass(frozen=True)
class Tracking:
    """The logger config.

    Attributes:
        wandb: ``project``, ``entity``, ``group`` and ``mode`` of the W&B runs, and ``verbose``: W&B's own console
            output, off unless true; None for CSV only.
        csv: Write the CSV log (always on; kept as a field so the YAML says so).
    """

    wandb: dict[str, Any] | None = None
    csv: bool = True

    @property
    def uses_wandb(self) -> bool:
        """Whether runs go to W&B (configured and not ``mode: disabled``)."""
        return bool(self.wandb) and self.wandb.get("mode") != "disabled"

    @property
    def offline(self) -> bool:
        """Whether the W&B runs stay on this machine until ``wandb sync`` uploads them."""
        return self.uses_wandb and str(self.wandb.get("mode", "offline")) in ("offline", "dryrun")

    def _settings(self) -> Any:
        """The runs' console settings: W&B's own output only when ``verbose`` asks for it.

        Offline, ``silent``: every line W&B would print is about the local run (its folder, its panels, a ``wandb
        sync`` hint that names a training stage's ``.partial`` directory), and :meth:`sync_hint` says it in one.
        Online, ``quiet``: the run's URL stays, the panels go. Both only mute the run's printer; W&B's warnings and
        errors still reach the console.
        """
        import wandb

        if self.wandb.get("verbose", False):
            return wandb.Settings()
        return wandb.Settings(silent=True) if self.offline else wandb.Settings(quiet=True)

    def _init_args(self, group: str, name: str, config: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        assert self.wandb is not None
        return {
            "project": self.wandb.get("project", "contamlab"),
            "entity": self.wandb.get("entity"),
            "group": self.wandb.get("group") or group,
            "name": name,
            "mode": self.wandb.get("mode", "offline"),
            "config": config(),
            "settings": self._settings(),
        }

    def sync_hint(self, folder: Path) -> str | None:
        """One line naming the offline W&B runs under ``folder`` and how to upload them; None when there are none.

        Args:
            folder: Where the job's runs were written (``<folder>/wandb``): the job's output directory, or a training
                stage's final directory once its ``.partial`` work directory has been moved there.
        """
        runs = Path(folder) / "wandb"
        if not self.offline or not any(runs.glob("offline-run-*")):
            return None
        return f"W&B runs saved offline in {runs}; upload them with: wandb sync {runs}"

    @contextmanager
    def run(self, out_dir: Path, group: str, name: str, config: Callable[[], dict[str, Any]]) -> Iterator[Any]:
        """A W&B run (None without W&B), always finished on exit.

        Args:
            out_dir: Where the run's files go.
            group: The run group when ``logger.wandb.group`` is not set.
            name: The run's name.
            config: Returns the job's resolved config (logged with the run; called only when W&B is on, since
                resolving needs Hydra's runtime config).
        """
        if not self.uses_wandb:
            yield None
            return
        import wandb

        run = wandb.init(dir=str(out_dir), **self._init_args(group, name, config))
        try:
            yield run
        finally:
            wandb.finish()

    def lightning_loggers(
        self,
        work: Path,
        group: str,
        name: str,
        config: Callable[[], dict[str, Any]],
        resume_step: int | None = None,
        flush_every: int = 10,
    ) -> list[Any]:
        """The Lightning loggers of one training stage: the CSV log, plus W&B when configured.

        Args:
            work: The stage's work directory (the CSV goes to ``work/logs``).
            group: The W&B group when ``logger.wandb.group`` is not set.
            name: The run's name.
            config: Returns the job's resolved config (called only when W&B is on).
            resume_step: The checkpoint step a resumed run starts from (the CSV keeps only the rows before it).
            flush_every: Flush the CSV every this many steps (as often as checkpoints, so a killed run loses no more
                rows than steps).
        """
        from lightning.pytorch.loggers import CSVLogger, WandbLogger

        from contamlab.training.checkpoints import ResumedCSVLogger

        common = {"save_dir": str(work), "name": "logs", "version": "", "flush_logs_every_n_steps": flush_every}
        loggers: list[Any] = [
            CSVLogger(**common) if resume_step is None else ResumedCSVLogger(**common, keep_before=resume_step)
        ]
        if self.uses_wandb:
            args = self._init_args(group, name, config)
            if resume_step is not None:
                args["name"] = f"{name} (resumed at step {resume_step})"
            wandb_logger = WandbLogger(save_dir=str(work), **args)
            # Lightning 2.6 (pinned) always hands wandb.init ``anonymous=None``, a setting wandb deprecated: dropped,
            # so that wandb does not warn about a setting nobody set. The logger starts its run lazily from this dict.
            wandb_logger._wandb_init.pop("anonymous", None)
            loggers.append(wandb_logger)
        return loggers

    @staticmethod
    def finish(loggers: list[Any]) -> None:
        """Close the W&B run a stage's Lightning loggers opened (the CSV needs nothing)."""
        from lightning.pytorch.loggers import WandbLogger

        if any(isinstance(logger, WandbLogger) for logger in loggers):
            import wandb

            wandb.finish()


def tracking_run(cfg: DictConfig, out_dir: Path, group: str, name: str) -> AbstractContextManager[Any]:
    """The job's W&B run (None without W&B) from the ``logger`` group, with the resolved config, finished on exit."""
    return build(cfg.logger, "logger").run(out_dir, group, name, lambda: OmegaConf.to_container(cfg, resolve=True))


def log_sync_hint(cfg: DictConfig, out_dir: Path) -> None:
    """The job's last line when it logged to W&B offline: where its runs are and how to upload them."""
    hint = build(cfg.logger, "logger").sync_hint(out_dir)
    if hint:
        log.info("%s", hint)
