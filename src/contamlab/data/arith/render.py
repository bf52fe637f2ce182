"""Rendering of an arithmetic problem as GSM8K-format text, in the ``base`` or the ``pq`` (paraphrase) style.

Both styles state the same numbers and answer: ``base`` (the ``arith`` domain) and ``pq`` (the ``arith_pq``
paraphrase domain, modelled on GSM8K-PQ: the question rewords every sentence of the base question but keeps its
protagonist, its facts and its numbers in the same order; the solution has its own templates).
Solutions have one line per operation with a GSM8K calculator annotation ``<<a op b=result>>result`` (ASCII
``+ - * /``) and end with ``#### <answer>``.

:func:`render` is a pure function of the problem: the template choices are stored in ``ArithProblem.slots``.
"""

from __future__ import annotations

import random
from typing import Any

from contamlab.data.arith.problem import N_VARIANTS, STYLES, ArithProblem, Step
from contamlab.data.arith.templates import BASE, PQ_QUESTIONS, TEMPLATES
from contamlab.data.arith.words import CONTAINERS, ITEMS, NAMES, PRONOUNS

# Bump when templates, words or generation change what a config renders: it is part of the model and sample cache
# keys.
RENDER_VERSION = 2


class _Writer:
    """Fills templates of one style, taking the stored template choices in order.

    The pq style rephrases the base question: its question pieces come from the paraphrases of the base
    template that the base rendering picks at the same position (``base_variants``), so both renderings
    state the same facts with the numbers in the same order.
    """

    def __init__(
        self, style: str, variants: tuple[int, ...], base_variants: tuple[int, ...], common: dict[str, Any]
    ) -> None:
        self.table = TEMPLATES[style]
        self.style = style
        self.variants = variants
        self.base_variants = base_variants
        self.common = common
        self.used = 0

    def __call__(self, key: str, step: Step | None = None, **fields: Any) -> str:
        templates = self.table[key]
        if self.style == "pq" and key in PQ_QUESTIONS:
            base_choice = self.base_variants[self.used % len(self.base_variants)] % len(BASE[key])
            templates = PQ_QUESTIONS[key][base_choice]
        choice = self.variants[self.used % len(self.variants)]
        self.used += 1
        if step is not None:
            ann = f"<<{step.a}{step.op}{step.b}={step.result}>>{step.result}"
            fields["ann"] = ann
            fields["calc"] = f"{step.a} {step.op} {step.b} = {ann}"
            fields.setdefault("a", step.a)
        return templates[choice % len(templates)].format(**self.common, **fields)


def _person(name: str) -> dict[str, str]:
    subj, obj, poss = PRONOUNS[NAMES[name]]
    return {"N": name, "s": subj, "S": subj.capitalize(), "o": obj, "p": poss, "P": poss.capitalize()}


def _render_chain(w: _Writer, problem: ArithProblem, slots: dict[str, Any]) -> tuple[list[str], list[str]]:
    question = [w("chain.q.intro", x=problem.steps[0].a)]
    for step, friend in zip(problem.steps, slots["friends"]):
        question.append(w(f"chain.q.{step.op}", n=step.b, F=friend))
    question.append(w("chain.q.end"))
    solution = [w(f"chain.s.{step.op}", step, n=step.b) for step in problem.steps]
    return question, solution


def _render_shop(w: _Writer, problem: ArithProblem, slots: dict[str, Any]) -> tuple[list[str], list[str]]:
    steps, k = problem.steps, problem.k
    (item1, item), (item21, item2) = (ITEMS[i] for i in slots["items"])
    names = {"item": item, "item1": item1, "item2": item2, "item21": item21}
    question = [w("shop.q.intro", a=steps[0].a, price=steps[0].b, **names)]
    solution = [w("shop.s.*", steps[0], price=steps[0].b, **names)]
    if k >= 3:
        question.append(w("shop.q.second", b=steps[1].a, price2=steps[1].b, **names))
        names2 = {**names, "item": item2, "item1": item21}
        solution.append(w("shop.s.*", steps[1], price=steps[1].b, **names2))
        solution.append(w("shop.s.+", steps[2]))
    if k in (2, 4):
        question.append(w("shop.q.bill", bill=steps[-1].a))
        solution.append(w("shop.s.-", steps[-1], bill=steps[-1].a))
        question.append(w("shop.q.change"))
    else:
        question.append(w("shop.q.end1" if k == 1 else "shop.q.end3", **names))
    return question, solution


def _render_groups(w: _Writer, problem: ArithProblem, slots: dict[str, Any]) -> tuple[list[str], list[str]]:
    cont1, cont = CONTAINERS[slots["container"]]
    names = {"cont": cont, "cont1": cont1}
    first = problem.steps[0]
    question = [w("groups.q.intro", a=first.a, b=first.b, **names)]
    solution = [w("groups.s.*", first, b=first.b, **names)]
    for step, friend in zip(problem.steps[1:], slots["friends"]):
        question.append(w(f"groups.q.{step.op}", c=step.b, F=friend))
        solution.append(w(f"groups.s.{step.op}", step, c=step.b))
    end = {1: "groups.q.end1", 4: "groups.q.end4"}.get(problem.k, "groups.q.end")
    question.append(w(end, **names))
    return question, solution


def _render_compare(w: _Writer, problem: ArithProblem, slots: dict[str, Any]) -> tuple[list[str], list[str]]:
    steps, k = problem.steps, problem.k
    first = steps[0]
    question = [w("compare.q.intro", a=first.a), w(f"compare.q.{first.op}", d=first.b)]
    solution = [w(f"compare.s.{first.op}", first, d=first.b)]
    if k >= 2:
        question.append(w("compare.q.*", m=steps[1].b))
        solution.append(w("compare.s.*", steps[1], m=steps[1].b))
    if k == 3:
        solution.append(w("compare.s.sum3", steps[2]))
    elif k == 4:
        solution += [w("compare.s.sum4a", steps[2]), w("compare.s.sum4b", steps[3])]
    question.append(w(f"compare.q.end{k}"))
    return question, solution


_RENDERERS = {
    "chain": _render_chain,
    "shop": _render_shop,
    "groups": _render_groups,
    "compare": _render_compare,
}


def render(problem: ArithProblem, style: str = "base") -> tuple[str, str]:
    """Render a problem as GSM8K-format text.

    A pure function of ``problem``: the template choices are stored in ``problem.slots``.

    Args:
        problem: A generated problem.
        style: ``"base"`` (the ``arith`` domain) or ``"pq"`` (the paraphrase domain: a GSM8K-PQ-style
            rephrasing of the base question, with the same people, facts and numbers in the same order, and
            its own solution templates; same steps and answer).

    Returns:
        ``(question_text, solution_text)``. The solution has one line per step, each containing
        ``<<a op b=result>>result``, then a final line ``#### <answer>``.

    Raises:
        ValueError: If ``style`` is unknown.
    """
    if style not in STYLES:
        raise ValueError(f"unknown style {style!r}; use one of {STYLES}")
    slots = dict(problem.slots)
    if problem.family == "compare":
        a_name, b_name, c_name = slots["names"]
        common: dict[str, Any] = {"A": a_name, "B": b_name, "C": c_name}
    else:
        common = _person(slots["name"])
    if "obj" in slots:
        common["obj"] = slots["obj"]
    writer = _Writer(style, problem.choices(style), problem.choices("base"), common)
    question, solution = _RENDERERS[problem.family](writer, problem, slots)
    return " ".join(question), "\n".join([*solution, f"#### {problem.answer}"])


def reworded(problem: ArithProblem, variant: int) -> ArithProblem:
    """The same problem with the pq style's template choices redrawn (variant 0 is the problem itself)."""
    if variant == 0:
        return problem
    rng = random.Random(f"{problem.uid}/pq/{variant}")
    offset = STYLES.index("pq") * N_VARIANTS
    var = list(dict(problem.slots)["var"])
    var[offset : offset + N_VARIANTS] = [rng.randrange(1 << 16) for _ in range(N_VARIANTS)]
    return problem.with_choices(tuple(var))
