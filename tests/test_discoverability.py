"""What a new user finds: --help is a short usage with examples; make bench and make sync do what they say.

(That `make help` lists every target the README and docs/ name is tests/test_make_targets.py's check.)
"""

import subprocess
import sys

import pytest
from e2e import REPO, stamp


def test_make_bench_trains_what_it_needs():
    plan = subprocess.run(["make", "-n", "bench", stamp()], cwd=REPO, capture_output=True, text=True)
    assert plan.returncode == 0, plan.stderr
    lines = plan.stdout.splitlines()
    first_bench = next(i for i, line in enumerate(lines) if "benchmarks/" in line)
    assert any("train.py domain=arith" in line for line in lines[:first_bench])


@pytest.mark.parametrize(
    ("script", "example"),
    [("evaluate.py", "-m strategy=railcap,lne,ted"), ("train.py", "stage="), ("audit.py", "audit.target=clean")],
)
def test_help_is_a_short_usage_with_examples(script, example):
    result = subprocess.run([sys.executable, str(REPO / script), "--help"], cwd=REPO, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith(f"{script}:") and "Usage: python" in text and example in text
    assert "strategy: all_zero, identity, lne, none, railcap, shortcut, ted" in text  # groups and their options
    assert "model: gemma, gemma3, llama2, pythia, smollm2, tiny" in text
    assert "_target_" not in text and len(text.splitlines()) < 40  # no 100-line config dump


def test_make_sync_skips_partial_stages(tmp_path):
    # The runs of a finished stage are uploaded; those of an abandoned (killed, never resumed) .partial stage are not.
    for stage in ("base-1a2b", "clean-3c4d.partial"):
        (tmp_path / "outputs" / "models" / "tiny" / "arith" / stage / "wandb" / f"offline-run-{stage}").mkdir(
            parents=True
        )
    plan = subprocess.run(["make", "-n", "sync", stamp()], cwd=REPO, capture_output=True, text=True)
    command = next(line for line in plan.stdout.splitlines() if "offline-run-" in line)
    command = command.split("| xargs")[0] + "| xargs -0 -r -n1 basename"
    found = subprocess.run(["bash", "-c", command], cwd=tmp_path, capture_output=True, text=True, check=True)
    assert found.stdout.split() == ["offline-run-base-1a2b"]
