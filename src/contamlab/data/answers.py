"""Final-answer extraction and checking for GSM8K-style responses.

Implements the correctness rule of "Zero Gap Is Not Restoration" §5.1 (docs/methods/metrics.md): take
the text after the last "The answer is", else after the last "####", else the last number in the response; strip
"$", thousands separators and a trailing "."; compare with the gold answer as numbers.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

# A number as written in GSM8K responses: optional sign, digits with optional thousands commas, optional decimals.
_NUMBER = re.compile(r"-?\$?\s?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|-?\$?\.\d+")
_ANSWER_IS = re.compile(r"the answer is", re.IGNORECASE)


def normalize_number(text: str) -> str | None:
    """Return the canonical string of the first number in ``text`` (``"$1,234.50."`` → ``"1234.5"``), else None."""
    match = _NUMBER.search(text)
    if match is None:
        return None
    raw = match.group(0).replace("$", "").replace(",", "").replace(" ", "")
    try:
        value = Decimal(raw)
    except InvalidOperation:
        return None
    # Canonical form: no exponent, no trailing zeros after the point, "-0" → "0".
    value = value.normalize()
    if value == 0:
        return "0"
    text_value = format(value, "f")
    return text_value


def extract_answer(response: str) -> str | None:
    """Extract the final answer of a response, normalised, or None when it states no number.

    Args:
        response: The model's generated text (prompt excluded).

    Returns:
        The normalised number after the last "The answer is", else after the last "####", else the last number.
    """
    markers = list(_ANSWER_IS.finditer(response))
    if markers:
        found = normalize_number(response[markers[-1].end() :])
        if found is not None:
            return found
    hashes = response.rfind("####")
    if hashes >= 0:
        found = normalize_number(response[hashes + 4 :])
        if found is not None:
            return found
    numbers = _NUMBER.findall(response)
    return normalize_number(numbers[-1]) if numbers else None


def is_correct(response: str, gold: str) -> bool:
    """Whether the response's extracted answer equals the gold answer as a number."""
    predicted = extract_answer(response)
    expected = normalize_number(gold)
    if predicted is None or expected is None:
        return False
    return Decimal(predicted) == Decimal(expected)
