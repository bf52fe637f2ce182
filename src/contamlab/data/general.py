"""General instruction data mixed into every fine-tuning stage (paper: 1,840 OpenOrca examples, §5.1).

Read from ``$CONTAMLAB_DATA_DIR/openorca-sample/orca.jsonl`` when set, else streamed from ``Open-Orca/OpenOrca``.
"""

from __future__ import annotations

import logging
import os
import random
from dataclasses import dataclass
from pathlib import Path

from contamlab.data.jsonl import read_jsonl
from contamlab.errors import ContamlabError

log = logging.getLogger("contamlab")


@dataclass(frozen=True)
class Example:
    """A training document split into a prompt and the response the loss is taken on."""

    prompt: str
    response: str


def load_openorca(
    n: int, seed: int = 0, data_dir: str | None = None, hub_id: str = "Open-Orca/OpenOrca", warn_short: bool = True
) -> list[Example]:
    """Up to ``n`` OpenOrca examples rendered as ``Question: … Answer: …`` documents (seeded choice).

    ``warn_short``: say so when fewer than ``n`` rows exist (a training mix asked for more than the local sample has).
    """
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
    # The offline sample is small: a silent cut would train another recipe than the one asked for.
    if warn_short and len(records) < n:
        log.warning(
            "finetune.general.n=%d: %s has %d OpenOrca rows; the stage trains on those %d (set general.n <= %d to "
            "silence this)",
            n,
            path if local else hub_id,
            len(records),
            len(records),
            len(records),
        )
    rng = random.Random(seed)
    chosen = rng.sample(records, min(n, len(records)))
    return [Example(f"Question: {r['question'].strip()}\nAnswer:", " " + r["response"].strip()) for r in chosen]
