"""General instruction data mixed into every fine-tuning stage (paper: 1,840 OpenOrca examples, §5.1).

Read from ``$CONTAMLAB_DATA_DIR/openorca-sample/orca.jsonl`` when set, else streamed from ``Open-Orca/OpenOrca``.
"""

from __future__ import annotations

import os
import random
from dataclasses import dataclass
from pathlib import Path

from contamlab.data.jsonl import read_jsonl
from contamlab.errors import ContamlabError


@dataclass(frozen=True)
class Example:
    """A training document split into a prompt and the response the loss is taken on."""

    prompt: str
    response: str


def load_openorca(
    n: int, seed: int = 0, data_dir: str | None = None, hub_id: str = "Open-Orca/OpenOrca"
) -> list[Example]:
    """Up to ``n`` OpenOrca examples rendered as ``Question: … Answer: …`` documents (seeded choice)."""
    if n <= 0:
        return []
    local = data_dir or os.environ.get("CONTAMLAB_DATA_DIR")
    if local:
        path = Path(local) / "openorca-sample" / "orca.jsonl"
        records = read_jsonl(path, required=("question", "response"))
    else:
        try:
            from datasets import load_dataset

            stream = load_dataset(hub_id, split="train", streaming=True)
            records = list(stream.shuffle(seed=seed).take(n))
        except Exception as err:  # the hub client raises many types when offline
            raise ContamlabError(
                f"could not load {hub_id} ({type(err).__name__}); offline? set CONTAMLAB_DATA_DIR to a folder "
                "holding openorca-sample/orca.jsonl"
            ) from None
    rng = random.Random(seed)
    chosen = rng.sample(records, min(n, len(records)))
    return [Example(f"Question: {r['question'].strip()}\nAnswer:", " " + r["response"].strip()) for r in chosen]
