"""The shared token pass computes Min-K%++'s vocabulary moments only when a detector of the job reads them, and a
cached pass with them serves every later request (the tiny conftest ``tok`` and ``model``)."""

import numpy as np
import pytest
from tinylm import token_logprobs

from contamlab.data.question import Question
from contamlab.detectors import membership
from contamlab.detectors.base import DetectionContext
from contamlab.detectors.loss import LossDetector
from contamlab.detectors.minkpp import MinKPPDetector

TEXTS = ["Mia has 12 stickers. She gives 5 away.", "Leo owns 5 boxes of 3 pens."]


class _Format:
    @staticmethod
    def question_block(question):
        return question


class _Domain:
    name = "hand"
    format = _Format()

    def target(self, q):
        return ""


QS = [Question(f"q{i}", text, "", "") for i, text in enumerate(TEXTS)]


@pytest.fixture
def passes(monkeypatch):
    """Every forward pass of the shared token statistics, as the ``moments`` flag it ran with."""
    seen: list[bool] = []
    score = membership.score_sequences

    def counted(*args, moments=False, **kwargs):
        seen.append(moments)
        return score(*args, moments=moments, **kwargs)

    monkeypatch.setattr(membership, "score_sequences", counted)
    return seen


def _ctx(tok, model, cache, moments):
    return DetectionContext(_Domain(), QS, "tiny", lambda: (model, tok), str(cache), {"m": "tiny"}, moments=moments)


def test_an_audit_without_minkpp_computes_no_moments(tok, model, tmp_path, passes):
    loss = LossDetector(text="question").score(_ctx(tok, model, tmp_path, moments=False))
    assert passes == [False]
    for text, score in zip(TEXTS, loss.scores):  # the log-probs alone are what loss reads
        assert score == pytest.approx(float(token_logprobs(model, tok(text)["input_ids"]).mean()), rel=1e-4)
    # Min-K%++ later on the same texts needs the moments: one more pass, with them
    MinKPPDetector(text="question").score(_ctx(tok, model, tmp_path, moments=False))
    assert passes == [False, True]
    # the pass with the moments now serves a request without them: no third pass, the same scores
    again = LossDetector(text="question").score(_ctx(tok, model, tmp_path, moments=False))
    assert passes == [False, True]
    np.testing.assert_allclose(again.scores, loss.scores, rtol=1e-6)


def test_a_grid_job_computes_the_moments_for_the_detectors_after_it(tok, model, tmp_path, passes):
    LossDetector(text="question").score(_ctx(tok, model, tmp_path, moments=True))  # evaluate.py's default
    MinKPPDetector(text="question").score(_ctx(tok, model, tmp_path, moments=True))
    assert passes == [True]  # one pass served both
