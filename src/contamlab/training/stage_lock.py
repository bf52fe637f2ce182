"""One training process per stage: an advisory file lock beside the stage's directory.

Two ``train.py`` runs that need the same stage (two streams of ``make reproduce``, a user's second terminal) would
both train it into ``<stage>.partial``, and the second would resume from a checkpoint the first is still writing.
The second one waits for the first instead and then finds the stage done.

The lock is ``flock(2)`` on ``.<stage dir name>.lock``: the kernel releases it when its holder exits, however it
exits (``kill -9`` included), so a lock left behind by a killed run never blocks the next one. The file itself stays
(removing it while another process waits on it would let a third lock a new file beside it); it holds the holder's
pid and host, named in the waiting message.

Only the process that launches the training takes the lock: the other ranks of a multi-process run (Lightning's DDP
re-runs ``train.py`` for each, SLURM and torchrun start them) train the same stage with it, and would wait forever
for the lock their own rank 0 holds.
"""

from __future__ import annotations

import fcntl
import logging
import os
import socket
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

log = logging.getLogger("contamlab")


def lock_path(stage_dir: Path) -> Path:
    """The lock file of a stage directory: hidden, beside it."""
    return stage_dir.with_name(f".{stage_dir.name}.lock")


#: The variables in which launchers give a process its rank (Lightning's DDP, torchrun, SLURM).
RANK_VARIABLES = ("LOCAL_RANK", "RANK", "SLURM_PROCID")


def is_launching_process() -> bool:
    """Whether this is rank 0 of its training run (or a run of one process): the one that holds stage locks."""
    return all(os.environ.get(name, "0") == "0" for name in RANK_VARIABLES)


@contextmanager
def stage_lock(stage_dir: Path, stage: str) -> Iterator[None]:
    """Hold a stage's lock inside the block; wait, with one line that says so, while another process holds it.

    Args:
        stage_dir: The stage's final directory (it need not exist yet; its parent is created).
        stage: The stage's name, for the message.
    """
    if not is_launching_process():
        yield
        return
    path = lock_path(stage_dir)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            holder = handle.read().strip() or "another process"
            log.warning("stage %s is being trained by %s; waiting for it to finish (%s)", stage, holder, path)
            fcntl.flock(handle, fcntl.LOCK_EX)
        handle.truncate(0)
        handle.write(f"pid {os.getpid()} on {socket.gethostname()}")
        handle.flush()
        try:
            yield
        finally:
            handle.truncate(0)
            fcntl.flock(handle, fcntl.LOCK_UN)
