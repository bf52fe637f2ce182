"""A stage killed with SIGKILL and resumed ends with the same weights and loss history as an uninterrupted one."""

import csv
import json
import logging
import subprocess
import sys
import textwrap
from pathlib import Path

import torch
from safetensors.torch import load_file

from contamlab.config import compose
from contamlab.training.datamodule import ResumableLoader

# A base stage of 20 steps over 7 batches per epoch: three epochs, checkpoints every 4 steps (20 // 5). The kill at
# step 13 comes after the checkpoint of step 12, which lies mid-way through the second epoch (batch 6 of 7), so the
# resume must restore both the epoch's permutation and its position, then go on into a fresh third epoch.
SMALL = [
    "stage=base",
    "domain.generator.n_train=30",
    "domain.generator.n_test=20",
    "model.arch.hidden_size=32",
    "model.arch.num_layers=1",
    "model.arch.num_heads=2",
    "model.arch.intermediate_size=64",
    "model.tokenizer.vocab_size=300",
    "base.steps=20",
    "base.batch=4",
    "base.seq_len=64",
    "base.paraphrase_n=0",
    "base.num_threads=1",
    "trainer.log_every_n_steps=1",
    "trainer.progress_every_n_steps=4",
    "trainer.enable_progress_bar=false",
    "logger=csv",
]
KILL_AT = 13

# Runs the stage in a child process that SIGKILLs itself once step KILL_AT is done: no exception, no clean-up, as
# `kill -9` (a callback that runs before ModelCheckpoint's, so step 13 is never saved).
KILLER = textwrap.dedent(
    """
    import os, signal, sys
    import lightning as L
    from lightning.pytorch.callbacks import Callback
    from contamlab.config import compose
    from contamlab.jobs.train import run

    class Kill(Callback):
        def on_train_batch_end(self, trainer, *args):
            if trainer.global_step == int(sys.argv[1]):
                os.kill(os.getpid(), signal.SIGKILL)

    init = L.Trainer.__init__
    L.Trainer.__init__ = lambda self, *a, callbacks=(), **kw: init(self, *a, callbacks=[*callbacks, Kill()], **kw)
    run(compose("train", sys.argv[2:]))
    """
)


def _train(models: Path) -> Path:
    from contamlab.jobs.train import run

    return run(compose("train", [*SMALL, f"paths.models_dir={models}"]))["base"]


def _rows(stage: Path) -> list[dict]:
    with (stage / "logs" / "metrics.csv").open(newline="") as handle:
        return list(csv.DictReader(handle))


def test_killed_stage_resumes_exactly(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="contamlab")
    reference = _train(tmp_path / "whole")
    # Not a terminal: a log line every 4 steps over the stage's 20 (not per epoch of 7 batches), with an ETA.
    steps = [r.getMessage() for r in caplog.records if ": step " in r.getMessage()]
    assert [m.split(": step ")[1].split(" ")[0] for m in steps] == ["4/20", "8/20", "12/20", "16/20", "20/20"]
    assert all(" tok/s  elapsed " in m and " ETA " in m and " loss " in m for m in steps)
    caplog.clear()

    models = tmp_path / "killed"
    killed = subprocess.run(
        [sys.executable, "-c", KILLER, str(KILL_AT), *SMALL, f"paths.models_dir={models}"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == -9, killed.stdout + killed.stderr
    partial = next(models.rglob("base-*.partial"))
    assert torch.load(partial / "checkpoints" / "last.ckpt", weights_only=False)["global_step"] == 12

    resumed = _train(models)
    messages = [r.getMessage() for r in caplog.records]
    assert "stage base: resumed at step 12/20" in messages
    assert [m.split(": step ")[1].split(" ")[0] for m in messages if ": step " in m] == ["16/20", "20/20"]
    assert resumed.name == reference.name  # same stage key
    summary = json.loads((resumed / "train_summary.json").read_text())
    assert summary["steps"] == 20 and summary["resumed_from"]

    # Bit-identical weights: same batches in the same order, same optimiser and scheduler state, and one thread
    # throughout, so every float reduction runs in the same order (tolerance 0).
    want, got = load_file(reference / "model.safetensors"), load_file(resumed / "model.safetensors")
    assert want.keys() == got.keys()
    assert all(torch.equal(want[k], got[k]) for k in want)

    # The loss history survives the resume: every step once, each loss as the uninterrupted run logged it.
    ref_rows, rows = _rows(reference), _rows(resumed)
    assert [int(r["step"]) for r in rows] == list(range(20))
    assert [r["train/loss"] for r in rows] == [r["train/loss"] for r in ref_rows]
    ref_summary = json.loads((reference / "train_summary.json").read_text())
    assert summary["loss_curve"] == ref_summary["loss_curve"] and len(summary["loss_curve"]) == 20


def test_loader_state_replays_the_epoch():
    def loader():
        return ResumableLoader(list(range(10)), batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(7))

    # An uninterrupted pass over two epochs, as a plain DataLoader with the same seed draws them.
    plain = torch.utils.data.DataLoader(
        list(range(10)), batch_size=3, shuffle=True, generator=torch.Generator().manual_seed(7)
    )
    expected = [b.tolist() for _ in range(2) for b in plain]
    first = loader()
    seen = [b.tolist() for b in first]  # epoch 0
    it = iter(first)
    seen += [next(it).tolist(), next(it).tolist()]  # two batches of epoch 1, then "killed"
    state = first.state_dict()
    assert state["batches"] == 2

    second = loader()
    second.load_state_dict(state)
    seen += [b.tolist() for b in second]
    assert seen == expected
