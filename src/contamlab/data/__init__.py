"""Domains, prompts, answer checking and the leaked/unleaked split."""

from contamlab.data.answers import extract_answer, is_correct, normalize_number
from contamlab.data.domain import Domain
from contamlab.data.prompts import PromptFormat
from contamlab.data.question import Question
from contamlab.data.split import Split, draw_split

__all__ = [
    "Domain",
    "PromptFormat",
    "Question",
    "Split",
    "draw_split",
    "extract_answer",
    "is_correct",
    "normalize_number",
]
