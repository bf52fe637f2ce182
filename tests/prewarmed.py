"""The end-to-end tests' processes, started from a Python that has already imported torch, transformers and Lightning.

Every end-to-end test runs a real entry point (``train.py``, ``evaluate.py``, ``audit.py``, a script) as a process of
its own, and most of such a process's time on a tiny world is imports: torch, transformers, peft and Lightning take
4-6 s of CPU per process on this project's 2-core machine, about 85 processes a test session
(docs/performance.md#the-test-suite). A server per pytest worker imports those libraries once; each run is a
``fork()`` of it that becomes the process the test asked for: its own argv, working directory, environment, stdio and
process group, the script run as ``__main__`` (``runpy``), and exit status, atexit handlers and interpreter shutdown
as a fresh ``python script.py`` has them. Nothing the script computes is shared: the fork happens before the script
starts, and the server itself never runs a model.

What a fork shares with the server, and so where :func:`run` starts a plain subprocess instead:

- modules that read environment variables when they are imported (huggingface_hub reads ``HF_HUB_OFFLINE`` and
  ``HF_ENDPOINT``, torch ``OMP_NUM_THREADS``, tempfile ``TMPDIR`` …): a run whose environment differs from the
  server's in such a variable (:data:`IMPORT_TIME_ENV`) is a plain subprocess;
- the hash seed of ``str`` (fixed when an interpreter starts): tests whose point is that two processes agree
  (a rerun gives the same result) pass ``fresh=True``, so that each run draws its own seed as a user's would;
- anything but ``python script.py ...`` and ``python -m module ...`` is a plain subprocess.

``CONTAMLAB_TEST_PREWARM=0`` turns it off (every run a plain subprocess), for a suspected difference.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

# Environment variables that a preloaded module may have read at import time; a run that sets any of them otherwise
# than the server's environment did is a plain subprocess. Prefixes, compared case-sensitively.
IMPORT_TIME_ENV = (
    "HF_",
    "HUGGINGFACE",
    "TRANSFORMERS",
    "TORCH",
    "PYTORCH",
    "OMP_",
    "MKL",
    "KMP_",
    "OPENBLAS",
    "CUDA",
    "PL_",
    "LIGHTNING",
    "HYDRA",
    "TOKENIZERS",
    "PYTHON",
    "MPL",
    "HOME",
    "XDG_",
    "TMP",
    "TEMP",
    "LANG",
    "LC_",
)

# What the server imports: the heavy third-party libraries of the entry points, not contamlab (cheap, and a test may
# point it at other configs). wandb stays out: its import would pin what it reads at import time.
PRELOAD = (
    "numpy",
    "torch",
    "transformers",
    "transformers.modeling_utils",
    "transformers.models.gpt_neox.modeling_gpt_neox",
    "transformers.models.auto.modeling_auto",
    "tokenizers",
    "peft",
    "lightning",
    "lightning.pytorch",
    "hydra",
    "hydra.main",
    "hydra.utils",
    "hydra._internal.utils",
    "omegaconf",
    "sklearn.metrics",
    "scipy.stats",
    "pandas",
    "pyarrow",
    "rapidfuzz",
)


def enabled() -> bool:
    return os.environ.get("CONTAMLAB_TEST_PREWARM", "1") not in ("0", "", "false", "no")


# -- the server (its own process) -----------------------------------------------------------------------------------
def _serve() -> None:
    """Import :data:`PRELOAD`, then fork one child per request read from stdin; report pid and exit status."""
    import importlib
    import runpy  # noqa: F401  (imported before the fork: the children use it)
    import traceback

    # The replies go to a copy of fd 1; fd 1 itself becomes stderr, so that nothing an import prints garbles them.
    proto = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)
    for name in PRELOAD:
        with contextlib.suppress(Exception):  # a missing optional library: a child imports what it needs itself
            importlib.import_module(name)
    assert "wandb" not in sys.modules, "wandb was imported by a preloaded module"
    proto.write(json.dumps({"ready": os.getpid()}) + "\n")
    requests = sys.stdin.buffer
    while True:
        line = requests.readline()
        if not line:
            return  # the pytest worker has gone
        request = json.loads(line)
        pid = os.fork()
        if pid == 0:
            proto.close()
            _child(request)  # never returns: the child leaves through interpreter shutdown
        proto.write(json.dumps({"pid": pid}) + "\n")
        try:
            _, status = os.waitpid(pid, 0)
            code = os.waitstatus_to_exitcode(status)
        except ChildProcessError:
            traceback.print_exc()
            code = -1
        proto.write(json.dumps({"returncode": code}) + "\n")


def _child(request: dict) -> None:
    """Become ``python <argv>``: process group, cwd, environment, stdio, sys.argv and sys.path, then run it."""
    import io
    import runpy

    os.setpgid(0, 0)  # a timeout kills the whole group, as the run's own subprocesses would be
    signal.signal(signal.SIGINT, signal.default_int_handler)
    os.chdir(request["cwd"])
    os.environ.clear()
    os.environ.update(request["env"])
    stdin = os.open(os.devnull, os.O_RDONLY)
    os.dup2(stdin, 0)
    for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
        target = os.open(path or os.devnull, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    unbuffered = bool(request["env"].get("PYTHONUNBUFFERED"))
    # New stdio objects, as a fresh interpreter's: files are block-buffered unless PYTHONUNBUFFERED is set.
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(io.BufferedReader(io.FileIO(0, "r", closefd=False)))
    sys.stdout = sys.__stdout__ = io.TextIOWrapper(
        io.FileIO(1, "w", closefd=False) if unbuffered else io.BufferedWriter(io.FileIO(1, "w", closefd=False)),
        write_through=unbuffered,
    )
    sys.stderr = sys.__stderr__ = io.TextIOWrapper(
        io.BufferedWriter(io.FileIO(2, "w", closefd=False)), errors="backslashreplace", line_buffering=True
    )
    args = request["argv"]
    code: object = 0
    try:
        if args[0] == "-m":
            sys.argv = [args[1], *args[2:]]
            sys.path[0] = os.getcwd()
            runpy.run_module(args[1], run_name="__main__", alter_sys=True)
        else:
            script = os.path.abspath(args[0])
            sys.argv = [args[0], *args[1:]]
            sys.path[0] = os.path.dirname(script)
            runpy.run_path(script, run_name="__main__")
    except SystemExit as done:
        code = done.code
    except BaseException as err:
        import traceback

        # The traceback a fresh interpreter prints: from the script's frames on, without this module's and runpy's.
        tb = err.__traceback__
        ours = ("prewarmed.py", "runpy.py", "<frozen runpy>")
        while tb is not None and Path(tb.tb_frame.f_code.co_filename).name in ours:
            tb = tb.tb_next
        traceback.print_exception(type(err), err, tb)
        code = 1
    _exit(code)


def _exit(code: object) -> None:
    """Leave as ``python`` does at the end of a script, less the teardown of every module the server imported.

    The interpreter's own shutdown of a process holding torch, transformers and Lightning takes about 1.5 s (it
    tears down each module); what a script can observe of it is kept, in the interpreter's order: non-daemon threads
    are joined, atexit handlers run (logging's flush, weakref finalizers, W&B's), stdio is flushed.
    """
    import atexit
    import threading

    if code is None:
        status = 0
    elif isinstance(code, int):
        status = code
    else:  # sys.exit("message"): printed to stderr, status 1
        print(code, file=sys.stderr)
        status = 1
    threading._shutdown()
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status & 0xFF)


# -- the client (the pytest worker) ---------------------------------------------------------------------------------
class _Server:
    def __init__(self) -> None:
        self.env = dict(os.environ)
        self.proc = subprocess.Popen(
            [sys.executable, __file__, "--serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=self.env,
            cwd=tempfile.gettempdir(),
        )
        ready = self._reply(timeout=300)
        if "ready" not in ready:
            raise RuntimeError(f"prewarmed server did not start: {ready}")
        atexit.register(self.close)

    def _reply(self, timeout: float | None) -> dict:
        readable, _, _ = select.select([self.proc.stdout], [], [], timeout)
        if not readable:
            raise TimeoutError
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"prewarmed server exited with status {self.proc.wait()}")
        return json.loads(line)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def run(self, argv: list[str], cwd: str, env: dict[str, str], timeout: float | None) -> tuple[int, str, str]:
        with tempfile.TemporaryDirectory(prefix="prewarmed-") as tmp:
            out, err = Path(tmp) / "stdout", Path(tmp) / "stderr"
            request = {"argv": argv, "cwd": cwd, "env": env, "stdout": str(out), "stderr": str(err)}
            self.proc.stdin.write((json.dumps(request) + "\n").encode())
            self.proc.stdin.flush()
            pid = self._reply(timeout=60)["pid"]
            try:
                code = self._reply(timeout=timeout)["returncode"]
            except TimeoutError:
                os.killpg(pid, signal.SIGKILL)
                self._reply(timeout=60)
                raise subprocess.TimeoutExpired(argv, timeout, _read(out), _read(err)) from None
            return code, _read(out), _read(err)

    def close(self) -> None:
        if self.alive():
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def _read(path: Path) -> str:
    return path.read_text(errors="backslashreplace") if path.exists() else ""


def differing(env: dict[str, str], server_env: dict[str, str]) -> list[str]:
    """The import-time variables (:data:`IMPORT_TIME_ENV`) in which ``env`` and ``server_env`` differ."""
    keys = {k for k in (*env, *server_env) if k.startswith(IMPORT_TIME_ENV)}
    return sorted(k for k in keys if env.get(k) != server_env.get(k))


def compatible(env: dict[str, str], server_env: dict[str, str]) -> bool:
    """Whether a run with ``env`` may fork from a server started with ``server_env``."""
    return not differing(env, server_env)


_server: _Server | None = None
runs = {"prewarmed": 0, "plain": 0}  # how this worker's runs were started (tests/test_prewarmed.py reads it)


def _server_for(env: dict[str, str]) -> _Server | None:
    """This worker's server (started on first use, with this process's environment) if ``env`` may fork from it."""
    global _server
    if _server is None or not _server.alive():
        if not compatible(env, dict(os.environ)):
            return None  # no server for a run that could not use it
        try:
            _server = _Server()
        except (OSError, RuntimeError, TimeoutError) as err:
            print(f"prewarmed: the server did not start ({err}); plain subprocesses", file=sys.stderr)
            _server = None
            return None
    return _server if compatible(env, _server.env) else None


def run(
    args: list[str],
    *,
    cwd: str | os.PathLike | None = None,
    env: dict[str, str] | None = None,
    timeout: float | None = None,
    fresh: bool = False,
    **kwargs,
) -> subprocess.CompletedProcess:
    """``subprocess.run(args, capture_output=True, text=True, ...)``, from the prewarmed server where that is faithful.

    Args:
        args: ``[sys.executable, script, *argv]`` or ``[sys.executable, "-m", module, *argv]``; anything else runs
            as a plain subprocess.
        cwd, env, timeout: As for ``subprocess.run`` (``env`` None: this process's environment).
        fresh: Always a plain subprocess (its own interpreter, hash seed and imports).
        kwargs: Only ``capture_output=True`` and ``text=True`` are accepted: what every caller here asks for.
    """
    if kwargs.pop("capture_output", True) is not True or kwargs.pop("text", True) is not True or kwargs:
        raise TypeError(f"prewarmed.run takes capture_output=True, text=True only, not {kwargs}")
    env = dict(os.environ if env is None else env)
    cwd = str(cwd or os.getcwd())
    argv = [str(a) for a in args]
    server = None
    if enabled() and not fresh and len(argv) >= 2 and argv[0] == sys.executable:
        script_form = argv[1].endswith(".py") and Path(argv[1]).is_file()
        module_form = argv[1] == "-m" and len(argv) >= 3
        if script_form or module_form:
            server = _server_for(env)
    if server is not None:
        runs["prewarmed"] += 1
        code, out, err = server.run(argv[1:], cwd, env, timeout)
        return subprocess.CompletedProcess(argv, code, out, err)
    runs["plain"] += 1
    return subprocess.run(argv, cwd=cwd, env=env, timeout=timeout, capture_output=True, text=True)


if __name__ == "__main__" and sys.argv[1:] == ["--serve"]:
    _serve()
