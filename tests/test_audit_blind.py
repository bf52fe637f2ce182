"""The blind baseline beside the audit's membership verdicts (:mod:`contamlab.audit.blind`), on hand-built cases."""

from __future__ import annotations

from contamlab.audit.blind import MEMBERSHIP, beside
from contamlab.metrics import verdicts as V
from contamlab.metrics.blind import BlindResult, blind_auroc


def _verdict(name: str, value: float, flagged: bool) -> V.Verdict:
    return V.Verdict(name, MEMBERSHIP, value, [value - 0.1, value + 0.1], 0.001 if flagged else 0.4, "plain", flagged)


def test_a_pure_style_shift_withholds_the_reading_it_explains():
    """Members carry a style word the non-members lack: the texts alone separate them (blind AUROC near 1), so a
    membership reading of 0.66 that flags is withheld; one above the blind AUROC, or one that does not flag, stays."""
    members = [f"Kindly compute {i} plus {i + 3} apples for item {i}." for i in range(40)]
    others = [f"Compute {i} plus {i + 3} pears for item {i}." for i in range(40)]
    blind = blind_auroc(members, others, seed=0)
    assert blind.auroc > 0.95
    found = [
        _verdict("loss", 0.66, True),
        _verdict("mink", 0.3, False),
        V.Verdict("codec", "other", 0.9, None, 0.0, "x", True),
    ]
    out, record = beside(found, blind)
    assert out[0].flagged is None and "not distinguishable from the shift" in out[0].verdict
    assert out[1].flagged is False and out[1].verdict == "plain"  # no flag: nothing to withhold
    assert out[2] == found[2]  # not a membership reading
    assert record["withheld"] == ["loss"] and record["auroc"] == blind.auroc


def test_without_a_shift_the_verdicts_read_as_before():
    """Blind AUROC at chance (0.5): a flagging reading of 0.66 keeps its verdict, with the blind AUROC beside it."""
    blind = BlindResult(0.5, (0.42, 0.58), 50, 50, 5, [])
    out, record = beside([_verdict("loss", 0.66, True)], blind)
    assert out[0].flagged is True and out[0].verdict == "plain" and out[0].detail["blind_auroc"] == 0.5
    assert record["withheld"] == []


def test_train_split_non_members_are_train_items_drawn_at_random():
    """audit.nonmembers=train: as many GSM8K train items as test items, none of them a test item."""
    from contamlab.audit.nonmembers import nonmember_items
    from contamlab.config import build_domain, compose

    cfg = compose("audit", ["model=smollm2", "domain=gsm8k", "domain.max_test=50", "audit.nonmembers=train"])
    domain = build_domain(cfg.domain)
    view, about = nonmember_items(domain, "train")
    questions = [q.question for q in view.test]
    assert len(questions) == 50 and about == "50 items of the train split, drawn at random"
    assert set(questions) <= {q.question for q in domain.train}
    assert not set(questions) & {q.question for q in domain.test}
    assert questions != [q.question for q in domain.train[:50]]  # drawn, not the first 50


def test_gsm8k_against_its_pq_rewrites_is_a_shift_the_blind_baseline_sees():
    """GSM8K's first 50 questions against their PQ rewrites (the audit's default non-members there), as documents:
    each rewrite keeps its item's id and solution, so the two share a fold and the classifier reads the wording."""
    from contamlab.audit.blind import blind_baseline
    from contamlab.audit.nonmembers import nonmember_items
    from contamlab.config import build_domain, compose

    domain = build_domain(compose("audit", ["model=smollm2", "domain=gsm8k", "domain.max_test=50"]).domain)
    rewrites, about = nonmember_items(domain, "rewrites")
    assert [q.id for q in rewrites.test] == [q.id for q in domain.test]  # paired: one group each
    assert blind_baseline(domain, rewrites, 0).auroc > 0.8
