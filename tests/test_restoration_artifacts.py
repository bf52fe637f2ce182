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

from contamlab.studies import evidence, restoration

REPO = Path(__file__).resolve().parents[1]
FILES = sorted((REPO / restoration.ARTIFACTS).glob("*.json"))
ARTIFACTS = [json.loads(p.read_text()) for p in FILES]
EVIDENCE = evidence.load(REPO / evidence.ARTIFACTS)


def test_the_page_and_the_readme_block_are_what_the_artifacts_give():
    assert ARTIFACTS, "no artifacts: run make restoration"
    assert (REPO / restoration.PAGE).read_text() == restoration.page(ARTIFACTS, EVIDENCE)
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
        if one["model"] != other["model"]:
            continue
        if one["seed"] != other["seed"]:
            assert not set(one["questions"]) & set(other["questions"])
        else:  # another dose or m of the same seed: its questions and split
            assert (one["questions"], one["leaked"]) == (other["questions"], other["leaked"])
            assert (one["dose"], one["m"]) != (other["dose"], other["m"])


def test_a_pooled_value_is_the_mean_of_the_seeds():
    group = [a for a in ARTIFACTS if "railcap" in a["strategies"]]
    point, (low, high), per_seed = restoration.pooled(group, "identity", "sa_ppg", "railcap")
    plain = [
        plain_metrics(a["strategies"]["identity"]["r"], a["clean"]["r"], a["clean_bin"], [0], [0])["sa_ppg"]
        - plain_metrics(a["strategies"]["railcap"]["r"], a["clean"]["r"], a["clean_bin"], [0], [0])["sa_ppg"]
        for a in group
    ]
    assert per_seed == pytest.approx(plain) and point == pytest.approx(sum(plain) / len(plain))
    assert low <= point <= high


def _seed_at(dose: int, seed: int, lift: float) -> dict:
    """A hand-made artifact: 40 questions, clean r̂ = 0.25 everywhere, Identity lifted by ``lift`` on the leaked half."""
    n, m = 40, 4
    leaked = [i % 2 for i in range(n)]
    clean = {"r": [0.25] * n, "r01": [i % 4 == 0 for i in range(n)]}
    identity = {
        "r": [0.25 + lift * x for x in leaked],
        "r01": [1 if (lift and x) else c for x, c in zip(leaked, clean["r01"])],
    }
    return {
        "model": "tiny", "experiment": "evidence_tiny", "seed": seed, "dose": dose, "m": m, "bins": 4,
        "ids": [f"q{i}" for i in range(n)], "leaked": leaked, "clean_bin": [1] * n, "clean": clean,
        "clean_2": dict(clean), "strategies": {"identity": identity},
    }  # fmt: skip


def test_the_dose_table_names_the_smallest_dose_that_inflates_accuracy():
    # dose 1 leaves Identity at the clean model's r̂ (its Δ⁺ excess is 0); dose 4 lifts every leaked question by 0.5
    artifacts = [_seed_at(dose, seed, lift) for dose, lift in ((4, 0.5), (1, 0.0)) for seed in (0, 1)]
    text = "\n".join(restoration.dose_section(artifacts, []))
    assert "Smallest dose that inflates accuracy: tiny world, verbatim (m = 4): 4." in text
    row = next(line for line in text.splitlines() if line.startswith("| tiny world, verbatim | 4 |"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[4] == "–"  # no evidence artifact: no loss drop
    # G-AP: Identity's one-sample readouts 30 of 40 against the clean 10 of 40 (every leaked one solved)
    assert cells[5].startswith("0.500 [")
    # Δ⁺ − floor: Identity's mean positive gap, 0.5 on half the questions, minus the floor's 0
    assert cells[8].startswith("+0.250 [")


def _fake_job(job: Path, dose: int, clean_r: list[float]) -> None:
    """An evaluation job's files as evaluate.py leaves them (Identity at ``dose``, m = 4, 2 bins), 4 questions."""
    (job / ".hydra").mkdir(parents=True)
    over = [
        "experiment=evidence_tiny",
        "model=tiny",
        "seed=0",
        "m=4",
        f"domain.leak_epochs={dose}",
        "strategy=identity",
    ]
    (job / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in over))
    metrics = {k: 0.1 * dose for k in restoration.METRICS}
    run = {"git_commit": "abc", "git_dirty": False, "machine": {"cpus": 2}}
    (job / "results.json").write_text(
        json.dumps(
            {
                "strategy": {"name": "identity"},
                "config": {"domain": {"leak_epochs": dose}, "m": 4, "metric": {"bins": 2}},
                "metrics": {"all": {"values": metrics}},
                "floor": {"metrics": {"all": {"values": metrics}}},
                "run": run,
                "timings": {"wall_s": 1.0},
            }
        )
    )
    head = "id,leaked,bin,clean_correct,r_clean,r01_clean,clean_2_correct,r_clean_2,r01_clean_2,"
    rows = [head + "strategy_correct,strategy_kept,r_strategy,r01_strategy"]
    for i, r in enumerate(clean_r):
        c = round(4 * r)
        rows.append(f"q{i},{i % 2},{min(c // 2, 1)},{c},{r},1,{c},{r},0,{dose},4,{dose / 4},1")
    (job / "per_question.csv").write_text("\n".join(rows) + "\n")


def test_collect_writes_one_artifact_per_dose_of_a_sweep(tmp_path):
    from contamlab.config import build_domain, compose, model_store

    run = tmp_path / "run"
    train = run / "train" / "tiny-0"
    (train / ".hydra").mkdir(parents=True)
    models = f"paths.models_dir={tmp_path / 'models'}"
    over = ["experiment=evidence_tiny", "model=tiny", "seed=0", "domain.leak_epochs=2", "snapshots=[1]", models]
    (train / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in over))
    for dose in (1, 2):  # the stages' summaries where the store keeps them
        cfg = compose(
            "train", ["experiment=evidence_tiny", "model=tiny", "seed=0", f"domain.leak_epochs={dose}", models]
        )
        store, domain = model_store(cfg), build_domain(cfg.domain)
        for stage in ("clean", "contaminated"):
            where = store.stage_dir(domain, stage)
            where.mkdir(parents=True, exist_ok=True)
            key = "clean" if stage == "clean" else f"{stage}{dose}"  # one clean model for every dose
            summary = {"key": key, "steps": dose, "wall_s": 1.0, "run": {"git_dirty": False}}
            (where / "train_summary.json").write_text(json.dumps(summary | {"snapshot_of": "x" if dose == 1 else None}))
    for job, dose in (("0", 1), ("1", 2)):
        _fake_job(run / "eval" / "tiny-0" / job, dose, [0.25, 0.5, 0.0, 1.0])
    written = restoration.collect(run, tmp_path / "out")
    assert [p.name for p in written] == ["tiny-e1-m4-seed0.json", "tiny-e2-m4-seed0.json"]
    one, two = (json.loads(p.read_text()) for p in written)
    assert (one["dose"], two["dose"], one["m"]) == (1, 2, 4)
    assert one["strategies"]["identity"]["r"] == [0.25] * 4 and two["strategies"]["identity"]["r"] == [0.5] * 4
    # each dose's own contaminated stage; the snapshot names the run it was taken from
    assert one["train"]["contaminated"]["key"] == "contaminated1" and one["train"]["contaminated"]["snapshot_of"] == "x"
    assert two["train"]["contaminated"]["key"] == "contaminated2" and one["train"]["clean"]["key"] == "clean"
    # two jobs of one dose whose clean batches differ are an error, not a silent mix
    _fake_job(run / "eval" / "tiny-0" / "2", 2, [0.0, 0.0, 0.0, 0.0])
    with pytest.raises(ValueError, match="other questions or clean samples"):
        restoration.collect(run, tmp_path / "out2")


def test_a_loss_drop_from_models_of_another_key_is_called_so():
    """The H6 table pairs each dose with the evidence study's loss drop; where that study trained other models (another
    stage key: the real LMs' committed runs projected every position) the page says it measured sibling models."""
    from contamlab.studies.restoration import _other_models

    evidence_runs = [{"seed": s, "train": {"contaminated@2": {"key": f"k{s}"}}} for s in (0, 1)]
    same = [{"seed": s, "train": {"contaminated": {"key": f"k{s}"}}} for s in (0, 1)]
    assert not _other_models(evidence_runs, same, 2)
    assert _other_models(evidence_runs, [same[0], {"seed": 1, "train": {"contaminated": {"key": "other"}}}], 2)
    assert _other_models(evidence_runs, same, 4)  # no evidence model at that dose
    # the committed page: SmolLM2's dose-gap runs (labelled positions) against the evidence runs (every position)
    trained = {(e["seed"], v["key"]) for e in EVIDENCE for k, v in e["train"].items() if k.startswith("contaminated@")}
    smollm2 = [a for a in ARTIFACTS if a["model"] == "smollm2" and a["m"] == 4]
    differ = any((a["seed"], a["train"]["contaminated"]["key"]) not in trained for a in smollm2)
    page = (REPO / restoration.PAGE).read_text()
    assert ("The loss drop of SmolLM2-135M, verbatim was measured on sibling models" in page) == differ
