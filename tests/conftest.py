import os
import shutil
from pathlib import Path

import pytest

from contamlab.config import spin_less_when_busy

REPO = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("CONTAMLAB_DATA_DIR", REPO.parent / "shared" / "data"))

# What each entry point does first (contamlab.config.run_safely), here before this process imports torch: on a busy
# machine (make test's two workers on two cores) OpenMP's waiting threads sleep instead of spin. The jobs the tests
# run in-process (tests/jobs.py: the trained worlds' two-thread base stages) and the prewarmed server's forks (it
# inherits this environment) train as a train.py process would; spinning, the small world's training took 7x longer
# on a busy 2-core machine. It changes no number (docs/performance.md).
spin_less_when_busy()


@pytest.fixture(scope="session")
def _root(tmp_path_factory) -> Path:
    """Where the entry points' default paths (outputs/models, outputs/cache, Hydra's run dirs) lead in tests."""
    return tmp_path_factory.mktemp("root")


WANDB_MODE = os.environ.get("WANDB_MODE", "disabled")  # the caller's choice, read once before any test changes it


def _set_test_env(mp: pytest.MonkeyPatch, root: Path) -> None:
    """Tests run offline, W&B off, with the shared data copy, and never write into the checkout's outputs/."""
    mp.setenv("CONTAMLAB_ROOT", str(root))
    for name in ("CONTAMLAB_MODELS_DIR", "CONTAMLAB_CACHE_DIR"):
        mp.delenv(name, raising=False)
    mp.setenv("CONTAMLAB_DATA_DIR", str(DATA))
    mp.setenv("HF_HUB_OFFLINE", "1")
    mp.setenv("HF_DATASETS_OFFLINE", "1")
    mp.setenv("WANDB_MODE", WANDB_MODE)
    # huggingface_hub reads HF_HUB_OFFLINE at import time; make the offline mode hold in-process too.
    import huggingface_hub.constants

    mp.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)


@pytest.fixture(scope="session", autouse=True)
def _session_env(_root):
    """The test environment for the session fixtures too (the trained worlds), which run before any test's.

    The worlds train in-process (tests/jobs.py) and leave the environment as they found it; a worker's prewarmed
    server (tests/prewarmed.py) takes the environment of its first process run, so that every later run forks from it.
    """
    with pytest.MonkeyPatch.context() as mp:
        _set_test_env(mp, _root)
        yield


@pytest.fixture(autouse=True)
def _env(monkeypatch, _root):
    """The test environment again for each test, so that one test's changes to it end with that test."""
    _set_test_env(monkeypatch, _root)


@pytest.fixture(scope="session")
def data_dir() -> Path:
    if not (DATA / "gsm8k" / "test.jsonl").is_file():
        pytest.fail(f"GSM8K copy not found under {DATA}; set CONTAMLAB_DATA_DIR")
    return DATA


def pytest_collection_modifyitems(config, items):
    # The worlds' training (test_world_detection: the small one, and the default one in the slow tier) starts first,
    # so that under pytest-xdist the rest of the suite runs beside it instead of after it.
    items.sort(key=lambda item: item.path.name not in ("test_world_detection.py", "test_audit_e2e.py"))


def _outputs_state() -> dict[str, float]:
    root = REPO / "outputs"
    return {str(p): p.stat().st_mtime for p in root.rglob("*") if p.is_file()} if root.is_dir() else {}


def pytest_configure(config):
    # Small models gain nothing from a second thread, and lose a lot when another process holds a core.
    import torch

    torch.set_num_threads(1)
    if not hasattr(config, "workerinput"):  # the controlling process (or the only one)
        config._outputs_before = _outputs_state()


def pytest_sessionfinish(session, exitstatus):
    """Fail the run (in CI) if a test wrote into the checkout's outputs/, where the user's models and reports live."""
    before = getattr(session.config, "_outputs_before", None)
    if before is None:
        return
    after = _outputs_state()
    touched = sorted(p for p, mtime in after.items() if before.get(p) != mtime)
    if touched:
        # A failure in CI (a clean clone, nothing else running); a warning elsewhere, where a train.py or evaluate.py
        # of the user's own may be writing there beside the tests.
        strict = bool(os.environ.get("CI"))
        print(
            f"\n{'ERROR' if strict else 'warning'}: files under {REPO / 'outputs'} changed during the tests: ", end=""
        )
        print(f"{touched[:10]}{' ...' if len(touched) > 10 else ''}")
        if strict:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.fixture(scope="session")
def trained(tmp_path_factory):
    """A tiny default world trained once per test session by train.py's job, in-process (tests/jobs.py)."""
    from jobs import make_trained

    return make_trained(tmp_path_factory)


def train_world(tmp: Path, *overrides: str) -> dict[str, Path]:
    """train.py's job on the arith world, in-process, its models under ``tmp/models``; returns the stage dirs."""
    from jobs import job_config, run_job

    overrides = ("domain=arith", "logger=csv", f"paths.models_dir={tmp / 'models'}", *overrides)
    return run_job("train", job_config("train", tmp / "runs" / "train", *overrides))


@pytest.fixture(scope="session")
def small_world(tmp_path_factory):
    """The small world (e2e.SMALL_WORLD) trained once per session: seed 0's models and seed 1's clean model.

    Seed 1's clean model is the audits' reference (``clean@1``): a model of the same recipe that never saw a test item.
    """
    from e2e import SMALL_WORLD

    tmp = tmp_path_factory.mktemp("small-world")
    common = [*SMALL_WORLD, "trainer.enable_progress_bar=false"]
    train_world(tmp, *common)
    train_world(tmp, *common, "seed=1", "stage=clean")
    return tmp


@pytest.fixture(scope="session")
def _random_smollm2(tmp_path_factory) -> Path:
    """A random two-layer SmolLM2 (``model.random_layers=2``), built once per worker from the GGUF's metadata."""
    from contamlab.models.packaged import SMOLLM2
    from contamlab.models.random_init import random_model_dir

    return random_model_dir(SMOLLM2, tmp_path_factory.mktemp("random-smollm2") / "smollm2", 2)


@pytest.fixture
def random_smollm2_in(_random_smollm2):
    """``seed(cache_dir)`` puts the worker's random two-layer SmolLM2 where a build into ``cache_dir`` would.

    Reading the GGUF's config and vocabulary is most of a build (8.7 s on an idle 2-core machine, in the gguf
    package's reader), so the tests that train on the random model share one build as hard links;
    tests/test_real_world.py also clears it and builds it again, since the rebuild is what it tests.
    """

    def seed(cache_dir: Path) -> Path:
        target = Path(cache_dir) / "smollm2" / _random_smollm2.name
        if not target.exists():
            shutil.copytree(_random_smollm2, target, copy_function=os.link)
        return target

    return seed


# -- the tiny tokenizer and model of the detector tests (tests/tinylm.py) ------------------------------------------
@pytest.fixture(scope="module")
def tok():
    """tinylm's 300-token BPE tokenizer, one per test module (a module may define its own ``tok`` instead)."""
    from tinylm import tiny_tokenizer

    return tiny_tokenizer()


@pytest.fixture(scope="module")
def model(tok):
    """tinylm's one-layer GPT-NeoX over ``tok``, in eval mode, one per test module."""
    from tinylm import tiny_model

    return tiny_model(tok)
