"""A W&B Report of a finished grid: one section per table and figure of "Zero Gap Is Not Restoration".

Built with the ``wandb-workspaces`` library from the metrics every evaluate.py job logs (``eval/<group>/<metric>``,
``eval/stability/*``, ``figures/*``, ``detect/*``). Panels group runs by strategy, model and domain. Building needs
no network; :func:`save_report` uploads it (online, with ``WANDB_API_KEY``). Cluster users first upload their offline
runs with ``wandb sync`` (``make sync``), then ``make wandb-report``.
"""

from __future__ import annotations

from typing import Any

import wandb_workspaces.reports.v2 as wr

STRATEGY = wr.Config("strategy.name")
SECTIONS = ("Table 1", "Table 2", "Table 3", "Table 4", "Figure 1", "Figure 2", "Detectors")


def _runset(entity: str, project: str, name: str, filters: str | None = None) -> wr.Runset:
    return wr.Runset(entity=entity, project=project, name=name, filters=filters or "")


def _bars(title: str, metrics: list[str], groupby: Any = STRATEGY) -> wr.BarPlot:
    return wr.BarPlot(title=title, metrics=metrics, groupby=groupby, groupby_aggfunc="mean", orientation="v")


def build_report(entity: str, project: str, title: str = "contamlab: restoration and detection", group: str = ""):
    """The report object (not saved). ``group`` restricts it to one W&B run group (one grid)."""
    base = f"Group = '{group}'" if group else None
    runsets = [_runset(entity, project, "evaluate jobs", base)]
    metric = lambda name, grp="all": f"eval/{grp}/{name}"  # noqa: E731
    blocks = [
        wr.TableOfContents(),
        wr.P(
            text="Per-question restoration (SA-PPG) of every mitigation strategy, its decompositions, the RailCap "
            "ablation, the generation diagnostics and the detectors, from contamlab's evaluate.py jobs."
        ),
        wr.H1(text="Table 1: G-AP vs SA-PPG"),
        wr.P(text="The discrete aggregate gap (G-AP) against the stratified per-question gap (SA-PPG), per strategy."),
        wr.PanelGrid(runsets=runsets, panels=[_bars("G-AP and SA-PPG", [metric("g_ap"), metric("sa_ppg")])]),
        wr.H1(text="Table 2: decomposition"),
        wr.PanelGrid(
            runsets=runsets,
            panels=[
                _bars("Δ⁺ / Δ⁻", [metric("delta_plus"), metric("delta_minus")]),
                _bars("A-PPG, G-APP, SA-PPG", [metric("a_ppg"), metric("g_app"), metric("sa_ppg")]),
                _bars("SA-PPG leaked vs unleaked", [metric("sa_ppg", "leaked"), metric("sa_ppg", "unleaked")]),
            ],
        ),
        wr.H1(text="Table 3: SA-PPG per strategy × domain × model"),
        wr.PanelGrid(
            runsets=runsets,
            panels=[
                _bars("SA-PPG by domain", [metric("sa_ppg")], wr.Config("domain.name")),
                _bars("SA-PPG by model", [metric("sa_ppg")], wr.Config("model.name")),
                _bars("SA-PPG by strategy", [metric("sa_ppg")]),
            ],
        ),
        wr.H1(text="Table 4: RailCap ablation"),
        wr.PanelGrid(
            runsets=[
                _runset(
                    entity,
                    project,
                    "railcap",
                    " and ".join(filter(None, [base, "Config('strategy.name') = 'railcap'"])),
                )
            ],
            panels=[
                _bars(
                    "S-Δ⁺ / S-Δ⁻ by n",
                    [metric("s_delta_plus"), metric("s_delta_minus"), metric("sa_ppg")],
                    wr.Config("strategy.n"),
                ),
                _bars("cap vs ban", [metric("sa_ppg")], wr.Config("strategy.mode")),
            ],
        ),
        wr.H1(text="Figure 1: collapse onto the greedy trajectory"),
        wr.PanelGrid(runsets=runsets, panels=[wr.MediaBrowser(title="Figure 1", media_keys=["figures/figure1"])]),
        wr.H1(text="Figure 2: readout stability"),
        wr.PanelGrid(
            runsets=runsets,
            panels=[
                wr.MediaBrowser(title="Figure 2", media_keys=["figures/figure2"]),
                _bars("mean per-question gap, r⁰¹ vs r̂", ["eval/stability/gap_r01", "eval/stability/gap_rhat"]),
            ],
        ),
        wr.H1(text="Detectors"),
        wr.PanelGrid(
            runsets=runsets,
            panels=[
                _bars(
                    "AUROC (contaminated; clean = control)",
                    ["detect/contaminated/auroc", "detect/clean/auroc"],
                    wr.Config("detector.name"),
                ),
            ],
        ),
    ]
    return wr.Report(entity=entity, project=project, title=title, blocks=blocks, width="fluid")


def save_report(report) -> str:
    """Upload the report (needs W&B online and an API key); returns its URL."""
    report.save()
    return report.url
