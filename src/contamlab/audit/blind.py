"""The blind baseline beside the audit's membership verdicts: do the texts alone tell benchmark from non-members.

A membership reading compares the model's scores of the benchmark's items with its scores of non-member items. When
the two sides differ in wording or source, a reading separates them without any membership (Das, Zhang and Tramèr,
*Blind Baselines Beat Membership Inference Attacks for Foundation Models*, 2024). The audit therefore measures that
difference without the model (:func:`contamlab.metrics.blind.blind_auroc`, on the texts the readings score) and
withholds each flagging membership verdict whose AUROC the blind one reaches: such a reading is not distinguishable
from the shift between the two sides.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import Any

from contamlab.data.domain import Domain
from contamlab.detectors.base import question_text
from contamlab.metrics import verdicts as V
from contamlab.metrics.blind import BlindResult, blind_auroc

log = logging.getLogger("contamlab")
#: The statistic of the membership readings the blind baseline stands beside (:func:`~V.membership_test`).
MEMBERSHIP = "AUROC benchmark vs reference items"


def blind_baseline(domain: Domain, nonmembers: Domain, seed: int) -> BlindResult:
    """The blind AUROC of the benchmark's items against the non-members, as the membership readings read them.

    A non-member that rewrites a benchmark item keeps its id (``audit.nonmembers=rewrites``); the two share a group,
    so cross-validation keeps them in one fold. Split apart, the classifier would learn the shared solution from one
    with the other's label and score its twin backwards (an AUROC far below 0.5 on GSM8K against PQ).
    """
    members = [question_text(domain, q, "document") for q in domain.test]
    others = [question_text(nonmembers, q, "document") for q in nonmembers.test]
    groups = [q.id for q in domain.test] + [q.id for q in nonmembers.test]
    return blind_auroc(members, others, groups=groups, seed=seed)


def beside(found: list[V.Verdict], blind: BlindResult) -> tuple[list[V.Verdict], dict[str, Any]]:
    """Each membership verdict with the blind AUROC beside it; a flagging one the blind AUROC reaches is withheld.

    Returns:
        The verdicts (others unchanged) and the blind baseline's record for results.json.
    """
    low, high = blind.ci
    words = (
        "a model-free classifier tells the benchmark from its non-members at AUROC "
        f"{blind.auroc:.3f} [{low:.3f}, {high:.3f}]"
    )
    out, withheld = [], []
    for v in found:
        if v.statistic != MEMBERSHIP or v.value is None:
            out.append(v)
            continue
        detail = {**v.detail, "blind_auroc": blind.auroc}
        if v.flagged and blind.auroc >= v.value:
            withheld.append(v.name)
            text = (
                f"not distinguishable from the shift between the benchmark and its non-members ({words}; the "
                f"reading: {v.value:.3f}); no verdict"
            )
            out.append(dataclasses.replace(v, verdict=text, flagged=None, detail=detail))
        else:
            out.append(dataclasses.replace(v, detail=detail))
    record = {
        "auroc": blind.auroc,
        "ci": list(blind.ci),
        "n": [blind.n_members, blind.n_nonmembers],
        "withheld": withheld,
    }
    log.info("audit: blind baseline %s%s", words, f"; withheld: {', '.join(withheld)}" if withheld else "")
    return out, record
