"""ReCaLL, DC-PDD, n-gram overlap and the ConStat-style test against hand-computed values and unbatched passes."""

import math

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score
from tinylm import TEXTS, tiny_model, tiny_tokenizer, token_logprobs

from contamlab.analysis.detectors import comparison_lines, leaderboard, leak_form
from contamlab.data.question import Question
from contamlab.detectors.base import DetectionContext, DetectorOutput
from contamlab.detectors.constat import ConStatDetector, constat_test, difficulty_map
from contamlab.detectors.dcpdd import DCPDDDetector, dcpdd_score, first_occurrences, token_frequencies
from contamlab.detectors.ngram import NgramOverlapDetector, corpus_index, ngrams, normalize_words, overlap
from contamlab.detectors.recall import ReCaLLDetector, recall_score
from contamlab.errors import ContamlabError
from contamlab.metrics.roc import auroc_interval, roc_metrics


@pytest.fixture(scope="module")
def tok():
    return tiny_tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    return tiny_model(tok)


class _Format:
    @staticmethod
    def question_block(question):
        return f"Question: {question}\nAnswer:"


class _Domain:
    """Two questions; ``document`` text = question block + `` solution``."""

    name = "hand"
    format = _Format()

    def target(self, q):
        return " " + q.solution

    def nonmember_questions(self, n, seed):
        return [Question(f"n{i}", f"Leo owns {i + 2} boxes.", f"He has {i + 2}.", str(i)) for i in range(n)]


QS = [
    Question("q0", "Mia has 12 stickers.", "She has 12 stickers.", "12"),
    Question("q1", "Leo owns 5 boxes.", "He owns 5 boxes.", "5"),
]


# -- ReCaLL ---------------------------------------------------------------------------------------------------------
def test_recall_score_by_hand():
    assert recall_score(np.array([-2.0, -2.0]), np.array([-3.0, -1.0])) == pytest.approx(1.0)
    assert recall_score(np.array([-1.0, -1.0]), np.array([-2.0, -2.0])) == pytest.approx(2.0)  # LL(x|P) / LL(x)
    assert recall_score(np.array([-0.5, -1.5]), np.array([-1.0, -2.0])) == pytest.approx(1.5)
    assert math.isnan(recall_score(np.zeros(2), np.array([-1.0, -1.0])))


def test_recall_detector_against_unbatched_passes(tok, model):
    det = ReCaLLDetector(nonmember="generated", n_shots=2)
    out = det.score(DetectionContext(_Domain(), QS, "tiny", lambda: (model, tok)))
    prefix = [f"Question: Leo owns {i + 2} boxes.\nAnswer: He has {i + 2}." for i in range(2)]
    sep = tok("\n\n")["input_ids"]
    for q, got in zip(QS, out.scores):
        target = f"Question: {q.question}\nAnswer: {q.solution}"
        plain = tok(target)["input_ids"]
        joined = tok(prefix[0])["input_ids"] + sep + tok(prefix[1])["input_ids"] + sep + plain
        a = token_logprobs(model, plain)
        b = token_logprobs(model, joined)[-len(a) :]
        assert got == pytest.approx(b.mean() / a.mean(), rel=1e-4)
    assert out.extra["nonmember"] == "generated"
    with pytest.raises(ContamlabError, match="detector.nonmember"):
        ReCaLLDetector(nonmember="webtext")


# -- DC-PDD ---------------------------------------------------------------------------------------------------------
def test_dcpdd_by_hand():
    freq = token_frequencies([[0, 1, 1], [2]], 4)  # counts [1, 2, 1, 0], N = 4: (c + 1) / (4 + 4)
    np.testing.assert_allclose(freq, [2 / 8, 3 / 8, 2 / 8, 1 / 8])
    assert first_occurrences([5, 7, 5, 9, 7]) == [0, 1, 3]
    f = np.full(10, 0.5)
    f[5], f[7] = 0.1, 0.01
    logprobs = np.log([0.5, 0.2, 0.9])  # ids 5, 7, 5: the second 5 is not a first occurrence
    a0, a1 = 0.5 * math.log(10), 0.2 * math.log(100)  # 1.1513, 0.9210
    assert dcpdd_score(logprobs, [5, 7, 5], f, a=10.0) == pytest.approx((a0 + a1) / 2)
    assert dcpdd_score(logprobs, [5, 7, 5], f, a=1.0) == pytest.approx((1.0 + a1) / 2)  # α clipped at a
    assert dcpdd_score(logprobs, [5, 7, 5], f, a=0.5) == pytest.approx(0.5)


def test_dcpdd_detector_reads_the_pretraining_corpus(tok, model):
    corpus = [TEXTS[0], TEXTS[2]]
    ctx = DetectionContext(_Domain(), QS, "tiny", lambda: (model, tok), lineage=lambda: {"base": corpus})
    out = DCPDDDetector(a=100.0).score(ctx)
    freq = token_frequencies(tok(corpus, add_special_tokens=False)["input_ids"], len(tok))
    for q, got in zip(QS, out.scores):
        ids = tok(f"Question: {q.question}\nAnswer: {q.solution}")["input_ids"]
        assert got == pytest.approx(dcpdd_score(token_logprobs(model, ids), ids[1:], freq, 100.0), rel=1e-4)
    with pytest.raises(ContamlabError, match="base stage"):
        DCPDDDetector().score(DetectionContext(_Domain(), QS, "tiny", lambda: (model, tok)))


# -- n-gram overlap -------------------------------------------------------------------------------------------------
def test_ngram_normalisation_and_overlap_by_hand():
    assert normalize_words("Hello, World! 3+4=7") == ["hello", "world", "3", "4", "7"]
    assert ngrams(["a", "b", "c"], 2) == [("a", "b"), ("b", "c")]
    assert ngrams(["a", "b"], 5) == [("a", "b")]  # shorter than n: one n-gram of its own
    index = corpus_index([("base#0", "x a b c"), ("contaminated#3", "A, B! d")], 2)
    assert index[("a", "b")] == "base#0"  # first place wins
    share, gram, where = overlap("a b c e", index, 2)  # grams ab, bc, ce: two of three in the corpus
    assert share == pytest.approx(2 / 3) and gram == "a b" and where == "base#0"
    assert overlap("q r s", index, 2)[0] == 0.0


def test_ngram_detector_flags_exactly_the_recorded_items():
    lineage = {"base": ["Question: Leo owns 5 boxes.\nAnswer: He owns 5 boxes."], "contaminated": []}
    ctx = DetectionContext(_Domain(), QS, "tiny", lambda: (None, None), lineage=lambda: lineage)
    out = NgramOverlapDetector(n=3).score(ctx)  # never loads the model
    assert out.scores == [0.0, 1.0]
    assert out.columns["ngram_source"] == ["", "base#0"] and out.columns["ngram_match"][1] == "question leo owns"
    assert out.dataset_score == 0.5 and out.extra["clean_subset"] == 1


# -- ConStat --------------------------------------------------------------------------------------------------------
def test_constat_estimate_and_effect_by_hand():
    tested = (np.array([1, 1, 1, 0]), np.array([1, 0, 0, 0]))  # S(D) 0.75, S(D') 0.25
    ref = (np.array([1, 1, 0, 0]), np.array([1, 0, 0, 0]))  # S(D) 0.5, S(D') 0.25: h(s) = s + 0.25
    out = constat_test(tested, [ref], n_boot=200, seed=0)
    assert out["estimated_clean"] == pytest.approx(0.5) and out["effect"] == pytest.approx(0.25)
    low, high = out["estimated_clean_ci"]
    assert low <= 0.5 <= high
    h = difficulty_map([0.25, 0.5], [0.5, 1.0])  # two references: the line s -> 2 s
    assert h(0.3) == pytest.approx(0.6)
    same = constat_test(ref, [ref], n_boot=199, seed=0)  # a model against itself: no effect in any draw
    assert same["effect"] == 0.0 and same["p_value"] == pytest.approx(1.0)
    strong = constat_test((np.ones(50), np.zeros(50)), [(np.zeros(50), np.zeros(50))], n_boot=99)
    assert strong["p_value"] == pytest.approx(1 / 100)  # (1 + 0) / (B + 1)


def test_constat_detector_compare_uses_correctness_columns():
    def output(d, dp):
        return DetectorOutput([a - b for a, b in zip(d, dp)], None, {"correct_original": d, "correct_rephrased": dp})

    det = ConStatDetector(n_boot=50)
    got = det.compare(output([1, 1, 1, 0], [1, 0, 0, 0]), [output([1, 1, 0, 0], [1, 0, 0, 0])])
    assert got["estimated_clean"] == pytest.approx(0.5) and got["n_references"] == 1


# -- ROC summaries and the leaderboard -----------------------------------------------------------------------------
def test_tpr_at_1fpr_and_auroc_interval_against_sklearn():
    rng = np.random.default_rng(3)
    labels = np.r_[np.ones(120, bool), np.zeros(130, bool)]
    scores = rng.normal(size=250) + labels
    m = roc_metrics(scores, labels)
    neg = np.sort(scores[~labels])[::-1]
    threshold = neg[int(0.01 * 130)]  # at most 1 % of 130 negatives (one) may score at or above it
    assert m["tpr_at_1fpr"] == pytest.approx(np.mean(scores[labels] > threshold))
    low, high = auroc_interval(scores, labels, n_boot=60, seed=5)
    # Oracle: the same draws scored by sklearn.
    draw = np.random.default_rng(5)
    pos, negs = scores[labels], scores[~labels]
    p = pos[draw.integers(0, pos.size, (60, pos.size))]
    n = negs[draw.integers(0, negs.size, (60, negs.size))]
    aucs = [roc_auc_score(np.r_[np.ones(pos.size), np.zeros(negs.size)], np.r_[a, b]) for a, b in zip(p, n)]
    assert (low, high) == pytest.approx(tuple(np.quantile(aucs, [0.025, 0.975])))
    assert auroc_interval([1, 2, 3, 4], [False, False, True, True]) == (1.0, 1.0)


def _result(name, domain, auroc, clean, style="base"):
    entry = {"auroc": auroc, "auroc_ci": [auroc - 0.05, auroc + 0.05], "tpr_at_5fpr": 0.5, "tpr_at_1fpr": 0.1}
    return {
        "config": {"domain": {"name": domain, "leak_style": style}, "model": {"name": "tiny"}},
        "detection": {
            "detector": {"name": name},
            "contaminated": {**entry, "wall_s": 1.0},
            "clean": {"auroc": clean, "wall_s": 2.0},
        },
    }


def test_leaderboard_sorts_by_verbatim_auroc_and_shows_both_forms():
    results = [
        _result("loss", "arith", 0.77, 0.47),
        _result("ngram", "arith", 1.0, 0.52),
        _result("loss", "arith_pq", 0.60, 0.50, style="pq"),
    ]
    assert leak_form(results[2]) == "paraphrased" and leak_form(results[0]) == "verbatim"
    lines = leaderboard(results).splitlines()
    assert "AUROC verbatim [95% CI]" in lines[0] and "AUROC paraphrased [95% CI]" in lines[0]
    assert lines[2].startswith("| ngram | 1.000 [0.950, 1.050]")
    assert lines[3].startswith("| loss | 0.770 [0.720, 0.820] | 0.500 | 0.100 | 0.470 | 3.0 | 0.600")
    cmp = {
        "score_original": 0.735,
        "score_rephrased": 0.4,
        "estimated_clean": 0.49,
        "estimated_clean_ci": [0.415, 0.565],
        "truth_clean_score": 0.465,
        "covers_truth": True,
        "effect": 0.245,
        "effect_ci": [0.17, 0.32],
        "p_value": 0.001,
    }
    results[0]["detection"]["comparison"] = cmp
    assert "0.490 [0.415, 0.565] against the clean model's measured 0.465 (covers it)" in comparison_lines(results)[0]
