"""Multi-process training on the CPU: ``trainer=ddp trainer.accelerator=cpu trainer.devices=2`` (gloo).

No GPU is needed to exercise the DDP path: two CPU processes train a few steps of a tiny base stage through the real
train.py, and the resumable loader survives the distributed sampler Lightning puts in it.
"""

import json

import torch
from e2e import train
from lightning.pytorch.utilities.data import _update_dataloader
from torch.utils.data import DistributedSampler, TensorDataset

from contamlab.training.datamodule import ResumableLoader


def test_ddp_on_two_cpu_processes_trains_a_stage(tmp_path):
    result = train(
        tmp_path,
        "stage=base",
        "base.steps=6",
        "trainer=ddp",
        "trainer.accelerator=cpu",
        "trainer.devices=2",
        "trainer.precision=32-true",
        tag="ddp",
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out[-4000:]
    assert "GLOBAL_RANK: 0, MEMBER: 1/2" in out and "GLOBAL_RANK: 1, MEMBER: 2/2" in out
    (summary_file,) = (tmp_path / "models" / "tiny" / "arith").glob("base-*/train_summary.json")
    summary = json.loads(summary_file.read_text())
    assert summary["steps"] == 6  # rank 0 saved the stage once, after every step of both processes
    assert not list((tmp_path / "models").rglob("*.partial"))


def _batches(iterator, n):
    return [next(iterator)[0].tolist() for _ in range(n)]


def test_resumable_loader_keeps_its_place_under_a_distributed_sampler():
    data = TensorDataset(torch.arange(40))
    loader = ResumableLoader(data, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(0))
    sampler = DistributedSampler(data, num_replicas=2, rank=1, shuffle=True, seed=0)
    # what Lightning does to a train loader under DDP: rebuilt with the distributed sampler
    distributed = _update_dataloader(loader, sampler)
    assert isinstance(distributed, ResumableLoader)
    whole = _batches(iter(distributed), 5)  # rank 1's half of the epoch: 20 items, 5 batches
    assert sorted(x for b in whole for x in b) == sorted(sampler.__iter__())

    first = _batches(iter(distributed), 2)
    state = distributed.state_dict()
    assert state["batches"] == 2
    resumed = _update_dataloader(
        ResumableLoader(data, batch_size=4, shuffle=True, generator=torch.Generator().manual_seed(0)),
        DistributedSampler(data, num_replicas=2, rank=1, shuffle=True, seed=0),
    )
    resumed.load_state_dict(state)
    assert first + _batches(iter(resumed), 3) == whole  # the resumed epoch skips what was served, nothing else
