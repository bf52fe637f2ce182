"""Tests of the arithmetic generator, its templates and renderings (contamlab.data.arith)."""

from __future__ import annotations

import re
from collections import Counter

import pytest

from contamlab.data.arith import ArithConfig, ArithProblem, Step, generate, render
from contamlab.data.arith import templates as arith_templates
from contamlab.data.arith.problem import FAMILIES
from contamlab.data.arith.words import NAMES

ANNOTATION = re.compile(r"<<(\d+)([+\-*/])(\d+)=(\d+)>>(\d+)")
NUMBER = re.compile(r"\d+")
WORD = re.compile(r"\{\w+\}|[A-Za-z']+|\d+")  # template fields count as words
FIELD = re.compile(r"{(\w+)}")
SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
NUMERIC_FIELDS = {"x", "n", "a", "b", "c", "d", "m", "price", "price2", "bill"}
PERSON_FIELDS = {"N", "s", "S", "o", "p", "P", "F", "A", "B", "C"}
PRONOUN_FIELDS = {"s", "S", "o", "p", "P"}
SMALL = ArithConfig(n_train=500, n_test=100, seed=3)
STYLES = ("base", "pq")


def _apply(a: int, op: str, b: int) -> int:
    """Evaluate ``a op b`` without eval(); division must be exact."""
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    if op == "*":
        return a * b
    assert op == "/" and b != 0 and a % b == 0, f"inexact division {a}/{b}"
    return a // b


@pytest.fixture(scope="module")
def small() -> tuple[list[ArithProblem], list[ArithProblem]]:
    return generate(SMALL)


@pytest.fixture(scope="module")
def everything(small) -> list[ArithProblem]:
    return small[0] + small[1]


def test_generate_is_deterministic(small):
    again = generate(SMALL)
    assert again == small
    for p, q in zip(small[0] + small[1], again[0] + again[1]):
        for style in STYLES:
            assert render(p, style) == render(q, style)
    other = generate(ArithConfig(n_train=500, n_test=100, seed=4))
    assert other[0] != small[0] and other[1] != small[1]
    assert {render(p)[0] for p in other[1]} != {render(p)[0] for p in small[1]}


def test_sizes_ids_and_test_set_independent_of_n_train(small):
    train, test = small
    assert len(train) == 500 and len(test) == 100
    assert [p.uid for p in test] == [f"arith-test-{i:04d}" for i in range(100)]
    assert [p.uid for p in train] == [f"arith-train-{i:04d}" for i in range(500)]
    fewer_train, same_test = generate(ArithConfig(n_train=50, n_test=100, seed=3))
    assert same_test == test
    assert len(fewer_train) == 50


@pytest.mark.parametrize("style", STYLES)
def test_solutions_check_out(everything, style):
    for p in everything:
        question, solution = render(p, style)
        lines = solution.split("\n")
        assert len(lines) == p.k + 1
        found = []
        for line in lines[:-1]:
            matches = ANNOTATION.findall(line)
            assert len(matches) == 1, line
            found.extend(matches)
        assert ANNOTATION.findall(solution) == found
        for a, op, b, res, shown in found:
            assert _apply(int(a), op, int(b)) == int(res) == int(shown), solution
        assert [Step(int(a), op, int(b), int(res)) for a, op, b, res, _ in found] == list(p.steps)
        final = re.fullmatch(r"#### (\d+)", lines[-1])
        assert final is not None, lines[-1]
        assert int(final.group(1)) == p.answer == p.steps[-1].result == int(found[-1][3])
        assert solution.endswith(f"\n#### {p.answer}")
        assert question.endswith("?") or question.endswith(".")
        assert "{" not in question + solution and "}" not in question + solution


def _words(text: str) -> set[str]:
    return {w if w.startswith("{") else w.lower() for w in WORD.findall(text)}


def _jaccard(a: str, b: str) -> float:
    x, y = _words(a), _words(b)
    return len(x & y) / len(x | y)


def _sentences(text: str) -> list[str]:
    return SENTENCE_END.split(text)


def _people(template: str) -> set[str]:
    """People a template mentions; the protagonist's pronouns count as the protagonist ``N``."""
    return {"N" if f in PRONOUN_FIELDS else f for f in FIELD.findall(template) if f in PERSON_FIELDS}


def test_styles_are_paraphrases_with_the_same_numbers(everything):
    similarity = []
    for p in everything:
        q_base, s_base = render(p, "base")
        q_pq, s_pq = render(p, "pq")
        assert q_base != q_pq
        assert s_base != s_pq
        assert s_base.split("\n")[-1] == s_pq.split("\n")[-1] == f"#### {p.answer}"
        # GSM8K-PQ style: the same numbers in the same order, ...
        numbers = NUMBER.findall(q_base)
        assert numbers == NUMBER.findall(q_pq), (q_base, q_pq)
        operands = {str(v) for s in p.steps for v in (s.a, s.b)}
        assert set(numbers) <= operands, (q_base, p.steps)
        # ... the same protagonist and other people, ...
        slots = dict(p.slots)
        protagonist = slots["names"][0] if p.family == "compare" else slots["name"]
        assert re.search(rf"\b{protagonist}\b", q_pq), (q_base, q_pq)
        names = set(NAMES)
        assert _words(q_base) & {n.lower() for n in names} == _words(q_pq) & {n.lower() for n in names}
        # ... one rephrased sentence per base sentence, none of them kept verbatim.
        base_sentences, pq_sentences = _sentences(q_base), _sentences(q_pq)
        assert len(base_sentences) == len(pq_sentences), (q_base, q_pq)
        assert not set(base_sentences) & set(pq_sentences), (q_base, q_pq)
        similarity.append(_jaccard(q_base, q_pq))
    assert sum(similarity) / len(similarity) < 0.6
    # A real rephrasing: the two styles share no template at all.
    base = {t for ts in arith_templates.TEMPLATES["base"].values() for t in ts}
    pq = {t for ts in arith_templates.TEMPLATES["pq"].values() for t in ts}
    assert not base & pq


def test_templates_vary():
    assert arith_templates.TEMPLATES["base"].keys() == arith_templates.TEMPLATES["pq"].keys()
    for style in STYLES:
        for key, templates in arith_templates.TEMPLATES[style].items():
            assert len(templates) >= 3, (style, key)
            assert len(set(templates)) == len(templates), (style, key)


def test_question_templates_show_the_same_numbers():
    for key in arith_templates.TEMPLATES["base"]:
        if ".q." not in key:
            continue
        shown = {
            tuple(sorted(f for f in FIELD.findall(t) if f in NUMERIC_FIELDS))
            for style in STYLES
            for t in arith_templates.TEMPLATES[style][key]
        }
        assert len(shown) == 1, (key, shown)


def test_pq_question_templates_rephrase_their_base_template():
    questions = arith_templates.PQ_QUESTIONS
    assert set(questions) == {key for key in arith_templates.TEMPLATES["base"] if ".q." in key}
    for key, groups in questions.items():
        base = arith_templates.BASE[key]
        assert len(groups) == len(base), key
        assert arith_templates.TEMPLATES["pq"][key] == tuple(t for group in groups for t in group)
        for template, paraphrases in zip(base, groups):
            assert paraphrases, key
            for pq in paraphrases:
                # Same numbers in the same order, same people, one sentence, genuinely reworded.
                numbers = [f for f in FIELD.findall(template) if f in NUMERIC_FIELDS]
                assert [f for f in FIELD.findall(pq) if f in NUMERIC_FIELDS] == numbers, (template, pq)
                assert _people(pq) == _people(template), (template, pq)
                assert len(_sentences(pq)) == 1, pq
                assert all(pq != b and _jaccard(pq, b) < 0.6 for b in base), (key, pq)


def test_render_is_pure_and_checks_style(small):
    p = small[1][0]
    assert render(p, "base") == render(p, "base") == render(p)
    assert render(p, "pq") == render(p, "pq")
    with pytest.raises(ValueError):
        render(p, "gsm8k")


def test_questions_unique_and_no_test_text_in_train(small):
    train, test = small
    for split in (train, test):
        for style in STYLES:
            texts = [render(p, style)[0] for p in split]
            assert len(set(texts)) == len(texts)
    train_texts = {render(p, style)[0] for p in train for style in STYLES}
    test_texts = {render(p, style)[0] for p in test for style in STYLES}
    assert not train_texts & test_texts
    assert len(train_texts) == 2 * len(train) and len(test_texts) == 2 * len(test)


def test_distribution_follows_weights(small):
    train = small[0]
    n = len(train)
    family = Counter(p.family for p in train)
    k = Counter(p.k for p in train)
    level = Counter(p.level for p in train)
    assert set(family) == set(FAMILIES)
    assert all(0.15 < family[f] / n < 0.35 for f in FAMILIES), family
    assert set(k) == {1, 2, 3, 4}
    assert all(0.15 < k[i] / n < 0.35 for i in (1, 2, 3, 4)), k
    assert 0.3 < level[1] / n < 0.5 and 0.3 < level[2] / n < 0.5 and 0.12 < level[3] / n < 0.28, level


def test_values_in_range_and_divisions_exact(everything):
    for p in everything:
        assert p.family in FAMILIES and p.k == len(p.steps) and p.level in (1, 2, 3)
        for s in p.steps:
            assert s.op in "+-*/"
            assert all(0 <= v <= 999 for v in (s.a, s.b, s.result)), s
            assert _apply(s.a, s.op, s.b) == s.result
            if s.op == "/":
                assert s.b >= 2 and s.a % s.b == 0
        for style in STYLES:
            assert all(0 <= int(v) <= 999 for v in NUMBER.findall(render(p, style)[0]))
        hash(p)  # slots must be hashable


def test_difficulty_settings_are_respected(everything):
    for p in everything:
        nmax, mmax = SMALL.num_max[p.level - 1], SMALL.mul_max[p.level - 1]
        if p.family == "chain":
            assert all(int(v) <= nmax for v in NUMBER.findall(render(p)[0]))
            assert all(s.b <= mmax for s in p.steps if s.op in "*/")
            assert p.level > 1 or all(s.op != "/" for s in p.steps)
            assert all(s.a == prev.result for prev, s in zip(p.steps, p.steps[1:]))
        if p.family in ("shop", "groups"):
            assert p.steps[0].op == "*" and 2 <= p.steps[0].a <= mmax and p.steps[0].b <= nmax


def test_generated_bounds_for_other_settings():
    cfg = ArithConfig(n_train=200, n_test=50, seed=1, level_weights=(0, 0, 1), k_weights=(0, 0, 0, 1))
    train, test = generate(cfg)
    assert all(p.level == 3 and p.k == 4 for p in train + test)
    for p in train + test:
        assert all(0 <= v <= 999 for s in p.steps for v in (s.a, s.b, s.result))


@pytest.mark.parametrize(
    "fields",
    [
        {"k_weights": (1, 1, 1, 1, 1)},
        {"level_weights": (1, 1)},
        {"num_max": (9, 20, 1)},
        {"mul_max": (1, 5, 9)},
        {"level_weights": (0, 0, 0)},
        {"n_train": -1},
    ],
)
def test_config_validation(fields):
    with pytest.raises(ValueError):
        ArithConfig(**fields)


def test_default_config():
    train, test = generate(ArithConfig())
    assert len(train) == 6000 and len(test) == 200
    test_texts = {render(p, style)[0] for p in test for style in STYLES}
    assert not any(render(p, style)[0] in test_texts for p in train for style in STYLES)
    level = Counter(p.level for p in train)
    assert abs(level[1] / 6000 - 0.5) < 0.03 and abs(level[3] / 6000 - 1 / 6) < 0.03  # weights 3:2:1
