"""Benchmarks beyond the built-in domains through the real entry points.

- ``arith_mc``, the offline multiple-choice benchmark: trains (base, clean, contaminated) and evaluates under RailCap.
- A JSONL benchmark written by hand with nothing but a domain YAML beside it (``hydra.searchpath``), evaluated and
  scored by a detector with the tiny world's models as the pair.
"""

import json
import subprocess
import sys

from e2e import REPO, evaluate, stage_dirs, train


def test_arith_mc_trains_and_evaluates(tmp_path):
    result = train(tmp_path, "domain=arith_mc", tag="mc")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    assert {p.name.split("-")[0] for p in (tmp_path / "models" / "tiny" / "arith_mc").iterdir()} >= {
        "base",
        "clean",
        "contaminated",
    }
    done = evaluate(tmp_path, "domain=arith_mc", "strategy=railcap", "analysis.floor=false", tag="mc-eval")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "runs" / "mc-eval" / "results.json").read_text())
    assert results["counts"]["questions"] == 20
    rows = (tmp_path / "runs" / "mc-eval" / "per_question.csv").read_text().splitlines()
    assert len(rows) == 21


YAML = """\
_target_: contamlab.data.benchmark.BenchmarkDomain
name: mine
family: mine
test: {test}
paraphrase_file: {para}
fields: {{question: q, answer: a}}
checker: numeric
max_new_tokens: 24
prompt:
  question_prefix: "Question: "
  answer_prefix: "\\nAnswer:"
  n_shot: 0
  solution_style: gsm8k
  stop: ["\\nQuestion:"]
"""


def test_a_jsonl_benchmark_with_only_a_yaml(trained, tmp_path):
    tmp, _, _ = trained
    data = tmp_path / "data"
    data.mkdir()
    (data / "test.jsonl").write_text(
        "".join(
            json.dumps({"q": f"Mia has {i} apples and buys 2 more. How many now?", "a": i + 2}) + "\n"
            for i in range(10)
        )
    )
    (data / "para.jsonl").write_text(
        "".join(
            json.dumps({"q": f"After buying 2 apples, how many does Mia, who had {i}, hold?"}) + "\n" for i in range(10)
        )
    )
    conf = tmp_path / "conf" / "domain"
    conf.mkdir(parents=True)
    (conf / "mine.yaml").write_text(YAML.format(test=data / "test.jsonl", para=data / "para.jsonl"))
    dirs = stage_dirs(tmp)
    common = [
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        "domain=mine",
        f"model.clean={dirs['clean']}",
        f"model.contaminated={dirs['contaminated-arith']}",
        f"paths.cache_dir={tmp_path / 'cache'}",
        "m=4",
        "metric.bootstrap=50",
        "progress=false",
        "logger=csv",
    ]
    corpus = f"detector.corpus={dirs['contaminated-arith'] / 'training_texts.jsonl'}"
    runs = [
        ("railcap", [], ["strategy=railcap"]),
        ("detectors", ["-m"], ["strategy=none", "detector=loss,zlib,mink,minkpp,cdd,recall,constat,benbench,codec"]),
        # a pair trained elsewhere has no recorded training data: these two read a corpus file
        ("corpus/ngram", [], ["strategy=none", "detector=ngram", corpus]),
        ("corpus/dcpdd", [], ["strategy=none", "detector=dcpdd", corpus]),
    ]
    for tag, flags, extra in runs:
        where = f"hydra.sweep.dir={tmp_path / tag}" if flags else f"hydra.run.dir={tmp_path / tag}"
        done = subprocess.run(
            [sys.executable, str(REPO / "evaluate.py"), *flags, *common, *extra, where],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((tmp_path / "railcap" / "results.json").read_text())
    assert results["counts"] == {**results["counts"], "questions": 10, "leaked": 5, "m": 4}
    scored = {}
    for file in [*(tmp_path / "detectors").glob("*/results.json"), *(tmp_path / "corpus").glob("*/results.json")]:
        results = json.loads(file.read_text())
        scored[results["config"]["detector"]["name"]] = results["detection"]["contaminated"]
    assert len(scored) == 11  # every detector
    for name, det in scored.items():
        assert det["n_scored"] == 10 and 0.0 <= det["auroc"] <= 1.0, name
