"""World v2 renderings of the synthetic problems: solutions with the slack of real chain-of-thought, and web forms.

A real model's chain-of-thought has many tokens whose runner-up is another valid continuation: connectives,
restatements, optional sentences, the order of independent steps, equivalent forms of a calculation. The terse v1
solutions (:func:`contamlab.data.arith.render`) have almost none, so nearly every forced runner-up is an error. Here
every solution is drawn among such renderings, deterministically from ``(problem, variant)``:

- each step line is one of the base or pq wordings of that step (both explain the calculation), with the
  calculation written out as plain text, ``8 - 2 = 6``, as a model's chain-of-thought writes it (no GSM8K
  calculator markup: its ``<<8-2=6>>`` repeats every number and symbol once more, and a forced runner-up inside it
  survived 0.22 of the time against 0.66 in the text around it, world v2's first revision);
- a calculation with ``+`` or ``*`` may show its operands in either order (``7 + 12`` or ``12 + 7``);
- connectives before steps (``First,``, ``Then``, ``Next,`` …), an optional opening sentence and an optional
  closing ``So the answer is N.`` before ``#### N``;
- a shop problem's two independent item costs in either order.

Variant 0 is the test item's fixed reference solution (what leaks is one text, as with GSM8K); pretraining and the
clean fine-tune draw other variants. :func:`web_documents` renders the forms in which such text appears on the web.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence

from contamlab.data.arith import _N_VARIANTS, _NAMES, STYLES, ArithProblem, render

# Bump when the renderings change: part of the model and sample cache keys of a cot domain. 2: plain-text
# calculations and no restatement of the question (revision 1's restated question ended its line with "?", after
# which the end-of-text token, a worksheet's ending, was the runner-up).
COT_VERSION = 2

OPENINGS = (
    "Let's solve this step by step.",
    "Let's work it out.",
    "We can solve this in steps.",
    "Let me think about this step by step.",
    "Here is how to work it out.",
)
FIRST = ("", "First, ", "To start, ", "We start with this: ")
MIDDLE = ("", "Then ", "Next, ", "After that, ", "Now ")
LAST = ("", "Finally, ", "So ", "Last, ")
CLOSINGS = (
    "So the answer is {n}.",
    "The answer is {n}.",
    "That means the answer is {n}.",
    "So the final answer is {n}.",
)


def _redraw(problem: ArithProblem, rng: random.Random) -> ArithProblem:
    """The problem with fresh template choices for both styles (same numbers, steps and answer)."""
    slots = dict(problem.slots)
    slots["var"] = tuple(rng.randrange(1 << 16) for _ in range(_N_VARIANTS * len(STYLES)))
    return ArithProblem(
        problem.uid, problem.family, problem.k, problem.level, tuple(slots.items()), problem.steps, problem.answer
    )


_MARKUP = re.compile(r"(?:\d+ [-+*/] \d+ = )?<<(\d+)([-+*/])(\d+)=(\d+)>>\d+")


def _plain(line: str) -> str:
    """The line with its calculation as plain text: ``8 - 2 = <<8-2=6>>6`` and ``<<8-2=6>>6`` become ``8 - 2 = 6``."""
    return _MARKUP.sub(lambda m: f"{m[1]} {m[2]} {m[3]} = {m[4]}", line)


def _swap_operands(line: str, a: int, op: str, b: int) -> str:
    """The same calculation with its operands in the other order (``+`` and ``*`` only)."""
    return line.replace(f"{a} {op} {b} = ", f"{b} {op} {a} = ")


def _join(connective: str, line: str) -> str:
    if not connective:
        return line
    first = line.split(" ", 1)[0].rstrip(",.:")
    keep = first.removesuffix("'s") in _NAMES or first[:1].isdigit() or first.startswith("<<")
    return connective + (line if keep else line[:1].lower() + line[1:])


def render_cot(problem: ArithProblem, variant: int, style: str = "base") -> tuple[str, str]:
    """``(question, solution)``: the ``style`` question of ``problem`` and chain-of-thought rendering ``variant``.

    Deterministic in ``(problem.uid, variant)``; the question text is :func:`render`'s, so the domain's questions do
    not change, only their solutions. The solution writes one calculation ``a op b = result`` per step and ends
    with ``#### <answer>``.
    """
    question = render(problem, style)[0]
    rng = random.Random(f"{problem.uid}/cot/{variant}")
    redrawn = _redraw(problem, rng)
    lines_by_style = [render(redrawn, s)[1].split("\n")[:-1] for s in STYLES]  # per style: one line per step
    steps = list(problem.steps)
    lines = [_plain(rng.choice(lines_by_style)[i]) for i in range(len(steps))]
    for i, step in enumerate(steps):
        if step.op in "+*" and rng.random() < 0.5:
            lines[i] = _swap_operands(lines[i], step.a, step.op, step.b)
    order = list(range(len(steps)))
    if problem.family == "shop" and problem.k >= 3 and rng.random() < 0.5:
        order[0], order[1] = 1, 0  # the two item costs do not depend on each other
    body = []
    for position, i in enumerate(order):
        pool = FIRST if position == 0 else LAST if position == len(order) - 1 else MIDDLE
        body.append(_join(rng.choice(pool) if len(order) > 1 else "", lines[i]))
    head = [rng.choice(OPENINGS)] if rng.random() < 0.6 else []
    tail = [rng.choice(CLOSINGS).format(n=problem.answer)] if rng.random() < 0.7 else []
    return question, "\n".join([*head, *body, *tail, f"#### {problem.answer}"])


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
