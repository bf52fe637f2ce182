"""Benchmarks beyond the built-in domains, through the entry points' jobs run in-process (:mod:`jobs`).

- ``arith_mc``, the offline multiple-choice benchmark: trains (base, clean, contaminated) and evaluates under RailCap.
- A JSONL benchmark written by hand with nothing but a domain YAML beside it (``hydra.searchpath``), evaluated and
  scored by a detector with the tiny world's models as the pair.
"""

import json

from e2e import TINY, stage_dirs
from jobs import job_config, run_audit, run_evaluate, run_job, run_train


def audit(tmp, *overrides: str, tag: str = "audit", world: bool = True):
    """audit.py's job (short sampling, few bootstrap draws) into ``tmp/audit-<tag>``; ``world``: on the tiny world
    trained under ``tmp``."""
    return run_audit(
        tmp / f"audit-{tag}",
        *[o for o in TINY if not o.startswith("trainer.") and (world or not o.lstrip("+").startswith("domain."))],
        f"paths.models_dir={tmp / 'models'}",
        f"paths.cache_dir={tmp / 'cache'}",
        "m=4",
        "max_new_tokens=24",
        "audit.n_boot=50",
        "audit.mitigate=[railcap]",
        "detectors.benbench.include_train=false",
        "progress=false",
        *overrides,
    )


def test_arith_mc_trains_and_evaluates(tmp_path):
    run_train(tmp_path, "domain=arith_mc")
    assert {p.name.split("-")[0] for p in (tmp_path / "models" / "tiny" / "arith_mc").iterdir()} >= {
        "base",
        "clean",
        "contaminated",
    }
    run_evaluate(tmp_path, tmp_path / "runs" / "mc-eval", "domain=arith_mc", "strategy=railcap", "analysis.floor=false")
    results = json.loads((tmp_path / "runs" / "mc-eval" / "results.json").read_text())
    assert results["counts"]["questions"] == 20
    rows = (tmp_path / "runs" / "mc-eval" / "per_question.csv").read_text().splitlines()
    assert len(rows) == 21
    # the audit of the contaminated model against its clean twin, on the choice benchmark
    audit(tmp_path, "domain=arith_mc", "audit.references=[clean]", "audit.detectors=[loss,codec,constat]", tag="mc")
    verdicts = {
        v["name"]: v for v in json.loads((tmp_path / "audit-mc" / "results.json").read_text())["audit"]["verdicts"]
    }
    assert {"loss", "loss/reference", "codec/bands", "constat", "mitigation/railcap"} <= set(verdicts)
    assert verdicts["constat"]["flagged"] is not None  # a reference model: ConStat gives a verdict


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
            for i in range(20)  # 10 leaked and 10 unleaked: the fewest a detector's AUROC is reported for
        )
    )
    (data / "para.jsonl").write_text(
        "".join(
            json.dumps({"q": f"After buying 2 apples, how many does Mia, who had {i}, hold?"}) + "\n" for i in range(20)
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
    detectors = ("loss", "zlib", "mink", "minkpp", "cdd", "recall", "constat", "benbench", "codec")
    runs = [
        ("railcap", ["strategy=railcap"]),
        *((f"detectors/{name}", ["strategy=none", f"detector={name}"]) for name in detectors),
        # a pair trained elsewhere has no recorded training data: these two read a corpus file
        ("corpus/ngram", ["strategy=none", "detector=ngram", corpus]),
        ("corpus/dcpdd", ["strategy=none", "detector=dcpdd", corpus]),
    ]
    for tag, extra in runs:
        run_job("evaluate", job_config("evaluate", tmp_path / tag, *common, *extra))
    results = json.loads((tmp_path / "railcap" / "results.json").read_text())
    assert results["counts"] == {**results["counts"], "questions": 20, "leaked": 10, "m": 4}
    scored = {}
    for file in [*(tmp_path / "detectors").glob("*/results.json"), *(tmp_path / "corpus").glob("*/results.json")]:
        results = json.loads(file.read_text())
        scored[results["config"]["detector"]["name"]] = results["detection"]["contaminated"]
    assert len(scored) == 11  # every detector
    for name, det in scored.items():
        assert det["n_scored"] == 20 and 0.0 <= det["auroc"] <= 1.0, name
    # the audit of a model directory on the benchmark, its paraphrase file as the non-member items, every detector
    audit(
        tmp_path,
        *[c for c in common if c.startswith(("hydra.", "domain="))],
        f"audit.target={dirs['contaminated-arith']}",
        f"audit.references=[{dirs['clean']}]",
        *(f"detectors.{d}.corpus={dirs['contaminated-arith'] / 'training_texts.jsonl'}" for d in ("ngram", "dcpdd")),
        tag="mine",
        world=False,
    )
    audited = json.loads((tmp_path / "audit-mine" / "results.json").read_text())["audit"]
    assert audited["truth"] is None and audited["nonmembers"].startswith("20 rewrites")
    assert not [k for k, v in audited["detectors"].items() if "not_run" in v]  # all 11 ran
    names = {v["name"] for v in audited["verdicts"]}
    assert {"codec/bands", "benbench/ppl", "constat", "cdd/reference", "dcpdd", "ngram", "mitigation/railcap"} <= names
