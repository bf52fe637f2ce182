import pytest

from contamlab.data.answers import extract_answer, is_correct, normalize_number


@pytest.mark.parametrize(
    ("response", "expected"),
    [
        ("So she has 1,234 apples. The answer is 1,234.", "1234"),
        ("Janet sells 9 eggs.\n#### 18", "18"),
        ("He pays $5 in total.", "5"),
        ("The answer is $5.", "5"),
        ("The temperature drops to -3 degrees. The answer is -3.", "-3"),
        ("Each costs 2.50 dollars. The answer is 2.5.", "2.5"),
        ("The answer is 0.75", "0.75"),
        ("The answer is 1,000,000.00.", "1000000"),
        ("3 + 4 = 7 so 7 * 2 = 14", "14"),
        ("#### 19\n", "19"),
        ("The answer is 8. Q: next question 99", "8"),  # the marker wins over later numbers
        ("no number here", None),
    ],
)
def test_extract_answer(response, expected):
    assert extract_answer(response) == expected


def test_the_answer_is_beats_hashes_and_last_number():
    assert extract_answer("#### 5\nThe answer is 6. 7") == "6"
    assert extract_answer("#### 5 then 9") == "5"


def test_answer_is_without_number_falls_back():
    assert extract_answer("20 - 12 = 8. The answer is unknown") == "8"


@pytest.mark.parametrize(
    ("response", "gold", "ok"),
    [
        ("The answer is 18.", "18", True),
        ("#### 18.0", "18", True),
        ("The answer is $1,800.", "1800", True),
        ("The answer is 17.", "18", False),
        ("nothing", "18", False),
        ("The answer is -2.5", "-2.5", True),
    ],
)
def test_is_correct(response, gold, ok):
    assert is_correct(response, gold) is ok


def test_normalize_number():
    assert normalize_number("$1,234.50.") == "1234.5"
    assert normalize_number("-0") == "0"
    assert normalize_number("abc") is None
