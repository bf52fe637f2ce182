"""The seeded leaked / unleaked split of a test set ("Zero Gap Is Not Restoration" §5.1: 660 leaked, 659 unleaked)."""

from __future__ import annotations

import json
import random
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from contamlab.errors import ContamlabError


@dataclass(frozen=True)
class Split:
    """Which test questions leak into the contaminated model's training data.

    Attributes:
        leaked: Ids of leaked questions, in test-set order.
        unleaked: Ids of unleaked questions, in test-set order.
        seed: The seed that drew the split.
    """

    leaked: tuple[str, ...]
    unleaked: tuple[str, ...]
    seed: int

    def is_leaked(self, question_id: str) -> bool:
        """Whether a question id is in the leaked half."""
        return question_id in self._leaked_set

    @cached_property
    def _leaked_set(self) -> frozenset[str]:
        return frozenset(self.leaked)

    def to_dict(self) -> dict:
        """A JSON-serialisable form."""
        return {"seed": self.seed, "leaked": list(self.leaked), "unleaked": list(self.unleaked)}

    def save(self, path: str | Path) -> None:
        """Write the split as JSON (atomically)."""
        from contamlab.io import atomic_write_text

        atomic_write_text(path, json.dumps(self.to_dict(), indent=1))

    @classmethod
    def load(cls, path: str | Path) -> Split:
        """Read a split written by :meth:`save`."""
        try:
            data = json.loads(Path(path).read_text())
            return cls(tuple(data["leaked"]), tuple(data["unleaked"]), int(data["seed"]))
        except (OSError, ValueError, KeyError, TypeError) as err:
            raise ContamlabError(f"{path}: not a valid split file ({err}); delete it to redraw") from None


def draw_split(ids: Sequence[str], seed: int, leak_fraction: float = 0.5) -> Split:
    """Draw a seeded random leaked subset of ``ids``.

    The leaked half has ``ceil(len(ids) * leak_fraction)`` questions, so GSM8K's 1,319 test questions give the
    paper's 660 leaked / 659 unleaked.
    """
    if not 0.0 < leak_fraction < 1.0:
        raise ContamlabError(f"domain.leak_fraction={leak_fraction}: must lie strictly between 0 and 1")
    if len(set(ids)) != len(ids):
        raise ContamlabError("duplicate question ids in the test set; ids must be unique")
    n_leaked = -(-len(ids) * round(leak_fraction * 10**6) // 10**6)  # exact ceil for fractions like 0.5
    chosen = set(random.Random(seed).sample(list(ids), n_leaked))
    leaked = tuple(i for i in ids if i in chosen)
    unleaked = tuple(i for i in ids if i not in chosen)
    return Split(leaked, unleaked, seed)
