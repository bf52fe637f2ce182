"""Stopping a run by a signal: one line that says where it stopped and how to resume, and the conventional exit code.

SIGINT (Ctrl-C) and SIGTERM (``kill``, a scheduler's time limit) can end a job at any point. Everything a job keeps
is written atomically (a stage's periodic checkpoint, each sample chunk, each detector's scores), so the same command
resumes it. :func:`contamlab.config.run_safely` turns the stop into one line on stderr and exits with 128 + the
signal's number, as a shell does (130 for SIGINT, 143 for SIGTERM).

A job names what it is doing with :func:`activity`; the stop message reads the innermost one.
"""

from __future__ import annotations

import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

#: What the job is doing now, innermost last: texts, or functions that return one when the stop is reported.
_ACTIVITIES: list[str | Callable[[], str]] = []
#: Where the last stop found the job: read as the stop leaves the innermost activity, before the stack unwinds.
_STOPPED_AT: list[str] = []


class Stopped(BaseException):
    """A stop signal, raised in the main thread where SIGTERM arrives (SIGINT raises ``KeyboardInterrupt``).

    A ``BaseException`` like ``KeyboardInterrupt``, so that no ``except Exception`` on the way swallows it.

    Args:
        signum: The signal's number.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def signal_number(stop: BaseException) -> int:
    """The signal a stop exception stands for: SIGINT for ``KeyboardInterrupt``, else the :class:`Stopped` one's."""
    return stop.signum if isinstance(stop, Stopped) else int(signal.SIGINT)


def exit_code(signum: int) -> int:
    """The shell's exit status of a process ended by ``signum``: 128 + its number (SIGINT 130, SIGTERM 143)."""
    return 128 + int(signum)


@contextmanager
def activity(what: str | Callable[[], str]) -> Iterator[None]:
    """Name what the job does inside the block, for the stop message (a function is called only at the stop).

    Example:
        >>> with activity(lambda: f"training stage base at step {progress.step}"):
        ...     trainer.fit(module)
    """
    _ACTIVITIES.append(what)
    try:
        yield
    except (KeyboardInterrupt, Stopped):
        if not _STOPPED_AT:
            _STOPPED_AT.append(where())
        raise
    finally:
        _ACTIVITIES.pop()


def where() -> str:
    """The innermost activity (at the stop, once one has happened), or "starting up" when the job has named none."""
    if _STOPPED_AT:
        return _STOPPED_AT[0]
    if not _ACTIVITIES:
        return "starting up (nothing computed yet)"
    what = _ACTIVITIES[-1]
    return what() if callable(what) else what


def resume_command(argv: list[str] | None = None) -> str:
    """The command line that started this process, to run again (every stage, chunk and score it kept is reused)."""
    argv = list(sys.argv if argv is None else argv)
    return "python " + shlex.join(argv)


def stop_message(signum: int) -> str:
    """One line: the signal, where the job stopped, and the command that resumes it."""
    name = signal.Signals(signum).name
    return f"stopped by {name} while {where()}; run the same command to resume: {resume_command()}"


def _raise_stopped(signum: int, frame: object) -> None:
    raise Stopped(signum)


@contextmanager
def sigterm_raises() -> Iterator[None]:
    """Inside the block, SIGTERM raises :class:`Stopped` in the main thread, as SIGINT raises ``KeyboardInterrupt``.

    Python's default for SIGTERM ends the process at once, with no message and nothing flushed. Outside the main
    thread (a signal handler can only be set there) the block changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _raise_stopped)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
