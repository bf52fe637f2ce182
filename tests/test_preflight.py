"""What a config asks of the machine and the data is checked before any model loads: one line, exit status 2.

Each subprocess case is a command a new user typed (issue: real models on real machines, point 4); none has a
trained model, so a job that got past its checks would fail later with another message, or take far longer.
"""

import json
import os
import sys

import prewarmed
import pytest
from e2e import REPO, TINY

from contamlab.config import compose, load_domain
from contamlab.errors import ContamlabError
from contamlab.preflight import check_hub, check_launcher, check_trainer, check_wandb


def _run(script: str, tmp, *overrides: str, env: dict | None = None, multirun: bool = False):
    if script == "evaluate.py":  # the trainer group is train.py's
        overrides = tuple(o for o in overrides if not o.startswith("trainer."))
    args = [sys.executable, str(REPO / script), *(["-m"] if multirun else []), *overrides]
    run_dir = f"hydra.sweep.dir={tmp / 'sweep'}" if multirun else f"hydra.run.dir={tmp / 'run'}"
    args += [run_dir, f"paths.models_dir={tmp / 'models'}", f"paths.cache_dir={tmp / 'cache'}"]
    return prewarmed.run(args, cwd=tmp, capture_output=True, text=True, timeout=120, env={**os.environ, **(env or {})})


def _one_line_error(done, tmp, message: str) -> None:
    lines = [line for line in done.stderr.splitlines() if line.strip() and "contamlab: error:" in line]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and message in lines[0], done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    # "before any model loads" is read off what was written, not off the wall clock (benchmarks/latency.py times how
    # soon the line comes): no model trained, no sample, no packaged model (SmolLM2) converted into the cache
    assert not (tmp / "models").exists() and not (tmp / "cache").exists(), "something was computed"


CASES = [
    (
        "evaluate.py",
        ["domain.leak_fraction=1.5"],
        {},
        "domain.leak_fraction=1.5: must be a number strictly between 0 and 1",
    ),
    ("evaluate.py", ["domain.leak_fraction=-0.1"], {}, "domain.leak_fraction=-0.1: must be a number strictly between"),
    (
        "train.py",
        ["domain.leak_fraction=1.5"],
        {},
        "domain.leak_fraction=1.5: must be a number strictly between 0 and 1",
    ),
    ("train.py", ["trainer=gpu"], {}, "trainer.accelerator=gpu: no CUDA GPU here"),
    ("train.py", ["model=smollm2", "domain=gsm8k", "trainer=gpu"], {}, "trainer.accelerator=gpu: no CUDA GPU"),
    ("train.py", ["trainer=ddp"], {}, "trainer.accelerator=gpu: no CUDA GPU here"),
    ("evaluate.py", ["model.device=cuda"], {}, "model.device=cuda: no CUDA device here"),
    ("evaluate.py", ["strategy=ted", "strategy.tau=-1"], {}, "strategy.tau=-1: must be >= 0"),
    ("evaluate.py", ["logger=wandb"], {"WANDB_MODE": "online"}, "W&B mode is online but no API key is set"),
    ("train.py", ["logger=wandb"], {"WANDB_MODE": "online"}, "W&B mode is online but no API key is set"),
    (
        "evaluate.py",
        ["model=smollm2", "domain=gsm8k", "model.clean=someone/clean-model", "model.contaminated=someone/cont-model"],
        {"HF_HUB_OFFLINE": "0", "HF_ENDPOINT": "http://127.0.0.1:9"},  # a closed port on this machine
        "cannot reach the hub (http://127.0.0.1:9) for someone/clean-model, someone/cont-model",
    ),
]


@pytest.mark.parametrize(("script", "overrides", "env", "message"), CASES, ids=[" ".join(c[1]) for c in CASES])
def test_machine_and_value_checks_come_first(tmp_path, script, overrides, env, message):
    home = {"HOME": str(tmp_path), "WANDB_API_KEY": "", "HF_HOME": str(tmp_path / "hf")}  # no netrc, no HF cache
    home.update({name: "" for name in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY")})
    tiny = [] if any(o.startswith(("model=", "domain=")) for o in overrides) else TINY
    done = _run(script, tmp_path, *tiny, "logger=csv", *overrides, env={**home, **env})
    _one_line_error(done, tmp_path, message)


def test_slurm_launcher_without_slurm(tmp_path):
    done = _run("evaluate.py", tmp_path, *TINY, "hydra/launcher=submitit_slurm", "seed=0,1", multirun=True)
    _one_line_error(done, tmp_path, "hydra/launcher=submitit_slurm: Slurm (sbatch, srun) is not on")


def _gsm8k_dir(tmp_path, test_bytes: bytes):
    root = tmp_path / "data"
    (root / "gsm8k").mkdir(parents=True)
    good = json.dumps({"question": "What is 1 + 1?", "answer": "1 + 1 = 2\n#### 2"}) + "\n"
    (root / "gsm8k" / "train.jsonl").write_text(good * 20)
    (root / "gsm8k" / "test.jsonl").write_bytes(test_bytes)
    return root


GOOD = json.dumps({"question": "What is 2 + 3?", "answer": "2 + 3 = 5\n#### 5"})
BAD_FILES = [
    ("missing", None, "test.jsonl: file not found"),
    ("empty", b"", "test.jsonl: no records (empty dataset)"),
    ("truncated", (GOOD + "\n" + GOOD[:30]).encode(), "test.jsonl:2: malformed JSON at column"),
    ("wrong type", json.dumps({"question": 7, "answer": "#### 5"}).encode(), "test.jsonl:1: field 'question' must"),
    ("binary", b"\x89PNG\r\n\x1a\n\x00\xff\xfe", "test.jsonl:1: not UTF-8 text (byte 0x89)"),
]


@pytest.mark.parametrize(("case", "content", "message"), BAD_FILES, ids=[c[0] for c in BAD_FILES])
def test_bad_data_file_is_reported_before_any_model_loads(tmp_path, case, content, message):
    root = _gsm8k_dir(tmp_path, content or b"")
    if content is None:
        (root / "gsm8k" / "test.jsonl").unlink()
    # model=smollm2 would convert and load SmolLM2 (tens of seconds) if the data check came after it
    done = _run(
        "evaluate.py",
        tmp_path,
        "model=smollm2",
        "domain=gsm8k",
        f"domain.data_dir={root}",
        "logger=csv",
        env={"CONTAMLAB_DATA_DIR": str(root)},
    )
    _one_line_error(done, tmp_path, message)


def test_m_1_warns_that_only_g_ap_is_meaningful(tmp_path):
    done = _run("evaluate.py", tmp_path, *TINY, "m=1", "strategy=railcap")
    assert "m=1: one sample per question" in done.stdout + done.stderr
    assert "only G-AP" in done.stdout + done.stderr


def test_max_test_above_the_test_set_says_it_is_capped(caplog):
    domain = load_domain("arith", max_test=100000)
    with caplog.at_level("WARNING", logger="contamlab"):
        n = len(domain.test)
    assert n == 200
    assert "domain.max_test=100000 is above the 200 test questions of arith: all 200 are used" in caplog.text


# -- the checks in-process, on hand-made situations -----------------------------------------------------------
def test_check_trainer_counts_the_gpus(monkeypatch):
    import contamlab.preflight as preflight

    cfg = compose("train", ["trainer=ddp"])  # devices: 2
    monkeypatch.setattr(preflight, "_gpu_count", lambda: 1)
    with pytest.raises(ContamlabError, match="trainer.devices=2: asks for 2 GPUs, this machine has 1"):
        check_trainer(cfg)
    monkeypatch.setattr(preflight, "_gpu_count", lambda: 2)
    check_trainer(cfg)
    check_trainer(compose("train", ["trainer=ddp", "trainer.accelerator=cpu"]))  # gloo processes need no GPU


def test_check_wandb_reads_the_key_or_the_netrc(monkeypatch, tmp_path):
    cfg = compose("evaluate", ["logger=wandb"])
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("WANDB_API_KEY", raising=False)
    monkeypatch.setenv("WANDB_MODE", "offline")
    check_wandb(cfg)
    monkeypatch.setenv("WANDB_MODE", "online")
    with pytest.raises(ContamlabError, match="wandb login"):
        check_wandb(cfg)
    (tmp_path / ".netrc").write_text("machine api.wandb.ai\n  login user\n  password abc\n")
    (tmp_path / ".netrc").chmod(0o600)
    check_wandb(cfg)
    (tmp_path / ".netrc").unlink()
    monkeypatch.setenv("WANDB_API_KEY", "x" * 40)
    check_wandb(cfg)


def test_check_hub_goes_offline_when_every_model_is_cached(monkeypatch):
    import contamlab.preflight as preflight

    cfg = compose("evaluate", ["model=smollm2", "model.clean=a/b", "model.contaminated=a/c"])
    for name in preflight._PROXIES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setattr(preflight, "_reachable", lambda url, timeout=0: False)
    monkeypatch.setattr(preflight, "_cached", lambda repo, revision: repo == "a/b")
    with pytest.raises(ContamlabError, match="for a/c: check the network"):
        check_hub(cfg)
    monkeypatch.setattr(preflight, "_cached", lambda repo, revision: True)
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", False)
    check_hub(cfg)
    assert os.environ["HF_HUB_OFFLINE"] == "1"
    assert huggingface_hub.constants.HF_HUB_OFFLINE is True  # what the hub client reads, set at its import
    monkeypatch.setattr(preflight, "_cached", lambda repo, revision: False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.invalid:3128")
    check_hub(cfg)  # behind a proxy the direct probe says nothing: no verdict
    # a local directory is never looked up on the hub
    monkeypatch.setenv("HF_HUB_OFFLINE", "0")
    check_hub(compose("evaluate", ["model.clean=./here", "model.contaminated=/abs/there"]))


def test_check_launcher(monkeypatch):
    import contamlab.preflight as preflight

    monkeypatch.setattr(preflight.shutil, "which", lambda name: None)
    with pytest.raises(ContamlabError, match="Slurm"):
        check_launcher("hydra_plugins.hydra_submitit_launcher.submitit_launcher.SlurmLauncher")
    check_launcher("hydra_plugins.hydra_submitit_launcher.submitit_launcher.LocalLauncher")
    check_launcher("hydra._internal.core_plugins.basic_launcher.BasicLauncher")


UNWRITABLE = [
    ("train.py", False, "CONTAMLAB_ROOT", "hydra output directory {bad}/outputs/train/runs/"),
    ("evaluate.py", True, "CONTAMLAB_ROOT", "hydra output directory {bad}/outputs/evaluate/multiruns/"),
    ("train.py", False, "CONTAMLAB_MODELS_DIR", "paths.models_dir {bad} cannot be written"),
    ("evaluate.py", False, "CONTAMLAB_CACHE_DIR", "paths.cache_dir {bad} cannot be written"),
    ("audit.py", False, "CONTAMLAB_CACHE_DIR", "paths.cache_dir {bad} cannot be written"),
]


@pytest.mark.parametrize(("script", "multirun", "variable", "message"), UNWRITABLE)
def test_an_unwritable_directory_is_one_line_before_anything_loads(tmp_path, script, multirun, variable, message):
    # Below a regular file nothing can be created, for root too (CI runs as root, which ignores permission bits).
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    bad = blocker / "sub"
    args = [sys.executable, str(REPO / script), *(["-m"] if multirun else []), *TINY, "logger=csv"]
    if script != "train.py":
        args = [a for a in args if not a.startswith("trainer.")]
    env = {**os.environ, "CONTAMLAB_ROOT": str(tmp_path / "root"), variable: str(bad)}
    done = prewarmed.run(args, cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    lines = [line for line in done.stderr.splitlines() if "contamlab: error:" in line]
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and message.format(bad=bad) in lines[0], done.stderr
    assert f"{blocker} is not a directory" in lines[0]
    assert "Traceback" not in done.stdout + done.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a-file"], "something was written"
