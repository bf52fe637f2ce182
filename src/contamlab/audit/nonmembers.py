"""The items an audit compares the benchmark's with: non-members the audited model cannot have seen.

A per-item membership score means something only against items of the same kind that the model has not read: fresh
problems of the benchmark's generator where the domain can generate them (the cleanest), the domain's rewrites of its
test items, or a file of the user's.
"""

from __future__ import annotations

from pathlib import Path

from contamlab.data.domain import Domain
from contamlab.data.jsonl import read_jsonl
from contamlab.data.question import Question
from contamlab.detectors.paraphrase import reference_versions
from contamlab.errors import ContamlabError

#: The generator stream of the generated non-members (ReCaLL's prefixes use seed 0 of the same family of streams).
NONMEMBER_SEED = 100


def nonmember_items(domain: Domain, setting: str) -> tuple[Domain | None, str]:
    """The reference items the membership scores are compared with, as a view of ``domain``, and what they are.

    Args:
        domain: The benchmark.
        setting: ``auto`` (``generated`` where the domain can generate problems, else ``rewrites``), ``generated``
            (fresh problems of the same generator: the cleanest non-members), ``rewrites`` (the domain's first
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
