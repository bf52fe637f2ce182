"""World v2's pretraining text in the forms it takes on the web: worksheets, solutions alone, pages, slipped words.

The default world pre-trains on the arithmetic problems' question-answer documents and on these forms
(``domain.web_forms``), so that the tiny model reads the benchmark's text as a real model reads web text: bare
questions one after another, a solution without its question, several items on one page, a slipped word here and
there (:func:`slip`). The caller passes training items only, never a test item.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

_WORD = re.compile(r"(?<![\w'])[A-Za-z]+(?![\w'])")


def slip(solution: str, rng: random.Random, pool: Sequence[str]) -> str:
    """``solution`` with one of its words replaced by a word of ``pool`` (never a number, symbol or ``####`` line).

    Web text is full of such slips, and a real model reads past them: after an odd word it goes on with what the text
    was saying. Pretraining on slipped solutions, whose text continues correctly after the slip, gives the tiny model
    that habit.
    """
    body, sep, answer = solution.rpartition("\n####")
    words = list(_WORD.finditer(body)) if sep else []
    if not words:
        return solution
    word = rng.choice(words)
    return body[: word.start()] + rng.choice(pool) + body[word.end() :] + sep + answer


def web_documents(
    items: Sequence[tuple[str, str]],
    seed: int,
    question_prefix: str = "Question: ",
    answer_prefix: str = "\nAnswer:",
    slips: float = 0.0,
) -> list[str]:
    """Pretraining documents in the forms such text takes on the web, from ``(question, solution)`` items.

    Each item goes to one of: a question-answer document (the fine-tuning format), a worksheet of three to six bare
    questions separated by blank lines, a solution alone, or a question-answer page of two to four items separated by
    blank lines. The caller passes training items only (never a test item). A share ``slips`` of the solutions has
    one word slipped (:func:`slip`; the replacement is a word of another solution).
    """
    rng = random.Random(f"web/{seed}")
    if slips > 0:
        pool = sorted({w[0] for _, s in items for w in _WORD.finditer(s)})
        items = [(q, slip(s, rng, pool) if rng.random() < slips else s) for q, s in items]
    order = list(range(len(items)))
    rng.shuffle(order)
    docs: list[str] = []
    i = 0
    while i < len(order):
        form = rng.choices(("qa", "worksheet", "solution", "page"), weights=(4, 2, 2, 2))[0]
        size = {"qa": 1, "solution": 1, "worksheet": rng.randint(3, 6), "page": rng.randint(2, 4)}[form]
        chunk = [items[j] for j in order[i : i + size]]
        i += size
        if form == "qa":
            q, s = chunk[0]
            docs.append(f"{question_prefix}{q}{answer_prefix} {s}")
        elif form == "solution":
            docs.append(chunk[0][1])
        elif form == "worksheet":
            docs.append("\n\n".join(q for q, _ in chunk))
        else:
            docs.append("\n\n".join(f"{question_prefix}{q}{answer_prefix} {s}" for q, s in chunk))
    return docs
