"""The committed artifacts of the restoration study (results/restoration/) and the page generated from them.

The page and the README's block must be exactly what the artifacts give. The artifacts are read here without the
project's metric code: SA-PPG, Δ⁺, Δ⁻ and G-AP recomputed by plain loops from the per-question columns must equal
what each evaluation job computed and recorded, and each seed must hold questions of its own.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import pytest
from helpers.oracles import plain_metrics

from contamlab.studies import restoration

REPO = Path(__file__).resolve().parents[1]
FILES = sorted((REPO / restoration.ARTIFACTS).glob("*.json"))
ARTIFACTS = [json.loads(p.read_text()) for p in FILES]


def test_the_page_and_the_readme_block_are_what_the_artifacts_give():
    assert ARTIFACTS, "no artifacts: run make restoration"
    assert (REPO / restoration.PAGE).read_text() == restoration.page(ARTIFACTS)
    readme = (REPO / restoration.README).read_text()
    block = restoration.readme_block(ARTIFACTS)
    assert restoration.with_block(readme, block, restoration.BEGIN, restoration.END) == readme


@pytest.mark.parametrize("index", range(len(FILES)), ids=[p.stem for p in FILES])
def test_each_seed_gives_the_jobs_own_metrics_again(index):
    a = ARTIFACTS[index]
    clean = a["clean"]
    for name, s in a["strategies"].items():
        for row, recorded in ((s, s["metrics"]), (a["clean_2"], s["floor_metrics"])):
            mine = plain_metrics(row["r"], clean["r"], a["clean_bin"], row["r01"], clean["r01"])
            assert mine == pytest.approx(recorded, abs=2e-6), name  # the CSV keeps r̂ to 6 decimals
        assert all(r == pytest.approx(c / a["m"], abs=1e-6) for r, c in zip(clean["r"], clean["correct"]))
        # each question's clean bin is its clean count's bin (Eq. 12, B bins)
        assert a["clean_bin"] == [min(c * a["bins"] // a["m"], a["bins"] - 1) for c in clean["correct"]]
    assert len(a["ids"]) == len(a["questions"]) == len(a["leaked"]) and 0 < sum(a["leaked"]) < len(a["leaked"])


def test_each_artifact_records_where_and_how_it_ran():
    for path, a in zip(FILES, ARTIFACTS):
        runs = list(a["strategies"].values())
        assert all(r["commit"] and r["dirty"] is False for r in runs), path.name
        assert a["train"]["run"]["git_dirty"] is False and a["train"]["command"].startswith("python train.py")
        assert all(r["command"].startswith("python evaluate.py") and r["machine"]["cpus"] >= 1 for r in runs)
        assert path.stat().st_size < 200_000


def test_seeds_drew_their_own_questions():
    for one, other in itertools.combinations(ARTIFACTS, 2):
        if one["model"] == other["model"]:
            assert one["seed"] != other["seed"]
            assert not set(one["questions"]) & set(other["questions"])


def test_a_pooled_value_is_the_mean_of_the_seeds():
    group = [a for a in ARTIFACTS if a["model"] == ARTIFACTS[0]["model"]]
    point, (low, high), per_seed = restoration.pooled(group, "identity", "sa_ppg", "railcap")
    plain = [
        plain_metrics(a["strategies"]["identity"]["r"], a["clean"]["r"], a["clean_bin"], [0], [0])["sa_ppg"]
        - plain_metrics(a["strategies"]["railcap"]["r"], a["clean"]["r"], a["clean_bin"], [0], [0])["sa_ppg"]
        for a in group
    ]
    assert per_seed == pytest.approx(plain) and point == pytest.approx(sum(plain) / len(plain))
    assert low <= point <= high
