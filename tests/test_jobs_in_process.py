"""Each job's ``run(cfg)`` called in-process on the tiny trained world: train, evaluate and audit.

The config is composed and validated as the entry point does (:mod:`jobs`); no process is started. The entry points'
own behaviour (exit codes, one-line errors, signals, multirun) is tested through the real processes elsewhere.
"""

import json

from e2e import TINY, stage_dirs
from jobs import job_config, run_evaluate, run_job, run_train


def test_train_run_returns_the_finished_stages_without_training_again(trained):
    tmp, _, _ = trained
    # the default world's stages (test_train_e2e adds arith_pq's contaminated stage to the same world)
    dirs = {path for name, path in stage_dirs(tmp).items() if name in ("base", "clean", "contaminated-arith")}
    before = {path: (path / "model.safetensors").stat().st_mtime_ns for path in dirs}
    out = run_train(tmp)
    assert set(out) == {"base", "clean", "contaminated"} and set(out.values()) == dirs
    after = {path: (path / "model.safetensors").stat().st_mtime_ns for path in out.values()}
    assert after == before  # every stage was done: nothing is written again


def test_evaluate_run_measures_a_strategy(trained, tmp_path):
    tmp, _, _ = trained
    results = run_evaluate(tmp, tmp_path, "strategy=identity")
    assert json.loads((tmp_path / "results.json").read_text())["metrics"] == json.loads(json.dumps(results["metrics"]))
    assert results["strategy"]["name"] == "identity"
    per_question = (tmp_path / "per_question.csv").read_text().splitlines()
    assert len(per_question) == 21  # a header and the 20 test questions


def test_audit_run_reads_the_contaminated_model(trained, tmp_path):
    tmp, _, _ = trained
    cfg = job_config(
        "audit",
        tmp_path,
        *[o for o in TINY if not o.startswith("trainer.")],
        f"paths.models_dir={tmp / 'models'}",
        f"paths.cache_dir={tmp / 'cache'}",
        "audit.target=contaminated",
        "audit.references=[]",
        "audit.detectors=[loss,ngram]",
        "audit.mitigate=[]",
        "audit.n_boot=200",
        "progress=false",
    )
    results = run_job("audit", cfg)
    verdicts = {v["name"]: v for v in results["audit"]["verdicts"]}
    assert {"loss", "ngram"} <= set(verdicts)
    assert results["audit"]["truth"] == {"contaminated": True, "leak": "verbatim"}
    # the recorded training data holds the leaked half verbatim: the 13-gram overlap finds it
    assert verdicts["ngram"]["flagged"] is True and verdicts["ngram"]["value"] > 0.4
    # and against the 20 generated non-members, matched against the same corpus
    against = verdicts["ngram/nonmembers"]
    assert against["n"] == 40 and 0.0 < against["p_value"] <= 1.0 and against["detail"]["n_reference_items"] == 20
    assert (tmp_path / "audit.md").is_file() and (tmp_path / "audit_scores.csv").is_file()
