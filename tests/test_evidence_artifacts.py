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
        assert a["train"]["run"]["machine"]["cpus"] >= 1 and a["train"]["command"].startswith("python train.py")
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


def test_a_table_cell_is_the_auroc_of_the_written_scores():
    """One seed's AUROC recomputed with scikit-learn from the artifact's scores equals its per-seed value."""
    a = ARTIFACTS[0]
    dose = str(a["doses"][-1])
    scores = np.asarray(a["readings"]["loss/document"]["contaminated"][dose], float)
    expected = roc_auc_score(np.asarray(a["leaked"]), scores)
    group = [x for x in ARTIFACTS if (x["model"], x["experiment"]) == (a["model"], a["experiment"])]
    seeds = evidence.seeds_of(group, "loss/document", int(dose))
    assert evidence.auroc(seeds, "contaminated")[2][group.index(a)] == pytest.approx(expected)
