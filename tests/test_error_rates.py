"""The error-rate audit: its statistics on hand-built scores, and the job on the tiny trained world (in-process)."""

from pathlib import Path

import numpy as np
import pytest
from e2e import TINY
from scipy.stats import beta
from sklearn.metrics import roc_auc_score

from contamlab.metrics import error_rates as C
from contamlab.metrics import verdicts as V

SETTINGS = V.Settings(alpha=0.05, n_boot=50, seed=0)


# -- the statistics --------------------------------------------------------------------------------------------------
def test_pool_splits_are_disjoint_and_shrink_in_proportion():
    for a, b in C.pool_splits(10, 4, 3, 5, seed=1):
        assert len(a) == 4 and len(b) == 3 and not set(a) & set(b)
    # a pool of 10 for sides of 12 and 8: 6 and 4, every item used once
    for a, b in C.pool_splits(10, 12, 8, 5, seed=1):
        assert (len(a), len(b)) == (6, 4) and sorted([*a, *b]) == list(range(10))


def test_the_null_of_identical_scores_flags_about_alpha():
    pool = np.random.default_rng(0).normal(size=400)  # one distribution: every split is a true null
    splits = C.pool_splits(400, 100, 100, 400, seed=2)
    rate = C.false_alarms(lambda a, b: V.membership_test(pool[a], pool[b], SETTINGS), splits)
    assert rate.total == 400
    # Mann-Whitney is exact under exchangeability: about 5 % (a binomial 95 % range of 400 draws is 2.9-7.4 %)
    assert 0.025 <= rate.rate <= 0.08, rate


def test_a_shifted_side_flags_nearly_always():
    rng = np.random.default_rng(0)
    pool = rng.normal(size=200)
    shifted = pool + np.where(np.arange(200) < 100, 1.0, 0.0)  # the first hundred items score one sd higher
    splits = [(np.sort(rng.choice(100, 50, replace=False)), 100 + np.sort(rng.choice(100, 50, replace=False)))
              for _ in range(100)]  # fmt: skip
    rate = C.false_alarms(lambda a, b: V.membership_test(shifted[a], shifted[b], SETTINGS), splits)
    assert rate.rate >= 0.95, rate


def test_power_counts_verdicts_and_its_interval_is_clopper_pearson():
    rate = C.power([True, True, None, False])
    assert (rate.flagged, rate.total) == (2, 3)
    low, high = rate.interval(0.95)
    # Clopper-Pearson by its beta quantiles
    assert low == pytest.approx(beta.ppf(0.025, 2, 2)) and high == pytest.approx(beta.ppf(0.975, 3, 1))
    assert C.power([None]).rate is None and C.power([None]).interval() is None


def test_a_twins_reading_is_the_auroc_sklearn_gives():
    rng = np.random.default_rng(3)
    leaked, other = rng.normal(0.5, 1, 40), rng.normal(0, 1, 40)
    v = V.membership_test(leaked, other, SETTINGS)
    assert v.value == pytest.approx(roc_auc_score([1] * 40 + [0] * 40, np.r_[leaked, other]))


def _verdict(flagged):
    return V.Verdict("loss", "AUROC", 0.7, [0.6, 0.8], 0.01, "benchmark items score higher", flagged)


def test_the_detection_dose_is_the_first_that_reaches_the_power():
    powers = {"1 epoch": C.Rate(1, 3), "2 epochs": C.Rate(3, 3), "4 epochs": C.Rate(3, 3)}
    v = C.with_error_rates(_verdict(True), C.Rate(9, 200), powers, min_power=0.8)
    assert v.flagged is True
    assert v.detail["error_rates"]["detection_dose"] == "2 epochs"
    assert v.detail["error_rates"]["null"]["flagged"] == 9 and "power 3/3 at 2 epochs" in v.verdict


def test_an_underpowered_reading_gives_no_verdict_either_way():
    powers = {"1 epoch": C.Rate(1, 3), "2 epochs": C.Rate(2, 3)}
    for flagged in (True, False):
        v = C.with_error_rates(_verdict(flagged), C.Rate(10, 200), powers, min_power=0.8)
        assert v.flagged is None and v.verdict.startswith("underpowered on this model")
        assert "2/3" in v.verdict and v.detail["error_rates"]["detection_dose"] is None
    # a reading without a verdict stays without one, and keeps its words
    v = C.with_error_rates(V.Verdict("loss", "AUROC", None, None, None, "no scored items", None), None, powers, 0.8)
    assert v.verdict == "no scored items" and v.flagged is None


# -- the job, in-process on the tiny trained world -------------------------------------------------------------------
def _audit(tmp, out, cache, *extra):
    from contamlab.config import compose
    from contamlab.validation import validate

    cfg = compose(
        "audit",
        [
            *TINY,
            f"paths.models_dir={tmp / 'models'}",
            f"paths.cache_dir={cache}",
            f"paths.output_dir={out}",
            "audit.target=contaminated",
            "audit.references=[clean]",
            "audit.detectors=[loss,codec]",
            "audit.mitigate=[]",
            "audit.n_boot=50",
            "audit.error_rates.pool=auto",
            "audit.error_rates.twins=2",
            "audit.error_rates.null_draws=30",
            "trainer.enable_progress_bar=false",
            "logger=csv",
            "progress=false",
            *extra,
        ],
    )
    validate(cfg)
    Path(out).mkdir(parents=True, exist_ok=True)
    return cfg


def test_the_error_rate_audit_measures_null_and_power_and_a_rerun_trains_nothing(trained, tmp_path, monkeypatch):
    from jobs import run_job

    from contamlab import stages
    from contamlab.models.store import read_training_texts

    tmp, _, _ = trained
    twins: list[str] = []
    train_stage = stages.train_stage

    def counted(*args, **kwargs):
        twins.append(str(args[4]))
        return train_stage(*args, **kwargs)

    monkeypatch.setattr(stages, "train_stage", counted)  # the training service error_rates calls
    cache = tmp_path / "cache"
    first = run_job("audit", _audit(tmp, tmp_path / "first", cache))["audit"]
    record = first["error_rates"]
    assert len(twins) == 2 and record["twins_per_dose"] == 2 and record["null_draws"] == 30
    # each twin's cost this run: trained and scored now, so both are positive seconds
    assert [c["seed"] for c in record["twin_costs"]] == [0, 1]
    assert all(c["train_s"] > 0 and c["score_s"] > 0 and not c["scores_cached"] for c in record["twin_costs"])
    trains = sorted(c["train_s"] for c in record["twin_costs"])
    assert record["seconds_per_twin"]["train"] == pytest.approx((trains[0] + trains[1]) / 2, abs=0.01)
    readings = {v["name"]: v for v in first["verdicts"]}
    for name in ("loss", "loss/reference"):
        cal = readings[name]["detail"]["error_rates"]
        assert cal["null"]["total"] == 30
        (power,) = cal["power"].values()  # one dose: the contaminated stage's
        assert power["total"] == 2 and 0 <= power["flagged"] <= 2
    assert "not_run" in readings["codec/bands"]["detail"]["error_rates"]
    # the pool is unseen: no pool item in any training text of any stage (base, clean, contaminated)
    from contamlab.audit.error_rates import ErrorRates
    from contamlab.audit.models import AuditedModel
    from contamlab.audit.nonmembers import nonmember_items
    from contamlab.config import build_domain, model_store
    from contamlab.models.reference import ModelRef

    cfg = _audit(tmp, tmp_path / "probe", cache)
    domain = build_domain(cfg.domain)
    target = AuditedModel(ModelRef.parse("contaminated"), cfg, model_store(cfg), domain)
    nonmembers, _ = nonmember_items(domain, "auto")
    rates = ErrorRates(cfg, target, [], domain, nonmembers, SETTINGS, False)
    pool = rates.pool
    stages = [p for p in (tmp / "models").rglob("train_summary.json") if "twins" not in p.parts]
    assert len(stages) >= 3
    texts = "\n".join(t for p in stages for t in read_training_texts(p.parent) or [])
    assert texts and not [q.id for q in pool.test if q.question in texts]
    assert not {q.question for q in pool.test} & {q.question for q in nonmembers.test}
    # twin_pools: own: each twin seed trained on half of a pool of its own, none of the null pool's or the other's
    assert record["twin_pools"] == "own" and len(rates.twin_pools) == 2
    own = [{q.question for q in p.test} for p in rates.twin_pools]
    assert not own[0] & own[1] and not (own[0] | own[1]) & {q.question for q in pool.test}
    for k, path in enumerate(twins):
        trained_on = "\n".join(read_training_texts(Path(path)) or [])
        hits = [sum(t in trained_on for t in own[j]) for j in (0, 1)]
        assert hits[k] == len(own[k]) // 2 and hits[1 - k] == 0, (k, hits)
    # a rerun reads every twin and score: no training, no model loaded
    from contamlab.models.store import ModelStore

    loads: list[str] = []
    monkeypatch.setattr(ModelStore, "load", lambda self, source: loads.append(source))
    second = run_job("audit", _audit(tmp, tmp_path / "second", cache))["audit"]
    assert len(twins) == 2 and loads == []
    assert second["error_rates"]["readings"] == record["readings"]
    assert all(c["train_s"] is None and c["scores_cached"] for c in second["error_rates"]["twin_costs"])
    assert second["error_rates"]["seconds_per_twin"] == {"train": None, "score": None}


def test_a_partial_dose_trains_on_its_share_of_the_benchmark_side_and_reads_the_whole_side(monkeypatch):
    from types import SimpleNamespace

    from contamlab.audit import error_rates
    from contamlab.audit.error_rates import Dose, ErrorRates

    class Opened:  # the audited model's class: a twin is opened as its parent was
        def __init__(self, ref, cfg, store, domain):
            self.source = ref.text

    monkeypatch.setattr(error_rates, "AuditedModel", Opened)

    full, half = Dose(2, 1e-3), Dose(1, 5e-4, 0.5)
    assert (full.label, half.label) == ("2 epochs at lr 0.001", "1 epoch at lr 0.0005, 50% leaked")
    assert full.to_key() == {"epochs": 2, "lr": 1e-3}  # a full leak keeps its old twin key
    assert half.to_key() == {"epochs": 1, "lr": 5e-4, "fraction": 0.5}
    cal = object.__new__(ErrorRates)  # twin_models needs the pool, doses and twin count only
    cal.pool = SimpleNamespace(test=[SimpleNamespace(id=f"p{i}") for i in range(40)])
    cal.twin_pools = [cal.pool, cal.pool]  # twin_pools: shared
    cal.doses, cal.twins = [full, half], 2
    cal.cfg = cal.domain = None
    cal.target = SimpleNamespace(store=None)
    trained = []
    monkeypatch.setattr(ErrorRates, "train_twin", lambda self, dose, seed, split: trained.append(split) or Path("t"))
    twins = cal.twin_models()
    assert len(twins) == len(trained) == 4
    for (dose, _seed, sides, twin), split in zip(twins, trained):
        assert isinstance(twin, Opened) and twin.source == "t"
        assert len(sides.leaked) == len(sides.unleaked) == 20  # read: one half of the pool against the other
        if dose is full:
            assert split == sides
        else:  # trained on 10 of its 20 benchmark-side items, the rest of the pool unseen
            assert len(split.leaked) == 10 and set(split.leaked) < set(sides.leaked)
            assert len(split.unleaked) == 30
    assert trained[2].leaked != trained[3].leaked  # each twin seed draws its own share


def test_the_error_rate_table_counts_verdicts_against_the_truth():
    from contamlab.analysis.audit import error_rate_table

    def audit(contaminated, flagged, underpowered=False, stage=None):
        cal = {"null": {"flagged": 3, "total": 100}, "power": {"2 epochs": {"flagged": 3, "total": 3}}}
        verdict = "underpowered on this model: …" if underpowered else "…"
        v = {"name": "loss", "flagged": None if underpowered else flagged, "verdict": verdict,
             "detail": {"error_rates": cal}}  # fmt: skip
        codec = {"name": "codec/bands", "flagged": False, "verdict": "…", "detail": {"error_rates": {"not_run": "…"}}}
        truth = {"contaminated": contaminated, "leak": "verbatim" if contaminated else None}
        target = {"spec": stage or ("contaminated" if contaminated else "clean")}
        return {"audit": {"truth": truth, "target": target, "error_rates": {"pool": "…"}, "verdicts": [v, codec]}}

    table = error_rate_table([audit(False, False), audit(False, True), audit(True, True), audit(True, None, True)])
    row = next(line for line in table.splitlines() if line.startswith("| loss"))
    assert row == "| loss | 1/2 | 1/1 (1 underpowered) | — | 3 of 100 (4 audits) | 12/12 |"  # per audit, not summed
    assert "codec" not in table and "sham" not in table  # no sham column where no sham control was audited
    # a sham control (sham@1: another seed's) is a model that saw nothing, counted apart from the clean ones
    table = error_rate_table([audit(False, False), audit(False, True, stage="sham@1"), audit(True, True)])
    assert "| flagged: clean models | flagged: sham controls | flagged: verbatim leaks |" in table
    row = next(line for line in table.splitlines() if line.startswith("| loss"))
    assert row == "| loss | 0/1 | 1/1 | 1/1 | — | 3 of 100 (3 audits) | 9/9 |"


def test_a_negligible_dose_is_underpowered_and_the_weakest_detecting_dose_is_the_detection_dose(trained, tmp_path):
    """End to end on the tiny world: doses listed strongest first run and report weakest first."""
    from jobs import run_job

    tmp, _, _ = trained
    negligible, strong, stronger = "{epochs: 1, lr: 1e-9}", "{epochs: 8, lr: 0.01}", "{epochs: 16, lr: 0.01}"
    common = ["audit.detectors=[loss]", "audit.references=[]", "audit.error_rates.twins=2"]
    doses = f"audit.error_rates.doses=[{stronger}, {negligible}, {strong}]"
    first = run_job("audit", _audit(tmp, tmp_path / "first", tmp_path / "cache", *common, doses))["audit"]
    record = first["error_rates"]
    assert record["doses"] == ["1 epoch at lr 1e-09", "8 epochs at lr 0.01", "16 epochs at lr 0.01"]
    cal = {v["name"]: v for v in first["verdicts"]}["loss"]["detail"]["error_rates"]
    power = {dose: (p["flagged"], p["total"]) for dose, p in cal["power"].items()}
    assert power == {"1 epoch at lr 1e-09": (0, 2), "8 epochs at lr 0.01": (2, 2), "16 epochs at lr 0.01": (2, 2)}
    assert cal["detection_dose"] == "8 epochs at lr 0.01"  # the weakest detected, though listed last
    # the negligible dose alone: the reading reaches the power nowhere, so it gives no verdict (twins from the cache)
    alone = f"audit.error_rates.doses=[{negligible}]"
    second = run_job("audit", _audit(tmp, tmp_path / "second", tmp_path / "cache", *common, alone))["audit"]
    loss = {v["name"]: v for v in second["verdicts"]}["loss"]
    assert loss["flagged"] is None and loss["verdict"].startswith("underpowered on this model")
    assert loss["detail"]["error_rates"]["detection_dose"] is None


def test_the_meta_audit_counts_sham_controls_apart_and_their_flags_as_false_alarms():
    from contamlab.analysis.audit import meta_audit

    def audit(spec, flagged):
        contaminated = spec.startswith("contaminated")
        truth = {"contaminated": contaminated, "leak": "verbatim" if contaminated else None}
        return {"audit": {"truth": truth, "target": {"spec": spec}, "verdicts": [{"name": "loss", "flagged": flagged}]}}

    plain = meta_audit([audit("clean", False), audit("contaminated", True)])
    assert "sham" not in plain
    assert "| loss | 0/1 | 1/1 | — | trustworthy (verbatim leak) |" in plain
    shams = [audit("sham", True), audit("sham@2", False)]
    table = meta_audit([audit("clean", False), *shams, audit("contaminated", True)])
    assert "| false alarms (clean) | false alarms (sham) | power (verbatim leak) |" in table
    assert "| loss | 0/1 | 1/2 | 1/1 | — | false alarms |" in table  # a flagged sham is a false alarm
