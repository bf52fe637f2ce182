"""tests/prewarmed.py: a run forked from the prewarmed server is the process a plain ``subprocess.run`` would start.

Each case runs the same command both ways and compares what a test can observe (exit status, stdout, stderr, files);
the plain subprocess is the oracle.
"""

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import prewarmed
import pytest
from e2e import evaluate

# these tests compare a forked run with a plain one: with the server off (CONTAMLAB_TEST_PREWARM=0) there is no fork
pytestmark = pytest.mark.skipif(not prewarmed.enabled(), reason="CONTAMLAB_TEST_PREWARM=0: no prewarmed server")

PROBE = textwrap.dedent(
    """
    import atexit, json, os, sys, threading, time
    atexit.register(lambda: print("atexit ran", flush=True))
    def late():
        time.sleep(0.2)
        print("thread done", flush=True)
    threading.Thread(target=late).start()  # a non-daemon thread: the interpreter waits for it at exit
    print(json.dumps({"argv": sys.argv, "cwd": os.getcwd(), "path0": sys.path[0], "probe": os.environ.get("PROBE"),
                      "name": __name__}))
    print("to stderr", file=sys.stderr)
    mode = sys.argv[1]
    if mode == "raise":
        raise ValueError("bad thing")
    if mode == "message":
        sys.exit("a message")
    sys.exit(int(mode))
    """
)


def _both(args, **kwargs):
    before = dict(prewarmed.runs)
    warm = prewarmed.run(args, **kwargs)
    differ = prewarmed.differing(kwargs.get("env", os.environ), prewarmed._server.env if prewarmed._server else {})
    assert prewarmed.runs["prewarmed"] == before["prewarmed"] + 1, f"the run did not fork from the server: {differ}"
    plain = subprocess.run(args, capture_output=True, text=True, **kwargs)
    return warm, plain


@pytest.mark.parametrize("mode", ["0", "3", "raise", "message"])
def test_a_script_runs_as_a_plain_subprocess_would(tmp_path, mode):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = {**os.environ, "PROBE": "value"}
    warm, plain = _both([sys.executable, str(script), mode, "x y"], cwd=tmp_path, env=env, timeout=60)
    assert warm.returncode == plain.returncode == {"0": 0, "3": 3, "raise": 1, "message": 1}[mode]
    assert warm.stdout == plain.stdout
    facts = json.loads(warm.stdout.splitlines()[0])
    assert facts["argv"] == [str(script), mode, "x y"] and facts["cwd"] == str(tmp_path)
    assert facts["path0"] == str(tmp_path) and facts["probe"] == "value" and facts["name"] == "__main__"
    assert warm.stdout.splitlines()[1:] == ["thread done", "atexit ran"]
    assert warm.stderr == plain.stderr  # a traceback too: the server's own frames are not in it
    assert ("Traceback" in warm.stderr) == (mode == "raise")


def test_a_module_runs_as_python_m_would(tmp_path):
    (tmp_path / "probe_mod.py").write_text(PROBE)
    warm, plain = _both([sys.executable, "-m", "probe_mod", "5"], cwd=tmp_path, timeout=60)
    assert warm.returncode == plain.returncode == 5
    assert warm.stdout == plain.stdout and warm.stderr == plain.stderr
    assert json.loads(warm.stdout.splitlines()[0])["argv"][0] == str(tmp_path / "probe_mod.py")


def _running(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, ProcessLookupError):
        return False
    return state != "Z"  # a zombie has exited and waits to be reaped


def test_a_timeout_kills_the_run_and_its_children(tmp_path):
    script = tmp_path / "hang.py"
    # Each process writes a file once its minute is up: a run waited out (not killed) leaves one behind, whatever the
    # machine's load, where a bound on the wall time would flake on a slow machine.
    child_code = f"import time; time.sleep(60); open({str(tmp_path / 'child-done')!r}, 'w')"
    script.write_text(
        "import subprocess, sys, time\n"
        f"child = subprocess.Popen([sys.executable, '-c', {child_code!r}])\n"
        f"open({str(tmp_path / 'pid')!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
        f"open({str(tmp_path / 'run-done')!r}, 'w')\n"
    )
    with pytest.raises(subprocess.TimeoutExpired):
        prewarmed.run([sys.executable, str(script)], cwd=tmp_path, timeout=3)
    child = int((tmp_path / "pid").read_text())
    for _ in range(50):  # the process group was killed; the orphaned child is reaped by init
        if not _running(child):
            break
        time.sleep(0.1)
    else:
        pytest.fail(f"child {child} of the timed-out run is still running")
    assert not (tmp_path / "run-done").exists() and not (tmp_path / "child-done").exists(), "waited out, not killed"
    (tmp_path / "after.py").write_text("print('after')\n")
    ok = prewarmed.run([sys.executable, str(tmp_path / "after.py")], cwd=tmp_path, timeout=30)  # the server goes on
    assert ok.returncode == 0 and ok.stdout == "after\n"


@pytest.fixture(scope="session")
def session_fixture_env():
    """The environment a session fixture (a trained world's, which may start the server) runs in."""
    return dict(os.environ)


def test_session_fixtures_run_in_the_tests_environment(session_fixture_env):
    """A server started by a session fixture serves the tests' runs: no import-time variable differs."""
    assert prewarmed.differing(session_fixture_env, dict(os.environ)) == []


def test_an_import_time_variable_or_fresh_means_a_plain_subprocess(tmp_path):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    for kwargs in ({"env": {**os.environ, "HF_ENDPOINT": "http://127.0.0.1:9"}}, {"fresh": True}):
        before = dict(prewarmed.runs)
        done = prewarmed.run([sys.executable, str(script), "0"], cwd=tmp_path, timeout=60, **kwargs)
        assert done.returncode == 0
        assert prewarmed.runs == {**before, "plain": before["plain"] + 1}, kwargs


def test_an_entry_point_gives_the_same_results_both_ways(trained):
    """The real evaluate.py on the tiny world, forked and plain, each with its own cache: the same numbers."""
    tmp, _, _ = trained
    results = {}
    for fresh in (False, True):
        tag = f"prewarmed-{fresh}"
        before = dict(prewarmed.runs)
        done = evaluate(tmp, "strategy=railcap", "detector=loss", f"paths.cache_dir={tmp / tag}", tag=tag, fresh=fresh)
        assert done.returncode == 0, done.stdout + done.stderr
        assert prewarmed.runs["plain" if fresh else "prewarmed"] == before["plain" if fresh else "prewarmed"] + 1
        results[fresh] = json.loads((tmp / "runs" / tag / "results.json").read_text())
    for key in ("metrics", "counts"):
        assert results[False][key] == results[True][key]
    assert results[False]["detection"]["contaminated"]["auroc"] == results[True]["detection"]["contaminated"]["auroc"]
