"""Wall times the test suite used to assert: how soon an error comes, a lock is taken, a cached rerun ends.

    python benchmarks/latency.py            # every measurement (audit_rerun trains the small world: minutes)
    python benchmarks/latency.py --only bootstrap errors stage_lock

A test that asserts a wall time or a speed ratio fails on a loaded machine for no fault of the code, so the default
tier asserts what these times stand for (nothing was computed before the error, no waiting message, every stage
"done already", a cached rerun records the first run's timings) and this script measures the times themselves. Each
row names the test the bound came from and the bound it asserted; a row over its bound is a slowdown to look at, not
a failure. Prints a table and writes benchmarks/results/latency.json.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from contamlab.io import atomic_write_json

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # the end-to-end tests' tiny world (e2e.TINY) and process runner (prewarmed)

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "PYTHONUNBUFFERED": "1"}
ROWS: list[dict] = []


def record(name: str, seconds: float, bound: float | None, test: str, note: str = "") -> None:
    """One measurement, against the bound ``test`` asserted (``bound`` None: the test asserted a comparison)."""
    within = None if bound is None else seconds < bound
    ROWS.append({"measure": name, "seconds": round(seconds, 3), "bound_s": bound, "within": within, "test": test})
    if note:
        ROWS[-1]["note"] = note
    limit = "" if bound is None else f"(bound {bound:g} s{'' if within else ': OVER'})"
    print(f"{name:62s} {seconds:8.2f} s  {limit:18s} {test}{'  ' + note if note else ''}", flush=True)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    started = time.perf_counter()
    out = fn()
    return time.perf_counter() - started, out


def run(args: list[str], cwd: Path, timeout: float = 1800) -> subprocess.CompletedProcess:
    """A plain process, as a user starts one (cold imports: no prewarmed server)."""
    return subprocess.run(args, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=timeout)


# -- tests/test_metrics.py: the bootstrap of a GSM8K-sized readout ----------------------------------------------------
def bootstrap() -> None:
    import numpy as np

    from contamlab.metrics import bootstrap_intervals

    rng = np.random.default_rng(7)  # test_metrics.gsm8k_like: 1,319 questions, m = 50
    c_clean = rng.binomial(50, rng.beta(0.6, 0.9, 1319))
    c_strategy = rng.binomial(50, rng.beta(0.9, 0.6, 1319))
    r_strategy, r_clean = c_strategy / 50, c_clean / 50
    r01_s, r01_c = rng.random(1319) < r_strategy, rng.random(1319) < r_clean
    bootstrap_intervals(r_strategy, r_clean, draws=5)  # warm-up
    runs = [
        timed(lambda: bootstrap_intervals(r_strategy, r_clean, draws=1000, r01_strategy=r01_s, r01_clean=r01_c))[0]
        for _ in range(5)
    ]
    record("bootstrap_intervals: 1,319 questions, 1,000 draws, best of 5", min(runs), 1.0, "test_metrics.py")


# -- tests/test_preflight.py, tests/test_validation.py: how soon a bad command says what is wrong ---------------------
def _gsm8k_truncated(root: Path) -> Path:
    good = json.dumps({"question": "What is 2 + 3?", "answer": "2 + 3 = 5\n#### 5"})
    (root / "gsm8k").mkdir(parents=True)
    (root / "gsm8k" / "train.jsonl").write_text((good + "\n") * 20)
    (root / "gsm8k" / "test.jsonl").write_text(good + "\n" + good[:30])
    return root


def errors() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        data = _gsm8k_truncated(tmp / "data")
        cases = [  # (script, overrides, what the row says, the test's bound, the test, the error line's text)
            ("evaluate.py", ["temperature=abc"], "temperature=abc", 10.0, "test_validation.py", "temperature='abc'"),
            ("evaluate.py", ["domain.leak_fraction=1.5"], "", 15.0, "test_preflight.py", "domain.leak_fraction=1.5"),
            ("train.py", ["domain.leak_fraction=1.5"], "", 15.0, "test_preflight.py", "domain.leak_fraction=1.5"),
            (  # the data check comes before SmolLM2 would be converted and loaded (tens of seconds)
                "evaluate.py",
                ["model=smollm2", "domain=gsm8k", f"domain.data_dir={data}"],
                "model=smollm2, a truncated GSM8K file",
                15.0,
                "test_preflight.py",
                "test.jsonl:2: malformed JSON",
            ),
        ]
        for i, (script, overrides, what, bound, test, message) in enumerate(cases):
            args = [sys.executable, str(REPO / script), *overrides, "logger=csv", f"hydra.run.dir={tmp / f'run{i}'}"]
            args += [f"paths.models_dir={tmp / 'models'}", f"paths.cache_dir={tmp / 'cache'}"]
            seconds, done = timed(lambda args=args: run(args, tmp, timeout=300))
            ok = done.returncode == 2 and message in done.stderr
            note = "" if ok else f"UNEXPECTED: exit {done.returncode}, {done.stderr.strip()[-200:]!r}"
            record(f"{script} {what or ' '.join(overrides)}: the one-line error", seconds, bound, test, note)


# -- tests/test_stage_lock.py: taking a stage's lock -----------------------------------------------------------------
HOLD = """
import sys, time
from pathlib import Path
from contamlab.training.stage_lock import stage_lock
with stage_lock(Path(sys.argv[1]), "base"):
    print("locked", flush=True)
    time.sleep(float(sys.argv[2]))
"""


def _holder(stage_dir: Path, seconds: float) -> subprocess.Popen:
    args = [sys.executable, "-c", HOLD, str(stage_dir), str(seconds)]
    proc = subprocess.Popen(args, stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "locked"
    return proc


def stage_lock() -> None:
    from contamlab.training.stage_lock import stage_lock as lock

    def take(stage_dir: Path) -> None:
        with lock(stage_dir, "base"):
            pass

    logging.getLogger("contamlab").setLevel(logging.ERROR)  # the waiting message is the tests'; here, the times
    with tempfile.TemporaryDirectory() as tmp:
        stage_dir = Path(tmp) / "held" / "base-abc"
        holder = _holder(stage_dir, 2.0)
        waited, _ = timed(lambda: take(stage_dir))
        holder.wait(timeout=30)
        record("a second process waits for a holder's 2 s", waited, None, "test_stage_lock.py", "was: > 0.5 s")

        stage_dir = Path(tmp) / "stale" / "base-abc"
        holder = _holder(stage_dir, 600)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        seconds, _ = timed(lambda: take(stage_dir))
        record("the lock a killed process left behind is taken", seconds, 2.0, "test_stage_lock.py")

        stage_dir = Path(tmp) / "rank1" / "base-abc"
        holder = _holder(stage_dir, 600)
        os.environ["LOCAL_RANK"] = "1"
        try:
            seconds, _ = timed(lambda: take(stage_dir))
        finally:
            del os.environ["LOCAL_RANK"]
            holder.kill()
            holder.wait(timeout=30)
        record("rank 1 passes the lock rank 0 holds", seconds, 2.0, "test_stage_lock.py")


# -- tests/test_prewarmed.py: a test run that times out ----------------------------------------------------------------
def timeout_kill() -> None:
    import prewarmed

    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "hang.py"
        script.write_text(
            "import subprocess, sys, time\n"
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
            "time.sleep(60)\n"
        )
        (Path(tmp) / "warm.py").write_text("pass\n")
        prewarmed.run([sys.executable, str(Path(tmp) / "warm.py")], cwd=tmp)  # the server starts outside the timing
        started = time.perf_counter()
        try:
            prewarmed.run([sys.executable, str(script)], cwd=tmp, timeout=3)
            note = "UNEXPECTED: no timeout"
        except subprocess.TimeoutExpired:
            note = ""
        seconds = time.perf_counter() - started
        via = "prewarmed" if prewarmed.runs["prewarmed"] else "plain subprocess"
        record(f"a run past its 3 s timeout is killed ({via})", seconds, 30.0, "test_prewarmed.py", note)


# -- tests/test_train_e2e.py: train.py on a world already trained ------------------------------------------------------
def train_rerun() -> None:
    from e2e import TINY

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)

        def train(tag: str) -> subprocess.CompletedProcess:
            args = [sys.executable, str(REPO / "train.py"), *TINY, f"paths.models_dir={tmp / 'models'}"]
            return run([*args, f"hydra.run.dir={tmp / 'hydra' / tag}"], tmp)

        first, done = timed(lambda: train("first"))
        if done.returncode != 0:
            raise SystemExit(done.stderr[-2000:])
        again, done = timed(lambda: train("again"))
        note = "" if done.stdout.count("done already") == 3 else "UNEXPECTED: not every stage was done already"
        record("train.py, tiny world: first run (3 stages)", first, None, "test_train_e2e.py")
        record("train.py, tiny world: rerun, every stage done already", again, 60.0, "test_train_e2e.py", note)


# -- tests/test_audit_e2e.py: an audit and its cached rerun ------------------------------------------------------------
AUDIT = [  # test_audit_e2e.FAST
    "audit.detectors=[loss,mink,minkpp,codec,benbench]",
    "audit.mitigate=[railcap]",
    "detectors.benbench.include_train=false",
    "detectors.benbench.ngram=[5]",
    "audit.n_boot=300",
    "m=4",
    "max_new_tokens=48",
]


def audit_rerun() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        world = ["experiment=small_world", "domain=arith", "logger=csv", f"paths.models_dir={tmp / 'models'}"]
        for i, more in enumerate([[], ["seed=1", "stage=clean"]]):  # conftest.small_world: seed 0, seed 1's clean
            args = [sys.executable, str(REPO / "train.py"), *world, "trainer.enable_progress_bar=false", *more]
            done = run([*args, f"hydra.run.dir={tmp / f'hydra-{i}'}"], tmp)
            if done.returncode != 0:
                raise SystemExit(done.stderr[-2000:])

        def audit(tag: str) -> subprocess.CompletedProcess:
            args = [sys.executable, str(REPO / "audit.py"), "-m", *world, *AUDIT, "progress=false"]
            args += [f"paths.cache_dir={tmp / 'cache'}", f"hydra.sweep.dir={tmp / tag}"]
            return run([*args, "audit.target=clean,contaminated"], tmp)

        first, done = timed(lambda: audit("first"))
        if done.returncode != 0:
            raise SystemExit(done.stderr[-2000:])
        again, done = timed(lambda: audit("again"))
        note = "" if done.returncode == 0 else f"UNEXPECTED: exit {done.returncode}"
        record("audit.py, small world, clean + contaminated: first run", first, None, "test_audit_e2e.py")
        record("audit.py, the same again from the caches", again, None, "test_audit_e2e.py", note)
        ratio = again / first
        ROWS[-1].update(bound="faster than the first run", rerun_over_first=round(ratio, 3), within=ratio < 1)
        print(f"{'  rerun / first (the test asserted < 1)':62s} {ratio:8.2f}", flush=True)


SECTIONS = {
    "bootstrap": bootstrap,
    "errors": errors,
    "stage_lock": stage_lock,
    "timeout_kill": timeout_kill,
    "train_rerun": train_rerun,
    "audit_rerun": audit_rerun,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", nargs="+", choices=sorted(SECTIONS), default=list(SECTIONS))
    parser.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "latency.json")
    args = parser.parse_args()
    for name in args.only:
        SECTIONS[name]()
    summary = {
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],  # the point: these times depend on it
        "sections": args.only,
        "rows": ROWS,
    }
    atomic_write_json(args.out, summary)
    print(f"written {args.out}")


if __name__ == "__main__":
    main()
