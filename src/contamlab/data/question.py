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
        answer: Gold final answer, normalised by the domain's checker (GSM8K: no ``$``, no thousands separators,
            e.g. ``"1234"`` or ``"-2.5"``; a multiple-choice benchmark: the letter).
        choices: The options of a multiple-choice question, in order (empty otherwise).
    """

    id: str
    question: str
    solution: str
    answer: str
    choices: tuple[str, ...] = ()
