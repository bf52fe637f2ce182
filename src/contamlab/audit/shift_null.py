"""Each membership verdict with its false-alarm rate under the shift closest to the audit's, from the shift null.

A membership reading compares the benchmark's items with non-members; when the two differ in style or source, a model
that saw nothing can be flagged. The shift null (:mod:`contamlab.studies.shift`) counts how often, for each reading,
in independent null audits of models that saw none of the items, under each shift condition. ``audit.shift_null.file``
names such an artifact; the audit then picks the condition closest to its own non-members
(:func:`closest_condition`) and, for each membership verdict:

- states that condition's false-alarm rate (the worst of the artifact's null models, with its exact interval) and the
  share of null audits whose reading reached the audited value (an empirical p against the shift);
- gives no verdict, "not distinguishable from <shift>", where the rate is shown to exceed
  ``audit.shift_null.max_rate`` (the lower end of its exact 95 % interval lies above it): a reading that flags models
  that saw nothing that often says nothing of this one. The lower end, not the point estimate, because the rate is the
  worst of several null models counted over a few dozen audits: at a true rate of α = 0.05, 3 of 20 (0.15) is common.

The artifact measures the shift on its own world (a generator and model family); the verdict names it, so that a reader
sees how close it is to the audited benchmark.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from pathlib import Path
from typing import Any

from contamlab.data.domain import SHIFTS
from contamlab.errors import ContamlabError
from contamlab.metrics import verdicts as V

log = logging.getLogger("contamlab")
#: The statistics of the readings the shift null measures (membership_test, membership_vs_references).
MEASURED = ("AUROC benchmark vs reference items", "AUROC - best reference AUROC")
#: The audit's non-member choice -> the closest shift condition (a file of the user's: another source).
CLOSEST = {"auto": "none", "generated": "none", "train": "none", "rewrites": "style"}


def closest_condition(nonmembers: str, about: str) -> str:
    """The shift condition closest to the audit's non-members.

    Args:
        nonmembers: ``audit.nonmembers`` as set.
        about: What the non-members turned out to be (``auto`` resolves to rewrites on a benchmark without a
            generator: the description then names them).
    """
    if nonmembers == "auto":
        return "style" if "rewrites" in about else "none"
    return CLOSEST.get(nonmembers, "source")


def load(path: str | Path) -> dict[str, Any]:
    """The shift null's artifact, checked for the fields the verdicts read."""
    path = Path(path).expanduser()
    try:
        artifact = json.loads(path.read_text())
        artifact["rates"], artifact["readings"], artifact["world"]  # noqa: B018 (the fields every verdict reads)
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise ContamlabError(
            f"audit.shift_null.file={path}: not a shift-null artifact ({err}); make one with python -m "
            "contamlab.studies.shift run (docs/audit.md#false-alarms-under-shift)"
        ) from None
    return artifact


def _worst(artifact: dict[str, Any], condition: str, reading: str) -> tuple[str, dict[str, Any]] | None:
    """The null model with the highest false-alarm rate of ``reading`` under ``condition``, and its cell."""
    cells = [
        (model, by[condition][reading])
        for model, by in artifact["rates"].items()
        if reading in by.get(condition, {}) and by[condition][reading]["total"]
    ]
    return max(cells, key=lambda mc: mc[1]["rate"]) if cells else None


def with_shift_null(
    found: list[V.Verdict], artifact: dict[str, Any], condition: str, max_rate: float
) -> tuple[list[V.Verdict], dict[str, Any]]:
    """The verdicts with their false alarms under ``condition``; those shown above ``max_rate`` give no verdict.

    Returns:
        The verdicts (those the artifact does not measure unchanged) and the record for results.json.
    """
    if condition not in SHIFTS:
        raise ContamlabError(f"audit.shift_null.condition={condition}: use auto or one of {', '.join(SHIFTS)}")
    world = artifact["world"]
    where = f"{world['model']} on {world['domain']}"
    out, withheld, measured = [], [], {}
    for v in found:
        worst = _worst(artifact, condition, v.name) if v.statistic in MEASURED else None
        if worst is None or v.value is None:
            out.append(v)
            continue
        model, cell = worst
        nulls = [
            r["value"]
            for r in artifact["readings"]
            if r["model"] == model and r["condition"] == condition and r["reading"] == v.name and r["value"] is not None
        ]
        reached = sum(x >= v.value for x in nulls)
        shift_p = (1 + reached) / (1 + len(nulls))  # the audited value's rank among the null audits' values
        low, high = cell["interval"]
        rate_words = (
            f"{cell['flagged']} of {cell['total']} null audits of a model that saw nothing flagged under the "
            f"{condition} shift ({where}, the {model} model: rate {cell['rate']:.2f} [{low:.2f}, {high:.2f}]); "
            f"{reached} of them reached {v.value:.3f}"
        )
        record = {
            "condition": condition,
            "model": model,
            "flagged": cell["flagged"],
            "total": cell["total"],
            "rate": cell["rate"],
            "interval": cell["interval"],
            "reached": reached,
            "shift_p": shift_p,
        }
        measured[v.name] = record
        detail = {**v.detail, "shift_null": record}
        if v.flagged is not None and low > max_rate:
            withheld.append(v.name)
            text = f"not distinguishable from a {SHIFTS[condition]} shift: {rate_words}; no verdict"
            out.append(dataclasses.replace(v, verdict=text, flagged=None, detail=detail))
        else:
            out.append(dataclasses.replace(v, verdict=f"{v.verdict}; false alarms: {rate_words}", detail=detail))
    record = {
        "file_world": world,
        "condition": condition,
        "about": SHIFTS[condition],
        "max_rate": max_rate,
        "readings": measured,
        "withheld": withheld,
    }
    log.info(
        "audit: shift null (%s, measured on %s): %d reading(s) measured%s",
        condition, where, len(measured), f"; no verdict: {', '.join(withheld)}" if withheld else "",
    )  # fmt: skip
    return out, record
