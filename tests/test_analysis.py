"""Figure 1 diagnostics, figures and the report on hand-made inputs."""

import json
import os
import time

import numpy as np
import pytest
import torch

from contamlab.analysis import diagnostics, figures, report
from contamlab.decoding.samples import QuestionSamples


class BigramLM(torch.nn.Module):
    """Logits at each position depend only on the current token: row ``table[token]``."""

    def __init__(self, table: torch.Tensor) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(table.float(), requires_grad=False)

    def forward(self, input_ids, attention_mask=None):
        return type("Out", (), {"logits": self.table[input_ids]})()  # [B, T, V]


def test_divergence_ranks_by_hand():
    # vocab 5; after token t the model prefers: 0 -> 1, 1 -> 2, 2 -> 3, 3 -> 4, 4 -> 0 (values: rank order by row)
    table = torch.tensor(
        [
            [0.0, 9.0, 8.0, 7.0, 6.0],  # after 0: ranks 1:1, 2:2, 3:3, 4:4, 0:5
            [0.0, 1.0, 9.0, 5.0, 4.0],  # after 1: 2 is argmax; 3 has rank 2; 4 rank 3
            [0.0, 0.0, 0.0, 9.0, 0.0],  # after 2: 3 argmax; ties at 0 -> rank of any other = 2
            [9.0, 0.0, 0.0, 0.0, 8.0],  # after 3: 0 argmax, 4 rank 2
            [5.0, 4.0, 3.0, 2.0, 1.0],
        ]
    )
    model = BigramLM(table)
    prompts = [[0], [0, 1]]
    clean = [
        [1, 3, 4, 0],  # after 0 -> 1 agree; after 1 -> 3 rank 2; after 3 -> 4 rank 2; after 4 -> 0 agree
        [4, 4],  # after 1 -> 4 rank 3; after 4 -> 4 rank 5
    ]
    ranks = diagnostics.divergence_ranks(model, prompts, clean, max_steps=10, batch_size=2, pad_id=0)
    assert ranks == [[2, 2], [3, 5]]
    # Only the first decoding steps count (t = 1..max_steps): question 0 agrees at t = 1, so at max_steps=1 it has no
    # rank, although it disagrees later (the first disagreement anywhere would give [2]).
    assert diagnostics.divergence_ranks(model, prompts, clean, max_steps=1, batch_size=1) == [[], [3]]
    assert diagnostics.divergence_ranks(model, prompts, clean, max_steps=2, batch_size=1) == [[2], [3, 5]]


def test_divergence_ranks_ignore_padding():
    table = torch.randn(7, 7, generator=torch.Generator().manual_seed(0))
    model = BigramLM(table)
    prompts, clean = [[1, 2, 3], [4]], [[5, 6, 1], [2, 2, 2, 2, 2]]
    together = diagnostics.divergence_ranks(model, prompts, clean, batch_size=2, pad_id=6)
    alone = [diagnostics.divergence_ranks(model, [p], [c], batch_size=1)[0] for p, c in zip(prompts, clean)]
    assert together == alone


def test_rouge_to_greedy_and_summary():
    rows = [
        QuestionSamples("a", [1], "she has 12 apples", True, [[1], [2]], ["she has 12 apples", "cats sleep"]),
        QuestionSamples("b", [1], "x y z", False, [[1]], ["x y"]),
    ]
    rouge = diagnostics.rouge_to_greedy(rows)
    assert rouge[0] == [pytest.approx(1.0), 0.0]
    assert rouge[1][0] == pytest.approx(2 * (1.0 * 2 / 3) / (1.0 + 2 / 3))  # P = 1, R = 2/3
    summary = diagnostics.figure1_summary(rouge, [[2, 3], [2, 2, 9]], [True, False])
    assert summary["leaked"]["rouge_l_mean"] == pytest.approx(0.5)
    assert summary["leaked"]["rank2_share"] == 0.5 and summary["unleaked"]["divergence_steps"] == 3
    assert summary["unleaked"]["rank_median"] == 2.0
    # One question per group: every bootstrap draw gives the same difference, 0.5 - 0.8.
    assert summary["rouge_l_diff_ci"] == pytest.approx([0.5 - rouge[1][0]] * 2)


def _result(strategy: dict, sa_ppg: float, g_ap_value: float, domain: str = "arith") -> dict:
    values = {
        "sa_ppg": sa_ppg,
        "a_ppg": sa_ppg,
        "g_app": g_ap_value / 2,
        "g_ap": g_ap_value,
        "delta_plus": sa_ppg / 2,
        "delta_minus": sa_ppg / 2,
        "s_delta_plus": sa_ppg / 4,
        "s_delta_minus": 3 * sa_ppg / 4,
    }
    return {
        "config": {"model": {"name": "tiny"}, "domain": {"name": domain}},
        "strategy": strategy,
        "counts": {"m": 16, "questions": 200},
        "metrics": {g: {"values": values, "ci": {"sa_ppg": [sa_ppg - 0.01, sa_ppg + 0.01]}} for g in ("all", "leaked")},
    }


def _write(root, name, result, age=0.0):
    path = root / name / "results.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(result))
    stamp = time.time() - age
    os.utime(path, (stamp, stamp))


def test_report_tables_rank_reversal_ablation_and_dedup(tmp_path):
    railcap = {"name": "railcap", "n": 4, "mode": "cap", "duplicates": "all"}
    _write(tmp_path / "t1", "0", _result({"name": "identity"}, 0.30, 0.30))
    _write(tmp_path / "t1", "1", _result({"name": "lne", "beta": 2.0}, 0.29, 0.02))
    _write(tmp_path / "t1", "2", _result(railcap, 0.19, 0.07))
    _write(tmp_path / "t1", "3", _result({"name": "all_zero"}, 0.50, 0.40))
    _write(tmp_path / "t1", "4", _result({"name": "identity"}, 0.30, 0.30, domain="arith_pq"))
    for n in (1, 2):
        _write(tmp_path / "t4", f"n{n}", _result({**railcap, "n": n}, 0.2 + n / 10, 0.1))
    _write(tmp_path / "t4", "ban", _result({**railcap, "mode": "ban"}, 0.22, 0.1))
    _write(tmp_path / "t4", "old", _result(railcap, 0.99, 0.99), age=3600)  # older duplicate: ignored
    text = report.build_report(tmp_path)
    assert "### Table 1" in text and "### Table 2" in text and "### Table 4" in text and "Table 3" in text
    table1 = text.split("### Table 1")[1].split("###")[0]
    # G-AP ranks LNE first, SA-PPG ranks RailCap first: the rank reversal
    assert "| lne | 0.0200 |" in table1 and "| railcap | 0.0700" in table1
    lne_row = next(line for line in table1.splitlines() if line.startswith("| lne"))
    assert lne_row.split("|")[3].strip() == "1" and lne_row.split("|")[5].strip() == "2"
    table4 = text.split("### Table 4")[1].split("##")[0]
    table4_rows = [line for line in table4.splitlines() if line.startswith("| ")][1:]
    assert [line.split("|")[1].strip() for line in table4_rows[:4]] == [
        "n = 1",
        "n = 2",
        "n = 4",
        "n = 4, ban",
    ]
    assert "0.9900" not in text  # the stale duplicate lost to the newer job
    # ... and the report says so, naming both files
    assert (
        "1 duplicate run(s) dropped, the newer results.json kept: `t4/old/results.json` (kept `t1/2/results.json`)"
        in text
    )
    assert "| All-Zero | 0.5000" in table4
    # Table 3: RailCap's interval lies wholly below Identity's (the jobs are not paired), so it is in bold; arith_pq
    # ran Identity alone, and says so instead of bolding it.
    table3 = text.split("## Table 3")[1]
    assert "| railcap | **0.1900** |  |" in table3 and "| identity | 0.3000 | 0.3000 |" in table3
    assert "- tiny × arith_pq: no mitigation ran." in table3
    assert (tmp_path / "figures" / "table1_tiny_arith.png").stat().st_size > 1000
    assert (tmp_path / "figures" / "table4_tiny_arith.png").exists()
    assert report.write_report(tmp_path / "empty_dir_that_does_not_exist") is None


def test_figures_write_pngs(tmp_path):
    rng = np.random.default_rng(0)
    a, b = rng.random((30, 8)) < 0.4, rng.random((30, 8)) < 0.4
    assert figures.figure2(a, b, tmp_path / "f2.png").stat().st_size > 1000
    rouge = [list(rng.random(4)) for _ in range(6)]
    ranks = [[2, 3], [2], [], [15], [2, 2], [4]]
    assert figures.figure1(rouge, ranks, [True, False] * 3, tmp_path / "f1.png").stat().st_size > 1000
    per_bin = [
        {"bin": 0, "lo": 0.0, "hi": 0.1, "n": 3, "mean_delta_plus": 0.2, "mean_delta_minus": 0.1},
        {"bin": 5, "lo": 0.5, "hi": 0.6, "n": 2, "mean_delta_plus": 0.0, "mean_delta_minus": 0.3},
    ]
    assert figures.per_bin_figure(per_bin, tmp_path / "pb.png").stat().st_size > 1000


def _job(tmp_path, name, r_strategy, r_clean, g_ap):
    """A finished job's row and per_question.csv, metrics computed by the real gap functions."""
    from contamlab.metrics import bin_index, gap_metrics

    job = tmp_path / name
    job.mkdir()
    counts = (np.asarray(r_clean) * 4).round().astype(int)
    bins = bin_index(counts, 4, 50)
    lines = ["id,leaked,bin,clean_correct,clean_m,strategy_correct,strategy_kept,r_clean,r_strategy"]
    lines += [f"q{i},0,{b},0,4,0,4,{c:.6f},{s:.6f}" for i, (b, c, s) in enumerate(zip(bins, r_clean, r_strategy))]
    (job / "per_question.csv").write_text("\n".join(lines) + "\n")
    values = gap_metrics(r_strategy, r_clean, 50, bins)
    row = {"job": str(job), "strategy_name": name, "label": name, "all/g_ap": g_ap}
    row.update({f"all/{k}": v for k, v in values.items()})
    return row


def test_claims_by_hand(tmp_path):
    from contamlab.analysis.claims import NOT_REPRODUCED, NOT_TESTABLE, REPRODUCED, claims, claims_section

    rng = np.random.default_rng(0)
    clean = rng.integers(0, 5, 60) / 4  # [N] clean r̂ at m = 4
    ident = np.clip(clean + 0.5, 0, 1)  # leaked everywhere: +0.5
    rows = [
        _job(tmp_path, "identity", ident, clean, 0.30),
        _job(tmp_path, "ted", ident, clean, 0.29),  # the same per-question readouts as identity
        _job(tmp_path, "lne", np.clip(clean + 0.25 * rng.choice([-1, 1], 60), 0, 1), clean, 0.01),  # cancels
        _job(tmp_path, "railcap", np.clip(clean + 0.05, 0, 1), clean, 0.05),
        _job(tmp_path, "all_zero", np.zeros(60), clean, 0.5),
    ]
    table = {row[0].split(" (")[0]: row for row in claims(rows, [], None, None)}
    reversal = table["G-AP and SA-PPG rank the strategies differently"]
    assert reversal[3] == REPRODUCED and "G-AP best: lne" in reversal[2] and "SA-PPG best: railcap" in reversal[2]
    assert table["LNE-blocking is best under G-AP but not under SA-PPG"][3] == REPRODUCED
    ted = table["TED ≈ Identity"]
    assert ted[3] == REPRODUCED and "+0.000 [+0.000, +0.000]" in ted[2]
    assert table["RailCap has the lowest SA-PPG"][3] == REPRODUCED
    zero = table["All-Zero beats Identity under A-PPG but is the worst under SA-PPG"]
    # The expected verdict, worked out by hand for this draw (not recomputed by the rule under test). Seed 0's clean
    # r̂ takes the values 0, 1/4, 1/2, 3/4, 1 on 14, 8, 11, 14 and 13 of the 60 questions (pinned first, so that a
    # change of the draw fails here, not in the verdict). A-PPG(All-Zero) = mean r̂_cl = (8·1 + 11·2 + 14·3 + 13·4)/4/60
    # = 31/60 ≈ 0.517; A-PPG(Identity) = mean min(0.5, 1 − r̂_cl) = ((14 + 8 + 11)·0.5 + 14·0.25)/60 = 20/60 ≈ 0.333.
    # All-Zero's SA-PPG is the mean of the five bins' r̂_cl, 0.5, the worst row; but it does not beat Identity under
    # A-PPG, so the claim's first half fails: "not reproduced".
    assert np.bincount((clean * 4).astype(int)).tolist() == [14, 8, 11, 14, 13]
    assert zero[2] == "A-PPG 0.517 vs Identity 0.333; SA-PPG 0.500 (worst: all_zero)"
    assert zero[3] == NOT_REPRODUCED
    assert table["readout stability"][3] == NOT_TESTABLE and table["ban worse than cap"][3] == NOT_TESTABLE
    # The report's section: a table row per testable claim, the untestable ones folded into one line.
    section = claims_section(rows, [], None, None)
    assert NOT_TESTABLE not in "\n".join(section)
    tested = [line for line in section if line.startswith("| ")][1:]  # past the header
    verdicts = {line.split(" | ")[0].lstrip("| ").split(" (")[0]: line.split(" | ")[-1].rstrip(" |") for line in tested}
    assert verdicts == {k: row[3] for k, row in table.items() if row[3] != NOT_TESTABLE}
    assert len(verdicts) == 5  # rank reversal, LNE, All-Zero, RailCap, TED
    (folded,) = [line for line in section if line.startswith("Not testable")]
    assert folded.startswith("Not testable with these jobs (6 of 11 claims)")
    assert "`experiment=table4` for n-ablation trades S-Δ⁺ for S-Δ⁻ (RailCap at n = 1 and n = 4), " in folded
    assert "`experiment=figure2` for readout stability" in folded and "TED" not in folded


def test_per_bin_legend_covers_no_bar_and_edge_bars_show(tmp_path, monkeypatch):
    # Δ⁻ grows with the clean probability, so the largest bars sit at the right; bins at both ends of [0, 1].
    per_bin = [
        {"bin": b, "lo": b / 50, "hi": (b + 1) / 50, "n": 5, "mean_delta_plus": 0.05, "mean_delta_minus": b / 60}
        for b in range(0, 50, 7)
    ] + [{"bin": 49, "lo": 0.98, "hi": 1.0, "n": 40, "mean_delta_plus": 0.0, "mean_delta_minus": 0.9}]
    checked = {}
    save = figures.save_figure

    def inspect(fig, path):
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        ax = fig.axes[0]
        legend = ax.get_legend().get_window_extent(renderer)
        bars = [patch.get_window_extent(renderer) for patch in ax.patches]
        checked["overlaps"] = sum(legend.overlaps(bar) for bar in bars if bar.width > 0 and bar.height > 0)
        axes = ax.get_window_extent(renderer)
        checked["outside"] = sum(bar.x0 < axes.x0 or bar.x1 > axes.x1 for bar in bars)
        return save(fig, path)

    monkeypatch.setattr(figures, "save_figure", inspect)
    figures.per_bin_figure(per_bin, tmp_path / "pb.png")
    assert checked == {"overlaps": 0, "outside": 0}


def test_claims_with_empty_figure1_groups(tmp_path):
    """A Figure-1 group without divergence steps (null statistics in results.json) is 'not testable', no crash."""
    from contamlab.analysis.claims import NOT_TESTABLE, claims

    empty = {"questions": 3, "rouge_l_mean": 0.5, "divergence_steps": 0, "rank2_share": None, "rank_median": None}
    figure1 = {"leaked": dict(empty), "unleaked": {**empty, "rouge_l_mean": None}}
    table = {row[0].split(" (")[0]: row for row in claims([], [], figure1, {"gap_r01": None, "gap_rhat": None, "m": 4})}
    assert table["collapse onto greedy"][3] == NOT_TESTABLE
    assert table["runner-up about half the time"][3] == NOT_TESTABLE
    assert table["readout stability"][3] == NOT_TESTABLE


def test_clean_bins_table_by_hand():
    per_bin = [
        {"bin": 0, "lo": 0.0, "hi": 0.02, "n": 3, "mean_r_clean": 0.0},
        {"bin": 12, "lo": 0.24, "hi": 0.26, "n": 4, "mean_r_clean": 0.25},
        {"bin": 49, "lo": 0.98, "hi": 1.0, "n": 2, "mean_r_clean": 1.0},
    ]
    text = report.clean_bins_table(per_bin, 50)
    assert text.startswith("9 questions in 3 of the 50 bins")
    assert "| [0.00, 0.02) | 3 | 0.000 |" in text
    assert "| [0.24, 0.26) | 4 | 0.250 |" in text
    assert "| [0.98, 1.00] | 2 | 1.000 |" in text  # the last bin is closed: it holds r̂ = 1


def test_survival_table_with_its_wilson_interval(tmp_path):
    assert report.survival_table(tmp_path) is None  # no runner_up/ folder: no section
    folder = tmp_path / "runner_up"
    folder.mkdir()
    record = {
        "model": "smollm2",
        "domain": "arith",
        "stage": "clean",
        "questions": 100,
        "greedy_accuracy": 0.11,
        "runner_up_survival": {"correct_branches": 41, "branches": 70, "survival": 41 / 70},
    }
    (folder / "clean.json").write_text(json.dumps(record))
    text = report.survival_table(tmp_path)
    # 41 of 70: Wilson's 95 % interval by its formula, (p + z²/2n ± z √(p(1-p)/n + z²/4n²)) / (1 + z²/n)
    # with z = 1.95996: [0.4688, 0.6937]
    assert "| smollm2 × arith | clean | 0.110 of 100 | 41 of 70 | 0.586 [0.47, 0.69] |" in text


def test_headline_of_a_whole_study_has_one_row_per_strategy(tmp_path):
    """A tree of sweeps (as make reproduce-real writes): each strategy once, the ablation variants and the older
    duplicate left out, in the report's order."""
    from contamlab.analysis.headline import headline_table

    railcap = {"name": "railcap", "n": 4, "mode": "cap", "duplicates": "all"}
    _write(tmp_path / "figures", "0", _result({"name": "identity"}, 0.30, 0.30))
    _write(tmp_path / "table1", "0", _result(railcap, 0.19, 0.07))
    _write(tmp_path / "table1", "1", _result({"name": "lne", "beta": 2.0}, 0.29, 0.02))
    _write(tmp_path / "table4", "n1", _result({**railcap, "n": 1}, 0.3, 0.1))
    _write(tmp_path / "table4", "n4", _result(railcap, 0.99, 0.99), age=3600)  # older duplicate of table1's
    text = headline_table(tmp_path)
    rows = [line.split("|")[1].strip() for line in text.splitlines() if line.startswith("| ")][1:]
    assert rows == ["identity", "lne", "railcap"]
    assert "| railcap | 0.190 [0.180, 0.200] | 0.070 |" in text and "0.990" not in text


def test_the_rank_reversal_says_so_when_one_strategy_is_best_under_both():
    from contamlab.analysis.claims import Setting, _rank_reversal

    def row(name: str, g_ap: float, sa_ppg: float) -> dict:
        return {"strategy_name": name, "label": name, "all/g_ap": g_ap, "all/sa_ppg": sa_ppg, "job": ""}

    main = [row("identity", 0.2, 0.3), row("ted", 0.1, 0.28), row("lne", 0.05, 0.25)]
    text, holds = _rank_reversal(Setting(main, [], None, None))
    assert not holds and text.endswith("the same strategy under both") and "−" not in text
