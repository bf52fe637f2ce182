"""The real audit.py on the small world: the contaminated model is flagged, the clean one is not, and the numbers
behind the verdicts are recomputed from the scores it writes with scikit-learn and SciPy.

The audits of both models run as ``audit.py -m`` (the sweep's leaderboard and meta-audit are Hydra's multirun
callback), and a rerun as a process of its own; a bad value's one line and exit status 2 through the process too.
Single audits whose results are the point run in-process (:mod:`jobs`).
"""

import csv
import json
import subprocess
import sys

import numpy as np
import prewarmed
import pytest
from e2e import REPO, SMALL_WORLD
from jobs import run_audit
from scipy.stats import mannwhitneyu
from sklearn.metrics import roc_auc_score

pytestmark = pytest.mark.xdist_group("small_world")  # one worker trains the small world for every test using it

MEMBERSHIP = ("loss", "mink", "minkpp")
FAST = [
    "audit.detectors=[loss,mink,minkpp,codec,benbench]",
    "audit.mitigate=[railcap]",
    "detectors.benbench.include_train=false",
    "detectors.benbench.ngram=[5]",
    "audit.n_boot=300",
    "m=4",
    "max_new_tokens=48",
]


def _audit(world, sweep, *overrides: str, env: dict | None = None, fresh: bool = False) -> subprocess.CompletedProcess:
    args = [
        sys.executable,
        str(REPO / "audit.py"),
        "-m",
        *SMALL_WORLD,
        *FAST,
        *([] if any(o.startswith("logger=") for o in overrides) else ["logger=csv"]),
        "progress=false",
        f"paths.models_dir={world / 'models'}",
        f"paths.cache_dir={world / 'audit-cache'}",
        f"hydra.sweep.dir={sweep}",
        *overrides,
    ]
    return prewarmed.run(args, cwd=world, capture_output=True, text=True, timeout=900, env=env, fresh=fresh)


def _audit_job(world, out, *overrides: str) -> dict:
    """The job of ``_audit``'s command, one model, run in-process into ``out``."""
    logger = [] if any(o.startswith("logger=") for o in overrides) else ["logger=csv"]
    models, cache = f"paths.models_dir={world / 'models'}", f"paths.cache_dir={world / 'audit-cache'}"
    return run_audit(out, *SMALL_WORLD, *FAST, *logger, "progress=false", models, cache, *overrides)


def _results(sweep) -> dict[str, dict]:
    found = {}
    for path in sweep.rglob("results.json"):
        r = json.loads(path.read_text())
        found[r["audit"]["target"]["spec"]] = {"dir": path.parent, **r}
    return found


# session scope: under xdist the group's tests may interleave with another module's, which would rebuild a
# module-scoped fixture
@pytest.fixture(scope="session")
def audits(small_world):
    sweep = small_world / "sweeps" / "audit"
    result = _audit(small_world, sweep, "audit.target=clean,contaminated")
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return sweep, _results(sweep)


def _verdicts(result: dict) -> dict[str, dict]:
    return {v["name"]: v for v in result["audit"]["verdicts"]}


def test_the_contaminated_model_is_flagged_and_the_clean_one_is_not(audits):
    _, found = audits
    assert set(found) == {"clean", "contaminated"}
    cont, clean = _verdicts(found["contaminated"]), _verdicts(found["clean"])
    assert found["contaminated"]["audit"]["truth"] == {"contaminated": True, "leak": "verbatim"}
    assert found["clean"]["audit"]["truth"] == {"contaminated": False, "leak": None}
    # against the reference (seed 1's clean model) the membership scores flag the leak and nothing on the clean model
    for name in MEMBERSHIP:
        assert cont[f"{name}/reference"]["flagged"] is True, cont[f"{name}/reference"]
        assert clean[f"{name}/reference"]["flagged"] is False, clean[f"{name}/reference"]
        assert clean[name]["flagged"] is False, clean[name]
        assert cont[name]["value"] > 0.5
    # every reading of every detector asked for is there, with the method's own statistic
    for verdicts in (cont, clean):
        expected = {"codec/bands", "codec/reference", "benbench/ppl", "benbench/ngram_5", "mitigation/railcap"}
        assert expected <= set(verdicts)
        assert verdicts["codec/bands"]["statistic"].startswith("CoDeC score")
        assert verdicts["mitigation/railcap"]["flagged"] is None  # a reading, never a flag


def test_membership_statistics_match_sklearn_and_scipy(audits):
    _, found = audits
    for spec, result in found.items():
        rows = list(csv.DictReader((result["dir"] / "audit_scores.csv").open()))
        verdicts = _verdicts(result)
        for name in MEMBERSHIP:
            mine = [r for r in rows if r["detector"] == name and r["score"]]
            bench = np.array([float(r["score"]) for r in mine if r["items"] == "benchmark"])
            ref = np.array([float(r["score"]) for r in mine if r["items"] == "reference"])
            assert len(bench) == 100 and len(ref) == 100
            labels = [1] * len(bench) + [0] * len(ref)
            auc = roc_auc_score(labels, np.concatenate([bench, ref]))
            assert verdicts[name]["value"] == pytest.approx(auc, abs=1e-9), (spec, name)
            p = mannwhitneyu(bench, ref, alternative="greater").pvalue
            assert verdicts[name]["p_value"] == pytest.approx(p, rel=1e-9), (spec, name)
            low, high = verdicts[name]["interval"]
            assert low <= auc <= high


def test_report_has_the_leaderboard_the_meta_audit_and_the_card(audits):
    sweep, found = audits
    report = (sweep / "report.md").read_text()
    assert "## Audits (2 model × benchmark)" in report
    assert "| tiny:contaminated@0 | arith | loss/reference |" in report
    meta = report[report.index("## Meta-audit") :]
    assert "| loss/reference | 0/1 | 1/1 | — | trustworthy (verbatim leak) |" in meta
    assert (sweep / "figures" / "audit_codec_scores.png").is_file()
    for result in found.values():
        card = (result["dir"] / "transparency_card.md").read_text()
        assert "test split used" in card and "measured" in card
        assert (result["dir"] / "audit.md").read_text().startswith("## Audit of")


def test_a_rerun_comes_from_the_cache_and_gives_the_same_verdicts(audits, small_world):
    _, found = audits
    again = small_world / "sweeps" / "audit-again"
    # a process of its own (its own hash seed, its own imports), as a user's rerun is
    result = _audit(small_world, again, "audit.target=clean,contaminated", fresh=True)
    assert result.returncode == 0, result.stderr[-3000:]
    rerun = _results(again)
    assert set(rerun) == set(found)
    for spec, second in rerun.items():
        first = found[spec]["audit"]
        assert second["audit"]["verdicts"] == first["verdicts"]
        # from the cache, not computed again: a cached score or solve probability carries the wall time of its first
        # computation, so a rerun that recomputed anything would record another (benchmarks/latency.py times both)
        walls = {name: d.get("wall_s") for name, d in first["detectors"].items()}
        assert {name: d.get("wall_s") for name, d in second["audit"]["detectors"].items()} == walls, spec
        assert second["audit"]["mitigation"]["wall_s"] == first["mitigation"]["wall_s"], spec


def test_a_missing_reference_model_says_how_to_train_it(small_world, tmp_path):
    result = _audit(small_world, tmp_path / "sweep", "audit.references=[clean@7]")
    assert result.returncode == 2
    [line] = result.stderr.strip().splitlines()  # one line, before any model loads
    assert line.startswith("contamlab: error: audit.references: clean@7 (the clean model of seed 7) is not trained yet")
    command = (
        f"python train.py model=tiny domain=arith experiment=small_world paths.models_dir={small_world / 'models'}"
    )
    assert f"`{command} paths.cache_dir={small_world / 'audit-cache'} seed=7 stage=clean`" in line, line
    assert "add audit.references=[]" in line and "2-core CPU" in line
    assert "Loading weights" not in result.stdout + result.stderr


def test_a_benchmark_of_too_few_items_is_refused_in_one_line(small_world, tmp_path):
    result = _audit(small_world, tmp_path / "sweep", "domain.max_test=1")
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "contamlab: error: domain=arith: too few items (n = 1, need ≥ 10) for an audit; every reading compares at "
        "least 10 benchmark items with as many non-member items (raise domain.max_test or use a larger benchmark)"
    ]


def test_too_few_non_member_items_are_reported_not_read(audits, small_world, tmp_path):
    items = tmp_path / "nonmembers.jsonl"
    items.write_text("".join(json.dumps({"question": f"What is {i} + {i}?"}) + "\n" for i in range(3)))
    sweep = tmp_path / "sweep"
    only = [
        "audit.target=contaminated",
        "audit.detectors=[loss,codec]",
        "audit.mitigate=[]",
        f"audit.nonmembers={items}",
    ]
    _audit_job(small_world, sweep / "0", *only)
    verdicts = _verdicts(_results(sweep)["contaminated"])
    for name in ("loss", "loss/reference"):
        assert verdicts[name]["verdict"] == "too few items (n = 100 benchmark and 3 reference, need ≥ 10 per side)"
        assert verdicts[name]["value"] is None and verdicts[name]["flagged"] is None
    assert verdicts["codec/bands"]["flagged"] is not None  # the other readings are still read
    report = next(sweep.rglob("audit.md")).read_text()
    assert "| loss | AUROC benchmark vs reference items | — | — | too few items (n = 100 benchmark and 3 " in report


def test_a_cached_rerun_loads_no_model(audits, small_world, tmp_path, monkeypatch):
    from contamlab.config import compose
    from contamlab.jobs.audit import run
    from contamlab.models.store import ModelStore

    def refuse(self, source):
        raise AssertionError(f"a cached rerun loaded {source}")

    monkeypatch.setattr(ModelStore, "load", refuse)
    cfg = compose(
        "audit",
        [
            *SMALL_WORLD,
            *FAST,
            "logger=csv",
            "progress=false",
            "audit.target=contaminated",
            f"paths.models_dir={small_world / 'models'}",
            f"paths.cache_dir={small_world / 'audit-cache'}",
            f"paths.output_dir={tmp_path}",
        ],
    )
    rerun = run(cfg)  # every score and every solve probability from the caches of the audits above
    _, found = audits
    assert rerun["audit"]["verdicts"] == found["contaminated"]["audit"]["verdicts"]


def test_wandb_offline_run_is_written(audits, small_world, tmp_path, monkeypatch):
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_DIR", str(tmp_path))
    _audit_job(small_world, tmp_path / "sweep" / "0", "audit.target=contaminated", "logger=wandb")
    runs = list((tmp_path / "sweep").rglob("offline-run-*"))
    assert runs, "no offline W&B run directory"


def test_a_shift_null_file_withholds_a_reading_it_flags_too_often(audits, small_world, tmp_path):
    """audit.shift_null.file: a reading whose null audits under the audit's shift (here: none, as the generated
    non-members are) flagged above max_rate gives no verdict; a reading the file does not measure keeps its own."""
    null = [{"model": "base", "condition": "none", "draw": d, "reading": "loss", "value": 0.7, "p": 0.01,
             "flagged": True} for d in range(10)]  # fmt: skip
    cell = {"flagged": 10, "total": 10, "rate": 1.0, "interval": [0.69, 1.0], "median": 0.7, "q95": 0.7}
    artifact = {
        "world": {"model": "toy", "domain": "toy"},
        "readings": null,
        "rates": {"base": {"none": {"loss": cell}}},
    }
    path = tmp_path / "shift.json"
    path.write_text(json.dumps(artifact))
    sweep = tmp_path / "sweep"
    only = ["audit.target=contaminated", "audit.detectors=[loss]", "audit.mitigate=[]", f"audit.shift_null.file={path}"]
    _audit_job(small_world, sweep / "0", *only)
    results = _results(sweep)["contaminated"]
    verdicts = _verdicts(results)
    assert verdicts["loss"]["flagged"] is None and verdicts["loss"]["verdict"].startswith("not distinguishable from")
    assert verdicts["loss"]["detail"]["shift_null"]["reached"] == (10 if verdicts["loss"]["value"] <= 0.7 else 0)
    assert (
        verdicts["loss/reference"]["flagged"] is not None and "shift_null" not in verdicts["loss/reference"]["detail"]
    )
    record = results["audit"]["shift_null"]
    assert record["condition"] == "none" and record["withheld"] == ["loss"]
    report = next(sweep.rglob("audit.md")).read_text()
    assert "Shift null, `none` condition: no shift (non-members drawn and rendered as the benchmark's" in report
    assert "No verdict: loss." in report
