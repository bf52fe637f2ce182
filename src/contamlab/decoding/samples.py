"""The sample set (greedy + m samples per question) and its on-disk cache.

The cache is a directory of parquet chunks keyed by everything that determines the samples (model, adapter,
domain, questions, strategy and its parameters, m, τ, token budget, seed, prompt). Each chunk is written atomically
and checked on read (row count, question ids, list lengths), so an interrupted run resumes at the first missing or
damaged chunk and a finished one is reused by later jobs. Never pickle: parquet and JSON only.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from contamlab.io import atomic_path, atomic_write_json

log = logging.getLogger("contamlab")


@dataclass
class QuestionSamples:
    """One question's greedy response and m sampled responses, with correctness.

    Attributes:
        id: Question id.
        greedy_ids: Token ids of the greedy response (prompt and EOS excluded).
        greedy_text: Its text, cut at the stop markers.
        greedy_correct: Whether the greedy answer is correct.
        sample_ids: Token ids of each sample.
        sample_texts: Text of each sample.
        sample_correct: Correctness of each sample.
        kept: Samples that count in the readout (TED drops some; all True otherwise).
        greedy_entropy: Mean next-token entropy (nats, temperature 1) along the greedy response (LNE).
    """

    id: str
    greedy_ids: list[int]
    greedy_text: str
    greedy_correct: bool
    sample_ids: list[list[int]] = field(default_factory=list)
    sample_texts: list[str] = field(default_factory=list)
    sample_correct: list[bool] = field(default_factory=list)
    kept: list[bool] = field(default_factory=list)
    greedy_entropy: float = 0.0

    @property
    def m(self) -> int:
        """Number of samples."""
        return len(self.sample_texts)

    def kept_mask(self) -> list[bool]:
        """Which samples count in the readout (all of them when no filter recorded a mask)."""
        return self.kept or [True] * self.m

    def kept_counts(self) -> tuple[int, int]:
        """(correct kept samples, kept samples)."""
        kept = self.kept_mask()
        return sum(c for c, k in zip(self.sample_correct, kept) if k), sum(kept)

    def solve_probability(self) -> float:
        """r̂ = c / m over the kept samples (0 when none is kept: TED's rule)."""
        correct, n = self.kept_counts()
        return correct / n if n else 0.0


_SCHEMA = pa.schema(
    [
        ("id", pa.string()),
        ("greedy_ids", pa.list_(pa.int32())),
        ("greedy_text", pa.string()),
        ("greedy_correct", pa.bool_()),
        ("sample_ids", pa.list_(pa.list_(pa.int32()))),
        ("sample_texts", pa.list_(pa.string())),
        ("sample_correct", pa.list_(pa.bool_())),
        ("kept", pa.list_(pa.bool_())),
        ("greedy_entropy", pa.float64()),
    ]
)


def _to_table(rows: Sequence[QuestionSamples]) -> pa.Table:
    return pa.Table.from_pylist([r.__dict__ for r in rows], schema=_SCHEMA)


class SampleCache:
    """Parquet chunks under ``root/<key>/``: ``chunk-00003.parquet`` holds questions [3·size, 4·size).

    Args:
        root: Cache root (``paths.cache_dir``/samples).
        key: Content hash of everything that determines the samples.
        meta: The fields behind the key, written to ``meta.json`` for humans.
    """

    def __init__(self, root: str | Path, key: str, meta: dict | None = None) -> None:
        self.dir = Path(root) / key
        self.dir.mkdir(parents=True, exist_ok=True)
        if meta is not None and not (self.dir / "meta.json").is_file():
            atomic_write_json(self.dir / "meta.json", meta)

    def _path(self, index: int) -> Path:
        return self.dir / f"chunk-{index:05d}.parquet"

    def load(self, index: int, ids: Sequence[str], m: int) -> list[QuestionSamples] | None:
        """The chunk's samples if present and intact, else None (a damaged file is removed and recomputed)."""
        path = self._path(index)
        if not path.is_file():
            return None
        try:
            table = pq.read_table(path, schema=_SCHEMA)
            rows = [QuestionSamples(**r) for r in table.to_pylist()]
            if [r.id for r in rows] != list(ids):
                raise ValueError("question ids differ from the request")
            if any(len(r.sample_texts) != m or len(r.sample_ids) != m or len(r.sample_correct) != m for r in rows):
                raise ValueError(f"a question has not {m} samples")
        except (OSError, ValueError, pa.ArrowException, TypeError) as err:
            log.warning("sample cache %s is damaged (%s); recomputing it", path, err)
            path.unlink(missing_ok=True)
            return None
        return rows

    def save(self, index: int, rows: Sequence[QuestionSamples]) -> None:
        """Write one chunk atomically (temp file in the same directory, then rename)."""
        with atomic_path(self._path(index)) as tmp:
            pq.write_table(_to_table(rows), tmp)
