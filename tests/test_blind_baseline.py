"""The blind baseline (contamlab.metrics.blind): a model-free classifier's cross-validated AUROC and its interval."""

from __future__ import annotations

import json
import random

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from contamlab.metrics.blind import BlindResult, blind_auroc

# 30 made-up words: random texts over them carry no signal of their own; a test adds the signal it wants.
WORDS = [a + b for a in ("ba", "ko", "mi", "tu", "ze") for b in ("lin", "dor", "sap", "vet", "rum", "gox")]


def random_texts(rng: random.Random, n: int, length: tuple[int, int] = (6, 12)) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(rng.randint(*length))) for _ in range(n)]


def test_style_word_is_found_blind():
    rng = random.Random(0)
    members = ["Kindly " + t for t in random_texts(rng, 100)]
    nonmembers = random_texts(rng, 100)
    result = blind_auroc(members, nonmembers, n_boot=300)
    assert isinstance(result, BlindResult)
    assert result.auroc > 0.95
    assert result.ci[1] >= result.ci[0] > 0.9
    assert (result.n_members, result.n_nonmembers, result.folds) == (100, 100, 5)
    assert len(result.scores) == 200
    assert np.mean(result.scores[:100]) > 0 > np.mean(result.scores[100:])  # decision scores: positive = member


def test_one_pool_is_at_chance():
    # Both sides from one pool, a fixed draw. (The interval is conditional on the fitted fold models: over many such
    # draws it covers 0.5 about 85 % of the time at 95 % nominal, see blind_auroc's docstring; this draw is one.)
    rng = random.Random(0)
    pool = random_texts(rng, 200)
    result = blind_auroc(pool[:100], pool[100:], n_boot=1000)
    assert result.ci[0] <= 0.5 <= result.ci[1]
    assert result.ci[0] <= result.auroc <= result.ci[1]
    assert 0.4 < result.auroc < 0.6


def test_groups_keep_twins_in_one_fold():
    # Each member has a verbatim twin among the non-members. With groups, twins share a fold, hence the same fitted
    # pipeline and the same score: the member and non-member scores are the same multiset, AUROC exactly 0.5.
    rng = random.Random(2)
    texts = random_texts(rng, 30)
    ids = [f"item-{i}" for i in range(30)]
    grouped = blind_auroc(texts, texts, groups=ids + ids, n_boot=200)
    assert grouped.scores[:30] == pytest.approx(grouped.scores[30:], abs=1e-12)
    assert grouped.auroc == pytest.approx(0.5)
    # Without groups a twin sits in the training folds with the other label and drags its sibling's score that
    # way: the AUROC falls far below chance, which the grouped folds rule out.
    ungrouped = blind_auroc(texts, texts, n_boot=200)
    assert ungrouped.auroc < 0.2
    assert not np.allclose(ungrouped.scores[:30], ungrouped.scores[30:])


def test_groups_validated():
    rng = random.Random(3)
    texts = random_texts(rng, 20)
    with pytest.raises(ValueError, match="39 group ids for 40 texts"):
        blind_auroc(texts, texts, groups=list(range(39)))
    with pytest.raises(ValueError, match="3 distinct groups, but 5-fold"):
        blind_auroc(texts, texts, groups=[i % 3 for i in range(40)])


def _informative(seed: int, n: int) -> tuple[list[str], list[str]]:
    rng = random.Random(seed)
    members = [("kindly " if rng.random() < 0.7 else "") + t for t in random_texts(rng, n)]
    nonmembers = [("kindly " if rng.random() < 0.1 else "") + t for t in random_texts(rng, n)]
    return members, nonmembers


def _percentile(values: list[float], q: float) -> float:
    return float(np.quantile(values, q))


def test_item_bootstrap_matches_slow_loop():
    members, nonmembers = _informative(4, 50)
    result = blind_auroc(members, nonmembers, n_boot=1500)
    pos, neg = result.scores[:50], result.scores[50:]
    rng = random.Random(12345)
    aurocs = []
    for _ in range(1500):
        p = [pos[rng.randrange(50)] for _ in range(50)]
        q = [neg[rng.randrange(50)] for _ in range(50)]
        aurocs.append(roc_auc_score([1] * 50 + [0] * 50, p + q))
    assert 0.55 < result.auroc < 0.95  # an interval with room on both sides
    assert result.ci[0] == pytest.approx(_percentile(aurocs, 0.025), abs=0.02)
    assert result.ci[1] == pytest.approx(_percentile(aurocs, 0.975), abs=0.02)


def test_cluster_bootstrap_matches_slow_loop():
    # Items of 2 texts (one member, one non-member per group) and singletons of either side: three strata.
    members, nonmembers = _informative(5, 45)
    groups = [f"g{i}" for i in range(45)] + [f"g{i}" if i < 25 else f"n{i}" for i in range(45)]
    result = blind_auroc(members, nonmembers, groups=groups, n_boot=1500)
    scores = result.scores
    labels = [1] * 45 + [0] * 45
    by_group: dict[str, list[int]] = {}
    for index, g in enumerate(groups):
        by_group.setdefault(g, []).append(index)
    strata: dict[tuple[int, ...], list[str]] = {}
    for g, items in by_group.items():
        strata.setdefault(tuple(sorted({labels[i] for i in items})), []).append(g)
    assert sorted(len(s) for s in strata.values()) == [20, 20, 25]
    rng = random.Random(999)
    aurocs = []
    for _ in range(1500):
        taken = []
        for names in strata.values():
            for _ in names:
                taken.extend(by_group[names[rng.randrange(len(names))]])
        aurocs.append(roc_auc_score([labels[i] for i in taken], [scores[i] for i in taken]))
    assert result.ci[0] == pytest.approx(_percentile(aurocs, 0.025), abs=0.02)
    assert result.ci[1] == pytest.approx(_percentile(aurocs, 0.975), abs=0.02)


def test_too_few_items_and_empty_texts():
    rng = random.Random(6)
    texts = random_texts(rng, 10)
    with pytest.raises(ValueError, match="3 members, but 5-fold cross-validation needs at least 5 texts per side"):
        blind_auroc(texts[:3], texts)
    with pytest.raises(ValueError, match="2 non-members, but 3-fold"):
        blind_auroc(texts, texts[:2], folds=3)
    with pytest.raises(ValueError, match="non-member text 4 is empty"):
        blind_auroc(texts, texts[:4] + ["  "] + texts[5:])
    with pytest.raises(ValueError, match="member text 0 is empty"):
        blind_auroc([""] + texts[1:], texts)
    with pytest.raises(ValueError, match="folds must be at least 2"):
        blind_auroc(texts, texts, folds=1)


def test_the_coverage_study_writes_each_draw_and_counts_the_covering_intervals(data_dir, tmp_path):
    """``python -m contamlab.studies.blind coverage``, two draws: disjoint random halves, counts read again."""
    from contamlab.studies import blind

    out = tmp_path / "coverage.json"
    blind.main(["coverage", "--draws", "2", "--n-boot", "200", "--out", str(out)])
    artifact = json.loads(out.read_text())
    assert set(artifact["sides"]) == {str(n) for n in blind.COVERAGE_SIDES}
    for side in artifact["sides"].values():
        draws = side["draws"]
        assert [d["draw"] for d in draws] == [0, 1] and draws[0]["auroc"] != draws[1]["auroc"]
        assert side["covered"] == sum(d["ci"][0] <= 0.5 <= d["ci"][1] for d in draws)
    assert artifact["command"].endswith("coverage --draws 2 --n-boot 200 --out " + str(out))
    assert "of 2 (" in blind.coverage_line(artifact)
