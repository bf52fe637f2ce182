"""The core record of a benchmark item."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Question:
    """One benchmark question.

    Attributes:
        id: Stable identifier, unique within its split (e.g. ``gsm8k-test-0007``).
        question: The question text as shown to the model.
        solution: Reference step-by-step solution in GSM8K format (``<<a*b=c>>`` annotations, ``#### answer``).
        answer: Gold final answer, normalised (no ``$``, no thousands separators), e.g. ``"1234"`` or ``"-2.5"``.
    """

    id: str
    question: str
    solution: str
    answer: str
