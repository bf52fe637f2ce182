"""Answer checkers on hand-written responses, the hard cases included."""

import pytest

from contamlab.data.checkers import checker, normalize_text
from contamlab.errors import ContamlabError

CHOICES = ["Paris", "London", "Berlin", "Madrid"]


# (checker, response, gold as the data gives it, correct?)
JUDGED = [
    ("numeric", "She has 3 + 4 = 7 apples. The answer is 7.", "7", True),
    ("numeric", "#### 1,234", "1234", True),  # thousands separator
    ("numeric", "It costs $12.50.", "12.5", True),  # units and a trailing period
    ("numeric", "The answer is 8. Then 9 more.", "8", True),  # the statement wins over the last number
    ("numeric", "The answer is 7.0", "7", True),
    ("numeric", "I think 6", "7", False),
    ("numeric", "no number here", "7", False),
    ("exact", "The answer is Paris.", "paris", True),
    ("exact", "Answer: the Eiffel Tower\nbecause ...", "Eiffel tower", True),  # article, case, punctuation
    ("exact", "The answer is Paris, France.", "Paris", False),
    ("exact", "Lyon", "Paris", False),
    ("math", "So the result is \\boxed{0.5}.", "\\frac{1}{2}", True),
    ("math", "The answer is $\\frac{2}{4}$", "0.5", True),
    ("math", "\\boxed{\\dfrac12}", "\\boxed{\\frac{1}{2}}", True),
    ("math", "x = \\boxed{3}", "3", True),
    ("math", "The answer is \\boxed{0.6}", "\\frac{1}{2}", False),
    ("math", "\\boxed{\\sqrt{2}}", "2^{1/2}", True),
    ("math", "no math here", "3", False),
]


@pytest.mark.parametrize(("name", "response", "gold", "ok"), JUDGED)
def test_a_checker_judges_a_response(name, response, gold, ok):
    c = checker(name)
    assert c.is_correct(response, c.gold(gold)) is ok


def test_numeric_gold_must_be_a_number():
    assert checker("numeric").gold("seven") is None
    assert checker("numeric").gold("#### 72") == "72"


def test_normalize_text():
    assert normalize_text("  The  Answer, is: A cat! ") == "answer is cat"


@pytest.mark.parametrize(
    ("response", "letter"),
    [
        ("The answer is (B).", "B"),
        ("The answer is B", "B"),
        ("Answer: (c)", "C"),
        ("B. London is the capital.", "B"),
        ("(D) Madrid", "D"),
        ("C", "C"),
        ("Let me think. London has the most people, so the answer is (B).", "B"),
        ("The answer is (A). No wait, the answer is (C).", "C"),  # the last statement
        ("It is London.", "B"),  # the option's text, named alone
        ("Paris or London?", None),  # two options named: no choice
        ("The answer is (F)", None),  # not an option
        ("I am not sure.", None),
        ("Answer: b", None),  # a lower-case letter counts only in parentheses
    ],
)
def test_choice_extraction(response, letter):
    assert checker("choice").predicted(response, CHOICES) == letter


@pytest.mark.parametrize(("raw", "gold"), [("B", "B"), ("(B)", "B"), ("b", "B"), ("1", "B"), ("London", "B")])
def test_choice_gold_forms(raw, gold):
    assert checker("choice").gold(raw, CHOICES) == gold


def test_choice_with_numeric_options():
    c, numbers = checker("choice"), ["5", "6", "1"]
    assert c.gold("1", numbers) == "C" and c.gold("0", numbers) == "A"  # the option's text first, then an index
    assert c.predicted("the answer is a 5", numbers) == "A"  # the article is no choice; the option's text is
    assert c.predicted("The answer is (C).", numbers) == "C"


def test_choice_gold_that_is_no_option():
    c = checker("choice")
    assert c.gold("E", CHOICES) is None and c.gold("Rome", CHOICES) is None and c.gold("B", []) is None
    assert c.is_correct("The answer is (B)", "B", CHOICES) and not c.is_correct("(A)", "B", CHOICES)


def test_math_gold_forms():
    c = checker("math")
    assert c.gold("\\boxed{\\frac{1}{2}}") == "\\frac{1}{2}"
    assert c.gold("$7$") == "7"


def test_unknown_checker():
    with pytest.raises(ContamlabError, match="domain.checker='fuzzy': choose one of numeric, exact, choice, math"):
        checker("fuzzy")
