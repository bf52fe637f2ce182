"""Data: domains, prompts (and ``PROMPT_VERSION``), answer checking, the leaked/unleaked split, paraphrase sources.

Imports only ``io`` and ``errors``; building a domain from its config is :func:`contamlab.config.build_domain`.
"""

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
