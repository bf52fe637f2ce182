"""Detectors on hand-made log-prob vectors and a tiny random model: formulas, alignment, batching, evaluation."""

import zlib

import numpy as np
import pytest
import torch
from sklearn.metrics import roc_auc_score
from tinylm import TEXTS, token_logprobs

from contamlab.analysis.detectors import detector_table
from contamlab.data.question import Question
from contamlab.detectors import benbench, codec, scoring
from contamlab.detectors.cdd import CDDDetector, cdd_flag
from contamlab.detectors.continuation import greedy_continuations, teacher_forced_ngrams
from contamlab.detectors.loss import loss_score
from contamlab.detectors.mink import mink_score
from contamlab.detectors.minkpp import minkpp_score
from contamlab.detectors.paraphrase import OpenAIParaphraser, preserves_numbers
from contamlab.detectors.zlib import zlib_entropy, zlib_score
from contamlab.errors import ContamlabError
from contamlab.metrics.roc import roc_metrics


class BosTokenizer:
    """A word-level tokenizer that adds BOS (id 1), like Llama's, to check the CoDeC alignment."""

    def __init__(self):
        self.vocab = {}

    def _ids(self, text):
        return [self.vocab.setdefault(w, len(self.vocab) + 10) for w in text.replace("\n", " \n ").split(" ") if w]

    def __call__(self, text, add_special_tokens=True):
        if isinstance(text, list):
            return {"input_ids": [self(t, add_special_tokens)["input_ids"] for t in text]}
        return {"input_ids": ([1] if add_special_tokens else []) + self._ids(text)}


# -- CoDeC ----------------------------------------------------------------------------------------------------------
def test_codec_per_sample_rule_and_window():
    a = np.array([-9.0] * 10 + [-1.0, -1.0, -1.0, -50.0])  # first 10 and the last one are skipped
    b = np.array([0.0] * 10 + [-2.0, -2.0, -2.0, 0.0])
    assert codec.codec_delta(a, b) == pytest.approx(1.0)  # mean(a) - mean(b) = -1 - (-2)
    assert codec.codec_label(codec.codec_delta(a, b)) == 1  # confidence dropped in context: seen
    assert codec.codec_label(codec.codec_delta(b, a)) == 0
    assert codec.codec_label(0.0) == 0  # a tie gives 0
    assert codec.codec_delta(np.zeros(11), np.zeros(11)) is None  # L_a - 1 <= 10: dropped
    assert codec.codec_delta(np.zeros(12), np.zeros(12)) == 0.0
    with pytest.raises(ValueError):
        codec.codec_delta(np.zeros(12), np.zeros(13))


def test_codec_contexts_never_the_target_and_seeded():
    draws = codec.draw_contexts(5, 2, seed=3)
    assert all(i not in d and len(set(d)) == 2 for i, d in enumerate(draws))
    assert draws == codec.draw_contexts(5, 2, seed=3)
    assert codec.truncate_sample("ab cd ef", max_chars=6) == "ab cd"  # cut, then the cut-off word dropped


@pytest.mark.parametrize("bos", [False, True])
def test_codec_token_join_scores_the_same_target_ids(tok, bos):
    tokenizer = BosTokenizer() if bos else tok
    target, contexts = TEXTS[0], [TEXTS[2], TEXTS[3]]
    plain = tokenizer(target, add_special_tokens=True)["input_ids"]
    ids, n_target = codec.context_ids(tokenizer, target, contexts)
    assert n_target == len(plain) - 1
    # the last n_target positions of the joined input predict exactly the target's ids after its first one
    assert ids[-n_target:] == plain[1:]
    assert ids[0] == (1 if bos else tokenizer(contexts[0], add_special_tokens=False)["input_ids"][0])


@pytest.mark.parametrize("join", ["tokens", "string"])
def test_codec_delta_and_dataset_score_by_hand(tok, model, join):
    """Δ_i and the dataset fraction through the detector's batched path, against unbatched passes by hand.

    With two samples, each one's context is the other, so the context draw is known without the detector's RNG.
    """
    from contamlab.detectors.base import DetectionContext

    class Dom:
        split = type("S", (), {"is_leaked": staticmethod(lambda i: i == "q0")})()

    texts = [TEXTS[0] + " Then she gives 3 away.", TEXTS[2] + " He eats 2 of them."]
    qs = [Question(f"q{i}", t, "", "0") for i, t in enumerate(texts)]
    out = codec.CoDeCDetector(seeds=[0, 1], join=join, skip_first=3).score(
        DetectionContext(Dom(), qs, "tiny", lambda: (model, tok))
    )
    expected = []
    for i, target in enumerate(texts):
        plain = tok(target)["input_ids"]
        a = token_logprobs(model, plain)  # [L_a]
        if join == "string":  # the reference notebook: join strings, keep the last L_a log-probs
            b = token_logprobs(model, tok(texts[1 - i] + "\n\n" + target)["input_ids"])[-len(a) :]
        else:  # context ids + separator ids + the target's own ids
            ids = tok(texts[1 - i])["input_ids"] + tok("\n\n")["input_ids"] + plain
            b = token_logprobs(model, ids)[-len(a) :]
        expected.append(a[3:-1].mean() - b[3:-1].mean())  # window [10:-1] with skip_first=3
    np.testing.assert_allclose(out.scores, expected, atol=2e-5)  # float32 batched vs float64 unbatched
    assert out.dataset_score == pytest.approx(np.mean([d > 0 for d in expected]))
    assert out.columns["codec_label"] == [float(d > 0) for d in expected]
    assert out.extra["kept"] == 2 and out.extra["dropped_too_short"] == 0


# -- batched scoring ------------------------------------------------------------------------------------------------
def _direct_logprobs(model, ids):
    """The reference: one sequence, the whole vocabulary, moments in float64."""
    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()  # [T, V]
    logp = torch.log_softmax(logits, -1)
    lp = logp[:-1].gather(-1, torch.tensor(ids[1:])[:, None])[:, 0]
    p = logp.exp()
    mu = (p * logp).sum(-1)[:-1]
    sigma = ((p * logp * logp).sum(-1)[:-1] - mu**2).clamp_min(0).sqrt()
    return lp.numpy(), mu.numpy(), sigma.numpy()


def test_batched_chunked_scoring_matches_direct(tok, model):
    seqs = [tok(t)["input_ids"] for t in TEXTS[:4]] + [[5]]
    stats = scoring.score_sequences(model, seqs, tok.pad_token_id, moments=True, batch_tokens=64, logit_elements=700)
    assert [len(s.logprobs) for s in stats] == [len(s) - 1 for s in seqs]  # never scores padding
    for seq, st in zip(seqs[:4], stats):
        lp, mu, sigma = _direct_logprobs(model, seq)
        np.testing.assert_allclose(st.logprobs, lp, atol=1e-4)
        np.testing.assert_allclose(st.mu, mu, atol=1e-4)
        np.testing.assert_allclose(st.sigma, sigma, atol=1e-4)


def test_score_from_returns_the_tail_against_direct(tok, model):
    # Only the last tokens of each sequence are projected; their log-probs equal the one-sequence reference.
    seqs = [tok(t)["input_ids"] for t in TEXTS[:4]] + [[5, 6]]
    firsts = [3, 1, len(seqs[2]) - 1, len(seqs[3]), 5]  # middle, all, last token only, none, past the end
    stats = scoring.score_sequences(
        model, seqs, tok.pad_token_id, batch_tokens=64, logit_elements=700, score_from=firsts
    )
    assert [len(s.logprobs) for s in stats] == [len(seqs[0]) - 3, len(seqs[1]) - 1, 1, 0, 0]
    for seq, first, st in zip(seqs[:3], firsts, stats):
        lp, _, _ = _direct_logprobs(model, seq)
        np.testing.assert_allclose(st.logprobs, lp[first - 1 :], atol=1e-4)


def test_shared_prefix_pass_equals_the_full_pass(tok, model):
    # ReCaLL's shape: one prefix before every item; its KV is computed once and the items go on from it.
    prefix = tok(TEXTS[4])["input_ids"]
    items = [tok(t, add_special_tokens=False)["input_ids"] for t in TEXTS[:4]]
    seqs = [prefix + item for item in items]
    firsts = [len(prefix)] * len(seqs)  # score the items only
    full = scoring.score_sequences(model, seqs, tok.pad_token_id, batch_tokens=64, score_from=firsts)
    shared = scoring.score_sequences(
        model, seqs, tok.pad_token_id, batch_tokens=64, score_from=firsts, share_prefix=True
    )
    for seq, a, b in zip(seqs, full, shared):
        assert len(a.logprobs) == len(b.logprobs) == len(seq) - len(prefix)
        np.testing.assert_allclose(b.logprobs, a.logprobs, atol=1e-4)
        lp, _, _ = _direct_logprobs(model, seq)  # and the one-sequence reference
        np.testing.assert_allclose(b.logprobs, lp[len(prefix) - 1 :], atol=1e-4)


def test_fallback_path_matches_chunked_head(tok, model, monkeypatch):
    seqs = [tok(t)["input_ids"] for t in TEXTS[:4]]
    chunked = scoring.score_sequences(model, seqs, tok.pad_token_id)
    monkeypatch.setattr(scoring, "_plain", lambda m: None)
    full = scoring.score_sequences(model, seqs, tok.pad_token_id)
    for a, b in zip(chunked, full):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)


# -- membership baselines -------------------------------------------------------------------------------------------
def test_mink_and_minkpp_against_direct_formulas():
    lp = np.array([-1.0, -5.0, -2.0, -0.5, -3.0, -0.1, -0.2, -0.3, -0.4, -0.6])
    assert loss_score(lp) == pytest.approx(lp.mean())
    assert mink_score(lp, 0.2) == pytest.approx((-5.0 - 3.0) / 2)  # floor(0.2 * 10) = 2 lowest
    assert mink_score(lp, 0.05) == pytest.approx(-5.0)  # at least one token
    assert mink_score(lp, 1.0) == pytest.approx(lp.mean())
    mu = np.full(10, -1.0)
    sigma = np.array([1.0, 2.0, 1.0, 1.0, 4.0, 1.0, 1.0, 1.0, 1.0, 0.0])
    z = (lp - mu) / np.maximum(sigma, 1e-6)  # [-0, -2, -1, 0.5, -0.5, 0.9, 0.8, 0.7, 0.6, 4e5]
    assert minkpp_score(lp, mu, sigma, 0.2) == pytest.approx(np.sort(z)[:2].mean())
    assert minkpp_score(lp, mu, sigma, 0.2) == pytest.approx((-2.0 - 1.0) / 2)


def test_zlib_counts_bytes():
    text = "ééé naïve café " * 3
    assert zlib_entropy(text) == len(zlib.compress(text.encode("utf-8")))
    lp = np.array([-2.0, -4.0])
    assert zlib_score(lp, text) == pytest.approx(-3.0 / len(zlib.compress(text.encode("utf-8"))))


# -- BenBench -------------------------------------------------------------------------------------------------------
def test_ngram_starting_points():
    assert benbench.ngram_starts(20, 5) == [2, 5, 8, 11, 15]  # linspace(2, 15, 5) truncated; last n-gram ends at L
    assert benbench.ngram_starts(20, 5, max_positions=12) == [2, 3, 4, 5, 7]
    assert benbench.ngram_starts(6, 5) is None  # L - n - 1 <= 0: skipped
    assert benbench.ngram_starts(7, 5) == [2, 2, 2, 2, 2]  # short samples repeat a start


def test_teacher_forced_ngrams_equal_greedy_generation(tok, model):
    """BenBench's n-gram continuations read off a teacher-forced pass equal those HF ``generate`` produces greedily:
    on exact matches (no generation), on mismatches (generated from the first wrong token on) and on prompts that
    re-tokenising changed (generated whole)."""
    pad, eos = tok.pad_token_id, tok.eos_token_id
    head = list(tok("", add_special_tokens=True)["input_ids"])
    texts = {}
    for i, text in enumerate(TEXTS[:4]):
        seed = list(tok(text[:24], add_special_tokens=False)["input_ids"])
        # the model's own greedy continuation: every n-gram inside it matches
        texts[i] = seed + greedy_continuations(model, [head + seed], 30, pad, None)[0]
        texts[4 + i] = list(tok(text, add_special_tokens=False)["input_ids"])  # training text: mostly mismatches
    jobs = [(i, s, n) for n in (3, 6) for i in sorted(texts) for s in benbench.ngram_starts(len(texts[i]), n, 5)]
    prompts = [list(tok(tok.decode(texts[i][:s]), add_special_tokens=True)["input_ids"]) for i, s, _ in jobs]
    prompts[0] = prompts[0] + [prompts[0][-1]]  # a prompt that is not its text's prefix: generated whole
    fast = teacher_forced_ngrams(model, head, texts, jobs, prompts, pad, eos, batch_size=7, batch_tokens=96)
    for n in (3, 6):
        rows = [r for r, job in enumerate(jobs) if job[2] == n]
        slow = greedy_continuations(model, [prompts[r] for r in rows], n, pad, eos, batch_size=7)
        assert [fast[r] for r in rows] == slow
        exact = [gen == texts[jobs[r][0]][jobs[r][1] : jobs[r][1] + n] for r, gen in zip(rows, slow)]
        assert 0 < sum(exact) < len(exact)  # matches and mismatches both occur
    aligned = [p == head + texts[i][:s] for (i, s, _), p in zip(jobs, prompts)]
    assert not aligned[0] and sum(aligned) >= len(jobs) // 2, sum(aligned)  # most are read off the pass


def test_exact_match_and_lenient_scores():
    assert benbench.exact_match([1, 2, 3], [1, 2, 3]) and not benbench.exact_match([1, 2], [1, 2, 3])
    assert benbench.edit_similarity("abcd", "abcx") == pytest.approx(0.75)
    assert benbench.edit_similarity("", "") == 1.0
    assert benbench.rouge_l("the cats sat", "the cat sat") == pytest.approx(1.0)  # stemmer on
    assert benbench.find_sublist([5, 1, 2, 1, 2], [1, 2]) == 1 and benbench.find_sublist([1], [2]) == -1
    assert benbench.answer_ppl(np.log(np.array([0.1, 0.5, 0.5])), 2) == pytest.approx(2.0)
    # δ normalises the decrement by the ORIGINAL score (BenBench §3.3): (0.6 - 0.4) / 0.6, not / 0.4
    assert benbench.relative_delta("ngram_5", 0.6, 0.4) == pytest.approx(100 / 3)
    assert benbench.relative_delta("ppl", 2.0, 3.0) == pytest.approx(50.0)  # (3 - 2) / 2
    assert benbench.relative_delta("ngram_5", 0.6, 0.0) == pytest.approx(100.0)
    assert benbench.relative_delta("ngram_5", 0.0, 0.1) is None  # M_ori = 0: undefined


def test_lenient_rule_is_the_authors_strict_greater_and_inclusive_is_an_option():
    # Hand-computed similarities of exactly 0.75: one edit in four characters; an LCS of 3 of 4 words (P = R = 3/4).
    edit = benbench.edit_similarity("abcd", "abce")
    rouge = benbench.rouge_l("cat dog bird fish", "cat dog bird cow")
    assert edit == pytest.approx(0.75) and rouge == pytest.approx(0.75)
    # GAIR-NLP/benbench metric_utils.py: int(similarity > 0.75), so exactly 0.75 is no hit.
    assert not benbench.lenient_hit(edit, 0.75, inclusive=False)
    assert not benbench.lenient_hit(rouge, 0.75, inclusive=False)
    assert benbench.lenient_hit(benbench.edit_similarity("abcde", "abcdx"), 0.75, inclusive=False)  # 0.8
    # The option: >= with the README's 0.9.
    assert benbench.lenient_hit(edit, 0.75, inclusive=True)
    assert not benbench.lenient_hit(benbench.edit_similarity("abcde", "abcdx"), 0.9, inclusive=True)  # 0.8
    assert benbench.lenient_hit(benbench.edit_similarity("abcdefghij", "abcdefghix"), 0.9, inclusive=True)  # 0.9
    detector = benbench.BenBenchDetector()
    assert (detector.edit_threshold, detector.rouge_threshold, detector.inclusive) == (0.75, 0.75, False)


def test_benbench_lenient_columns_follow_the_rule(tok, model, monkeypatch):
    # Every decoded n-gram scores exactly 0.75: no lenient hit under the authors' rule, all hits when inclusive.
    from contamlab.detectors.base import DetectionContext

    monkeypatch.setattr(benbench, "edit_similarity", lambda pred, ref: 0.75)
    monkeypatch.setattr(benbench, "rouge_l", lambda ref, pred: 0.75)
    qs = [Question(f"q{i}", t, t, "0") for i, t in enumerate(TEXTS[:3])]
    ctx = DetectionContext(None, qs, "x", lambda: (model, tok))
    for inclusive, expected in ((False, 0.0), (True, 1.0)):
        out = benbench.BenBenchDetector(ngram=[3], score_by="ngram_3", inclusive=inclusive).metrics(ctx, qs, "t")
        for column in ("ngram_3_edit", "ngram_3_rouge"):
            assert np.all(out[column] == expected), (inclusive, column, out[column])


class _HandDomain:
    """Four test questions (q0, q1 leaked), two train questions, three references per item."""

    name = "hand"
    has_train = True

    def __init__(self):
        self.split = type("S", (), {"is_leaked": staticmethod(lambda i: i in ("q0", "q1"))})()
        self.train = [Question(f"t{i}", f"train {i}", "s", "0") for i in range(2)]

    def reference_versions(self, questions):
        return [[Question(q.id, q.question + f" v{v}", "s", "0") for q in questions] for v in range(3)]


# Atomic metrics by hand, per (split, version): ngram_5, answer PPL and the all-five-correct flag.
_HAND = {
    "test": {"ngram_5": [0.8, 1.0, 0.2, 0.4], "ppl": [2.0, 1.5, 4.0, 3.0], "all_5": [0, 1, 0, 0]},
    "test-ref0": {"ngram_5": [0.4, 0.2, 0.2, 0.2], "ppl": [3, 3, 5, 5], "all_5": [0, 0, 0, 0]},
    "test-ref1": {"ngram_5": [0.4, 0.4, 0.0, 0.4], "ppl": [3, 3, 5, 5], "all_5": [0, 0, 0, 0]},
    "test-ref2": {"ngram_5": [0.1, 0.3, 0.1, 0.3], "ppl": [3, 3, 5, 5], "all_5": [0, 0, 0, 0]},
    **{
        k: {"ngram_5": [0.5, 0.5], "ppl": [2.0, 2.0], "all_5": [0, 0]}
        for k in ("train", *(f"train-ref{v}" for v in range(3)))
    },
}


def test_benbench_delta_and_flags_by_hand():
    class Hand(benbench.BenBenchDetector):
        def metrics(self, ctx, questions, desc):
            return {k: np.array(v, dtype=float) for k, v in _HAND[desc.removeprefix("benbench ")].items()}

    from contamlab.detectors.base import DetectionContext

    qs = [Question(f"q{i}", f"question {i}", "s", "0") for i in range(4)]
    detector = Hand(ngram=[5])
    out = detector.score(DetectionContext(_HandDomain(), qs, "x", lambda: (None, None)))
    assert "test_leaked" not in out.extra["summary"]  # the cached output reads no split
    split = detector.split_summary(out, np.array([True, True, False, False]))
    summary, deltas = split["summary"], split["deltas"]
    # ngram_5, test: M_ori = 0.6, M_ref = mean(0.25, 0.30, 0.20) = 0.25 -> (0.6 - 0.25) / 0.6 = 58.33 %
    assert summary["test"]["ngram_5"]["ori"] == pytest.approx(0.6)
    assert summary["test"]["ngram_5"]["ref"] == pytest.approx(0.25)
    assert summary["test"]["ngram_5"]["delta"] == pytest.approx(35 / 0.6)
    # leaked: 0.9 vs 0.3 -> 66.67 %; unleaked: 0.3 vs 0.2 -> 33.33 %; δ_seen-unseen = 33.33
    assert summary["test_leaked"]["ngram_5"]["delta"] == pytest.approx(200 / 3)
    assert summary["test_unleaked"]["ngram_5"]["delta"] == pytest.approx(100 / 3)
    assert deltas["ngram_5"]["delta_seen_unseen"] == pytest.approx(100 / 3)
    # train: 0.5 vs 0.5 -> 0 %; δ_train-test = 0 - 58.33
    assert deltas["ngram_5"]["delta_train_test"] == pytest.approx(-35 / 0.6)
    # PPL: 2.625 vs 4.0 -> (4 - 2.625) / 2.625 = 52.38 %; train 0 -> δ_train-test = -52.38
    assert summary["test"]["ppl"]["delta"] == pytest.approx(1.375 / 2.625 * 100)
    assert deltas["ppl"]["delta_train_test"] == pytest.approx(-1.375 / 2.625 * 100)
    # Instance flags (all five 5-grams right): q1 only, which leaked.
    assert split["instance_flags"]["all_5"] == {"test": 1, "leaked": 1, "unleaked": 0}
    assert out.scores == [0.8, 1.0, 0.2, 0.4] and out.dataset_score == pytest.approx(35 / 0.6)
    refs = out.extra["references"]
    assert refs["test"]["n"] == 3 and refs["train"]["n"] == 3 and "question and solution" in refs["test"]["kind"]


def test_arith_references_are_three_full_rewrites():
    from contamlab.config import load_domain
    from contamlab.detectors.paraphrase import numbers, reference_versions

    domain = load_domain("arith", generator={"n_train": 30, "n_test": 6})
    for split, questions in (("test", domain.test), ("train", domain.train[:6])):
        versions, about = reference_versions(domain, split, questions, None)
        assert about["n"] == 3 == len(versions) and about["kind"].startswith("full rewrite")
        distinct = []
        for i, q in enumerate(questions):
            texts = [(v[i].question, v[i].solution) for v in versions]
            distinct.append(len(set(texts)))  # independent draws: a short problem's few templates may repeat
            for question, solution in texts:
                assert question != q.question and solution != q.solution  # the solution is rewritten too
                assert numbers(q.question) <= numbers(question)  # same numbers, same answer
                assert solution.split("####")[-1].strip() == q.answer
        assert min(distinct) >= 2 and sum(d == 3 for d in distinct) >= len(distinct) // 2, distinct
    # The references avoid the texts the pq model trained on while the templates last: always with world v1's five
    # rewordings per leaked question; world v2's ten exhaust a short problem's templates (docs/methods/detectors.md)
    pq = load_domain("arith_pq_v1", generator={"n_train": 30, "n_test": 6})
    leak = {x.question for x in pq.leaked_training_questions()}
    refs = {x.question for version in reference_versions(pq, "test", pq.test, None)[0] for x in version}
    assert len(refs) > 6 and not leak & refs


def test_greedy_continuations_batched_equal_single(tok, model):
    prompts = [tok(t)["input_ids"][:k] for t, k in zip(TEXTS[:4], (3, 7, 5, 9))]
    batched = greedy_continuations(model, prompts, 5, tok.pad_token_id, tok.eos_token_id, batch_size=4)
    single = [greedy_continuations(model, [p], 5, tok.pad_token_id, tok.eos_token_id)[0] for p in prompts]
    assert batched == single
    for p, gen in zip(prompts, single):  # greedy: each token is the argmax after the prompt + earlier tokens
        ids = list(p)
        for t in gen:
            with torch.no_grad():
                assert int(model(torch.tensor([ids])).logits[0, -1].argmax()) == t
            ids.append(t)


# -- CDD ------------------------------------------------------------------------------------------------------------
def test_cdd_peakedness_and_flag():
    from contamlab.decoding.samples import QuestionSamples
    from contamlab.detectors.base import DetectionContext

    class Fmt:
        @staticmethod
        def truncate(text):
            return text.split("\nQuestion:")[0]

    class Dom:
        format = Fmt()

    class WordTok:
        def __call__(self, text, add_special_tokens=False):
            return {"input_ids": [hash(w) % 1000 for w in text.split()]}

    greedy = " ".join(str(i) for i in range(20))
    near = " ".join(str(i) for i in range(19)) + " x"  # 1 edit of 20 tokens: 1 <= 0.05 * 20
    far = "a b c d"
    rows = [
        QuestionSamples("q0", [], greedy + "\nQuestion: next", True, [[]] * 4, [greedy, near, far, far], [True] * 4),
        QuestionSamples("q1", [], far, True, [[]] * 2, [greedy, greedy], [True] * 2),
    ]
    qs = [Question("q0", "", "", "0"), Question("q1", "", "", "0")]
    ctx = DetectionContext(Dom(), qs, "x", lambda: (None, WordTok()), samples=lambda: ([], rows, {}))
    out = CDDDetector(alpha=0.05, xi=0.01).score(ctx)
    assert out.scores == [0.5, 0.0]  # q0: greedy + near within 1 edit; q1: none within 0.05 * 20
    assert out.columns["cdd_flag"] == [1, 0] and out.dataset_score == 0.5
    assert cdd_flag(0.01, 0.01) is False and cdd_flag(0.02, 0.01) is True


# -- evaluation and report ------------------------------------------------------------------------------------------
def test_roc_metrics_against_sklearn():
    rng = np.random.default_rng(0)
    labels = rng.random(200) < 0.5
    scores = rng.normal(size=200) + labels * 1.0
    out = roc_metrics(scores, labels)
    assert out["auroc"] == pytest.approx(roc_auc_score(labels, scores))
    # hand-made: positives 0.9, 0.8, 0.3; negatives 0.7, 0.2, 0.1
    hand = roc_metrics([0.9, 0.8, 0.3, 0.7, 0.2, 0.1, float("nan")], [1, 1, 1, 0, 0, 0, 1])
    assert hand["auroc"] == pytest.approx(8 / 9)
    assert hand["tpr_at_5fpr"] == pytest.approx(2 / 3)  # before the first negative
    assert hand["fpr_at_95tpr"] == pytest.approx(1 / 3)  # all positives caught once 0.7 is passed
    assert hand["n_unscored"] == 1 and hand["n_scored"] == 6
    assert roc_metrics([0.1, 0.2], [1, 1])["auroc"] is None


def test_detector_table():
    result = {
        "config": {"model": {"name": "tiny"}, "domain": {"name": "arith"}},
        "detection": {
            "detector": {"name": "loss"},
            "contaminated": {
                "auroc": 0.9,
                "tpr_at_5fpr": 0.5,
                "tpr_at_1fpr": 0.2,
                "fpr_at_95tpr": 0.3,
                "dataset_score": -0.3,
            },
            "clean": {"auroc": 0.5, "dataset_score": -0.4},
        },
    }
    table = detector_table([result, {"metrics": {}}])
    assert table.splitlines()[0].startswith("| detector | model | domain | AUROC contaminated | AUROC clean |")
    assert "| loss | tiny | arith | 0.900 | 0.500 | 0.500 | 0.200 | 0.300 | -0.300 | -0.400 |" in table
    assert detector_table([]) == ""
    # a grid's jobs all carry the same cached detection: listed once; another domain's is a row of its own
    other = {**result, "config": {"model": {"name": "tiny"}, "domain": {"name": "arith_pq"}}}
    rows = detector_table([result, dict(result), other]).splitlines()[2:]
    assert [row.split(" | ")[2] for row in rows] == ["arith", "arith_pq"]


# -- paraphraser ----------------------------------------------------------------------------------------------------
def test_paraphraser_checks_numbers_retries_and_caches(tmp_path, monkeypatch):
    q = Question("g1", "Tom has 12 apples and buys 3 more.", "12+3=<<12+3=15>>15\n#### 15", "15")
    replies = iter(
        [
            "Question: Tom owns 12 apples and gets 4 more.\nAnswer: 12+4=16\n#### 16",  # numbers changed: rejected
            "Question: Tom owns 12 apples and purchases 3 more.\nAnswer: He has 12+3=<<12+3=15>>15.\n#### 15",
        ]
    )
    calls = []

    def post(url, payload, headers):
        calls.append((url, headers))
        return {"choices": [{"message": {"content": next(replies)}}]}

    monkeypatch.setenv("MY_KEY", "secret")
    para = OpenAIParaphraser("http://x/v1", "m", api_key_env="MY_KEY", cache_dir=str(tmp_path), post=post)
    out = para.paraphrase(q, 0)
    assert out.question == "Tom owns 12 apples and purchases 3 more." and preserves_numbers(q, out)
    assert len(calls) == 2 and calls[0][0] == "http://x/v1/chat/completions"
    assert calls[0][1]["Authorization"] == "Bearer secret"
    assert "secret" not in str(para.identity())
    again = OpenAIParaphraser("http://x/v1", "m", cache_dir=str(tmp_path), post=lambda *a: 1 / 0)
    assert again.paraphrase(q, 0) == out  # served from the cache
    # a job's cache directory fills in only where the config left none
    unset = OpenAIParaphraser("http://x/v1", "m", post=lambda *a: 1 / 0)
    unset.default_cache(str(tmp_path))
    assert unset.paraphrase(q, 0) == out
    again.default_cache(str(tmp_path / "elsewhere"))
    assert again.cache_dir == str(tmp_path)


def test_batch_tokens_default_follows_the_device_and_bad_values_are_named(tok, model):
    assert scoring.default_batch_tokens(torch.device("cpu")) == 1024
    assert scoring.default_batch_tokens(torch.device("cuda")) == 8192
    seqs = [tok(t)["input_ids"] for t in TEXTS[:3]]
    auto = scoring.score_sequences(model, seqs, tok.pad_token_id)
    explicit = scoring.score_sequences(model, seqs, tok.pad_token_id, batch_tokens=8192)
    for a, b in zip(auto, explicit):
        np.testing.assert_allclose(a.logprobs, b.logprobs, atol=1e-5)
    with pytest.raises(ContamlabError, match="detector.batch_tokens=0"):
        scoring.score_sequences(model, seqs, tok.pad_token_id, batch_tokens=0)
