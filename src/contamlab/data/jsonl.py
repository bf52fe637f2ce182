"""Strict JSONL reading: every malformed line is reported with its file and line number."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

from contamlab.errors import ContamlabError


def read_jsonl(path: str | Path, required: Sequence[str] = ()) -> list[dict]:
    """Read a JSONL file whose lines are JSON objects holding at least ``required`` keys.

    Args:
        path: The file to read.
        required: Keys every record must have.

    Returns:
        The records in file order (blank lines are skipped).

    Raises:
        ContamlabError: missing file, a line that is not a JSON object, a missing key, or no records at all;
            the message names the file and the 1-based line (and column) number.
    """
    path = Path(path)
    if not path.is_file():
        raise ContamlabError(f"{path}: file not found (check CONTAMLAB_DATA_DIR or the configured path)")
    records = []
    with path.open(encoding="utf-8") as handle:
        for lineno, line in enumerate(handle, start=1):
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
            records.append(record)
    if not records:
        raise ContamlabError(f"{path}: no records (empty dataset)")
    return records
