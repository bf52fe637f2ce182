"""Membership detectors against hand-computed values and unbatched passes: was a benchmark item in the training data?

ReCaLL and DC-PDD read it off the model's log-probs (with a non-member prefix, with a reference corpus's token
frequencies), the n-gram overlap off the training corpus itself. The tiny tokenizer and model are conftest's ``tok``
and ``model``.
"""

import math

import numpy as np
import pytest
from tinylm import TEXTS, token_logprobs

from contamlab.data.question import Question
from contamlab.detectors.base import DetectionContext
from contamlab.detectors.dcpdd import DCPDDDetector, dcpdd_score, first_occurrences, token_frequencies
from contamlab.detectors.ngram import NgramOverlapDetector, corpus_index, ngrams, normalize_words, overlap
from contamlab.detectors.recall import ReCaLLDetector, recall_score
from contamlab.errors import ContamlabError


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


class _SeededDomain(_Domain):
    """A prefix whose wording depends on the seed, so that two prefixes read differently."""

    def nonmember_questions(self, n, seed):
        return [Question(f"n{i}", f"Ava sold {seed + i + 3} pens.", f"She sold {seed + i + 3}.", "0") for i in range(n)]


def test_recall_averages_its_ratio_over_prefixes(tok, model):
    """``prefixes=2`` is the per-item mean of the ratios at seed and seed + 1, each from its own unbatched passes."""
    out = ReCaLLDetector(nonmember="generated", n_shots=1, seed=4, prefixes=2).score(
        DetectionContext(_SeededDomain(), QS, "tiny", lambda: (model, tok))
    )
    sep = tok("\n\n")["input_ids"]
    for q, got in zip(QS, out.scores):
        plain = tok(f"Question: {q.question}\nAnswer: {q.solution}")["input_ids"]
        a = token_logprobs(model, plain)
        ratios = []
        for seed in (4, 5):
            prefix = tok(f"Question: Ava sold {seed + 3} pens.\nAnswer: She sold {seed + 3}.")["input_ids"]
            b = token_logprobs(model, prefix + sep + plain)[-len(a) :]
            ratios.append(b.mean() / a.mean())
        assert ratios[0] != pytest.approx(ratios[1], rel=1e-6)  # the two prefixes do read apart
        assert got == pytest.approx(np.mean(ratios), rel=1e-4)
    assert out.extra["prefixes"] == 2
    with pytest.raises(ContamlabError, match="detector.prefixes=0"):
        ReCaLLDetector(prefixes=0)


def test_recall_prefixes_from_a_file_are_disjoint_slices(tmp_path, tok, model):
    path = tmp_path / "nonmembers.jsonl"
    path.write_text("".join(f'{{"text": "Text number {i}."}}\n' for i in range(5)))
    det = ReCaLLDetector(nonmember=str(path), n_shots=2, prefixes=2)
    ctx = DetectionContext(_Domain(), QS, "tiny", lambda: (model, tok))
    prefixes, source = det.prefix_texts(ctx)
    assert prefixes == [["Text number 0.", "Text number 1."], ["Text number 2.", "Text number 3."]]
    assert source == str(path)
    with pytest.raises(ContamlabError, match="5 texts, n_shots=2 x prefixes=3"):
        ReCaLLDetector(nonmember=str(path), n_shots=2, prefixes=3).prefix_texts(ctx)


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


def test_dcpdd_texts_clipped_at_every_token_tie_exactly_whatever_their_length():
    """Every α at a: the score is a itself, so such texts tie in an AUROC instead of ranking by rounding error."""
    freq = np.full(4000, 1e-6)  # a rare token: p · log(1/f) ≈ p · 13.8, far above a = 0.01 at p near 1
    scores = [dcpdd_score(np.full(k, -1e-3), list(range(k)), freq, a=0.01) for k in range(1, 400)]
    assert set(scores) == {0.01}
    # the plain mean does not tie: K copies of 0.01 average to 0.01 off by an ulp for some K
    assert len({float(np.full(k, 0.01).mean()) for k in range(1, 400)}) > 1


def test_dcpdd_detector_reads_the_pretraining_corpus(tok, model):
    corpus = [TEXTS[0], TEXTS[2]]
    ctx = DetectionContext(_Domain(), QS, "tiny", lambda: (model, tok), lineage=lambda: {"base": corpus})
    out = DCPDDDetector(a=100.0).score(ctx)
    freq = token_frequencies(tok(corpus, add_special_tokens=False)["input_ids"], len(tok))
    for q, got in zip(QS, out.scores):
        ids = tok(f"Question: {q.question}\nAnswer: {q.solution}")["input_ids"]
        assert got == pytest.approx(dcpdd_score(token_logprobs(model, ids), ids[1:], freq, 100.0), rel=1e-4)
    with pytest.raises(ContamlabError, match="base stage"):
        DCPDDDetector(corpus="pretraining").score(DetectionContext(_Domain(), QS, "tiny", lambda: (model, tok)))


def test_dcpdd_reads_general_text_for_a_model_without_a_recorded_corpus(tok, model, data_dir):
    from contamlab.data.general import load_openorca

    rows = load_openorca(10_000, seed=0, warn_short=False)
    corpus_ids = tok([e.prompt + e.response for e in rows], add_special_tokens=False)["input_ids"]
    freq = token_frequencies(corpus_ids, len(tok))
    out = DCPDDDetector(a=100.0).score(DetectionContext(_Domain(), QS, "smollm2", lambda: (model, tok)))  # auto
    assert out.extra["corpus"] == f"OpenOrca ({len(rows)} rows, general text)"
    for q, got in zip(QS, out.scores):
        ids = tok(f"Question: {q.question}\nAnswer: {q.solution}")["input_ids"]
        assert got == pytest.approx(dcpdd_score(token_logprobs(model, ids), ids[1:], freq, 100.0), rel=1e-4)


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
