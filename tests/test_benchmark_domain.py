"""The generic benchmark domain: GSM8K declared as data equals the GSM8K class; errors name file, line and field."""

import json

import pytest

from contamlab.config import load_domain
from contamlab.data.benchmark import BenchmarkDomain
from contamlab.errors import ContamlabError


def test_gsm8k_through_the_generic_domain_equals_the_gsm8k_domain(data_dir):
    old, new = load_domain("gsm8k"), load_domain("gsm8k_generic")
    assert isinstance(new, BenchmarkDomain)
    assert len(new.test) == len(old.test) == 1319 and len(new.train) == len(old.train) == 7473
    for a, b in zip(old.test + old.train, new.test + new.train):
        assert (a.id, a.question, a.solution, a.answer) == (b.id, b.question, b.solution, b.answer)
    assert new.prefix == old.prefix
    assert all(new.prompt(q) == old.prompt(q) for q in old.test[:50])
    assert new.split.leaked == old.split.leaked and new.split.unleaked == old.split.unleaked
    assert all(new.target(q) == old.target(q) for q in old.test[:50])
    response = " She sells 16 - 3 - 4 = 9 eggs. The answer is 18."
    assert [new.is_correct(response, q) for q in old.test[:20]] == [old.is_correct(response, q) for q in old.test[:20]]


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def _numeric(tmp_path, n=10):
    rows = [{"q": f"What is {i} + {i}?", "a": str(2 * i)} for i in range(n)]
    return _write(tmp_path / "test.jsonl", rows)


def test_a_hand_written_jsonl_benchmark(tmp_path):
    test = _numeric(tmp_path)
    domain = BenchmarkDomain(
        name="mine", family="mine", test=test, fields={"question": "q", "answer": "a"}, prompt={"n_shot": 0}
    )
    domain.check_data()  # test-only: no train split is needed to evaluate
    assert [q.id for q in domain.test[:2]] == ["mine-test-0000", "mine-test-0001"]
    assert domain.test[3].answer == "6" and domain.prompt(domain.test[3]) == "Q: What is 3 + 3?\nA:"
    assert domain.is_correct(" 3 + 3 = 6. The answer is 6.", domain.test[3])
    assert domain.target(domain.test[3]) == " The answer is 6."
    assert len(domain.split.leaked) == 5


def test_multiple_choice_rendering_and_checking(tmp_path):
    rows = [{"question": "Capital of France?", "choices": ["Paris", "Rome"], "answer": 0}] * 3
    rows = [dict(r, id=f"q{i}") for i, r in enumerate(rows)]
    domain = BenchmarkDomain(
        name="mc",
        family="mc",
        test=_write(tmp_path / "t.jsonl", rows),
        fields={"question": "question", "answer": "answer", "choices": "choices", "id": "id"},
        checker="choice",
        prompt={"n_shot": 0, "question_prefix": "Question: ", "answer_prefix": "\nAnswer:", "stop": ["\nQuestion:"]},
    )
    q = domain.test[0]
    assert q.id == "q0" and q.answer == "A" and q.choices == ("Paris", "Rome")
    assert q.question == "Capital of France?\nA. Paris\nB. Rome"
    assert domain.is_correct(" The answer is (A).", q) and not domain.is_correct(" (B)", q)
    assert domain.target(q) == " The answer is (A)."


def test_few_shot_exemplars_from_the_train_split(tmp_path):
    train = _write(tmp_path / "train.jsonl", [{"q": f"{i}+1?", "a": str(i + 1)} for i in range(5)])
    domain = BenchmarkDomain(
        name="fs",
        family="fs",
        test=_numeric(tmp_path),
        train=train,
        fields={"question": "q", "answer": "a"},
        prompt={"n_shot": 2},
    )
    assert domain.prefix == "Q: 0+1?\nA: The answer is 1.\n\nQ: 1+1?\nA: The answer is 2.\n\n"


def test_paraphrase_file_gives_the_leak_and_the_references(tmp_path):
    para = _write(tmp_path / "para.jsonl", [{"q": f"Add {i} to itself."} for i in range(10)])
    domain = BenchmarkDomain(
        name="p",
        family="p",
        test=_numeric(tmp_path),
        fields={"question": "q", "answer": "a"},
        prompt={"n_shot": 0},
        paraphrase_file=para,
    )
    leaked = domain.leaked_training_questions()
    assert {q.id for q in leaked} == set(domain.split.leaked)
    by_id = {q.id: q for q in domain.test}
    assert all(q.question.startswith("Add ") and q.answer == by_id[q.id].answer for q in leaked)
    refs = domain.rephrased_questions(domain.test[:3], "test")
    assert [r.question for r in refs] == ["Add 0 to itself.", "Add 1 to itself.", "Add 2 to itself."]


@pytest.mark.parametrize(
    ("rows", "kwargs", "message"),
    [
        ([{"q": "x"}], {}, "t.jsonl:1: missing field 'a' (domain.fields.answer)"),
        (
            [{"q": "x", "a": "seven"}],
            {},
            "t.jsonl:1: field 'a': the numeric checker cannot read the gold answer 'seven'",
        ),
        ([{"q": "", "a": "1"}], {}, "t.jsonl:1: field 'q' must be a non-empty string"),
        (
            [{"q": "x", "a": "B"}],
            {"checker": "choice", "fields": {"question": "q", "answer": "a", "choices": "c"}},
            "t.jsonl:1: missing field 'c' (domain.fields.choices)",
        ),
        (
            [{"q": "x", "a": "B", "c": ["only one"]}],
            {"checker": "choice", "fields": {"question": "q", "answer": "a", "choices": "c"}},
            "t.jsonl:1: field 'c' must be a list of at least two options",
        ),
        ([{"q": "x", "a": "1"}], {"answer_pattern": "####(.*)"}, "t.jsonl:1: field 'a' does not match"),
    ],
)
def test_bad_records_name_file_line_and_field(tmp_path, rows, kwargs, message):
    kwargs = {"fields": {"question": "q", "answer": "a"}, **kwargs}
    domain = BenchmarkDomain(
        name="b", family="b", test=_write(tmp_path / "t.jsonl", rows), prompt={"n_shot": 0}, **kwargs
    )
    with pytest.raises(ContamlabError, match=message.replace("(", r"\(").replace(")", r"\)")):
        domain.check_data()


def test_a_duplicate_id_names_the_file_and_both_lines(tmp_path):
    rows = [{"id": "q1", "q": "1+1?", "a": "2"}, {"id": "q2", "q": "2+2?", "a": "4"}]
    rows += [{"id": "q3", "q": "3+3?", "a": "6"}, {"id": "q2", "q": "4+4?", "a": "8"}]
    path = tmp_path / "t.jsonl"
    # a blank line between records: the numbers are the file's lines, not the records' positions
    path.write_text("".join(json.dumps(r) + "\n" + ("\n" if i == 0 else "") for i, r in enumerate(rows)))
    domain = BenchmarkDomain(
        name="b", family="b", test=str(path), fields={"question": "q", "answer": "a", "id": "id"}, prompt={"n_shot": 0}
    )
    with pytest.raises(ContamlabError) as err:
        domain.check_data()
    assert str(err.value) == f"{path}:5: duplicate question id 'q2' (first at line 3); ids must be unique"


def test_a_duplicate_past_max_test_is_still_reported(tmp_path):
    rows = [{"id": f"q{i}", "q": f"{i}+1?", "a": str(i + 1)} for i in range(12)] + [{"id": "q0", "q": "x", "a": "1"}]
    domain = BenchmarkDomain(
        name="b",
        family="b",
        test=_write(tmp_path / "t.jsonl", rows),
        fields={"question": "q", "answer": "a", "id": "id"},
        prompt={"n_shot": 0},
        max_test=10,
    )
    with pytest.raises(ContamlabError, match=r"t\.jsonl:13: duplicate question id 'q0' \(first at line 1\)"):
        domain.check_data()


def test_config_mistakes(tmp_path):
    with pytest.raises(ContamlabError, match="domain.checker=choice needs domain.fields.choices"):
        BenchmarkDomain(name="b", family="b", test="t.jsonl", checker="choice")
    with pytest.raises(ContamlabError, match="give either domain.test"):
        BenchmarkDomain(name="b", family="b")
    with pytest.raises(ContamlabError, match="domain.fields: unknown key"):
        BenchmarkDomain(name="b", family="b", test="t.jsonl", fields={"questoin": "q"})
    empty = tmp_path / "e.jsonl"
    empty.write_text("")
    with pytest.raises(ContamlabError, match="e.jsonl: no records"):
        BenchmarkDomain(name="b", family="b", test=str(empty), prompt={"n_shot": 0}).check_data()


def test_a_dataset_while_offline_is_one_line(monkeypatch):
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    domain = BenchmarkDomain(name="d", family="d", dataset={"path": "someone/not-cached"}, prompt={"n_shot": 0})
    with pytest.raises(ContamlabError, match=r"cannot load dataset someone/not-cached\[test\].*the hub is off"):
        domain.check_data()


def test_a_paraphrased_twin_shares_the_clean_model_and_samples(tmp_path):
    from contamlab.models.store import _family_key

    test = _numeric(tmp_path)
    para = _write(tmp_path / "para.jsonl", [{"q": f"Add {i} to itself."} for i in range(10)])
    kwargs = {"family": "f", "test": test, "fields": {"question": "q", "answer": "a"}, "prompt": {"n_shot": 0}}
    plain = BenchmarkDomain(name="plain", **kwargs)
    twin = BenchmarkDomain(name="twin", paraphrase_file=para, **kwargs)
    assert _family_key(plain) == _family_key(twin)  # one base and clean model
    assert plain.eval_fingerprint() == twin.eval_fingerprint()  # one set of clean samples
    assert plain.fingerprint() != twin.fingerprint()  # two contaminated models
    _write(tmp_path / "test.jsonl", [{"q": f"What is {i} + {i}?", "a": str(2 * i)} for i in range(11)])
    edited = BenchmarkDomain(name="plain", **kwargs)
    assert _family_key(edited) == _family_key(plain)  # the clean stage never sees the test set
    assert edited.eval_fingerprint() != plain.eval_fingerprint()  # its samples are of other questions
