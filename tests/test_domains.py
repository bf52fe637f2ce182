import json

import pytest

from contamlab.config import load_domain
from contamlab.data.gsm8k import GSM8KDomain, PQDomain
from contamlab.data.jsonl import read_jsonl
from contamlab.errors import ContamlabError


def test_gsm8k_from_local_copy(data_dir):
    domain = load_domain("gsm8k")
    assert (len(domain.train), len(domain.test)) == (7473, 1319)
    q = domain.test[0]
    assert q.id == "gsm8k-test-0000" and q.answer == "18" and "####" in q.solution
    assert (len(domain.split.leaked), len(domain.split.unleaked)) == (660, 659)
    assert domain.prompt(q).count("Q: ") == 9 and domain.prompt(q).endswith("\nA:")
    assert domain.is_correct(" She makes 18 dollars. The answer is 18.\n\nQ: other 5", q)
    assert not domain.is_correct(" The answer is 17.", q)


def test_pq_pairs_paraphrases_with_original_answers(data_dir):
    pq, gsm = load_domain("pq"), load_domain("gsm8k")
    assert [q.question for q in pq.test] == [q.question for q in gsm.test]  # evaluation uses the originals
    assert pq.split == gsm.split
    leaked = pq.leaked_training_questions()
    assert len(leaked) == 660
    originals = {q.id: q for q in gsm.test}
    assert all(q.answer == originals[q.id].answer for q in leaked)
    assert sum(q.question != originals[q.id].question for q in leaked) > 650
    assert not set(q.id for q in leaked) & set(pq.split.unleaked)


def test_max_test_subset(data_dir):
    domain = load_domain("gsm8k", max_test=10)
    assert len(domain.test) == 10 and len(domain.split.leaked) == 5


def test_arith_and_arith_pq_share_questions_not_leak_wording():
    arith = load_domain("arith", generator={"n_train": 200, "n_test": 40})
    twin = load_domain("arith_pq", generator={"n_train": 200, "n_test": 40})
    assert arith.test == twin.test and arith.family == twin.family == "arith"
    a, b = arith.leaked_training_questions(), twin.leaked_training_questions()
    assert len(a) == 20 and len(b) == 20 * twin.leak_variants
    assert all(x.answer == y.answer and x.question != y.question for x, y in zip(a, b))
    assert all(arith.is_correct(" " + q.solution, q) for q in arith.test)


def test_arith_pq_leaks_several_rewordings_of_each_leaked_question():
    one = load_domain("arith_pq", leak_variants=1, generator={"n_train": 50, "n_test": 40})
    three = load_domain("arith_pq", leak_variants=3, generator={"n_train": 50, "n_test": 40})
    first, leaked = one.leaked_training_questions(), three.leaked_training_questions()
    assert leaked[:20] == first  # variant 0 is the single rewording
    by_id: dict[str, list] = {}
    for q in leaked:
        by_id.setdefault(q.id, []).append(q)
    assert sorted(by_id) == sorted(q.id for q in first) and all(len(v) == 3 for v in by_id.values())
    test = {q.id: q for q in three.test}
    for qid, versions in by_id.items():
        # Each rewording keeps the original solution and answer and never shows the original question text.
        assert all(v.solution == test[qid].solution and v.answer == test[qid].answer for v in versions)
        assert all(v.question != test[qid].question for v in versions)
    assert len({v.question for versions in by_id.values() for v in versions}) > 40  # mostly distinct texts
    # Only the contaminated stage's data changes: evaluation (and the shared base and clean models) do not.
    assert one.eval_fingerprint() == three.eval_fingerprint() and one.fingerprint() != three.fingerprint()


@pytest.mark.parametrize(
    ("name", "settings"),
    [("arith", {}), ("arith", {"max_train": 50}), ("arith_v1", {}), ("arith_mc", {}), ("arith", {"solutions": "cot"})],
)
def test_an_arith_fingerprint_counts_the_train_split_it_renders(name, settings):
    """The fingerprint counts training items without rendering them; the count is the rendered split's length."""
    domain = load_domain(name, generator={"n_train": 120, "n_test": 20}, **settings)
    fast = domain.fingerprint()["n_train"]
    assert "train" not in vars(domain)  # not rendered for the count
    assert fast == len(domain.train) == min(120, settings.get("max_train", 120))


def test_unknown_domain():
    with pytest.raises(ContamlabError, match="unknown domain 'gsm9k'.*arith"):
        load_domain("gsm9k")


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n")
    return path


def test_malformed_jsonl_names_file_and_line(tmp_path):
    good = json.dumps({"question": "q", "answer": "a\n#### 1"})
    path = _write(tmp_path / "x.jsonl", [good, "{broken", good])
    with pytest.raises(ContamlabError, match=r"x\.jsonl:2: malformed JSON"):
        read_jsonl(path)


def test_missing_field_and_empty_and_missing_file(tmp_path):
    path = _write(tmp_path / "x.jsonl", [json.dumps({"question": "q"})])
    with pytest.raises(ContamlabError, match=r"x\.jsonl:1: missing field\(s\) answer"):
        read_jsonl(path, required=("question", "answer"))
    with pytest.raises(ContamlabError, match="no records"):
        read_jsonl(_write(tmp_path / "e.jsonl", [""]))
    with pytest.raises(ContamlabError, match="file not found"):
        read_jsonl(tmp_path / "nope.jsonl")
    with pytest.raises(ContamlabError, match="expected a JSON object"):
        read_jsonl(_write(tmp_path / "l.jsonl", ["[1, 2]"]))


def test_gsm8k_answer_without_hashes(tmp_path):
    (tmp_path / "gsm8k").mkdir()
    rec = json.dumps({"question": "q", "answer": "no final line"})
    _write(tmp_path / "gsm8k" / "test.jsonl", [rec])
    with pytest.raises(ContamlabError, match="'#### <answer>'"):
        _ = GSM8KDomain(data_dir=str(tmp_path), name="gsm8k", family="gsm8k").test


def test_pq_answer_mismatch_names_line(tmp_path, data_dir):
    (tmp_path / "gsm8k-pq").mkdir()
    lines = (data_dir / "gsm8k-pq" / "rephrase_gsm8k_test.jsonl").read_text().splitlines()[:3]
    lines[1] = json.dumps({"text": "Question: changed?\nAnswer: \n#### 999"})
    _write(tmp_path / "gsm8k-pq" / "p.jsonl", lines)
    domain = PQDomain(paraphrase_file=str(tmp_path / "gsm8k-pq" / "p.jsonl"), name="pq", family="gsm8k", max_test=3)
    with pytest.raises(ContamlabError, match=r"p\.jsonl:2: paraphrase answer 999"):
        domain.leaked_training_questions(domain.split.__class__(("gsm8k-test-0001",), (), 0))


def test_pq_empty_paraphrase_is_named_not_silent(tmp_path, data_dir, caplog):
    """The published file has empty questions (lines 310, 670, 728, 949): each is named in a warning."""
    (tmp_path / "gsm8k-pq").mkdir()
    lines = (data_dir / "gsm8k-pq" / "rephrase_gsm8k_test.jsonl").read_text().splitlines()[:3]
    answer = json.loads(lines[2])["text"].rsplit("####", 1)[1].strip()
    lines[2] = json.dumps({"text": f"Question: \nAnswer: \n#### {answer}"})
    _write(tmp_path / "gsm8k-pq" / "p.jsonl", lines)
    domain = PQDomain(paraphrase_file=str(tmp_path / "gsm8k-pq" / "p.jsonl"), name="pq", family="gsm8k", max_test=3)
    with caplog.at_level("WARNING", logger="contamlab"):
        out = domain.paraphrases(domain.test)
    assert [q.question == "" for q in out] == [False, False, True]
    assert "1 paraphrase(s) with an empty question" in caplog.text and "3 (gsm8k-test-0002)" in caplog.text


def test_offline_hub_gives_clear_error(monkeypatch):
    monkeypatch.delenv("CONTAMLAB_DATA_DIR")
    domain = GSM8KDomain(name="gsm8k", family="gsm8k", data_dir=None)
    with pytest.raises(ContamlabError, match="could not load openai/gsm8k.*CONTAMLAB_DATA_DIR"):
        _ = domain.test


def test_bad_config_values():
    with pytest.raises(ContamlabError, match="max_test"):
        load_domain("arith", max_test=0)
    with pytest.raises(ContamlabError, match="leak_style"):
        load_domain("arith", leak_style="weird")
    with pytest.raises(ContamlabError, match="domain.leak_variants=0"):
        load_domain("arith_pq", leak_variants=0)
    with pytest.raises(ContamlabError, match="domain.leak_variants=2.*verbatim"):
        load_domain("arith", leak_variants=2)
    with pytest.raises(ContamlabError, match="leak_fraction"):
        _ = load_domain("arith", leak_fraction=2.0, generator={"n_train": 50, "n_test": 10}).split


def test_answer_budget_is_the_domains():
    """evaluate.py's max_new_tokens defaults to the domain's budget; a bad budget names the field."""
    from contamlab.config import compose

    assert compose("evaluate", ["domain=arith"]).max_new_tokens == 192
    assert compose("evaluate", ["domain=arith_v1"]).max_new_tokens == 128
    assert compose("evaluate", ["domain=gsm8k"]).max_new_tokens == 256
    assert compose("evaluate", ["domain=arith", "max_new_tokens=64"]).max_new_tokens == 64
    with pytest.raises(ContamlabError, match="domain.max_new_tokens"):
        load_domain("arith", max_new_tokens=0)


def test_malformed_jsonl_gives_the_column(tmp_path):
    # A raw tab inside a string: json's message alone ("Invalid control character at") has no position.
    good = json.dumps({"question": "q", "answer": "a\n#### 1"})
    path = _write(tmp_path / "x.jsonl", [good, good, '{"question": "a\tb", "answer": "x"}'])
    with pytest.raises(ContamlabError) as err:
        read_jsonl(path)
    assert str(err.value).startswith(f"{path}:3: malformed JSON at column 16 (Invalid control character)")


def test_a_view_over_other_items_keeps_the_models_and_names_its_items():
    """Domain.over (the audit's non-members): its own test items and fingerprint, the original's trained models."""
    from contamlab.models.spec import TinyModel
    from contamlab.models.store import ModelStore

    domain = load_domain("arith", max_test=20)
    fresh = domain.nonmember_questions(5, seed=100)
    view = domain.over(fresh, "generated")
    assert view.test == fresh and len(view.split.leaked) + len(view.split.unleaked) == 5
    assert domain.test != fresh and len(domain.test) == 20  # the original is untouched
    assert view.fingerprint()["items"]["what"] == "generated" and "items" not in domain.fingerprint()
    assert view.eval_fingerprint() != domain.eval_fingerprint()  # its samples are cached apart
    assert view.trained_on is domain and view.over(fresh[:2], "again").trained_on is domain
    store = ModelStore("models", TinyModel(name="tiny"), seed=0, base={"steps": 1})
    for stage in ("base", "clean", "contaminated"):
        assert store.stage_dir(view, stage) == store.stage_dir(domain, stage)
    with pytest.raises(ContamlabError, match="duplicate question id"):
        domain.over([fresh[0], fresh[0]], "twice")


def test_a_view_holds_its_own_items_and_split_and_leaves_the_original_untouched():
    """Domain.over builds the view through its own fields: the original's loaded test set and split stay its own."""
    from contamlab.data.split import Split

    domain = load_domain("arith", max_test=20)
    test, split = list(domain.test), domain.split  # loaded before the view is made, as the audit has them
    fresh = domain.nonmember_questions(6, seed=100)
    view = domain.over(fresh, "generated")
    assert view.test == fresh and sorted((*view.split.leaked, *view.split.unleaked)) == sorted(q.id for q in fresh)
    assert domain.test == test and domain.split == split and domain.items is None and domain.origin is None
    ids = [q.id for q in fresh]
    given = Split(tuple(ids[:1]), tuple(ids[1:]), seed=7)
    twin = domain.over(fresh, "generated", given)
    assert twin.split is given and twin.test == fresh and view.split != given and domain.split == split
    with pytest.raises(ContamlabError, match="does not cover exactly"):
        domain.over(fresh, "generated", Split(tuple(ids[:1]), tuple(ids[2:]), seed=7))


def test_only_generated_benchmarks_say_no_released_model_read_them(data_dir):
    assert load_domain("arith", generator={"n_train": 20, "n_test": 20}).generated
    assert load_domain("arith_pq", generator={"n_train": 20, "n_test": 20}).generated
    assert not load_domain("gsm8k").generated and not load_domain("pq").generated


@pytest.mark.parametrize(
    ("stage", "pretrained_here", "generated", "expected"),
    [
        ("contaminated", False, False, {"contaminated": True, "leak": "verbatim"}),  # it read the leak, whatever else
        ("clean", False, False, None),  # SmolLM2 on GSM8K: its pre-training may have read the test set
        ("base", False, False, None),
        ("base", False, True, {"contaminated": False, "leak": None}),  # a generated benchmark: nobody read it
        ("clean", True, False, {"contaminated": False, "leak": None}),  # the tiny world pre-trains here, test held out
        (None, True, True, None),  # a model not simulated here
    ],
)
def test_the_audit_states_a_truth_only_where_it_is_known(stage, pretrained_here, generated, expected):
    from types import SimpleNamespace

    from contamlab.audit.models import truth

    target = SimpleNamespace(stage=stage, store=SimpleNamespace(pretrain=pretrained_here))
    domain = SimpleNamespace(generated=generated, leak_wording="verbatim")
    assert truth(target, domain) == expected
