"""domain=lm_eval against lm-eval's own objects: prompts, answer filters and metric, multiple-choice items, errors.

The harness's side is built here with lm-eval's public API (TaskManager's index of the task's folder, its override of
a registered task, ``build_all_requests``, ``apply_filters``, ``process_results``), not with the domain's code.
"""

import functools
import json
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

import pytest

lm_eval = pytest.importorskip("lm_eval", reason="lm-eval is an optional extra: pip install 'contamlab[lm-eval]'")

from lm_eval.models.utils import postprocess_generated_text  # noqa: E402
from lm_eval.tasks import TaskManager  # noqa: E402

from contamlab.config import build_domain, compose, load_domain  # noqa: E402
from contamlab.errors import ContamlabError  # noqa: E402

FIXTURES = Path(__file__).parent / "data" / "lm_eval"
TASKS = Path(lm_eval.__file__).parent / "tasks"


@contextmanager
def templates_compiled_once():
    """The harness renders each Jinja template compiled anew (30 s for GSM8K's 8-shot prompts on a 2-core CPU);
    these tests compile each once. test_the_template_cache_changes_no_prompt checks that this changes no text."""
    from lm_eval import utils

    compiled = functools.lru_cache(maxsize=None)(utils.env.from_string)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(utils, "apply_template", lambda template, doc: compiled(template).render(**doc))
        yield


def harness_task(name: str, folder: str, data_files: dict, **overrides):
    """lm-eval's task ``name`` from its registry (the index of its folder) with its dataset overridden by files.

    The override is lm-eval's own: a registered task listed in a group with changed keys.
    """
    manager = TaskManager(include_defaults=False, include_path=str(TASKS / folder))
    spec = {"task": name, "dataset_path": "json", "dataset_name": None, "dataset_kwargs": {"data_files": data_files}}
    return manager.load({"group": "contamlab_test", "task": [{**spec, **overrides}]})["tasks"][name]


@pytest.fixture(scope="module")
def gsm8k_files(data_dir):
    return {"test": str(data_dir / "gsm8k" / "test.jsonl")}


@pytest.fixture(scope="module")
def domain(data_dir):
    domain = build_domain(compose("evaluate", ["domain=lm_eval", "domain.task=gsm8k_cot"]).domain)
    domain.check_data()
    return domain


@pytest.fixture(scope="module")
def harness(gsm8k_files):
    task = harness_task("gsm8k_cot", "gsm8k", gsm8k_files)
    # simple_evaluate without --num_fewshot keeps the task's 8 shots and seeds the sampler with its default, 1234
    task.set_fewshot_seed(seed=1234)
    return task


@pytest.fixture(scope="module")
def harness_prompts(harness):
    with templates_compiled_once():
        harness.build_all_requests()
    return {inst.doc_id: inst.args[0] for inst in harness.instances}


def test_every_gsm8k_cot_prompt_is_the_harness_prompt(domain, harness, harness_prompts, gsm8k_files):
    rows = [json.loads(line) for line in Path(gsm8k_files["test"]).read_text().splitlines() if line.strip()]
    assert len(domain.test) == len(rows) == len(harness_prompts) == 1319
    assert domain.num_fewshot == harness.config.num_fewshot == 8
    for index, (question, row) in enumerate(zip(domain.test, rows)):
        assert harness.eval_docs[index]["question"] == row["question"]  # the harness reads the file in order
        assert domain.prompt(question).encode() == harness_prompts[index].encode(), question.id
        assert question.question == row["question"]  # the item reads as the benchmark's question
    prompt = harness_prompts[0]
    assert prompt.count("Q: ") == 9 and prompt.endswith("\nA:") and domain.prefix.endswith("The answer is 8.\n\n")


def test_sampled_few_shot_prompts_are_the_harness_prompts(data_dir):
    # gsm8k draws 5 examples per prompt from the train split with a seeded sampler, in document order (--limit 30)
    domain = load_domain("lm_eval", task="gsm8k", max_test=30)
    files = {split: str(data_dir / "gsm8k" / f"{split}.jsonl") for split in ("train", "test")}
    task = harness_task("gsm8k", "gsm8k", files)
    task.set_fewshot_seed(seed=1234)
    with templates_compiled_once():
        task.build_all_requests(limit=30)
    prompts = [domain.prompt(q) for q in domain.test]
    assert prompts == [inst.args[0] for inst in task.instances]
    assert len(set(p[: p.index("\n\n")] for p in prompts)) > 1  # the examples differ between prompts


def test_the_template_cache_changes_no_prompt(harness, harness_prompts):
    for index in range(20):  # lm-eval's own rendering, template by template
        assert harness.fewshot_context(harness.eval_docs[index], num_fewshot=8) == harness_prompts[index]


def test_the_checker_is_the_harness_filters_and_metric(domain, harness):
    responses = [json.loads(line) for line in (FIXTURES / "responses.jsonl").read_text().splitlines()]
    until = harness.config.generation_kwargs["until"]
    rounds = defaultdict(list)  # one response per document a round: the harness judges one per request
    seen = defaultdict(int)
    for response in responses:
        rounds[seen[response["doc"]]].append(response)
        seen[response["doc"]] += 1
    outcomes = defaultdict(list)
    for batch in rounds.values():
        docs = sorted({r["doc"] for r in batch})
        with templates_compiled_once():
            harness.build_all_requests(samples=docs)
        instances = dict(zip(docs, harness.instances))
        for r in batch:  # the model's side: the generation cut at the task's stop strings
            instances[r["doc"]].resps = [postprocess_generated_text(r["response"], until, None)]
        harness.apply_filters()
        for r in batch:
            instance, question = instances[r["doc"]], domain.test[r["doc"]]
            assert instance.doc["question"] == question.question
            assert set(instance.filtered_resps) == {"strict-match", "flexible-extract"}
            for name, extracted in instance.filtered_resps.items():
                correct = harness.process_results(instance.doc, [extracted])["exact_match"] == 1
                assert domain.graded(r["response"], question, filter=name) == (extracted, correct), (name, r)
                outcomes[name].append(correct)
            assert domain.is_correct(r["response"], question) == outcomes["strict-match"][-1]  # the task's first
    # the responses exercise both outcomes of both filters, and the two filters disagree on some
    for name in ("strict-match", "flexible-extract"):
        assert 0 < sum(outcomes[name]) < len(responses), name
    assert outcomes["strict-match"] != outcomes["flexible-extract"]


def test_a_multiple_choice_item_is_its_question_options_and_answer():
    files = {"test": str(FIXTURES / "arc_easy" / "test.jsonl")}
    domain = load_domain("lm_eval", task="arc_easy", data_files=files)
    harness = harness_task("arc_easy", "arc", files, training_split=None, validation_split=None)
    with templates_compiled_once():
        harness.build_all_requests()
    continuations = defaultdict(list)
    for instance in harness.instances:  # one loglikelihood request per option: (context, delimiter + option)
        continuations[instance.doc_id].append(instance.args[1])
    assert len(domain.test) == len(harness.eval_docs) == 5
    for index, (question, doc) in enumerate(zip(domain.test, harness.eval_docs)):
        options, gold = harness.doc_to_choice(doc), harness.doc_to_target(doc)
        assert question.choices == tuple(options) and question.answer == "ABCD"[gold]
        assert question.solution == options[gold] and domain.target(question) == continuations[index][gold]
        lines = question.question.splitlines()
        assert lines == [doc["question"], *(f"{'ABCD'[i]}. {option}" for i, option in enumerate(options))]
        # BenBench's text: the question with its options, then the answer; the document form frames it as the task
        last = f"{'ABCD'[len(options) - 1]}. {options[-1]}"
        assert f"{question.question} Answer: {question.solution}".endswith(f"{last} Answer: {options[gold]}")
        document = domain.format.question_block(question.question) + domain.target(question)
        assert document == f"Question: {question.question}\nAnswer: {options[gold]}"
    assert not domain.has_train and not domain.generates_answers
    # the audit's mitigated score needs generated answers: it says it is not run, and loads no model
    from contamlab.audit.mitigation import mitigated_score
    from contamlab.decoding.strategy import Strategy

    assert mitigated_score({"identity": Strategy()}, None, domain, None, False) == (
        [],
        {"not_run": "domain=lm_eval: its items are not answered by generation, so there is no solve probability"},
    )
    for call in (lambda q: domain.prompt(q), lambda q: domain.is_correct(" B", q)):
        with pytest.raises(ContamlabError, match="arc_easy is a multiple_choice task.*no solve probability") as err:
            call(domain.test[0])
        assert "\n" not in str(err.value) and "audit.mitigate=[]" in str(err.value)


def test_a_task_on_the_hub_without_local_files_fails_in_one_line(monkeypatch, tmp_path):
    import datasets.config
    import huggingface_hub.constants

    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", tmp_path)  # no cached copy either
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_CACHE", str(tmp_path))
    with pytest.raises(ContamlabError) as err:
        load_domain("lm_eval", task="arc_easy")
    message = str(err.value)
    assert "\n" not in message
    assert "lm-eval task arc_easy" in message and "allenai/ai2_arc" in message
    assert "domain.data_files='{test: <file>}'" in message and "CONTAMLAB_DATA_DIR" in message


def test_config_mistakes_fail_before_any_data_loads(monkeypatch):
    with pytest.raises(ContamlabError, match=r"no such lm-eval task \(did you mean gsm8k_cot"):
        load_domain("lm_eval", task="gsm8k_cott")
    with pytest.raises(ContamlabError, match="draws its 5 few-shot examples from its 'train' split"):
        load_domain("lm_eval", task="gsm8k", data_files={"test": "gsm8k/test.jsonl"})
    import importlib.util

    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *args: None if name == "lm_eval" else find_spec(name, *args)
    )
    with pytest.raises(ContamlabError, match=r"pip install 'contamlab\[lm-eval\]'"):
        load_domain("lm_eval")


@pytest.mark.slow
def test_the_parity_script_gets_lm_evals_own_responses(tmp_path):
    """benchmarks/lm_eval_parity.py (docs/benchmarks.md): SmolLM2's greedy gsm8k_cot answers, ours and lm_eval's."""
    import subprocess
    import sys

    from contamlab.models.smollm2 import SmolLM2NotInstalledError, find_gguf

    try:
        find_gguf()
    except SmolLM2NotInstalledError as err:
        pytest.skip(str(err))
    repo = Path(__file__).resolve().parents[1]
    out = tmp_path / "parity.json"
    command = [sys.executable, str(repo / "benchmarks" / "lm_eval_parity.py"), "--items", "3", "--batch-size", "3",
               "--out", str(out), f"paths.cache_dir={tmp_path / 'cache'}"]  # fmt: skip
    subprocess.run(command, check=True, cwd=tmp_path)
    report = json.loads(out.read_text())
    assert report["same_response"] == 3 and report["differences"] == []
    assert report["same_correctness"] == {"strict-match": 3, "flexible-extract": 3}
    assert isinstance(report["wall_s"]["contamlab"], float)  # a fresh cache: generated and timed, not read
