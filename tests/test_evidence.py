"""The evidence study's guarantees: independent seeds, one recipe for contaminated, sham and twin, no held-out item
in any recorded training text, and the statistics of its tables against hand computations.
"""

from __future__ import annotations

import itertools
import json

import numpy as np
import pytest
from jobs import run_train, train_config
from sklearn.metrics import roc_auc_score

from contamlab.audit.error_rates import POOL_SEED, doses, pool_items
from contamlab.audit.nonmembers import NONMEMBER_SEED
from contamlab.config import build_domain, compose, model_store
from contamlab.data.arith.render import render, reworded
from contamlab.models.store import read_training_texts
from contamlab.stages import TwinRecipe, stage_recipe
from contamlab.studies.evidence import Seed, auroc_difference, loss_drop, mean_shift


def _world(seed: int):
    return build_domain(compose("train", ["experiment=real_world", "model=smollm2", f"seed={seed}"]).domain)


def test_each_seed_draws_its_own_items_nonmembers_pool_prefixes_and_sham_items():
    worlds = [_world(s) for s in (0, 1, 2)]
    sets = []
    for d in worlds:
        exclude = [*d.test, *d.train, *d.nonmember_questions(len(d.test), NONMEMBER_SEED)]
        pool, _ = pool_items(d, "auto", 200, exclude)
        sets.append(
            {
                "test": {q.question for q in d.test},
                "nonmembers": {q.question for q in d.nonmember_questions(len(d.test), NONMEMBER_SEED)},
                "pool": {q.question for q in pool.test},
                "recall prefix": {q.question for q in d.nonmember_questions(10, 0)},
                "sham": {q.question for q in d.sham_training_questions()},
                "train": {q.question for q in d.train},
            }
        )
    for mine in sets:  # within a seed: no role shares an item with another
        for (a, x), (b, y) in itertools.combinations(mine.items(), 2):
            assert not x & y, (a, b)
    for one, other in itertools.combinations(sets, 2):  # across seeds: nothing of a role is shared
        for role in ("test", "nonmembers", "pool", "recall prefix", "sham"):
            assert not one[role] & other[role], role
    halves = [frozenset(d.split.leaked) for d in worlds]
    assert len(set(halves)) == 3  # and each leaks another half


def test_contaminated_sham_and_twin_share_one_recipe():
    cfg = compose("train", ["experiment=real_world", "model=smollm2", "domain.leak_epochs=4"])
    domain = build_domain(cfg.domain)
    dose = doses(compose("audit", ["experiment=real_world", "model=smollm2", "domain.leak_epochs=4"]), domain)[0]
    twin = TwinRecipe("parent", [], dose.epochs, dose.lr, {})
    recipes = [stage_recipe(cfg, domain, s, 58) for s in ("contaminated", "sham")]
    recipes.append(stage_recipe(cfg, domain, "contaminated", 58, twin))
    assert recipes[0] == recipes[1] == recipes[2]
    r = recipes[0]
    # by hand: 58 rows in steps of 8 -> 8 steps an epoch, 4 epochs, the leak's rate held from the first step
    assert (r.lr, r.epochs, r.total_steps, r.schedule, r.warmup_steps, r.accumulate) == (1e-3, 4, 32, "constant", 0, 2)
    assert stage_recipe(cfg, domain, "clean", 58).schedule == "cosine"  # the clean stage keeps the recipe's


def _wordings(domain, problem) -> set[str]:
    """A problem's question in every wording the world renders: the test wording and the pq rewordings."""
    return {render(problem, "base")[0]} | {render(reworded(problem, v), "pq")[0] for v in range(12)}


# the question reworded with its solution verbatim (experiment=real_world_pq), and both reworded
# (experiment=real_world_reworded)
LEAK_FORMS = [
    ["domain=arith_pq", "domain.leak_variants=3"],
    ["domain=arith_pq", "domain.name=arith_reworded", "domain.leak_style=reworded", "++domain.solutions=cot"],
]


@pytest.mark.parametrize("form", LEAK_FORMS, ids=["question-reworded", "fully-reworded"])
def test_no_unleaked_item_nonmember_or_pool_item_in_any_recorded_training_text(tmp_path, form):
    stages = run_train(tmp_path, "sham=true", *form)
    cfg = train_config(tmp_path, "sham=true", *form)
    domain = build_domain(cfg.domain)
    texts = [t for s in ("base", "clean", "contaminated", "sham") for t in read_training_texts(stages[s])]
    corpus = "\n".join(texts)
    by_id = {p.uid: p for p in domain.problems[1]}
    unleaked = [by_id[i] for i in domain.split.unleaked]
    leaked = [by_id[i] for i in domain.split.leaked]
    held_out = [w for p in unleaked for w in _wordings(domain, p)]
    nonmembers = domain.fresh_problems(20, NONMEMBER_SEED)
    pool = domain.fresh_problems(40, POOL_SEED)
    held_out += [w for p in [*nonmembers, *pool] for w in _wordings(domain, p)]
    assert held_out and not [w for w in held_out if w in corpus]
    # the check can fail: the leaked half is there, in its pq wordings, in the contaminated stage's record only
    contaminated = "\n".join(read_training_texts(stages["contaminated"]))
    sham = "\n".join(read_training_texts(stages["sham"]))
    assert all(any(w in contaminated for w in _wordings(domain, p)) for p in leaked)
    assert not any(w in sham for p in leaked for w in _wordings(domain, p))
    assert model_store(cfg).stage_dir(domain, "sham") == stages["sham"]
    # the leak form is what its name says: the test item's solution leaks verbatim with a reworded question, and in
    # no record when the solution is reworded too
    test_items = {q.id: q for q in domain.test}
    verbatim = [test_items[i].solution in contaminated for i in domain.split.leaked]
    assert all(verbatim) if cfg.domain.leak_style == "pq" else not any(verbatim)


def _seed(leaked, **scores) -> Seed:
    return Seed(np.asarray(leaked, bool), {k: np.asarray(v, np.float64) for k, v in scores.items()})


def test_table_statistics_match_hand_computations():
    leaked = [1, 1, 1, 0, 0, 0]
    s = _seed(
        leaked,
        contaminated=[-0.5, -0.7, -1.2, -1.0, -1.1, -0.9],
        sham=[-1.0, -1.1, -1.3, -1.0, -1.2, -0.8],
        clean=[-1.2, -1.2, -1.4, -1.1, -1.3, -1.0],
    )
    # loss drop by hand: leaked drops 0.5, 0.4, 0.1 (mean 1/3); unleaked 0, 0.1, -0.1 (mean 0)
    point, _, per_seed = loss_drop([s])
    assert point == pytest.approx(1 / 3) and per_seed == [pytest.approx(1 / 3)]
    # paired AUROC difference: sklearn's AUROCs of each model, subtracted
    y = np.asarray(leaked)
    expected = roc_auc_score(y, s.scores["contaminated"]) - roc_auc_score(y, s.scores["sham"])
    assert auroc_difference([s], "contaminated", "sham")[0] == pytest.approx(expected)
    # the mean shift: sham - clean over all six items, by hand 0.2 + 0.1 + 0.1 + 0.1 + 0.1 + 0.2 = 0.8, over 6
    assert mean_shift([s], "sham", "clean")[0] == pytest.approx(0.8 / 6)


def test_a_paired_difference_interval_is_narrower_than_the_unpaired_one():
    """Two models whose scores share the items' difficulty: pairing cancels it, so the interval is narrow."""
    rng = np.random.default_rng(0)
    seeds = []
    for _ in range(3):
        difficulty = rng.normal(0, 1, 100)
        leaked = np.r_[np.ones(50), np.zeros(50)].astype(bool)
        a = difficulty + 0.3 * leaked + rng.normal(0, 0.05, 100)
        seeds.append(_seed(leaked, a=a, b=difficulty + rng.normal(0, 0.05, 100)))
    _, (low, high), _ = auroc_difference(seeds, "a", "b")
    assert 0 < low < high and high - low < 0.15


def _job(sweep, name: str, detector: str, view: str, scores: dict[str, list[float]], commit: str = "c0") -> None:
    """A detection job as a sweep of ``make evidence`` leaves it: overrides, per-question scores, results.json."""
    job = sweep / name
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text(f"- detector={detector}\n- detector.text={view}\n")
    rows = ["id,leaked," + ",".join(f"score_{m}" for m in scores)]
    rows += [f"q{i},{i % 2}," + ",".join(str(v[i]) for v in scores.values()) for i in range(2)]
    (job / "detection_per_question.csv").write_text("\n".join(rows) + "\n")
    det = {m: {"wall_s": 1.0, "cached": False} for m in scores}
    (job / "results.json").write_text(json.dumps({"detection": det, "run": {"git_commit": commit, "git_dirty": False}}))


def test_collect_joins_a_doses_main_and_more_sweeps_into_one_artifact(tmp_path, monkeypatch):
    """``make evidence-more`` writes ``<sweep>-more`` beside a dose's sweep: one artifact holds both sweeps."""
    from contamlab.studies import evidence

    monkeypatch.setattr(evidence, "_train_record", lambda train_dir, doses: ({"doses seen": list(doses)}, {}))
    detect = tmp_path / "run" / "detect"
    scores = {"contaminated": [0.1, 0.2], "sham": [0.3, 0.4], "clean": [0.5, 0.6]}
    _job(detect / "tiny-evidence_tiny-0-e1", "0_x", "loss", "document", scores)
    _job(
        detect / "tiny-evidence_tiny-0-e1-more",
        "0_x",
        "recall",
        "document",
        {k: [-v for v in x] for k, x in scores.items()},
        "c1",
    )
    _job(detect / "tiny-evidence_tiny-0-e2", "0_x", "loss", "document", {**scores, "contaminated": [0.7, 0.8]})
    (written,) = evidence.collect(tmp_path / "run", tmp_path / "out")
    a = json.loads(written.read_text())
    assert written.name == "tiny-evidence_tiny-seed0.json" and a["doses"] == [1, 2]
    assert a["train"] == {"doses seen": [1, 2]}
    assert a["readings"]["loss/document"]["contaminated"] == {"1": [0.1, 0.2], "2": [0.7, 0.8]}
    assert a["readings"]["recall/document"] == {
        "clean": [-0.5, -0.6],
        "contaminated": {"1": [-0.1, -0.2]},
        "sham": {"1": [-0.3, -0.4]},
    }
    assert [(r["reading"], r["commit"]) for r in a["detect"]["1"]] == [
        ("loss/document", "c0"),
        ("recall/document", "c1"),
    ]


def test_a_cell_whose_sham_excludes_half_reads_biased_and_is_not_a_detection():
    """The analysis plan's H1 rule on the page: a difference above 0 against a sham whose interval excludes 0.5 is
    biased by the split, and the smallest detected dose skips it."""
    from contamlab.studies import evidence

    rng = np.random.default_rng(0)
    leaked = np.r_[np.ones(50), np.zeros(50)].astype(int)
    member = 2.0 * leaked + rng.normal(0, 1, 100)  # AUROC near 0.92
    nothing = rng.normal(0, 1, 100)
    anti = -2.0 * leaked + rng.normal(0, 1, 100)  # a sham that reads the leaked items as non-members
    artifact = {
        "model": "tiny",
        "experiment": "evidence_tiny",
        "seed": 0,
        "doses": [1, 2],
        "leaked": leaked.tolist(),
        "readings": {
            "loss/document": {
                "clean": nothing.tolist(),
                "contaminated": {"1": member.tolist(), "2": member.tolist()},
                "sham": {"1": anti.tolist(), "2": nothing.tolist()},
            }
        },
        "train": {},
    }
    lines = evidence.page([artifact]).splitlines()
    assert any(line.startswith("| Loss | 1 |") and line.endswith("| biased by the split | no |") for line in lines)
    assert any(line.startswith("| Loss | 2 |") and line.endswith("| yes | yes |") for line in lines)
    summary = next(line for line in lines if line.startswith("| Loss | ") and line.count("|") == 5)
    assert summary.split("|")[3].strip() == "2"  # the smallest detected dose
