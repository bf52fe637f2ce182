"""keep_jobs: a run's job files copied into an artifact folder, with the jobs' command lines (hand-made run)."""

from __future__ import annotations

import json
from pathlib import Path

from contamlab.studies.run_files import keep_jobs


def _job(root: Path, rel: str, overrides: list[str], value: float) -> Path:
    job = root / rel
    (job / ".hydra").mkdir(parents=True)
    (job / ".hydra" / "overrides.yaml").write_text("".join(f"- {o}\n" for o in overrides))
    (job / "results.json").write_text(json.dumps({"metrics": {"sa_ppg": value}}, indent=2))
    (job / "per_question.csv").write_text("id,r\nq1,0.5\n")
    (job / "evaluate.log").write_text("not kept")
    return job


def test_the_kept_folder_holds_the_files_asked_for_and_each_jobs_command(tmp_path):
    run, dest = tmp_path / "run", tmp_path / "results" / "study"
    a = _job(run, "sweep/0_a", ["strategy=identity", "domain=arith"], 0.25)
    b = _job(run, "sweep/1_b", ["strategy=ted"], 0.5)
    (dest / "stale").mkdir(parents=True)  # an earlier collect's folder is replaced as a whole
    out = keep_jobs([b, a], run, dest, "evaluate.py", ("per_question.csv", "absent.csv"), {"command": "make x"})
    assert out == dest and not (dest / "stale").exists()
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == [
        "run.json",
        "sweep/0_a/per_question.csv",
        "sweep/0_a/results.json",
        "sweep/1_b/per_question.csv",
        "sweep/1_b/results.json",
    ]
    assert json.loads((dest / "sweep/1_b/results.json").read_text()) == {"metrics": {"sa_ppg": 0.5}}
    assert json.loads((dest / "run.json").read_text()) == {
        "command": "make x",
        "jobs": {
            "sweep/0_a": "python evaluate.py strategy=identity domain=arith",
            "sweep/1_b": "python evaluate.py strategy=ted",
        },
    }
    assert not list(dest.parent.glob(".study.*"))  # no partial or old folder left behind
