"""Every make target the README and docs/ name exists and expands; the short ones run (a refactor cannot break one
silently).

This module is the one place that checks the documentation's make targets: ``NAMED`` parses every ``make <target>``
of README.md and docs/ (their code blocks and inline code), and one parametrized test checks each. ``make -n`` prints
a target's commands without running them: it catches a removed target, a broken variable and a recipe that names a
missing script. The pieces a real run would reach first run for real here (``make help``, the SmolLM2 directory
lookup that ``make smollm2-run`` starts with); the whole ``smollm2-run`` runs in the slow tier.
"""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^ *```[^\n]*\n(.*?)^ *```", flags=re.S | re.M)
# `make` as a command: at the start of a line or after a shell separator, options and VAR=value before the target
# (`make reproduce ARITH=arith_v1`, `make -n test`, `CONTAMLAB_TEST_PREWARM=0 make test`); prose ("make the model
# fail") is outside code or in a shell comment, and is not read.
MAKE = re.compile(r"(?:^|[\s;&|(])make\s+(?:-[-\w]+\s+|[A-Z_]+=\S*\s+)*([a-z][a-z0-9_-]*)", flags=re.M)


def _code(text: str) -> list[str]:
    """A Markdown page's code: its fenced blocks less their shell comments, then the inline code spans of the rest."""
    blocks = [re.sub(r"(^|\s)#.*", "", block, flags=re.M) for block in FENCE.findall(text)]
    return blocks + re.findall(r"`([^`\n]+)`", FENCE.sub("", text))


def named_targets(pages: list[Path]) -> dict[str, list[str]]:
    """Every make target the pages' code names -> the pages that name it (relative to the repository)."""
    named: dict[str, list[str]] = {}
    for page in pages:
        for target in {t for piece in _code(page.read_text()) for t in MAKE.findall(piece)}:
            named.setdefault(target, []).append(str(page.relative_to(REPO)))
    return dict(sorted(named.items()))


NAMED = named_targets(PAGES)
DEFINED = set(re.findall(r"^([a-z][a-z0-9_-]*):", (REPO / "Makefile").read_text(), flags=re.M))


def _make(*args: str, timeout: int = 60) -> subprocess.CompletedProcess:
    # The venv is installed already (the suite runs in it), so its stamp is up to date and -n prints only the recipe.
    return subprocess.run(["make", "-C", str(REPO), *args], capture_output=True, text=True, timeout=timeout)


def test_the_parser_finds_the_targets_the_docs_name():
    readme = {t for t, pages in NAMED.items() if "README.md" in pages}
    assert {"install", "smoke", "test", "reproduce", "calibrate", "meta-audit"} <= readme
    assert {"install-vllm", "real-audit", "reproduce-paper", "wandb-report"} <= set(NAMED)  # named in docs/ only
    # commands in code blocks and inline code, with options and variables before the target; never prose
    page = "```bash\nmake smoke   # prose: make sure\nCI=1 make -n test-slow\n```\nTo make the model fail, `make lint`."
    assert sorted({t for piece in _code(page) for t in MAKE.findall(piece)}) == ["lint", "smoke", "test-slow"]


@pytest.mark.parametrize("target", NAMED)
def test_every_target_the_docs_name_exists_and_expands(target):
    where = ", ".join(NAMED[target])
    assert target in DEFINED, f"{where} name `make {target}`, the Makefile has no such target"
    done = _make("-n", target)
    assert done.returncode == 0, f"make -n {target} (named in {where}): {done.stderr}"
    # every script a recipe runs is in the repository
    for script in re.findall(r"\b((?:scripts|benchmarks)/[\w/]+\.py|[\w]+\.py)\b", done.stdout):
        if "/" in script or script in ("train.py", "evaluate.py", "audit.py"):
            assert (REPO / script).is_file(), f"make {target} runs {script}, which does not exist"


def test_make_help_lists_every_target_the_docs_name():
    done = _make("-s", "--no-print-directory", "help")
    assert done.returncode == 0, done.stderr
    listed = {re.sub(r"\x1b\[[0-9;]*m", "", line).split()[0] for line in done.stdout.splitlines() if line.strip()}
    assert {"test", "reproduce", "smollm2-run", "install"} <= listed
    assert set(NAMED) <= listed, {t: NAMED[t] for t in set(NAMED) - listed}


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


# The real-LM targets' jobs at a plumbing size, on a random two-layer SmolLM2 (the slow tier runs them whole)
PLUMBING = (
    "model.random_layers=2 domain.generator.n_test=20 finetune.clean_n_domain=8 finetune.general.n=0 "
    "domain.leak_general=0 domain.leak_epochs=1 finetune.max_length=128 logger=csv"
)


def _make_at_plumbing_size(tmp_path: Path, *args: str) -> None:
    """Run ``make <args>`` with the models and caches under ``tmp_path``; it must succeed."""
    env = {**os.environ, "CONTAMLAB_MODELS_DIR": str(tmp_path / "models"), "CONTAMLAB_CACHE_DIR": str(tmp_path / "c")}
    done = subprocess.run(["make", "-C", str(REPO), *args], capture_output=True, text=True, timeout=1800, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]


def test_real_world_expands_with_its_variables():
    done = _make("-n", "real-world", "RW_MODELS=smollm2", "RW_SEEDS=3 5", "RW=/x", "RW_ARGS=model.random_layers=2")
    assert done.returncode == 0, done.stderr
    assert done.stdout.count("model.random_layers=2") == 6  # both trainings, both audits, both detections
    assert "strategy=none" in done.stdout and "hydra.sweep.dir=/x/audit/$model-$seed-pq" in done.stdout
    # the sham controls audited beside the clean models, the next seed's clean model the reference of every audit
    assert "audit.target=clean,sham,contaminated" in done.stdout
    assert done.stdout.count("audit.references=[clean@$ref]") == 2
    assert "contamlab.analysis.real_world /x" in done.stdout


@pytest.mark.slow
def test_real_world_runs_end_to_end_on_random_models(tmp_path):
    """make real-world on a random two-layer SmolLM2 at a plumbing size: every job, then the report (~6 min)."""
    _make_at_plumbing_size(tmp_path, "real-world", "RW_MODELS=smollm2", f"RW={tmp_path / 'rw'}", f"RW_ARGS={PLUMBING}")
    report = (tmp_path / "rw" / "real_world.md").read_text()
    # three seeds: each seed's clean, sham and contaminated models audited against the next seed's clean model, both
    # leak forms detected
    assert "### smollm2 (12 models audited)" in report
    assert "| false alarms (clean) | false alarms (sham) |" in report
    assert "| loss | verbatim |" in report and "| loss | paraphrased |" in report
    assert "| smollm2 | arith | clean | 2 |" in report


def test_reproduce_real_expands_with_its_variables():
    done = _make("-n", "reproduce-real", "RR=/x", "RR_SEED=3", "RR_M=8", "RR_ARGS=model.random_layers=2")
    assert done.returncode == 0, done.stderr
    # training, the four evaluate sweeps and both survival runs carry the overrides
    assert done.stdout.count("model.random_layers=2") == 7
    assert done.stdout.count("m=8 ") == 4 and "railcap_ablation=n1,n2,n3,n4,n5,n6,n7,ban" in done.stdout
    assert "--stage clean --out /x/runner_up/clean.json" in done.stdout
    assert "contamlab.analysis.report /x" in done.stdout


@pytest.mark.slow
def test_reproduce_real_runs_end_to_end_on_a_random_model(tmp_path):
    """make reproduce-real on a random two-layer SmolLM2 at a plumbing size: every job, then the report (~5 min)."""
    out = tmp_path / "rr"
    args = f"{PLUMBING} domain.max_new_tokens=16"
    _make_at_plumbing_size(tmp_path, "reproduce-real", f"RR={out}", "RR_M=2", f"RR_ARGS={args}")
    report = (out / "report.md").read_text()
    for section in ("Table 1", "Table 2", "Table 4", "Figure 1", "Figure 2", "Runner-up survival", "SA-PPG strata"):
        assert section in report, section
    assert "| smollm2 × arith | clean |" in report and "| smollm2 × arith | contaminated |" in report


@pytest.mark.slow
def test_the_sampling_benchmark_runs_every_strategy_hook_on_smollm2(tmp_path):
    """make bench-smollm2's sampler benchmark, shortened: identity, RailCap, LNE and TED against the ceiling."""
    from contamlab.models.smollm2 import SmolLM2NotInstalledError, find_gguf

    try:
        find_gguf()
    except SmolLM2NotInstalledError as err:
        pytest.skip(str(err))
    out = tmp_path / "sampling.json"
    script = str(REPO / "benchmarks" / "sampling.py")
    command = [sys.executable, script, "--model", "smollm2", "--questions", "1", "--m", "2", "--max-new-tokens", "8",
               "--skip-generate", "--no-compare-kv", "--out", str(out)]  # fmt: skip
    subprocess.run(command, check=True, cwd=tmp_path)
    rows = json.loads(out.read_text())["rows"]
    for name in ("identity", "railcap n=4", "lne", "ted"):
        assert rows[f"contamlab sampler ({name})"]["tokens"] > 0
    assert rows["ceiling: forward passes alone"]["tok_per_s"] > 0


@pytest.mark.slow
def test_the_gpu_real_lm_script_runs_at_a_plumbing_size_on_the_cpu(tmp_path):
    """scripts/gpu_real_lm.sh on a two-layer random SmolLM2 with the CPU trainer: every step, its JSON (~2 min)."""
    env = {
        **os.environ,
        "PYTHON": sys.executable,
        "TRAINER": "default",
        "GPU_LAYERS": "2",
        "GPU_M": "2",
        "GPU_ARGS": "finetune.clean_n_domain=8 finetune.general.n=4 domain.generator.n_test=20 finetune.epochs=1 "
        "domain.leak_epochs=1 finetune.max_length=128",
        "EVAL_ARGS": "max_new_tokens=16",
        "CONTAMLAB_MODELS_DIR": str(tmp_path / "models"),
        "CONTAMLAB_CACHE_DIR": str(tmp_path / "cache"),
        "CONTAMLAB_GPU_RUN": str(tmp_path / "run"),
    }
    out = tmp_path / "out"
    script = str(REPO / "scripts" / "gpu_real_lm.sh")
    subprocess.run(["bash", script, str(out)], check=True, env=env, capture_output=True, timeout=900)
    report = json.loads((out / "gpu-real-lm.json").read_text())
    assert {s["step"]: s["rc"] for s in report["steps"]} == {
        "inventory": 0, "train": 0, "evaluate": 0, "detect": 0, "gpu_tier": 0
    }  # fmt: skip
    assert [s["stage"] for s in report["stages"]] == ["clean", "contaminated"]
    assert {"evaluate/0_smollm2_arith_identity", "evaluate/1_smollm2_arith_railcap", "detect"} <= set(report["jobs"])
