"""The record of one arithmetic word problem, independent of its wording: its steps, answer and stored choices.

The generator (:mod:`~contamlab.data.arith.generator`) draws problems; the renderers
(:mod:`~contamlab.data.arith.render`, :mod:`~contamlab.data.arith.cot`) turn one into text, a pure function of the
record because every template choice is stored in it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

FAMILIES: tuple[str, ...] = ("chain", "shop", "groups", "compare")
STYLES: tuple[str, ...] = ("base", "pq")
N_VARIANTS = 16  # template-choice integers stored per style (a problem renders at most 10 pieces)


@dataclass(frozen=True)
class Step:
    """One arithmetic operation ``a op b = result``.

    Attributes:
        a: Left operand.
        op: One of ``+ - * /`` (division is always exact).
        b: Right operand.
        result: The value of ``a op b``.
    """

    a: int
    op: str
    b: int
    result: int


@dataclass(frozen=True)
class ArithProblem:
    """One generated word problem, independent of its wording.

    Attributes:
        uid: Stable identifier, e.g. ``arith-test-0007``.
        family: ``chain``, ``shop``, ``groups`` or ``compare``.
        k: Number of operations (solution lines before ``####``).
        level: Difficulty level (1-based index into ``ArithConfig.num_max``/``mul_max``).
        slots: ``(key, value)`` pairs the renderers need besides the steps: names, objects, items,
            containers and ``var`` (the template choices of both styles, :data:`N_VARIANTS` per style in
            :data:`STYLES` order). Hashable.
        steps: The operations in solution order; every number of the question is an operand of some step.
        answer: The final answer, equal to ``steps[-1].result``.
    """

    uid: str
    family: str
    k: int
    level: int
    slots: tuple[tuple[str, Any], ...]
    steps: tuple[Step, ...]
    answer: int

    def choices(self, style: str) -> tuple[int, ...]:
        """The stored template choices of one style."""
        offset = STYLES.index(style) * N_VARIANTS
        return dict(self.slots)["var"][offset : offset + N_VARIANTS]

    def with_choices(self, var: tuple[int, ...]) -> ArithProblem:
        """The same problem (numbers, steps, answer, names) with other template choices ``var`` (all styles)."""
        slots = dict(self.slots)
        slots["var"] = var
        return ArithProblem(self.uid, self.family, self.k, self.level, tuple(slots.items()), self.steps, self.answer)
