"""A sweep's summary.csv, report.md and figures read without a guide, on hand-built sweeps.

Each sweep here is a directory of results.json and per_question.csv files written as evaluate.py writes them, with
metrics computed by the real gap functions, so that the report's paired comparisons read real per-question files.
"""

import csv
import json
import logging

import numpy as np
import pytest

from contamlab.analysis import figures, report, results, summary
from contamlab.analysis.claims import CLAIMS, NOT_TESTABLE
from contamlab.metrics import bin_index, bootstrap_intervals, gap_metrics

M = 4  # samples per question: clean solve probabilities are multiples of 1/4
RNG = np.random.default_rng(0)
CLEAN = RNG.integers(0, M + 1, 60) / M  # [N] the clean model's r̂, about 12 questions in each of 5 bins
CLEAN_2ND = np.clip(CLEAN + RNG.choice([-0.25, 0.0, 0.25], 60), 0, 1)  # a second clean batch: the noise floor


def _metrics(r_strategy: np.ndarray) -> dict:
    """results.json's ``metrics`` block of a strategy's readouts against :data:`CLEAN` (group ``all`` only)."""
    bins = bin_index((CLEAN * M).round().astype(int), M, 50)
    values = gap_metrics(r_strategy, CLEAN, 50, bins)
    values["g_ap"] = abs(float(np.mean(r_strategy) - np.mean(CLEAN)))
    ci = bootstrap_intervals(r_strategy, CLEAN, 50, bins, draws=200)
    ci["g_ap"] = (0.0, 2 * values["g_ap"])
    return {"all": {"values": values, "ci": {k: list(v) for k, v in ci.items()}}}


def _job(root, name: str, strategy: dict, r_strategy: np.ndarray) -> None:
    """One finished job under ``root/name``: results.json (with its noise floor) and per_question.csv."""
    job = root / name
    job.mkdir(parents=True)
    bins = bin_index((CLEAN * M).round().astype(int), M, 50)
    lines = ["id,leaked,bin,clean_correct,clean_m,strategy_correct,strategy_kept,r_clean,r_strategy"]
    lines += [
        f"q{i},{i % 2},{b},{round(c * M)},{M},{round(s * M)},{M},{c:.6f},{s:.6f}"
        for i, (b, c, s) in enumerate(zip(bins, CLEAN, r_strategy))
    ]
    (job / "per_question.csv").write_text("\n".join(lines) + "\n")
    result = {
        "config": {"model": {"name": "tiny"}, "domain": {"name": "arith"}, "temperature": 1.0, "seed": 0},
        "strategy": strategy,
        "counts": {"m": M, "questions": len(CLEAN)},
        "models": {"clean": "/models/clean", "contaminated": "/models/contaminated"},
        "metrics": _metrics(r_strategy),
        "floor": {"metrics": _metrics(CLEAN_2ND)},  # every job of a setting scores the same two clean batches
    }
    (job / "results.json").write_text(json.dumps(result))


RAILCAP = {"name": "railcap", "n": 4, "mode": "cap", "duplicates": "all"}
IDENTITY = np.clip(CLEAN + 0.25, 0, 1)  # the contaminated model: every question a quarter above the clean one


def _two_strategy_grid(root) -> None:
    """``evaluate.py -m strategy=identity,railcap`` where RailCap over-corrects: worse than Identity."""
    _job(root, "0_identity", {"name": "identity"}, IDENTITY)
    _job(root, "1_railcap", RAILCAP, np.clip(CLEAN - 0.5, 0, 1))


def test_summary_counts_jobs_and_gives_the_noise_floor_its_own_row(tmp_path, caplog):
    _two_strategy_grid(tmp_path)
    with caplog.at_level(logging.INFO, logger="contamlab"):
        summary.write_summary(tmp_path)
    assert "aggregated 2 jobs and 1 noise-floor row" in caplog.text  # was "aggregated 3 jobs"
    rows = list(csv.DictReader((tmp_path / "summary.csv").open()))
    assert [(r["row_kind"], r["strategy_name"]) for r in rows] == [
        ("job", "identity"),
        ("job", "railcap"),
        ("noise_floor", "clean_2nd"),
    ]
    # The floor belongs to the setting, not to the job it was read from (before: filed under the RailCap job).
    floor = rows[2]
    assert floor["job"] == "" and floor["strategy"] == "clean_2nd"
    assert sorted(r["job"] for r in rows[:2]) == [str(tmp_path / "0_identity"), str(tmp_path / "1_railcap")]
    assert float(floor["all/sa_ppg"]) == pytest.approx(_metrics(CLEAN_2ND)["all"]["values"]["sa_ppg"])
    # ... and the report still shows it as the reference row
    assert "| Clean, 2nd batch |" in (tmp_path / "report.md").read_text()


def test_floor_row_is_never_paired_with_the_working_directory(tmp_path, monkeypatch):
    """A floor row's empty ``job`` must not read ./per_question.csv as if it were the floor's."""
    from contamlab.analysis.claims import paired_sappg

    _two_strategy_grid(tmp_path)
    rows = results.metric_rows(results.load_results(tmp_path))
    floor = next(r for r in rows if r["row_kind"] == results.NOISE_FLOOR)
    monkeypatch.chdir(tmp_path / "0_identity")  # a per_question.csv right here
    assert paired_sappg(floor, rows[0]) is None


def test_untestable_claims_fold_into_one_line(tmp_path):
    _two_strategy_grid(tmp_path)
    text = report.build_report(tmp_path)
    section = text.split("### Claims of the paper")[1].split("\n## ")[0]
    assert NOT_TESTABLE not in section
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    # The header and the one claim a two-strategy grid tests: RailCap against the runner-up, with its verdict.
    assert len(rows) == 2 and rows[1].startswith("| RailCap has the lowest SA-PPG") and "not reproduced" in rows[1]
    folded = [line for line in section.splitlines() if line.startswith("Not testable with these jobs")]
    assert len(folded) == 1
    line = folded[0]
    assert "(10 of 11 claims)" in line
    untestable = [c for c in CLAIMS if c.name != "RailCap lowest SA-PPG"]
    for claim in untestable:  # each named once, with what it needs and the grid that runs it
        assert line.count(f"{claim.name} ({claim.needs})") == 1 and f"`{claim.grid}`" in line
    assert "RailCap lowest SA-PPG" not in line


def test_table3_does_not_call_identity_the_best_mitigation(tmp_path):
    _two_strategy_grid(tmp_path)
    text = report.build_report(tmp_path)
    table3 = text.split("## Table 3")[1].split("\n## ")[0]
    assert "**" not in table3.split("\n\n")[1]  # no bold cell: Identity is no mitigation, RailCap does not beat it
    assert "tiny × arith: **no mitigation beats Identity here**" in table3
    assert "paired 95% bootstrap interval above 0" in table3  # the rule is stated in the report


def test_table3_bold_needs_a_paired_interval_above_zero(tmp_path):
    # Both RailCaps sit below Identity by their point estimates. One restores every question; the other differs
    # from Identity on one question of a bin of about twelve, so a bootstrap draw that leaves it out gives 0.
    one_better = IDENTITY.copy()
    moved = int(np.flatnonzero(CLEAN == 0.5)[0])
    one_better[moved] = CLEAN[moved]
    for name, readouts in (("restores", CLEAN.copy()), ("one_question", one_better)):
        root = tmp_path / name
        _job(root, "0_identity", {"name": "identity"}, IDENTITY)
        _job(root, "1_railcap", RAILCAP, readouts)
        rows = results.label_rows(results.metric_rows(results.load_results(root)))
        railcap = next(r for r in rows if r["strategy_name"] == "railcap")
        identity = next(r for r in rows if r["strategy_name"] == "identity")
        assert railcap["all/sa_ppg"] < identity["all/sa_ppg"]
        best, note = report.best_mitigation(rows)
        if name == "restores":
            assert best is railcap and note is None
            assert "| railcap | **" in report.table3(rows)
        else:
            assert best is None and "no mitigation beats Identity here" in note and "paired interval [+0.000" in note
            assert "**0." not in report.table3(rows)


def _row(name: str, sa_ppg: float, half_width: float | None) -> dict:
    """A Table 3 row without a job directory (no per_question.csv: never paired)."""
    row = {"model": "tiny", "domain": "arith", "strategy": name, "strategy_name": name, "label": name}
    row.update({"job": "", "all/sa_ppg": sa_ppg})
    if half_width is not None:
        row.update({"all/sa_ppg_lo": sa_ppg - half_width, "all/sa_ppg_hi": sa_ppg + half_width})
    return row


@pytest.mark.parametrize(
    ("half_width", "bold"),
    [(0.01, True), (0.03, False), (None, True)],  # apart, overlapping, no intervals: the point estimate decides
)
def test_table3_unpaired_rows_compare_intervals(half_width, bold):
    rows = [_row("identity", 0.30, half_width), _row("ted", 0.26, half_width), _row("all_zero", 0.10, half_width)]
    table = report.table3(rows)
    assert ("| ted | **0.2600** |" in table) is bold
    assert ("no mitigation beats Identity here" in table) is not bold
    assert "| all_zero | 0.1000 |" in table  # All-Zero, the lowest here, is a reference, never the best mitigation


def _captured(monkeypatch) -> list:
    """Replace figures.save_figure so that each figure is drawn and kept for inspection, then saved as before."""
    kept, save = [], figures.save_figure

    def keep(fig, path):
        fig.canvas.draw()
        kept.append(fig)
        return save(fig, path)

    monkeypatch.setattr(figures, "save_figure", keep)
    return kept


def _texts(fig) -> list[str]:
    """Every visible string of a figure: titles, axis labels, legend entries and titles, free text."""
    out = [t.get_text() for t in fig.texts]
    for ax in fig.axes:
        out += [ax.get_title(), ax.get_xlabel(), ax.get_ylabel(), *(t.get_text() for t in ax.texts)]
        legend = ax.get_legend()
        if legend is not None:
            out += [legend.get_title().get_text(), *(t.get_text() for t in legend.get_texts())]
    return [t for t in out if t]


def test_every_figure_labels_its_numbers(tmp_path, monkeypatch):
    kept = _captured(monkeypatch)
    rng = np.random.default_rng(0)
    per_bin = [
        {"bin": b, "lo": b / 50, "hi": (b + 1) / 50, "n": 12 + b, "mean_delta_plus": 0.05, "mean_delta_minus": 0.1}
        for b in (0, 10, 25)
    ]
    figures.per_bin_figure(per_bin, tmp_path / "pb.png", "tiny / arith / identity")  # the title evaluate.py gives
    rouge = [list(rng.random(4)) for _ in range(6)]
    figures.figure1(rouge, [[2, 3], [2], [4], [15], [2, 2], [4]], [True, False] * 3, tmp_path / "f1.png", "t")
    figures.figure2(rng.random((10, 4)) < 0.5, rng.random((10, 4)) < 0.5, tmp_path / "f2.png", "t")
    rows = [
        {"label": n, "strategy": n, "all/g_ap": 0.1, "all/g_ap_lo": 0.0, "all/g_ap_hi": 0.2, "all/sa_ppg": 0.2}
        for n in ("identity", "railcap")
    ]
    figures.strategy_figure(rows, tmp_path / "st.png", "tiny × arith")
    ablation = [{"n": n, "all/s_delta_plus": 0.1, "all/s_delta_minus": 0.2, "all/sa_ppg": 0.3} for n in (1, 2, 4)]
    figures.ablation_figure(ablation, tmp_path / "ab.png")
    curve = {"fpr": [0, 0.5, 1], "tpr": [0, 0.8, 1]}
    figures.roc_panels({"verbatim": [("loss", curve, curve)]}, tmp_path / "roc.png")
    per_bin_fig, figure1_fig, _, strategy_fig, ablation_fig, _ = kept
    for fig in kept:  # every axis with numbers on its ticks says what they count
        for ax in fig.axes:
            for axis, label in ((ax.xaxis, ax.get_xlabel()), (ax.yaxis, ax.get_ylabel())):
                ticks = [t.get_text().replace("−", "-") for t in axis.get_ticklabels()]
                numbers = [t for t in ticks if t.lstrip("-").replace(".", "", 1).isdigit()]
                assert label or not numbers, (ticks, _texts(fig))
    # The bin sizes above the bars are named, whatever the title (before: only under the default title).
    counts = [t.get_text() for t in per_bin_fig.axes[0].texts]
    assert counts == ["12", "22", "37"]
    assert any("numbers above the bars: questions in the bin" in t for t in _texts(per_bin_fig))
    # Figure 1's grey points (samples) and coloured ones (question means) are told apart.
    assert {"one sample", "question mean"} <= set(_texts(figure1_fig))
    # The whiskers of Table 1's bars are intervals, and say so.
    assert any("95% bootstrap interval" in t for t in _texts(strategy_fig))
    # Table 4's lines carry the metrics' names, not the results.json keys.
    legend = [t.get_text() for t in ablation_fig.axes[0].get_legend().get_texts()]
    assert legend == ["S-Δ⁺ (residual contamination)", "S-Δ⁻ (collateral damage)", "SA-PPG"]
