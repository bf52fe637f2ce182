"""The error-rate audit of a packaged model on GSM8K (experiment=real_audit): its pool of PQ rephrasings, and the
whole audit on a random two-layer SmolLM2 (no weights: model.random_layers=2)."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from contamlab.config import compose
from contamlab.data.jsonl import read_jsonl
from contamlab.models.store import read_training_texts

REPO = Path(__file__).resolve().parents[1]
POOL = [sys.executable, str(REPO / "scripts" / "rephrased_pool.py")]


def _gsm8k_test(data_dir: Path) -> list[dict]:
    return read_jsonl(data_dir / "gsm8k" / "test.jsonl")


def _pq_question(data_dir: Path, index: int) -> str:
    line = read_jsonl(data_dir / "gsm8k-pq" / "rephrase_gsm8k_test.jsonl")[index]["text"]
    return re.match(r"Question:\s*(.*?)\s*\nAnswer:", line, re.DOTALL)[1]


def test_the_pool_is_the_rephrasings_of_the_questions_after_the_audited_ones(data_dir, tmp_path):
    out = tmp_path / "pool.jsonl"
    done = subprocess.run([*POOL, "--skip", "100", "--n", "30", "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = read_jsonl(out)
    test = _gsm8k_test(data_dir)
    assert len(rows) == 30
    for i, row in enumerate(rows):  # row i is test question 100 + i in the PQ file's wording, its own solution kept
        original = test[100 + i]
        assert row["question"] == _pq_question(data_dir, 100 + i) != original["question"].strip()
        assert row["solution"] == original["answer"]
        assert original["answer"].endswith(f"#### {row['answer']}")
    audited = {q["question"].strip() for q in test[:100]} | {_pq_question(data_dir, i) for i in range(100)}
    assert not audited & {row["question"] for row in rows}


def test_a_pool_beyond_the_test_split_is_one_line_and_writes_nothing(data_dir, tmp_path):
    out = tmp_path / "pool.jsonl"
    done = subprocess.run([*POOL, "--skip", "1300", "--n", "30", "--out", str(out)], capture_output=True, text=True)
    assert done.returncode == 2 and not out.exists()
    assert done.stderr.strip() == "error: --skip 1300 --n 30: GSM8K's test split has 1319 questions"


@pytest.mark.xdist_group("random_smollm2")  # one worker builds the random model (conftest)
def test_the_gsm8k_error_rate_audit_runs_on_a_random_smollm2(data_dir, tmp_path, random_smollm2_in):
    """Null and power from a file pool; the twin trains on its leaked half of its own slice and nothing audited."""
    from jobs import run_job

    random_smollm2_in(tmp_path / "cache")

    from contamlab.validation import validate

    pool = tmp_path / "pool.jsonl"
    subprocess.run([*POOL, "--skip", "10", "--n", "40", "--out", str(pool)], check=True, capture_output=True)
    cfg = compose(
        "audit",
        [
            "experiment=real_audit",
            "model=smollm2",
            "model.random_layers=2",
            "domain.max_test=10",
            f"audit.error_rates.pool={pool}",
            "audit.error_rates.pool_size=20",  # the null's pool: the file's first 20; the twin's: the next 20
            "audit.error_rates.twin_pools=own",
            "audit.error_rates.twins=1",
            "audit.error_rates.null_draws=20",
            "audit.detectors=[loss,mink]",
            "audit.n_boot=50",
            "domain.leak_epochs=1",
            "domain.leak_general=0",
            "finetune.max_length=128",
            f"paths.models_dir={tmp_path / 'models'}",
            f"paths.cache_dir={tmp_path / 'cache'}",
            f"paths.output_dir={tmp_path / 'out'}",
            "trainer.enable_progress_bar=false",
            "logger=csv",
            "progress=false",
        ],
    )
    validate(cfg)
    (tmp_path / "out").mkdir()
    record = run_job("audit", cfg)["audit"]
    assert record["truth"] is None  # SmolLM2's pre-training may have read GSM8K: its truth there is not known
    calibration = record["error_rates"]
    assert calibration["pool_items"] == 20 and str(pool) in calibration["pool"]
    readings = {v["name"]: v for v in record["verdicts"]}
    cal = readings["loss"]["detail"]["error_rates"]
    assert cal["null"]["total"] == 20
    (power,) = cal["power"].values()
    assert power["total"] == 1
    assert readings["loss/reference"]["value"] is None  # audit.references=[]: no model is known clean on GSM8K
    # the twin read the leaked half of its own pool (ten rephrasings of the file's second 20), nothing of the null's
    # pool and no audited question
    (twin,) = [p.parent for p in (tmp_path / "models").rglob("train_summary.json") if "twins" in p.parts]
    texts = read_training_texts(twin)
    rows = read_jsonl(pool)
    seen = [k for k, r in enumerate(rows) if any(r["question"] in t for t in texts)]
    assert len(seen) == 10 and min(seen) >= 20
    test = _gsm8k_test(data_dir)[:10]
    assert not [q for q in test if any(q["question"].strip() in t for t in texts)]
    assert json.loads((twin / "train_summary.json").read_text())["precision"] == "bf16-mixed"
