"""A reference to a model, as a user types it: a simulated stage (``clean@1``), a hub id, a directory or an adapter.

The one place that parses the ``name@seed`` form: the audit's target and references, their validation, the hub
preflight and the audit report all read a :class:`ModelRef`. The simulated stages' names are
:data:`~contamlab.models.store.STAGES`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contamlab.errors import ContamlabError
from contamlab.io import looks_like_path
from contamlab.models.store import SHAM, STAGES

#: The forms a reference may take, for messages.
FORMS = "base, clean, contaminated or sham (the simulated models; @<seed> for another seed's), a hub id or a directory"


@dataclass(frozen=True)
class ModelRef:
    """One model reference, parsed.

    Attributes:
        text: As typed (stripped).
        stage: The simulated stage (``base``, ``clean``, ``contaminated``, ``sham``), or None for a model of one's own.
        seed: The seed after ``@`` of a simulated stage (``clean@1``), or None for the run's own seed.
    """

    text: str
    stage: str | None = None
    seed: int | None = None

    @classmethod
    def parse(cls, value: Any, setting: str = "model") -> ModelRef:
        """Parse a reference; the syntax only (a directory's existence is :meth:`check_exists`'s).

        Args:
            value: As typed.
            setting: The config key that holds it, for the error message.

        Raises:
            ContamlabError: An empty reference, or a seed after ``@`` that is not a non-negative integer.
        """
        text = "" if value is None else str(value).strip()
        if not text:
            raise ContamlabError(f"{setting}: an empty model reference; give {FORMS}")
        name, at, seed = text.partition("@")
        if name not in (*STAGES, SHAM):
            return cls(text)
        if at and not seed.isdigit():
            raise ContamlabError(f"{setting}={text}: the seed after @ must be a non-negative integer")
        return cls(text, name, int(seed) if at else None)

    @property
    def simulated(self) -> bool:
        """Whether it names a stage of the simulation (trained by train.py under the run's model and domain)."""
        return self.stage is not None

    @property
    def is_path(self) -> bool:
        """Whether a reference of one's own is meant as a local directory (else a hub id)."""
        return not self.simulated and (looks_like_path(self.text) or Path(self.text).expanduser().is_dir())

    @property
    def kind(self) -> str:
        """``simulated``, ``adapter`` (a peft adapter directory), ``directory`` (a saved model) or ``hub``."""
        if self.simulated:
            return "simulated"
        if not self.is_path:
            return "hub"
        return "adapter" if (Path(self.text).expanduser() / "adapter_config.json").is_file() else "directory"

    def check_exists(self, setting: str) -> None:
        """Raise when a reference meant as a directory names none (validation calls it before anything loads)."""
        if self.is_path and not Path(self.text).expanduser().is_dir():
            raise ContamlabError(
                f"{setting}={self.text}: directory not found; give base, clean, contaminated, sham (@seed), the "
                "directory of a saved model or adapter, or a hub id (owner/name)"
            )

    def seed_in(self, run_seed: int) -> int:
        """The seed whose models it names: its own ``@seed``, else the run's."""
        return run_seed if self.seed is None else self.seed
