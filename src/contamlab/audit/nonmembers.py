"""The items an audit compares the benchmark's with: non-members the audited model cannot have seen.

A per-item membership score means something only against items of the same kind that the model has not read: fresh
problems of the benchmark's generator where the domain can generate them (the cleanest), the benchmark's own train
split where its authors drew train and test at random (GSM8K: no style shift, but a model tuned on it reads it as
familiar), the domain's rewrites of its test items (a style shift: docs/audit.md#the-blind-baseline), or a file of
the user's.
"""

from __future__ import annotations

import random
from pathlib import Path

from contamlab.data.domain import Domain
from contamlab.data.jsonl import read_jsonl
from contamlab.data.question import Question
from contamlab.detectors.paraphrase import reference_versions
from contamlab.errors import ContamlabError

#: The seed of the draw of train items (``audit.nonmembers=train``).
TRAIN_SEED = 0
#: The generator stream of the generated non-members (ReCaLL's prefixes use seed 0 of the same family of streams).
NONMEMBER_SEED = 100


def nonmember_items(domain: Domain, setting: str) -> tuple[Domain | None, str]:
    """The reference items the membership scores are compared with, as a view of ``domain``, and what they are.

    Args:
        domain: The benchmark.
        setting: ``auto`` (``generated`` where the domain can generate problems, else ``rewrites``), ``generated``
            (fresh problems of the same generator: the cleanest non-members), ``train`` (as many items of the
            benchmark's train split as it has test items, drawn at random: IID non-members where train and test were
            split at random, read against a model that may have tuned on them), ``rewrites`` (the domain's first
            paraphrased version of each test item) or a JSONL file with a ``question`` field (and optionally
            ``solution`` and ``answer``) of items the model cannot have seen.

    Returns:
        ``(view, description)``; view is None where the domain has no such items (membership tests then report it).
    """
    generated = (
        domain.nonmember_questions(len(domain.test), NONMEMBER_SEED) if setting in ("auto", "generated") else None
    )
    if setting == "auto":
        setting = "generated" if generated is not None else "rewrites"
    if setting == "generated":
        if generated is None:
            raise ContamlabError(f"audit.nonmembers=generated: domain={domain.name} cannot generate problems")
        return domain.over(generated, "generated"), f"{len(generated)} fresh problems of the same generator"
    if setting == "train":
        if not domain.has_train:
            raise ContamlabError(f"audit.nonmembers=train: domain={domain.name} has no train split")
        pool = list(domain.train)
        chosen = random.Random(TRAIN_SEED).sample(pool, min(len(domain.test), len(pool)))
        items = [Question(f"train-{q.id}", q.question, q.solution, q.answer, q.choices) for q in chosen]
        return domain.over(items, "train"), f"{len(items)} items of the train split, drawn at random"
    if setting == "rewrites":
        versions, about = reference_versions(domain, "test", domain.test, None)
        items = [q for q in versions[0] if q is not None] if versions else []
        if not items:
            return None, "none (the domain has no rewrites: give audit.nonmembers=<a .jsonl file>)"
        return domain.over(items, "rewrites"), f"{len(items)} rewrites of the test items ({about['kind']})"
    path = Path(setting).expanduser()  # validation.py checked that it exists
    rows = read_jsonl(path, required=("question",))
    items = [
        Question(f"nonmember-{i}", str(r["question"]), str(r.get("solution", "")), str(r.get("answer", "")))
        for i, r in enumerate(rows)
    ]
    return domain.over(items, f"file:{path.name}"), f"{len(items)} items from {path}"
