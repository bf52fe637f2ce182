"""Every make target the README names exists and expands; the short ones run (a refactor cannot break one silently).

``make -n`` prints a target's commands without running them: it catches a removed target, a broken variable and
a recipe that names a missing script. The pieces a real run would reach first run for real here (``make help``,
the SmolLM2 directory lookup that ``make smollm2-run`` starts with); the whole ``smollm2-run`` runs in the slow tier.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text()
# A target is named in the README as `make <target>` (with or without variables after it), or run in a code block.
NAMED = sorted(
    set(re.findall(r"`make ([a-z][a-z0-9-]*)", README)) | set(re.findall(r"^make ([a-z][a-z0-9-]*)", README, re.M))
)
DEFINED = set(re.findall(r"^([a-z][a-z0-9_-]*):", (REPO / "Makefile").read_text(), flags=re.M))


def _make(*args: str, timeout: int = 60) -> subprocess.CompletedProcess:
    # The venv is installed already (the suite runs in it), so its stamp is up to date and -n prints only the recipe.
    return subprocess.run(["make", "-C", str(REPO), *args], capture_output=True, text=True, timeout=timeout)


def test_the_readme_names_make_targets():
    assert {"install", "smoke", "test", "reproduce", "calibrate"} <= set(NAMED)


@pytest.mark.parametrize("target", NAMED)
def test_every_target_the_readme_names_exists_and_expands(target):
    assert target in DEFINED, f"README names `make {target}`, the Makefile has no such target"
    done = _make("-n", target)
    assert done.returncode == 0, done.stderr
    # every script a recipe runs is in the repository
    for script in re.findall(r"\b((?:scripts|benchmarks)/[\w/]+\.py|[\w]+\.py)\b", done.stdout):
        if "/" in script or script in ("train.py", "evaluate.py", "audit.py"):
            assert (REPO / script).is_file(), f"make {target} runs {script}, which does not exist"


def test_make_help_lists_the_targets():
    done = _make("help")
    assert done.returncode == 0, done.stderr
    for target in ("test", "reproduce", "smollm2-run", "install"):
        assert target in done.stdout


def test_smollm2_run_short_form_expands_with_the_variables():
    done = _make("-n", "smollm2-run", "SMOL_ARGS=model=smollm2 domain=gsm8k domain.max_test=4 m=2", "SMOL_RUN=/x")
    assert done.returncode == 0, done.stderr
    assert "scripts/smollm2_dir.py" in done.stdout
    assert done.stdout.count("domain.max_test=4 m=2") == 3 and "hydra.sweep.dir=/x/strategies" in done.stdout


def test_smollm2_dir_prints_the_converted_checkpoint(tmp_path):
    from contamlab.models.smollm2 import CONVERTED_NAME, MARKER_FILENAME

    converted = tmp_path / "smollm2" / CONVERTED_NAME
    converted.mkdir(parents=True)
    (converted / MARKER_FILENAME).write_text(json.dumps({"done": True}))  # a finished conversion is reused as is
    done = subprocess.run(
        [sys.executable, str(REPO / "scripts" / "smollm2_dir.py"), f"paths.cache_dir={tmp_path}"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env={**os.environ},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(converted)


@pytest.mark.slow
def test_smollm2_run_completes_in_its_short_form(tmp_path):
    args = "model=smollm2 domain=gsm8k domain.max_test=4 m=2 max_new_tokens=32 progress=false"
    done = _make("smollm2-run", f"SMOL_ARGS={args}", f"SMOL_RUN={tmp_path}", timeout=1800)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = (tmp_path / "report.md").read_text()
    assert "railcap" in report and "codec" in report.lower()


def test_real_world_expands_with_its_variables():
    done = _make("-n", "real-world", "RW_MODELS=smollm2", "RW_SEEDS=3 5", "RW=/x", "RW_ARGS=model.random_layers=2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("model.random_layers=2") == 6  # both trainings, both audits, both detections
    assert "strategy=none" in done.stdout and "hydra.sweep.dir=/x/audit/$model-$seed-pq" in done.stdout
    assert "contamlab.analysis.real_world /x" in done.stdout


@pytest.mark.slow
def test_real_world_runs_end_to_end_on_random_models(tmp_path):
    """make real-world on a random two-layer SmolLM2 at a plumbing size: every job, then the report (~4 min)."""
    args = (
        "model.random_layers=2 domain.generator.n_test=20 finetune.clean_n_domain=8 finetune.general.n=0 "
        "domain.leak_general=0 domain.leak_epochs=1 finetune.max_length=128 logger=csv"
    )
    env = {**os.environ, "CONTAMLAB_MODELS_DIR": str(tmp_path / "models"), "CONTAMLAB_CACHE_DIR": str(tmp_path / "c")}
    done = subprocess.run(
        ["make", "-C", str(REPO), "real-world", "RW_MODELS=smollm2", f"RW={tmp_path / 'rw'}", f"RW_ARGS={args}"],
        capture_output=True,
        text=True,
        timeout=1800,
        env=env,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    report = (tmp_path / "rw" / "real_world.md").read_text()
    # three seeds: each seed's clean model audited against the next seed's, both leak forms detected
    assert "### smollm2 (9 audits)" in report
    assert "| loss | verbatim |" in report and "| loss | paraphrased |" in report
    assert "| smollm2 | arith | clean | 2 |" in report
