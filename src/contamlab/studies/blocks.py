"""Generated blocks of a hand-written page: the lines between two HTML comment markers belong to a generator.

README.md, docs/results.md, docs/audit.md and docs/results_audit.md mix prose with tables that a study generates
from its artifacts. Each such table sits between ``<!-- <name>:begin (generated: <command>) -->`` and
``<!-- <name>:end -->``; :func:`with_block` replaces what lies between them and leaves the rest of the page as it is.
"""

from __future__ import annotations


def with_block(page: str, block: str, begin: str, end: str) -> str:
    """``page`` with the text between the markers ``begin`` and ``end`` replaced by ``block``.

    Raises:
        ValueError: The page lacks either marker (a generator must not write a table nobody placed).
    """
    head, sep, rest = page.partition(begin)
    _, sep2, tail = rest.partition(end)
    if not sep or not sep2:
        raise ValueError(f"the page lacks the markers {begin!r} ... {end!r}")
    return f"{head}{begin}\n{block}\n{end}{tail}"
