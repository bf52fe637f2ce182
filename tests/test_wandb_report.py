"""The W&B Report is built offline with one section per paper table and figure, on the metrics jobs log."""

import wandb_workspaces.reports.v2 as wr

from contamlab.analysis.wandb_report import SECTIONS, build_report


def _panels(report):
    return [p for block in report.blocks if isinstance(block, wr.PanelGrid) for p in block.panels]


def test_report_sections_and_panels():
    report = build_report("someone", "contamlab", group="eval-tiny-arith")
    headings = [b.text for b in report.blocks if isinstance(b, wr.H1)]
    assert [h.split(":")[0] for h in headings] == list(SECTIONS)
    metrics = {m for p in _panels(report) for m in getattr(p, "metrics", [])}
    assert {"eval/all/g_ap", "eval/all/sa_ppg", "eval/all/s_delta_plus", "eval/all/s_delta_minus"} <= metrics
    assert {"eval/stability/gap_r01", "detect/contaminated/auroc", "detect/clean/auroc"} <= metrics
    media = {k for p in _panels(report) for k in getattr(p, "media_keys", [])}
    assert media == {"figures/figure1", "figures/figure2"}
    grids = [b for b in report.blocks if isinstance(b, wr.PanelGrid)]
    assert all(rs.entity == "someone" and rs.project == "contamlab" for g in grids for rs in g.runsets)
    assert all("eval-tiny-arith" in rs.filters for g in grids for rs in g.runsets)
