"""Strict JSONL reading: every malformed line is reported with its file and line number."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from contamlab.errors import ContamlabError


def read_jsonl(path: str | Path, required: Sequence[str] = ()) -> list[dict]:
    """Read a JSONL file whose lines are JSON objects holding at least ``required`` keys (see :func:`numbered`)."""
    return [record for _, record in numbered(path, required)]


def numbered(path: str | Path, required: Sequence[str] = ()) -> list[tuple[int, dict]]:
    """Read a JSONL file as ``(line number, record)`` pairs, each record a JSON object with the ``required`` keys.

    Args:
        path: The file to read.
        required: Keys every record must have, each holding a string.

    Returns:
        The 1-based line number and record of every non-blank line, in file order.

    Raises:
        ContamlabError: missing or unreadable file, text that is not UTF-8, a line that is not a JSON object, a
            missing key or one that is not a string, or no records at all;
            the message names the file and the 1-based line (and column) number.
    """
    path = Path(path)
    if not path.is_file():
        raise ContamlabError(f"{path}: file not found (check CONTAMLAB_DATA_DIR or the configured path)")
    try:
        data = path.read_bytes()
    except OSError as err:
        raise ContamlabError(f"{path}: cannot read ({err.strerror})") from None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise ContamlabError(
            f"{path}:{line}: not UTF-8 text (byte 0x{data[err.start]:02x}); is it a JSONL file?"
        ) from None
    records = []
    # line ends only (\r\n, \n, a lone \r): JSON strings may hold U+2028 and other characters that str.splitlines
    # breaks on, but never a raw \r or \n
    for lineno, line in enumerate(re.split(r"\r\n|\r|\n", text), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as err:
            # json's msg ("Invalid control character at") expects its position after it: give line and column.
            reason = err.msg.removesuffix(" at")
            raise ContamlabError(
                f"{path}:{lineno}: malformed JSON at column {err.colno} ({reason}); fix or remove this line"
            ) from None
        if not isinstance(record, dict):
            raise ContamlabError(f"{path}:{lineno}: expected a JSON object, got {type(record).__name__}")
        missing = [key for key in required if key not in record]
        if missing:
            raise ContamlabError(f"{path}:{lineno}: missing field(s) {', '.join(missing)}")
        wrong = [key for key in required if not isinstance(record[key], str)]
        if wrong:
            key = wrong[0]
            raise ContamlabError(f"{path}:{lineno}: field {key!r} must be a string, got {type(record[key]).__name__}")
        records.append((lineno, record))
    if not records:
        raise ContamlabError(f"{path}: no records (empty dataset)")
    return records
