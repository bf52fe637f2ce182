"""make reproduce-profile: per-job wall times read back from results.json files, totals per sweep."""

import json

from contamlab.analysis.profile import job_rows, render


def _job(root, sweep, job, wall, config, sampled=None):
    path = root / sweep / job / "results.json"
    path.parent.mkdir(parents=True)
    timings = {"wall_s": wall, "phases": {"sampling": wall - 1.0}}
    if sampled:
        timings["contaminated"] = sampled
    path.write_text(json.dumps({"config": config, "timings": timings}))


def test_profile_rows_and_totals(tmp_path):
    _job(tmp_path, "table1", "0_tiny_arith_identity", 10.0, {"strategy": {"name": "identity"}, "detector": None})
    sampled = {"generated_tokens": 1000, "tokens_per_s": 500.0, "wrap_s": 3.0}
    _job(
        tmp_path,
        "table1",
        "10_tiny_arith_railcap",
        30.0,
        {"strategy": {"name": "railcap", "n": 2, "mode": "cap"}},
        sampled,
    )
    _job(tmp_path, "table1", "2_tiny_arith_ted", 5.0, {"strategy": {"name": "ted"}, "detector": {"name": "none"}})
    _job(tmp_path, "detectors", "0_tiny_arith_none", 50.0, {"strategy": {"name": "none"}, "detector": {"name": "loss"}})
    (tmp_path / "table1" / "3_broken").mkdir()
    (tmp_path / "table1" / "3_broken" / "results.json").write_text("{not json")
    rows = job_rows(tmp_path)
    # jobs in Hydra's numeric order (10 after 2), a detector job named by its detector, a broken file kept as a row
    assert [r["job"] for r in rows] == ["loss", "identity", "ted", "3_broken", "railcap (n = 2, cap)"]
    assert rows[4]["detail"] == "sampling 29 s, contaminated 1,000 tok at 500 tok/s, contaminated strategy setup 3 s"
    table = render(rows)
    assert "| detectors | 50.0 |" in table and "| table1 | 45.0 |" in table and "| all jobs | 95.0 |" in table
    assert table.index("| detectors | loss |") < table.index("| table1 | identity |")  # slowest sweep first
