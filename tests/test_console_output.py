"""A job's console output: its progress bars (each naming the model it samples), its results and where its files are.

Nothing else: W&B's run headers and panels, transformers' "Loading weights" / "Writing model shards" bars and
matplotlib's font-cache notice stay out unless ``progress=true`` (or ``logger.wandb.verbose=true``) asks for them, so
that a ``progress=false`` job fits on one screen. The jobs run on the session's small world (conftest.small_world).
"""

import os
import re
import sys
from pathlib import Path

import prewarmed
import pytest
from e2e import REPO, SMALL_WORLD

from contamlab.tracking import Tracking

pytestmark = pytest.mark.xdist_group("small_world")  # one worker trains the small world for every test using it

# A progress=false job's console: the detector's two lines, the metrics line with the results folder, the W&B line.
MAX_QUIET_LINES = 10


def _evaluate(small_world: Path, tmp: Path, tag: str, *overrides: str, env: dict[str, str]):
    args = [
        sys.executable,
        str(REPO / "evaluate.py"),
        *SMALL_WORLD,
        f"paths.models_dir={small_world / 'models'}",
        f"paths.cache_dir={tmp / 'cache'}",  # shared by the two jobs: the second one's samples come from the cache
        "strategy=railcap",
        "logger=wandb",
        "m=2",
        "max_new_tokens=32",
        "metric.bootstrap=50",
        f"hydra.run.dir={tmp / tag}",
        *overrides,
    ]
    result = prewarmed.run(args, cwd=tmp, env=env, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return result, tmp / tag


@pytest.fixture(scope="module")
def jobs(small_world, tmp_path_factory):
    """A ``progress=false`` job with a detector (two W&B runs), then ``progress=true`` without; W&B offline."""
    tmp = tmp_path_factory.mktemp("console")
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(tmp / "wandb-home")}
    # A fresh matplotlib cache, so that the quiet job is the one that builds the font list (and its INFO notice).
    quiet_env = {**env, "MPLCONFIGDIR": str(tmp / "mpl")}
    quiet = _evaluate(small_world, tmp, "quiet", "detector=loss", "progress=false", env=quiet_env)
    loud = _evaluate(small_world, tmp, "progress", "detector=none", "progress=true", env=env)
    return {"quiet": quiet, "progress": loud}


def _lines(result) -> list[str]:
    """The console's lines as a terminal would leave them (a bar's ``\\r`` updates end as one line)."""
    return [line.rsplit("\r", 1)[-1] for line in (result.stdout + result.stderr).splitlines() if line.strip()]


def test_a_quiet_job_fits_on_one_screen(jobs):
    result, out = jobs["quiet"]
    lines = _lines(result)
    text = "\n".join(lines)
    assert len(lines) <= MAX_QUIET_LINES, text
    assert "Loading weights" not in text and "Writing model shards" not in text, text
    assert not [line for line in lines if line.startswith("wandb:")], text
    assert "matplotlib" not in text, text
    assert list((out.parent / "mpl").glob("fontlist-*.json"))  # matplotlib did build its font list in this job
    # the results: the metrics line names the folder that holds results.json
    metrics = next(line for line in lines if "SA-PPG" in line)
    assert f"(results in {out})" in metrics and (out / "results.json").is_file(), text


def test_the_wandb_line_names_a_folder_that_holds_the_runs(jobs):
    result, out = jobs["quiet"]
    hints = [line for line in _lines(result) if "wandb sync" in line]
    assert len(hints) == 1, _lines(result)
    folder = Path(hints[0].rsplit("wandb sync ", 1)[1])
    assert folder == out / "wandb"
    # the evaluation's run and the detection's: one `wandb sync` of the folder uploads both
    assert len(list(folder.glob("offline-run-*/*.wandb"))) == 2
    assert result.stdout.splitlines()[-1] == hints[0]  # the job's last log line


def test_progress_bars_name_the_model_and_the_strategy(jobs):
    result, _ = jobs["progress"]
    bars = {m.group(1) for m in re.finditer(r"^(sample [^:]+):", result.stderr.replace("\r", "\n"), re.M)}
    assert bars == {"sample clean/identity", "sample contaminated/railcap", "sample clean-2/identity"}, bars
    # progress=true asks for the libraries' bars; W&B's own output waits for logger.wandb.verbose=true
    assert "Loading weights" in result.stderr
    assert not any(line.startswith("wandb:") for line in _lines(result))


# -- training's W&B logger ---------------------------------------------------------------------------------------
_STAGE = """
import sys
from pathlib import Path

from contamlab.tracking import Tracking

tracking = Tracking(wandb={"project": "contamlab", "mode": "offline", "verbose": sys.argv[2] == "verbose"})
loggers = tracking.lightning_loggers(Path(sys.argv[1]), "train-tiny-arith", "tiny-arith-clean", config=lambda: {})
for step in range(3):
    for logger in loggers:
        logger.log_metrics({"train/loss": 1.0 / (step + 1)}, step=step)
tracking.finish(loggers)
"""


@pytest.mark.parametrize("verbose", [False, True])
def test_a_training_stage_wandb_logger_is_quiet_unless_verbose(tmp_path, verbose):
    """The Lightning W&B logger of a training stage: no W&B output (not even Lightning's deprecated ``anonymous``
    warning) unless ``logger.wandb.verbose``; the run is written all the same."""
    work = tmp_path / "clean-0123.partial"
    script = tmp_path / "stage.py"
    script.write_text(_STAGE)
    env = {**os.environ, "WANDB_MODE": "offline", "WANDB_DIR": str(tmp_path)}
    args = [sys.executable, str(script), str(work), "verbose" if verbose else "quiet"]
    done = prewarmed.run(args, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    output = done.stdout + done.stderr
    assert list(work.glob("wandb/offline-run-*/*.wandb")), output
    assert "anonymous" not in output
    assert ("wandb:" in output) is verbose, output


# -- the one line that replaces W&B's own ------------------------------------------------------------------------
def test_sync_hint_names_the_offline_runs_under_a_folder(tmp_path):
    offline = Tracking(wandb={"mode": "offline"})
    assert offline.sync_hint(tmp_path) is None  # no run written (yet)
    (tmp_path / "wandb" / "offline-run-20260101_000000-abcd1234").mkdir(parents=True)
    runs = tmp_path / "wandb"
    assert offline.sync_hint(tmp_path) == f"W&B runs saved offline in {runs}; upload them with: wandb sync {runs}"
    for other in (Tracking(), Tracking(wandb={"mode": "online"}), Tracking(wandb={"mode": "disabled"})):
        assert other.sync_hint(tmp_path) is None  # nothing to upload: no W&B, or already online


def test_wandb_settings_follow_verbose_and_mode():
    quiet_offline = Tracking(wandb={"mode": "offline"})._settings()
    assert quiet_offline.silent  # the folder and sync hint are ours; W&B's would name a .partial folder
    quiet_online = Tracking(wandb={"mode": "online"})._settings()
    assert quiet_online.quiet and not quiet_online.silent  # the run's URL stays
    verbose = Tracking(wandb={"mode": "offline", "verbose": True})._settings()
    assert not verbose.silent and not verbose.quiet
