"""The committed artifacts of make reproduce (results/reproduce/<world>/) and the tables generated from them.

docs/results.md's generated blocks and the README's table must be exactly what the artifacts give; numbers quoted in
the prose around them must be numbers of those blocks. The artifacts are also read without the project's metric
code: SA-PPG, Δ⁺ and Δ⁻ recomputed by plain loops from each job's per_question.csv must equal what the job recorded,
and each detector's AUROC, recomputed by scikit-learn from its per-question scores, the AUROC it recorded.
"""

from __future__ import annotations

import csv
import json
import math
import re
from pathlib import Path

import pytest
from helpers.oracles import plain_metrics
from sklearn.metrics import roc_auc_score

from contamlab.studies import reproduce

REPO = Path(__file__).resolve().parents[1]
FOLDER = REPO / reproduce.ARTIFACTS
WORLDS = sorted(p.parent for p in FOLDER.glob("*/run.json"))
JOBS = sorted(FOLDER.glob("*/*/*/results.json"))


def _csv(path: Path) -> list[dict[str, str]]:
    with path.open() as f:
        return list(csv.DictReader(f))


def test_the_default_world_is_committed():
    assert FOLDER / reproduce.DEFAULT_WORLD in WORLDS, "no results/reproduce/arith: run make reproduce"


def test_the_blocks_and_the_readme_table_are_what_the_artifacts_give():
    found = reproduce.worlds(FOLDER)
    results = (REPO / reproduce.RESULTS).read_text()
    for name in found:
        for block in reproduce.BLOCKS:
            assert reproduce.markers(name, block)[0] in results, f"docs/results.md lacks the {name} {block} block"
    assert reproduce.with_blocks(results, found) == results
    readme = (REPO / reproduce.README).read_text()
    begin, end = reproduce.markers(reproduce.DEFAULT_WORLD, "readme")
    block = reproduce.readme_block(found[reproduce.DEFAULT_WORLD])
    assert reproduce.with_block(readme, block, begin, end) == readme


def _blocks_and_prose(text: str) -> tuple[str, str]:
    """A page's generated blocks and the rest of it, each as one string."""
    pattern = re.compile(r"<!-- (reproduce:[^ ]+):begin.*?-->(.*?)<!-- \1:end -->", flags=re.S)
    return "".join(m.group(2) for m in pattern.finditer(text)), pattern.sub("", text)


def test_numbers_in_the_prose_of_a_world_are_numbers_of_its_blocks():
    text = (REPO / reproduce.RESULTS).read_text()
    for world in WORLDS:
        start = text.index(reproduce.markers(world.name, reproduce.BLOCKS[0])[0])
        section = text[text.rindex("\n## ", 0, start) : text.find("\n## ", start) % (len(text) + 1)]
        blocks, prose = _blocks_and_prose(section)
        quoted = set(re.findall(r"\d\.\d{3}", prose))
        assert quoted, f"{world.name}: the prose quotes no number; the test would prove nothing"
        assert not quoted - set(re.findall(r"\d\.\d{3}", blocks)), f"{world.name}: numbers not in its tables"


def test_the_prose_checker_tells_a_quoted_number_from_a_made_up_one():
    page = "<!-- reproduce:w:x:begin (g) -->\n| a | 0.287 |\n<!-- reproduce:w:x:end -->\nIdentity 0.287, TED 0.999"
    blocks, prose = _blocks_and_prose(page)
    assert "0.287" in blocks and "0.999" not in blocks and "0.999" in prose and "|" not in prose


@pytest.mark.parametrize("path", JOBS, ids=lambda p: "/".join(p.parts[-4:-1]))
def test_each_job_gives_its_own_numbers_again(path):
    result = json.loads(path.read_text())
    assert result["run"]["git_commit"] and result["run"]["git_dirty"] is False
    if "metrics" in result:
        rows = _csv(path.parent / "per_question.csv")
        bins = [int(r["bin"]) for r in rows]
        r_c = [float(r["r_clean"]) for r in rows]
        for column, recorded in (
            ("r_strategy", result["metrics"]),
            ("r_clean_2", result.get("floor", {}).get("metrics")),
        ):
            if recorded is None:
                continue
            mine = plain_metrics([float(r[column]) for r in rows], r_c, bins)
            assert mine == pytest.approx({k: recorded["all"]["values"][k] for k in mine}, abs=2e-6), column
    detection = result.get("detection")
    if detection:
        rows = _csv(path.parent / "detection_per_question.csv")
        for stage in ("contaminated", "clean"):
            auroc = detection[stage].get("auroc")
            scores = [float(r[f"score_{stage}"]) for r in rows]
            if auroc is None or not all(math.isfinite(s) for s in scores):
                continue
            assert roc_auc_score([int(r["leaked"]) for r in rows], scores) == pytest.approx(auroc, abs=1e-9), stage


def test_each_world_records_its_command_and_keeps_no_job_twice():
    for world in WORLDS:
        run = json.loads((world / "run.json").read_text())
        assert run["command"].startswith("make reproduce") and run["wall_s"] > 0
        jobs = sorted(p.parent.relative_to(world).as_posix() for p in world.glob("*/*/results.json"))
        assert sorted(run["jobs"]) == jobs and all(c.startswith("python evaluate.py ") for c in run["jobs"].values())
        assert not set(run["jobs"]) & set(run["repeats_dropped"])
        size = sum(p.stat().st_size for p in world.rglob("*") if p.is_file())
        assert size < 5_000_000, f"{world.name}: {size:,} bytes"
