"""World v2: chain-of-thought renderings, web-like pretraining forms, world diagnostics, a portable model key."""

import re
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from contamlab.analysis.world import runner_up_tokens, sample_variety, survival_by_kind, token_kind
from contamlab.config import auto_threads, build_domain, busy_cores, compose, model_store
from contamlab.data.answers import is_correct
from contamlab.data.arith import ArithConfig, generate, render, render_cot, slip, web_documents
from contamlab.decoding.samples import QuestionSamples
from contamlab.models.tiny import build_tiny_model, train_tokenizer
from contamlab.training import corpus

CALCULATION = re.compile(r"(\d+) ([-+*/]) (\d+) = (\d+)")


@pytest.fixture(scope="module")
def problems():
    return generate(ArithConfig(n_train=300, n_test=60, seed=3))


def test_cot_rendering_keeps_question_steps_and_answer(problems):
    for problem in problems[0][:200]:
        for variant in (0, 1, 5):
            question, solution = render_cot(problem, variant)
            assert question == render(problem, "base")[0]  # only the solution changes
            assert solution == render_cot(problem, variant)[1]  # deterministic
            assert solution.endswith(f"#### {problem.answer}") and is_correct(solution, str(problem.answer))
            assert "<<" not in solution  # the calculations are plain text, as a model's chain-of-thought writes them
            found = [(int(a), op, int(b), int(r)) for a, op, b, r in CALCULATION.findall(solution)]
            expected = [(s.a, s.op, s.b, s.result) for s in problem.steps]
            # one calculation per step, each the step or (for + and *) its commuted form, steps in a valid order
            assert len(found) == len(expected)
            for a, op, b, r in found:
                assert (a, op, b, r) in expected or (b, op, a, r) in expected and op in "+*"


def test_cot_renderings_vary_in_slack(problems):
    texts = {render_cot(p, v)[1] for p in problems[0][:20] for v in range(1, 9)}
    assert len(texts) > 0.9 * 20 * 8  # eight renderings of a problem are (almost always) eight texts
    joined = "\n".join(texts)
    for slack in ("First, ", "Then ", "So the answer is", "step by step"):
        assert slack in joined
    swapped = [p for p in problems[0] if p.family == "shop" and p.k >= 3]
    first_lines = {render_cot(swapped[0], v)[1] for v in range(1, 30)}
    assert len(first_lines) > 5


def test_web_documents_hold_every_item_once_in_several_forms():
    items = [(f"Question text {i}?", f"Solution {i}.\n#### {i}") for i in range(60)]
    docs = web_documents(items, seed=0)
    for q, s in items:
        assert sum(q in d for d in docs) + sum(d == s for d in docs) >= 1
    assert any(d.count("?") >= 3 and "Answer:" not in d and "####" not in d for d in docs)  # a worksheet
    assert any(d.startswith("Solution") for d in docs)  # a solution alone
    assert any(d.count("Question: ") >= 2 for d in docs)  # a page of several items
    assert web_documents(items, seed=0) == docs


def test_a_slip_replaces_one_word_and_keeps_numbers_and_answer():
    import random

    solution = "Let's solve this step by step.\nTaking away 2 leaves 8 - 2 = 6 beads.\nSo the answer is 6.\n#### 6"
    rng = random.Random(0)
    for _ in range(50):
        out = slip(solution, rng, ["apples", "Then"])
        before, after = solution.split(), out.split()
        assert len(before) == len(after) and out.endswith("\n#### 6")
        changed = [(a, b) for a, b in zip(before, after) if a != b]
        assert len(changed) <= 1  # the pool word may equal the word it replaces
        for a, b in changed:
            assert re.sub("[A-Za-z']+", "", a) == re.sub("[A-Za-z']+", "", b)  # only letters change
            assert re.sub(r"\W", "", b) in ("apples", "Then") and not re.search(r"\d", a)
    assert slip("#### 6", rng, ["x"]) == "#### 6"


def test_web_documents_slip_the_given_share_of_solutions():
    items = [
        (f"Question {i}?", f"We add the two numbers here.\nSo {i} + 1 = {i + 1}.\n#### {i + 1}") for i in range(400)
    ]
    shown = re.compile(r"([A-Za-z' ]+)\.\n([A-Za-z]+) (\d+) \+ 1 = (\d+)\.\n#### (\d+)")
    for share in (0.0, 0.5):
        found = [m.groups() for d in web_documents(items, seed=0, slips=share) for m in shown.finditer(d)]
        assert len(found) > 200  # the solutions a worksheet leaves out are not shown
        assert all(int(i) + 1 == int(r) == int(a) for _, _, i, r, a in found)  # numbers and answers unchanged
        changed = sum((first.strip(), so) != ("We add the two numbers here", "So") for first, so, *_ in found)
        # half of them slipped, less the draws of a word for itself (1 in 7 here)
        assert changed == 0 if share == 0 else 0.33 * len(found) < changed < 0.53 * len(found)


def test_v2_domain_never_pretrains_on_a_test_item():
    domain = build_domain(
        compose("train", ["domain=arith", "domain.generator.n_train=300", "domain.generator.n_test=40"]).domain
    )
    docs = "\n".join(corpus.base_documents(domain, 100, 0))
    assert not any(q.question in docs for q in domain.test)
    assert all(q.solution == render_cot(p, 0)[1] for q, p in zip(domain.test, domain.problems[1]))
    assert "\n\n" in docs and "Question: " in docs
    v1 = build_domain(
        compose("train", ["domain=arith_v1", "domain.generator.n_train=300", "domain.generator.n_test=40"]).domain
    )
    assert "solutions" not in v1.fingerprint() and domain.fingerprint()["solutions"] == "cot"


def test_v1_paraphrased_pretraining_keeps_the_original_solution():
    """World v1's paraphrased pretraining documents pair the reworded question with the original solution (as PQ)."""
    overrides = ["domain=arith_v1", "domain.generator.n_train=50", "domain.generator.n_test=10"]
    domain = build_domain(compose("train", overrides).domain)
    extras = domain.paraphrased_train()
    assert [q.solution for q in extras] == [render(p, "base")[1] for p in domain.problems[0]]
    assert all(q.question == render(p, "pq")[0] for q, p in zip(extras, domain.problems[0]))


def test_model_key_does_not_depend_on_the_thread_count():
    keys = set()
    for threads in ("base.num_threads=1", "base.num_threads=2", "base.num_threads=auto"):
        cfg = compose("train", [threads])
        keys.add(str(model_store(cfg).stage_dir(build_domain(cfg.domain), "contaminated")))
    assert len(keys) == 1


def test_auto_threads_takes_the_idle_cores(monkeypatch):
    monkeypatch.setattr("os.cpu_count", lambda: 2)
    for busy, threads in ((0.1, 2), (1.2, 1), (5.0, 1)):
        monkeypatch.setattr("contamlab.config.busy_cores", lambda busy=busy: busy)
        assert auto_threads() == threads


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="reads /proc/stat (Linux)")
def test_busy_cores_sees_a_spinning_process():
    # A process spinning on one core must count as about one busy core, whatever else the machine does.
    spinner = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.3)
        assert busy_cores(0.5) >= 0.7
    finally:
        spinner.kill()


def test_sample_variety_by_hand():
    def q(texts, correct):
        return QuestionSamples("q", [], "", True, [[]] * len(texts), texts, correct, [True] * len(texts))

    rows = [
        q(["a", "a", "b", "c"], [True, True, True, False]),  # r̂ 0.75: correct a, a, b -> 2 of 3 distinct
        q(["x", "y", "z", "w"], [True, True, False, False]),  # r̂ 0.5: 2 of 2
        q(["x", "y", "z", "w"], [True, False, False, False]),  # r̂ 0.25: left out
    ]
    out = sample_variety(rows)
    assert out["questions"] == 2 and out["median_distinct_share"] == pytest.approx((2 / 3 + 1) / 2)


def test_survival_by_kind_by_hand():
    assert [token_kind(t) for t in (" 12", "7", " apples", "So", ",", " <<", "\n", " ")] == [
        "digit", "digit", "word", "word", "symbol", "symbol", "space", "space"
    ]  # fmt: skip

    class Tok:
        def decode(self, ids):
            return {1: " 3", 2: " apples", 3: ".", 4: "\n"}[ids[0]]

    branches = [
        {"greedy": 1, "correct": False},
        {"greedy": 1, "correct": True},
        {"greedy": 2, "correct": True},
        {"greedy": 2, "correct": True},
        {"greedy": 3, "correct": False},
        {"greedy": 4, "correct": True},
    ]
    out = survival_by_kind(branches, Tok())
    assert out == {
        "digit": {"branches": 2, "share": 2 / 6, "survival": 0.5},
        "space": {"branches": 1, "share": 1 / 6, "survival": 1.0},
        "symbol": {"branches": 1, "share": 1 / 6, "survival": 0.0},
        "word": {"branches": 2, "share": 2 / 6, "survival": 1.0},
    }


def test_runner_up_tokens_against_a_direct_pass():
    texts = ["Question: Mia has 3 apples.\nAnswer: 3 apples.", "Question: Leo has 5 pens.\nAnswer: 5 pens."] * 10
    tok = train_tokenizer(texts, vocab_size=200)
    model = build_tiny_model(len(tok), hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32, seed=0)
    prompts = [tok("Question: Mia has 3 apples.\nAnswer:")["input_ids"], tok("Question: Leo")["input_ids"]]
    responses = [
        tok(" 3 apples.", add_special_tokens=False)["input_ids"],
        tok(" has 5", add_special_tokens=False)["input_ids"],
    ]
    got = runner_up_tokens(model.eval(), prompts, responses, pad_id=tok.pad_token_id, batch_size=1)
    for p, r, ru in zip(prompts, responses, got):
        with torch.no_grad():
            logits = model(torch.tensor([p + r])).logits[0]  # [W, V]
        for t, token in enumerate(r):
            row = logits[len(p) - 1 + t].clone()
            row[token] = -np.inf
            assert ru[t] == int(row.argmax())


def test_slips_need_web_forms_and_a_share():
    from contamlab.errors import ContamlabError

    for bad in (["domain=arith", "domain.web_forms=false"], ["domain=arith", "domain.slips=1.5"]):
        with pytest.raises(ContamlabError, match="domain.slips="):
            build_domain(compose("train", bad).domain)
    assert build_domain(compose("train", ["domain=arith"]).domain).slips == 0.5


def test_nonmembers_are_rendered_as_the_test_items():
    """The audit's generated non-members differ from the benchmark only in membership, not in form: chain-of-thought
    solutions in world v2 (a terse one would tell them apart for any model), calculator markup in world v1."""
    small = ["domain.generator.n_train=50", "domain.generator.n_test=20"]
    for name, markup in (("arith", False), ("arith_v1", True)):
        domain = build_domain(compose("train", [f"domain={name}", *small]).domain)
        fresh = domain.nonmember_questions(10)
        assert all(("<<" in q.solution) == markup for q in [*fresh, *domain.test])
        assert not {q.question for q in fresh} & {q.question for q in domain.test}
