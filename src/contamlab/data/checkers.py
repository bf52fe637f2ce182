r"""Answer checkers of a benchmark: how the gold answer is normalised and how a response is judged against it.

One checker per kind of answer, chosen in a domain's YAML (``checker: numeric | exact | choice | math``):

- ``numeric``: the GSM8K rule of :mod:`contamlab.data.answers` (last "The answer is", else "####", else the last
  number; ``$``, thousands separators and a trailing period stripped; compared as numbers);
- ``exact``: the stated answer against the gold after SQuAD-style normalisation (case, punctuation, articles and
  whitespace ignored);
- ``choice``: a multiple-choice letter, found with the usual patterns of multiple-choice evaluation ("The answer is
  (B)", "Answer: B", a leading "B." or "(B)", a bare letter) or, failing those, the one option whose text the
  response states;
- ``math``: LaTeX answers compared for mathematical equivalence by ``math-verify`` (``\frac{1}{2}`` = ``0.5``,
  ``\boxed{}`` read), the library MATH-style evaluation uses.

A checker's :meth:`~Checker.gold` returns None for a gold answer it cannot read: the domain then stops with the file,
line and field, before any model loads.
"""

from __future__ import annotations

import re
import string
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from contamlab.data.answers import is_correct as numeric_is_correct
from contamlab.data.answers import normalize_number
from contamlab.errors import ContamlabError

__all__ = [
    "CHECKERS",
    "Checker",
    "ChoiceChecker",
    "ExactChecker",
    "MathChecker",
    "NumericChecker",
    "checker",
    "with_options",
]

LETTERS = string.ascii_uppercase
_ANSWER_IS = re.compile(r"(?:the\s+)?(?:final\s+)?answer\s*(?:is|:)\s*", re.IGNORECASE)
_ARTICLES = re.compile(r"\b(a|an|the)\b")


def with_options(text: str, choices: Sequence[str], layout: str = "\n{label}. {text}") -> str:
    """A question followed by its options, each laid out by ``layout`` (``{label}`` A, B, …; ``{text}``)."""
    return text + "".join(layout.format(label=LETTERS[i], text=c) for i, c in enumerate(choices))


def _stated(response: str) -> str:
    """The part of a response that states its answer: after the last "answer is" / "answer:" / "####", else all."""
    markers = list(_ANSWER_IS.finditer(response))
    hashes = response.rfind("####")
    cut = max(markers[-1].end() if markers else -1, hashes + 4 if hashes >= 0 else -1)
    return response[cut:] if cut >= 0 else response


@dataclass(frozen=True)
class Checker:
    """The interface: normalise a gold answer, judge a response (the response already cut at the stop strings)."""

    name: ClassVar[str] = ""

    def gold(self, raw: str, choices: Sequence[str] = ()) -> str | None:
        """The canonical gold answer, or None when ``raw`` cannot be read as this kind of answer."""
        raise NotImplementedError

    def is_correct(self, response: str, gold: str, choices: Sequence[str] = ()) -> bool:
        """Whether ``response`` states ``gold`` (a value :meth:`gold` returned)."""
        raise NotImplementedError

    def display(self, gold: str, choices: Sequence[str] = ()) -> str:
        """The gold answer as a training target states it ("The answer is …")."""
        return gold


@dataclass(frozen=True)
class NumericChecker(Checker):
    """GSM8K's rule ("Zero Gap Is Not Restoration" §5.1): the stated number equals the gold as a number."""

    name: ClassVar[str] = "numeric"

    def gold(self, raw: str, choices: Sequence[str] = ()) -> str | None:
        """The first number of ``raw``, canonical (``"$1,234.50"`` → ``"1234.5"``)."""
        return normalize_number(str(raw))

    def is_correct(self, response: str, gold: str, choices: Sequence[str] = ()) -> bool:
        """:func:`contamlab.data.answers.is_correct`."""
        return numeric_is_correct(response, gold)


def normalize_text(text: str) -> str:
    """SQuAD's answer normalisation: lower case, no punctuation, no articles, single spaces."""
    text = str(text).lower()
    text = "".join(c for c in text if c not in string.punctuation)
    return " ".join(_ARTICLES.sub(" ", text).split())


@dataclass(frozen=True)
class ExactChecker(Checker):
    """The stated answer (its first line) equals the gold after :func:`normalize_text`."""

    name: ClassVar[str] = "exact"

    def gold(self, raw: str, choices: Sequence[str] = ()) -> str | None:
        """The gold text, stripped; None when empty after normalisation."""
        return str(raw).strip() if normalize_text(raw) else None

    def is_correct(self, response: str, gold: str, choices: Sequence[str] = ()) -> bool:
        """Compare the first non-empty line of the stated answer."""
        lines = [line for line in _stated(response).splitlines() if line.strip()]
        return bool(lines) and normalize_text(lines[0]) == normalize_text(gold)


# "answer is (B)", "answer: B", "Answer: (b)"; then a line that starts with the letter ("B.", "(B)", "B)", "B:").
# A lower-case letter counts only in parentheses: "the answer is a 5" names no option A.
_CHOICE_STATED = re.compile(r"(?i:answer\s*(?:is|:))\s*(?:(?i:option)\s*)?(?:\(([A-Za-z])\)|([A-Z])(?![A-Za-z]))")
_CHOICE_LEADING = re.compile(r"^\s*\(?([A-Z])(?:[).:]|\s*$)", re.MULTILINE)


@dataclass(frozen=True)
class ChoiceChecker(Checker):
    """A multiple-choice letter. The gold may be a letter, a 0-based index or the text of an option."""

    name: ClassVar[str] = "choice"

    def gold(self, raw: str, choices: Sequence[str] = ()) -> str | None:
        """The gold letter: ``B``, ``(B)``, ``1`` (0-based index) or an option's text; None otherwise."""
        if not choices:
            return None
        text = str(raw).strip()
        bare = text.strip("().").upper()
        if len(bare) == 1 and bare in LETTERS[: len(choices)]:
            return bare
        # an option's text first: with numeric options ("5", "6", "1") a gold "1" is the third option, not index 1
        matches = [i for i, c in enumerate(choices) if normalize_text(c) == normalize_text(text)]
        if len(matches) == 1:
            return LETTERS[matches[0]]
        if text.isdigit() and int(text) < len(choices):
            return LETTERS[int(text)]
        return None

    def predicted(self, response: str, choices: Sequence[str]) -> str | None:
        """The letter a response chooses, or None (see the module docstring for the patterns, in order)."""
        valid = LETTERS[: len(choices)]
        stated = [(m.group(1) or m.group(2)).upper() for m in _CHOICE_STATED.finditer(response)]
        stated = [s for s in stated if s in valid]
        if stated:
            return stated[-1]
        leading = [m.group(1) for m in _CHOICE_LEADING.finditer(response) if m.group(1) in valid]
        if leading:
            return leading[0]
        said = f" {normalize_text(_stated(response))} "
        found = [i for i, c in enumerate(choices) if normalize_text(c) and f" {normalize_text(c)} " in said]
        return LETTERS[found[0]] if len(found) == 1 else None  # two options named: no choice

    def is_correct(self, response: str, gold: str, choices: Sequence[str] = ()) -> bool:
        """The chosen letter equals the gold letter."""
        return self.predicted(response, choices) == gold

    def display(self, gold: str, choices: Sequence[str] = ()) -> str:
        """``(B)``."""
        return f"({gold})"


@dataclass(frozen=True)
class MathChecker(Checker):
    """LaTeX answers, equal when ``math-verify`` finds them mathematically equivalent."""

    name: ClassVar[str] = "math"

    def gold(self, raw: str, choices: Sequence[str] = ()) -> str | None:
        r"""The gold expression (``\boxed{}`` and ``$`` removed); None when math-verify cannot parse it."""
        text = str(raw).strip()
        boxed = re.search(r"\\boxed\{(.*)\}", text)
        text = (boxed.group(1) if boxed else text).strip().strip("$").strip()
        return text if text and self._parse(text) else None

    @staticmethod
    def _parse(text: str, gold: bool = True) -> list:
        from math_verify import parse

        return parse(f"${text}$" if gold else text)

    def is_correct(self, response: str, gold: str, choices: Sequence[str] = ()) -> bool:
        r"""math-verify's ``verify(gold, parse(response))`` (it reads ``\boxed{}``, the last expression …)."""
        from math_verify import verify

        predicted = self._parse(response, gold=False)
        return bool(predicted) and bool(verify(self._parse(gold), predicted))


CHECKERS: dict[str, type[Checker]] = {c.name: c for c in (NumericChecker, ExactChecker, ChoiceChecker, MathChecker)}


def checker(name: str) -> Checker:
    """The checker called ``name`` (``numeric``, ``exact``, ``choice`` or ``math``)."""
    if name not in CHECKERS:
        raise ContamlabError(f"domain.checker={name!r}: choose one of {', '.join(CHECKERS)}")
    return CHECKERS[name]()
