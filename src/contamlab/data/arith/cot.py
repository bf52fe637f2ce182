"""World v2's solutions of the arithmetic problems: renderings with the slack of real chain-of-thought.

A real model's chain-of-thought has many tokens whose runner-up is another valid continuation: connectives,
restatements, optional sentences, the order of independent steps, equivalent forms of a calculation. The terse v1
solutions (:func:`~contamlab.data.arith.render.render`) have almost none, so nearly every forced runner-up is an
error. Here every solution is drawn among such renderings, deterministically from ``(problem, variant)``:

- each step line is one of the base or pq wordings of that step (both explain the calculation), with the
  calculation written out as plain text, ``8 - 2 = 6``, as a model's chain-of-thought writes it (no GSM8K
  calculator markup: its ``<<8-2=6>>`` repeats every number and symbol once more, and a forced runner-up inside it
  survived 0.22 of the time against 0.66 in the text around it, world v2's first revision);
- a calculation with ``+`` or ``*`` may show its operands in either order (``7 + 12`` or ``12 + 7``);
- connectives before steps (``First,``, ``Then``, ``Next,`` …), an optional opening sentence and an optional
  closing ``So the answer is N.`` before ``#### N``;
- a shop problem's two independent item costs in either order.

Variant 0 is the test item's fixed reference solution (what leaks is one text, as with GSM8K); pretraining and the
clean fine-tune draw other variants. :mod:`~contamlab.data.arith.web` lays such text out in the web's forms.
"""

from __future__ import annotations

import random
import re

from contamlab.data.arith.problem import N_VARIANTS, STYLES, ArithProblem
from contamlab.data.arith.render import render
from contamlab.data.arith.words import NAMES

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
    return problem.with_choices(tuple(rng.randrange(1 << 16) for _ in range(N_VARIANTS * len(STYLES))))


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
    keep = first.removesuffix("'s") in NAMES or first[:1].isdigit() or first.startswith("<<")
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
