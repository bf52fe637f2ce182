"""An audit loads each model once, scores non-members only for the readings that compare with them, and a rerun
reads every score from the cache without loading a model (in-process, on the tiny trained world)."""

from collections import Counter
from pathlib import Path

from e2e import TINY

from contamlab.config import compose
from contamlab.validation import validate


def run_audit(cfg):
    """audit.py's job in-process (the output folder made, as Hydra makes it)."""
    from contamlab.jobs.audit import run

    Path(cfg.paths.output_dir).mkdir(parents=True, exist_ok=True)
    return run(cfg)


def _audit(tmp, out, cache):
    cfg = compose(
        "audit",
        [
            *[o for o in TINY if not o.startswith("trainer.")],
            f"paths.models_dir={tmp / 'models'}",
            f"paths.cache_dir={cache}",
            f"paths.output_dir={out}",
            "audit.target=contaminated",
            "audit.references=[clean]",
            "audit.detectors=[loss,codec,recall]",
            "audit.mitigate=[]",
            "audit.n_boot=50",
            "progress=false",
        ],
    )
    validate(cfg)
    return cfg


def test_an_audit_loads_each_model_once_and_a_rerun_loads_none(trained, tmp_path, monkeypatch):
    from contamlab.models.store import ModelStore

    tmp, _, _ = trained
    loads: list[str] = []
    load = ModelStore.load

    def counted(self, source):
        loads.append(source)
        return load(self, source)

    monkeypatch.setattr(ModelStore, "load", counted)
    cache = tmp_path / "cache"  # cold: every score is computed here
    first = run_audit(_audit(tmp, tmp_path / "first", cache))["audit"]
    # three detectors, two of them on the benchmark and the non-members, on the target and the reference: one load each
    assert sorted(Counter(loads).values()) == [1, 1]
    assert set(loads) == {first["target"]["source"], first["references"][0]["source"]}
    assert {name: d["cached"] for name, d in first["detectors"].items()} == dict.fromkeys(
        ("loss", "codec", "recall"), False
    )
    # CoDeC's readings compare no non-members: its scores are the two models' on the benchmark alone
    assert len(list((cache / "detect" / "scores").glob("codec-*.json"))) == 2
    assert len(list((cache / "detect" / "scores").glob("recall-*.json"))) == 4

    loads.clear()
    again = run_audit(_audit(tmp, tmp_path / "again", cache))["audit"]
    assert loads == []
    assert all(d["cached"] for d in again["detectors"].values())
    # the time reported is the first computation's, and the run says it read it from the cache
    assert {k: d["wall_s"] for k, d in again["detectors"].items()} == {
        k: d["wall_s"] for k, d in first["detectors"].items()
    }
    assert [v["value"] for v in again["verdicts"]] == [v["value"] for v in first["verdicts"]]
