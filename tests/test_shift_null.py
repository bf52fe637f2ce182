"""The shift null (:mod:`contamlab.studies.shift`) and the verdicts that carry it (:mod:`contamlab.audit.shift_null`).

Hand-built cases: a pure style shift flags every null audit, so a verdict under it reads "not distinguishable"; without
a shift the verdict reads as before. The rates are recomputed from the stored scores with scipy, not by the code's own
path, on synthetic null data and on the committed artifacts.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest, mannwhitneyu

from contamlab.audit.shift_null import closest_condition, with_shift_null
from contamlab.metrics import verdicts as V
from contamlab.studies import shift

SETTINGS = V.Settings(0.05, 400, 0.95, 0)
ARTIFACTS = sorted(Path(__file__).resolve().parents[1].joinpath("results/shift").glob("*.json"))


def _synthetic(draws: int, side: int, style_shift: float, seed: int = 0, common: bool = False) -> dict:
    """Scores of two models that saw nothing (base, sham) on ``draws`` null audits of ``side`` items a side.

    Scores are standard normal; under ``style`` the members score ``style_shift`` higher (a reading that tracks the
    wording). ``common``: the shift is the same on both models (the /reference reading cancels it); else the
    reference (base) does not read it.
    """
    rng = np.random.default_rng(seed)
    audits, scores = [], {"base": {"loss": {}}, "sham": {"loss": {}}}
    for d in range(draws):
        ids = {k: [f"d{d}-{k}{i}" for i in range(side)] for k in ("b", "n", "s")}
        audits.append({"members": ids["b"], "nonmembers": {"none": ids["n"], "style": ids["s"]}})
        for model in scores:
            shifted = style_shift if (model == "sham" or common) else 0.0
            for i in ids["b"]:
                scores[model]["loss"][i] = float(rng.normal()) + shifted
            for i in ids["n"]:
                scores[model]["loss"][i] = float(rng.normal()) + shifted  # the same wording as the members
            for i in ids["s"]:
                scores[model]["loss"][i] = float(rng.normal())  # reworded: the wording the reading does not favour
    found = shift.readings(scores, audits, SETTINGS)
    return {
        "world": {"model": "toy", "domain": "toy"},
        "readings": found,
        "rates": shift.rates(found),
        "scores": scores,
    }


def _plain(name: str, value: float, p: float) -> V.Verdict:
    return V.Verdict(
        name, "AUROC benchmark vs reference items", value, [value - 0.1, value + 0.1], p, "plain", p < 0.05
    )


def test_a_pure_style_shift_flags_every_null_audit_and_withholds_the_verdict():
    art = _synthetic(draws=20, side=50, style_shift=1.5)
    style = [
        r for r in art["readings"] if r["model"] == "sham" and r["condition"] == "style" and r["reading"] == "loss"
    ]
    assert len(style) == 20 and all(r["p"] < 0.05 for r in style)  # the permutation p below α on every audit
    cell = art["rates"]["sham"]["style"]["loss"]
    assert cell["flagged"] == 20 and cell["rate"] == 1.0
    assert cell["interval"][0] == pytest.approx(binomtest(20, 20).proportion_ci(0.95, "exact").low)
    verdict = _plain("loss", 0.66, 0.001)
    out, record = with_shift_null([verdict], art, "style", 0.1)
    assert out[0].flagged is None and out[0].verdict.startswith("not distinguishable from a style")
    assert record["withheld"] == ["loss"] and record["readings"]["loss"]["model"] == "sham"  # the worst null model
    # 0.66 sits below what a shift of 1.5 standard deviations gives (AUROC about 0.86): its shift p is large
    assert record["readings"]["loss"]["reached"] == 20 and record["readings"]["loss"]["shift_p"] == 1.0


def test_without_a_shift_the_verdict_reads_as_before_with_its_rate():
    art = _synthetic(draws=40, side=50, style_shift=1.5)
    cell = max((art["rates"][m]["none"]["loss"] for m in ("base", "sham")), key=lambda c: c["rate"])  # the worst
    assert cell["rate"] <= 0.15  # α = 0.05 on independent null audits: 40 draws, 6 or fewer flags
    verdict = _plain("loss", 0.66, 0.001)
    out, record = with_shift_null([verdict], art, "none", 0.1)
    assert out[0].flagged is True and out[0].verdict.startswith("plain; false alarms: ")
    assert f"{cell['flagged']} of 40 null audits" in out[0].verdict and record["withheld"] == []
    other = V.Verdict("codec", "in-context confidence shift", 0.9, None, 0.0, "x", True)
    assert with_shift_null([other], art, "none", 0.1)[0] == [other]  # not a reading the shift null measures


def test_the_rates_recomputed_from_the_stored_scores_with_scipy():
    art = _synthetic(draws=30, side=30, style_shift=0.8)
    flags: dict[tuple[str, str], list[bool]] = {}
    for r in art["readings"]:
        if r["reading"] != "loss":
            continue
        s = art["scores"][r["model"]]["loss"]
        d = r["draw"]
        members = [s[f"d{d}-b{i}"] for i in range(30)]
        letter = {"none": "n", "style": "s"}[r["condition"]]
        others = [s[f"d{d}-{letter}{i}"] for i in range(30)]
        p = mannwhitneyu(members, others, alternative="greater").pvalue
        assert r["p"] == pytest.approx(p, rel=1e-9) and r["flagged"] == (p < 0.05)
        flags.setdefault((r["model"], r["condition"]), []).append(p < 0.05)
    for (model, condition), f in flags.items():
        assert art["rates"][model][condition]["loss"]["flagged"] == sum(f)


def test_the_reference_reading_cancels_a_shift_common_to_both_models():
    """Difference in differences: a style shift that both the model and its reference read flags the plain reading
    on nearly every audit, and the /reference reading (AUROC minus the reference's) at about α."""
    art = _synthetic(draws=60, side=40, style_shift=1.0, seed=1, common=True)
    plain = art["rates"]["sham"]["style"]["loss"]
    versus = art["rates"]["sham"]["style"]["loss/reference"]
    assert plain["rate"] >= 0.95
    assert versus["total"] == 60 and versus["interval"][0] <= 0.05  # the level, within its exact interval
    assert versus["rate"] <= 0.15
    # on no-shift null data the /reference reading flags at about α too
    none = art["rates"]["sham"]["none"]["loss/reference"]
    assert none["interval"][0] <= 0.05 and none["rate"] <= 0.15


def test_the_closest_condition_follows_the_non_member_choice():
    assert closest_condition("generated", "50 fresh problems") == "none"
    assert closest_condition("train", "100 items of the train split") == "none"
    assert closest_condition("rewrites", "100 rewrites of the test items (pq)") == "style"
    assert closest_condition("auto", "100 rewrites of the test items (pq)") == "style"
    assert closest_condition("auto", "100 fresh problems of the same generator") == "none"
    assert closest_condition("/data/late.jsonl", "items from a file") == "source"


def test_the_arith_domain_draws_disjoint_unseen_sides():
    from contamlab.config import load_domain

    domain = load_domain("arith", generator={"n_train": 300, "n_test": 40, "seed": 0})
    seen = {q.question for q in (*domain.train, *domain.test, *domain.sham_training_questions())}
    first, second = domain.shift_sides(20, 0), domain.shift_sides(20, 1)
    texts = []
    for sides in (first, second):
        assert len(sides.members) == 20 and all(len(v) == 20 for v in sides.nonmembers.values())
        for q in (*sides.members, *sides.nonmembers["none"], *sides.nonmembers["source"]):
            texts.append(q.question)
        for member, reworded in zip(sides.members, sides.nonmembers["style"]):
            # the same problem reworded: its solution and answer kept, its question not
            assert reworded.solution == member.solution and reworded.answer == member.answer
            assert reworded.question != member.question
    assert len(set(texts)) == len(texts) and not set(texts) & seen
    numbers = [
        max(int(t) for t in q.question.replace("$", " ").replace(".", " ").replace(",", " ").split() if t.isdigit())
        for q in first.nonmembers["source"]
    ]
    plain = [
        max(int(t) for t in q.question.replace("$", " ").replace(".", " ").replace(",", " ").split() if t.isdigit())
        for q in first.nonmembers["none"]
    ]
    assert np.mean(numbers) > 1.5 * np.mean(plain)  # another number range


@pytest.mark.parametrize("path", ARTIFACTS, ids=[p.stem for p in ARTIFACTS])
def test_each_committed_artifact_gives_its_rates_again_with_scipy(path):
    art = json.loads(path.read_text())
    index = {i: k for k, i in enumerate(art["ids"])}
    chosen = {i: k for k, i in enumerate(art.get("choice_ids", []))}
    alpha = art["settings"]["alpha"]
    counts: dict[tuple[str, str, str], list[int]] = {}
    for r in art["readings"]:
        cell = counts.setdefault((r["model"], r["condition"], r["reading"]), [0, 0])
        if r["flagged"] is not None:
            cell[0] += bool(r["flagged"])
            cell[1] += 1
        if "/" in r["reading"]:
            continue
        audit = art["audits"][r["draw"]]
        if r["condition"] == "choice":  # the audit's own k or prefix, against the `none` non-members
            at = chosen
            s = np.array(art["choice_scores"][r["model"]][r["reading"]], np.float64)
            others = s[[at[i] for i in audit["nonmembers"]["none"]]]
        else:
            at = index
            s = np.array(art["scores"][r["model"]][r["reading"]], np.float64)
            others = s[[at[i] for i in audit["nonmembers"][r["condition"]]]]
        members = s[[at[i] for i in audit["members"]]]
        p = mannwhitneyu(members, others, alternative="greater").pvalue
        assert r["p"] == pytest.approx(p, rel=1e-9) and r["flagged"] == (p < alpha)
    for (model, condition, reading), (flagged, total) in counts.items():
        cell = art["rates"][model][condition][reading]
        assert (cell["flagged"], cell["total"]) == (flagged, total)
    assert art["run"]["git_commit"] and art["run"]["git_dirty"] is False and art["command"].startswith("python -m")


def test_the_page_is_what_the_artifacts_give():
    if not ARTIFACTS:
        pytest.skip("no shift-null artifact committed yet")
    page = Path(__file__).resolve().parents[1] / shift.PAGE
    assert page.read_text() == shift.page(shift.load(ARTIFACTS[0].parent))


def test_a_file_that_is_no_shift_null_artifact_is_named(tmp_path):
    from contamlab.audit.shift_null import load
    from contamlab.errors import ContamlabError

    path = tmp_path / "other.json"
    path.write_text(json.dumps({"auroc": 0.5}))
    with pytest.raises(ContamlabError, match=r"audit.shift_null.file=.*other.json: not a shift-null artifact"):
        load(path)


@pytest.mark.xdist_group("small_world")
def test_a_run_with_the_choice_condition_on_the_small_world(small_world, tmp_path, monkeypatch):
    """The whole study in-process on the small world's base and clean models (3 audits of 10 items a side), with
    ReCaLL and the choice condition: every stored p recomputed with scipy, and each audit's drawn k and prefix are
    the ones its scores were computed with."""
    monkeypatch.chdir(small_world)
    out = tmp_path / "tiny.json"
    overrides = [
        "experiment=small_world",
        f"paths.models_dir={small_world / 'models'}",
        f"paths.cache_dir={small_world / 'audit-cache'}",
    ]
    art = shift.run(overrides, 3, 10, ["base", "clean"], out, False, ("loss", "mink", "recall"), True)
    assert json.loads(out.read_text())["readings"] == art["readings"]
    assert set(art["conditions"]) == {"none", "style", "source", "choice"}
    picks = art["choices"]["audits"]
    assert [sorted(p) for p in picks] == [["mink", "recall"]] * 3 and len({p["recall"] for p in picks}) == 3
    index = {i: k for k, i in enumerate(art["choice_ids"])}
    fixed = {i: k for k, i in enumerate(art["ids"])}
    for r in (r for r in art["readings"] if r["condition"] == "choice" and "/" not in r["reading"]):
        audit = art["audits"][r["draw"]]
        s = np.array(art["choice_scores"][r["model"]][r["reading"]])
        members = s[[index[i] for i in audit["members"]]]
        others = s[[index[i] for i in audit["nonmembers"]["none"]]]
        assert r["p"] == pytest.approx(mannwhitneyu(members, others, alternative="greater").pvalue, rel=1e-9)
        plain = np.array(art["scores"][r["model"]][r["reading"]])[[fixed[i] for i in audit["members"]]]
        same_choice = r["reading"] == "mink" and picks[r["draw"]]["mink"] == 0.2  # the configured k
        assert np.allclose(members, plain) == same_choice  # another k or prefix gives other scores
    assert {r["condition"] for r in art["readings"] if r["reading"] == "recall/reference"} >= {"choice", "none"}
    assert "choice" in shift.page([art])


def test_a_rate_pooled_over_seeds_resamples_the_seeds():
    """Seed A flagged both audits, seed B neither: per-seed rates 1 and 0, mean 0.5; by hand a replicate's mean is
    1 (AA, 1/4), 0.5 (1/2) or 0 (1/4), so the 95 % interval is [0, 1] (pooling 2 of 4 audits as independent counts
    would give the narrower exact [0.07, 0.93])."""
    point, (low, high), per_seed = shift.pooled_rate([[True, True], [False, False]])
    assert per_seed == [1.0, 0.0] and point == 0.5 and (low, high) == (0.0, 1.0)


def test_the_page_pools_a_world_over_its_seeds():
    if len({json.loads(p.read_text())["world"]["seed"] for p in ARTIFACTS if "smollm2" in p.stem}) < 2:
        pytest.skip("one SmolLM2 seed committed")
    text = shift.page(shift.load(ARTIFACTS[0].parent))
    section = text.split("## smollm2 on arith, seeds 0, 1, 2 pooled")[1]
    # the sham's Loss under the source shift: each seed's count recomputed from its artifact's flags
    arts = sorted(
        (json.loads(p.read_text()) for p in ARTIFACTS if "smollm2" in p.stem), key=lambda a: a["world"]["seed"]
    )
    counts = []
    for a in arts:
        flags = [
            r["flagged"]
            for r in a["readings"]
            if (r["model"], r["condition"], r["reading"]) == ("sham", "source", "loss")
        ]
        counts.append(f"{sum(flags)}/{len(flags)}")
    rates = [int(c.split("/")[0]) / int(c.split("/")[1]) for c in counts]
    row = next(line for line in section.splitlines() if line.startswith("| sham | Loss |"))
    assert f"{np.mean(rates):.2f} [" in row.split("|")[5] and f"({', '.join(counts)})" in row.split("|")[5]
