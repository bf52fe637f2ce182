"""Lightning helpers for resumable stages: a CSV logger that continues an interrupted run, a checkpoint's step."""

from __future__ import annotations

import csv
import warnings
from pathlib import Path

from lightning.pytorch.loggers import CSVLogger
from lightning.pytorch.loggers.logger import rank_zero_experiment


class ResumedCSVLogger(CSVLogger):
    """A CSVLogger that continues an interrupted run's ``metrics.csv`` (Lightning's deletes it on a resume).

    Rows from the resumed checkpoint's step on are dropped: the resumed run logs those steps again.

    Args:
        *args: As :class:`CSVLogger`.
        keep_before: The checkpoint's global step; rows with a smaller ``step`` are kept.
        **kwargs: As :class:`CSVLogger`.
    """

    def __init__(self, *args, keep_before: int, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._keep_before = keep_before

    @property
    @rank_zero_experiment
    def experiment(self):
        """The experiment writer, with the kept rows written back and their columns known."""
        if self._experiment is not None:
            return self._experiment
        path = Path(self.log_dir) / "metrics.csv"
        header, rows = [], []
        if path.is_file():
            with path.open(newline="") as handle:
                reader = csv.DictReader(handle)
                header = list(reader.fieldnames or [])
                rows = [r for r in reader if r.get("step") and int(float(r["step"])) < self._keep_before]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "Previous log files … will be deleted": we write them back below
            writer = super().experiment
        if header:
            with path.open("w", newline="") as handle:
                out = csv.DictWriter(handle, fieldnames=header)
                out.writeheader()
                out.writerows(rows)
            writer.metrics_keys = sorted(header)
        return writer


def checkpoint_step(path: Path) -> int:
    """The global step a Lightning checkpoint was written at."""
    import torch

    return int(torch.load(path, map_location="cpu", weights_only=True, mmap=True)["global_step"])
