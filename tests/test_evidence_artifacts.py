"""The committed artifacts of the evidence study (results/evidence/) and the pages generated from them.

The results page and the README's block must be exactly what the artifacts give; and the artifacts themselves are
read here without the project's code for what the study promises: each seed its own items and non-members, no sham
item among the benchmark's, one commit on a clean tree per file.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from contamlab.studies import evidence

REPO = Path(__file__).resolve().parents[1]
FILES = sorted((REPO / evidence.ARTIFACTS).glob("*.json"))
ARTIFACTS = [json.loads(p.read_text()) for p in FILES]


def test_the_results_page_and_the_readme_block_are_what_the_artifacts_give():
    assert ARTIFACTS, "no artifacts: run make evidence"
    assert (REPO / evidence.PAGE).read_text() == evidence.page(ARTIFACTS)
    readme = (REPO / evidence.README).read_text()
    assert evidence.with_block(readme, evidence.readme_block(ARTIFACTS), evidence.BEGIN, evidence.END) == readme


def test_each_artifact_records_where_and_how_it_ran():
    for path, a in zip(FILES, ARTIFACTS):
        # a seed's training and scoring may have run at two commits (a study resumed after a commit); each is
        # recorded, and each ran on a clean tree
        commits = {r["commit"] for runs in a["detect"].values() for r in runs} | {a["train"]["run"]["git_commit"]}
        assert None not in commits and len(commits) <= 2, path.name
        assert not any(r["dirty"] for runs in a["detect"].values() for r in runs), path.name
        assert a["train"]["run"]["git_dirty"] is False, path.name
        machine = a["train"]["run"]["machine"]
        assert machine["platform"].startswith("Linux") and machine["processor"] and int(machine["cpus"]) >= 2, path.name
        assert a["train"]["command"].startswith("python train.py")
        assert path.stat().st_size < 1_000_000


def test_seeds_drew_their_own_items_and_the_sham_none_of_the_benchmark():
    by_world: dict[tuple[str, str], list[dict]] = {}
    for a in ARTIFACTS:
        by_world.setdefault((a["model"], a["experiment"]), []).append(a)
        assert not set(a["sham_items"]) & set(a["questions"])
        assert not set(a["nonmembers"]) & set(a["questions"])
        assert len(a["questions"]) == len(a["leaked"]) == len(a["ids"])
    for group in by_world.values():
        for one, other in itertools.combinations(group, 2):
            assert not set(one["questions"]) & set(other["questions"])
            assert not set(one["nonmembers"]) & set(other["nonmembers"])
            assert not set(one["sham_items"]) & set(other["sham_items"])


def _plain(a: dict, reading: str, dose: int) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """An artifact's leaked flags and scores at a dose, items any model left unscored dropped: by hand."""
    r = a["readings"][reading]
    raw = {"clean": r["clean"], "contaminated": r["contaminated"][str(dose)], "sham": r["sham"][str(dose)]}
    keep = [all(raw[m][i] is not None for m in raw) for i in range(len(a["leaked"]))]
    return (
        np.asarray(a["leaked"], bool)[keep],
        {m: np.asarray([v for v, k in zip(x, keep) if k], float) for m, x in raw.items()},
    )


def _plain_drop(a: dict, dose: int) -> float:
    """The leak's loss drop of one seed by hand: contaminated − sham, leaked items minus unleaked, document view."""
    leaked, s = _plain(a, "loss/document", dose)
    gain = s["contaminated"] - s["sham"]  # scores are -loss: the gain in log-likelihood
    return gain[leaked].mean() - gain[~leaked].mean()


@pytest.mark.parametrize("world", sorted({(a["model"], a["experiment"]) for a in ARTIFACTS}), ids="-".join)
def test_every_seed_value_of_the_dose_tables_is_recomputed_from_the_written_scores(world):
    """Each seed's AUROC (scikit-learn) and loss drop (plain means) equal the page's per-seed values, and the pooled
    value is their mean, for every detector's document view, dose and model."""
    world_seeds = [a for a in ARTIFACTS if (a["model"], a["experiment"]) == world]
    for reading in sorted({r for a in world_seeds for r in a["readings"] if r.endswith("/document")}):
        group = [a for a in world_seeds if reading in a["readings"]]  # the extra readings: where a part gave them
        for dose in group[0]["doses"]:
            seeds = evidence.seeds_of(group, reading, int(dose))
            assert len(seeds) == len(group)
            for model in ("clean", "contaminated", "sham"):
                pooled, _, per_seed = evidence.auroc(seeds, model)
                expected = []
                for a in group:
                    leaked, scores = _plain(a, reading, dose)
                    expected.append(roc_auc_score(leaked, scores[model]))
                assert per_seed == pytest.approx(expected), (reading, dose, model)
                assert pooled == pytest.approx(np.mean(expected))
            if reading == "loss/document":
                drops = [_plain_drop(a, dose) for a in group]
                pooled, _, per_seed = evidence.loss_drop(seeds)
                assert per_seed == pytest.approx(drops) and pooled == pytest.approx(np.mean(drops))


def test_the_rebuild_on_another_cpu_is_what_real_world_md_says():
    """docs/real_world.md#rebuilding-the-artifacts: the same items and keys, other models, numbers from both files."""
    committed = json.loads((REPO / evidence.ARTIFACTS / "tiny-evidence_tiny-seed0.json").read_text())
    rebuilt = json.loads((REPO / "results/rebuild/tiny-evidence_tiny-seed0.json").read_text())
    for field in ("ids", "leaked", "questions", "nonmembers", "sham_items"):
        assert committed[field] == rebuilt[field], field
    assert {k: v["key"] for k, v in committed["train"].items() if isinstance(v, dict) and "key" in v} == {
        k: v["key"] for k, v in rebuilt["train"].items() if isinstance(v, dict) and "key" in v
    }
    assert rebuilt["train"]["run"]["machine"]["cpu"]["model"].startswith("Intel")

    worst = 0.0
    # the readings both files have (the rebuild predates EV_MORE_DETECTORS)
    for reading, by_model in ((r, m) for r, m in committed["readings"].items() if r in rebuilt["readings"]):
        for model, scores in by_model.items():
            for dose in [None] if model == "clean" else committed["doses"]:
                old = scores if dose is None else scores[str(dose)]
                new = (
                    rebuilt["readings"][reading][model]
                    if dose is None
                    else rebuilt["readings"][reading][model][str(dose)]
                )
                diff = roc_auc_score(committed["leaked"], old) - roc_auc_score(rebuilt["leaked"], new)
                worst = max(worst, abs(diff))
    text = (REPO / "docs/real_world.md").read_text().split("## Rebuilding the artifacts")[1].split("\n## ")[0]
    quoted = [
        f"{_plain_drop(rebuilt, 8):.3f} against the committed {_plain_drop(committed, 8):.3f}",
        f"at 1 epoch {_plain_drop(rebuilt, 1):.3f} against\n{_plain_drop(committed, 1):.3f}",
        f"within {worst:.3f} of",
    ]
    for q in quoted:
        assert q in text, q
    # the decisions of the dose table (H2: contaminated − sham above 0; the sham's interval covering 0.5), seed 0
    # rebuilt against seed 0 committed, the other seeds as they are
    tiny = [a for a in ARTIFACTS if (a["model"], a["experiment"]) == (committed["model"], committed["experiment"])]
    swapped = [rebuilt if a["seed"] == committed["seed"] else a for a in tiny]

    def decisions(group):
        out = []
        for reading in sorted(r for r in rebuilt["readings"] if r.endswith("/document")):
            for dose in committed["doses"]:
                seeds = evidence.seeds_of(group, reading, int(dose))
                low = evidence.auroc_difference(seeds, "contaminated", "sham")[1][0]
                sham = evidence.auroc(seeds, "sham")[1]
                out.append((reading, dose, low > 0, sham[0] <= 0.5 <= sham[1]))
        return out

    assert decisions(tiny) == decisions(swapped)
