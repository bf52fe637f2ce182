"""Regression pins of the arithmetic world: what each arith-family config generates, renders and keys its caches by.

Models already trained are keyed by the domain fingerprints, and the problems, splits and renderings are the data
they trained on, so a refactoring of :mod:`contamlab.data.arith` must leave every digest here as it is. The values
were recorded before the arithmetic world moved into its own package. A deliberate change of the generated data
bumps ``RENDER_VERSION`` or ``COT_VERSION`` and records the new values here.
"""

from __future__ import annotations

from dataclasses import astuple

import pytest

from contamlab.config import load_domain
from contamlab.data.arith import ArithConfig, generate, render, render_cot
from contamlab.data.question import Question
from contamlab.io import content_hash

FIRST_TEST_QUESTION = "Lena has 8 beads. Then she loses 2 of them. How many beads does Lena end up with?"

# Per config: fingerprint, eval fingerprint, test, train, split, leaked training texts, paraphrased train (first
# 300), BenBench references (first 20 test items), 10 non-members (seed 1), web documents (first 200 train items).
PINS = {
    "arith": (
        "4d1d415f0925", "65ceaab9dd6a", "01f324358404", "80a7c3df3c70", "4f09e63a2eca",
        "f966199abde4", "a7a4144132dc", "3b6710b4c503", "22d81015cd97", "fa9096ecdb49",
    ),
    "arith_pq": (
        "bf5a33a73baf", "65ceaab9dd6a", "01f324358404", "80a7c3df3c70", "4f09e63a2eca",
        "d4a47119432c", "a7a4144132dc", "46d8f0ecb2dc", "22d81015cd97", "fa9096ecdb49",
    ),
    "arith_v1": (
        "19723ef33b10", "dfabb405210f", "05aa52b6f7d0", "2eb49f263571", "4f09e63a2eca",
        "cf476609e58b", "9e2b8da10bef", "5c173585f9d6", "5384a2215b9b", "74234e98afe7",
    ),
    "arith_pq_v1": (
        "94237520f12f", "dfabb405210f", "05aa52b6f7d0", "2eb49f263571", "4f09e63a2eca",
        "c494a9c05da8", "9e2b8da10bef", "cda8326db4ae", "5384a2215b9b", "74234e98afe7",
    ),
    "arith_mc": (
        "ef23df782b7a", "e555455d6bee", "f6ecea875da0", "1ec2fea813a6", "4f09e63a2eca",
        "0f1a8f2e1d0c", "04b2d26cfbb6", "e5669c3c0b6e", "037ba2b6e576", "74234e98afe7",
    ),
}  # fmt: skip


def _digest(questions: list[Question]) -> str:
    return content_hash([astuple(q) for q in questions])


@pytest.mark.parametrize("name", sorted(PINS))
def test_each_arith_config_generates_renders_and_keys_as_recorded(name):
    domain = load_domain(name)
    train, test = domain.train, domain.test
    got = (
        content_hash(domain.fingerprint()),
        content_hash(domain.eval_fingerprint()),
        _digest(test),
        _digest(train),
        content_hash(domain.split.to_dict()),
        _digest(domain.leaked_training_questions()),
        _digest(domain.paraphrased_train()[:300]),
        content_hash([[astuple(q) for q in version] for version in domain.reference_versions(test[:20])]),
        _digest(domain.nonmember_questions(10, seed=1)),
        content_hash(domain.web_documents(train[:200], seed=0)),
    )
    assert got == PINS[name]
    assert test[0].question.startswith(FIRST_TEST_QUESTION)


def test_the_generator_draws_and_renders_as_recorded_at_its_defaults():
    # The full three-level mix (the configs drop level 3), in both wordings and two chain-of-thought renderings.
    train, test = generate(ArithConfig(n_train=300, n_test=50, seed=7))
    problems = train + test
    assert content_hash([repr(p) for p in problems]) == "6d00e4149829"
    rendered = [[render(p, s) for s in ("base", "pq")] + [render_cot(p, v) for v in (0, 3)] for p in problems]
    assert content_hash(rendered) == "db18c078f82a"
