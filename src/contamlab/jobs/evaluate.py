"""evaluate.py's job: one (model, domain, strategy, detector) → samples, restoration metrics, results files.

The clean model is sampled as is and the contaminated one under the strategy (both cached, so a grid over
strategies samples the clean model once); per-question solve probabilities feed the metrics of "Zero Gap Is Not
Restoration" §3, overall and split by leaked / unleaked questions, with stratified bootstrap intervals.
"""

from __future__ import annotations

import csv
import io
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from contamlab.config import build, build_domain, common_noise, model_store, sampling_setup, set_threads
from contamlab.console import library_output
from contamlab.data.domain import Domain
from contamlab.decoding.pipeline import sample_model
from contamlab.decoding.strategy import Strategy
from contamlab.decoding.streams import CLEAN, CLEAN_2, readout_seed, strategy_role, stream_seed
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_json, atomic_write_text
from contamlab.metrics import bin_index, compute_metrics, per_bin_table, question_readouts
from contamlab.provenance import run_metadata
from contamlab.tracking import log_sync_hint, tracking_run

if TYPE_CHECKING:
    from contamlab.decoding.samples import QuestionSamples
    from contamlab.models.store import ModelStore

log = logging.getLogger("contamlab")


@dataclass(frozen=True)
class JobSamples:
    """What one evaluation job sampled, as its optional analyses read it (:func:`_analyses`).

    Attributes:
        clean_greedy: The clean model's greedy response to each test question.
        clean: The clean model's m samples per test question (stream ``clean``).
        clean_2: An independent second clean batch (stream ``clean_2``), or None when no analysis asked for one.
        cont: The contaminated model's m samples per test question under the strategy.
        leaked: ``[N]`` bool: whether each test question leaked into the contaminated model's training data.
    """

    clean_greedy: list[QuestionSamples]
    clean: list[QuestionSamples]
    clean_2: list[QuestionSamples] | None
    cont: list[QuestionSamples]
    leaked: np.ndarray


def _metrics(cfg: DictConfig, r_co, r_cl, r01_co, r01_cl, clean_bins, leaked) -> dict[str, Any]:
    metric = cfg.metric
    return compute_metrics(
        r_co,
        r_cl,
        r01_co,
        r01_cl,
        clean_bins,
        leaked,
        bins=int(metric.bins),
        bootstrap=int(metric.bootstrap),
        confidence=float(metric.confidence),
        seed=int(cfg.seed),
    )


def run(cfg: DictConfig) -> dict[str, Any]:
    """Run one evaluation job and write results.json and per_question.csv into the job's output directory."""
    set_threads(cfg.get("threads"))
    progress = bool(cfg.get("progress", True))
    library_output(progress)
    domain = build_domain(cfg.domain)
    domain.check_data()  # every data file read and checked before any model loads
    detector = build(cfg.detector, "detector") if cfg.detector.get("_target_") else None
    if not cfg.strategy.get("_target_"):
        if detector is None:
            raise ContamlabError("strategy=none detector=none does nothing; choose a strategy, a detector or both")
        return _run_detection_only(cfg, domain, detector)
    strategy = build(cfg.strategy, "strategy")
    out_dir = Path(cfg.paths.output_dir)
    started = time.perf_counter()
    store = model_store(cfg)
    setup = sampling_setup(cfg, store)
    clean_src = store.model_source(domain, "clean")
    cont_src = store.model_source(domain, "contaminated")
    seed, shared = int(cfg.seed), common_noise(cfg)
    role = strategy_role(strategy.name)
    # the bars name the model and its stream: clean, contaminated (under the strategy), clean-2
    clean_greedy, clean, t_clean = sample_model(setup, store, domain, clean_src, Strategy(), CLEAN, progress, CLEAN)
    _, cont, t_cont = sample_model(setup, store, domain, cont_src, strategy, role, progress, "contaminated")
    r_cl, r01_cl, c_cl = question_readouts(clean, readout_seed(seed, CLEAN))
    r_co, r01_co, _ = question_readouts(cont, readout_seed(seed, role))
    clean_bins = bin_index(c_cl, int(cfg.m), int(cfg.metric.bins))
    leaked = np.array([domain.split.is_leaked(q.id) for q in domain.test])
    metrics = _metrics(cfg, r_co, r_cl, r01_co, r01_cl, clean_bins, leaked)
    results = {
        "config": OmegaConf.to_container(cfg, resolve=True),
        "models": {"clean": clean_src, "contaminated": cont_src},
        "placement": {**store.placement.to_dict(), "sampler": setup.backend},
        "strategy": strategy.params(),
        "sampling": {
            "common_noise": shared,
            "streams": {
                CLEAN: stream_seed(seed, CLEAN, shared),
                role: stream_seed(seed, role, shared),
            },
        },
        "metrics": metrics,
        "per_bin": per_bin_table(r_co, r_cl, int(cfg.metric.bins), clean_bins),
        "counts": {
            "questions": len(domain.test),
            "leaked": int(leaked.sum()),
            "m": int(cfg.m),
            "ted_no_survivor": int(sum(1 for s in cont if s.m and not any(s.kept))),
        },
        "timings": {"clean": t_clean, "contaminated": t_cont, "wall_s": time.perf_counter() - started},
    }
    phases = {"sampling": round(time.perf_counter() - started, 3)}
    analysis = cfg.get("analysis") or {}
    clean_2, floor = None, None
    mark = time.perf_counter()
    if analysis.get("floor", True) or analysis.get("stability", False):
        _, clean_2, _ = sample_model(setup, store, domain, clean_src, Strategy(), CLEAN_2, progress, CLEAN_2)
        results["sampling"]["streams"][CLEAN_2] = stream_seed(seed, CLEAN_2, shared)
    if analysis.get("floor", True):
        floor = question_readouts(clean_2, readout_seed(seed, CLEAN_2))
        r_c2, r01_c2, _ = floor
        # What a perfect strategy would score at this m: an independent clean batch against the first.
        results["floor"] = {
            "metrics": _metrics(cfg, r_c2, r_cl, r01_c2, r01_cl, clean_bins, leaked),
            "per_bin": per_bin_table(r_c2, r_cl, int(cfg.metric.bins), clean_bins),
        }
    phases["floor"], mark = round(time.perf_counter() - mark, 3), time.perf_counter()
    if detector is not None:
        results["detection"] = _detect(cfg, domain, detector, out_dir, progress, store)
        phases["detection"], mark = round(time.perf_counter() - mark, 3), time.perf_counter()
    sampled = JobSamples(clean_greedy, clean, clean_2, cont, leaked)
    figures = _analyses(cfg, store, domain, results, sampled, out_dir, progress)
    phases["analyses"] = round(time.perf_counter() - mark, 3)
    results["timings"]["phases"] = phases
    results["timings"]["wall_s"] = time.perf_counter() - started
    results["run"] = run_metadata()
    atomic_write_json(out_dir / "results.json", results)
    domain.split.save(out_dir / "split.json")
    _write_per_question(out_dir / "per_question.csv", domain, leaked, clean_bins, clean, cont, r01_cl, r01_co, floor)
    _log_wandb(cfg, results, out_dir, figures)
    v = metrics["all"]["values"]
    log.info(
        "%s on %s/%s: SA-PPG %.4f  A-PPG %.4f  G-APP %.4f  G-AP %.4f  (results in %s)",
        strategy.name,
        cfg.model.name,
        domain.name,
        v["sa_ppg"],
        v["a_ppg"],
        v["g_app"],
        v["g_ap"],
        out_dir,
    )
    log_sync_hint(cfg, out_dir)
    return results


def _write_per_question(path, domain, leaked, clean_bins, clean, cont, r01_cl, r01_co, floor=None) -> None:
    """One row per test question; with the noise floor, the second clean batch's readouts too.

    ``floor`` is ``question_readouts`` of the second clean batch: with its columns a study recomputes the floor and
    paired differences from this file alone (contamlab.studies.restoration).
    """
    header = ["id", "leaked", "bin", "clean_correct", "clean_m", "strategy_correct", "strategy_kept"]
    header += ["r_clean", "r_strategy", "r01_clean", "r01_strategy"]
    if floor is not None:
        header += ["clean_2_correct", "r_clean_2", "r01_clean_2"]
    rows = [header]
    for i, (q, lk, b, cl, co, a, z) in enumerate(zip(domain.test, leaked, clean_bins, clean, cont, r01_cl, r01_co)):
        row = [q.id, int(lk), int(b), sum(cl.sample_correct), cl.m, *co.kept_counts()]
        row += [f"{cl.solve_probability():.6f}", f"{co.solve_probability():.6f}", int(a), int(z)]
        if floor is not None:
            r_2, r01_2, c_2 = floor
            row += [int(c_2[i]), f"{r_2[i]:.6f}", int(r01_2[i])]
        rows.append(row)
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    atomic_write_text(path, buffer.getvalue())


def _analyses(
    cfg: DictConfig,
    store: ModelStore,
    domain: Domain,
    results: dict[str, Any],
    sampled: JobSamples,
    out_dir: Path,
    progress: bool,
) -> dict[str, Path]:
    """Optional diagnostics of the job (``analysis.*``): per-bin figure, Figure 1, Figure 2; adds to ``results``."""
    from contamlab.analysis import diagnostics, figures
    from contamlab.metrics import readout_stability

    analysis = cfg.get("analysis") or {}
    out: dict[str, Path] = {}
    title = f"{cfg.model.name} / {domain.name} / {cfg.strategy.name}"
    if analysis.get("figures", True) and results["per_bin"]:
        out["per_bin"] = figures.per_bin_figure(results["per_bin"], out_dir / "figures" / "per_bin.png", title)
    if analysis.get("figure1", False):
        source = results["models"]["contaminated"]
        model = store.load(source)
        rouge, ranks = diagnostics.figure1_inputs(
            model,
            store.load_tokenizer(source),
            domain,
            sampled.clean_greedy,
            sampled.cont,
            int(analysis.get("figure1_steps", 10)),
            progress,
        )
        del model
        results["figure1"] = diagnostics.figure1_summary(rouge, ranks, sampled.leaked)
        out["figure1"] = figures.figure1(rouge, ranks, sampled.leaked, out_dir / "figures" / "figure1.png", title)
    if analysis.get("stability", False):
        a = np.array([s.sample_correct for s in sampled.clean], dtype=bool)  # [N, m]
        b = np.array([s.sample_correct for s in sampled.clean_2], dtype=bool)  # [N, m]: the independent second batch
        streams = results["sampling"]["streams"]
        results["stability"] = {**readout_stability(a, b), "seeds": [streams[CLEAN], streams[CLEAN_2]]}
        out["figure2"] = figures.figure2(a, b, out_dir / "figures" / "figure2.png", f"{cfg.model.name} / {domain.name}")
    return out


def _log_wandb(cfg, results, out_dir, figures=None) -> None:
    run_group = f"eval-{cfg.model.name}-{cfg.domain.name}"
    with tracking_run(cfg, out_dir, run_group, str(cfg.strategy.name)) as run:
        if run is None:
            return
        import pandas as pd
        import wandb

        flat = {f"eval/{group}/{k}": v for group, e in results["metrics"].items() for k, v in e["values"].items()}
        if "floor" in results:
            floor = results["floor"]["metrics"]
            flat.update({f"eval/floor/{g}/{k}": v for g, e in floor.items() for k, v in e["values"].items()})
        flat.update({f"eval/stability/{k}": v for k, v in results.get("stability", {}).items() if k != "seeds"})
        for group, values in results.get("figure1", {}).items():
            if isinstance(values, dict):  # leaked / unleaked (the ROUGE-L interval is a list)
                flat.update({f"eval/figure1/{group}/{k}": v for k, v in values.items()})
        run.log(flat)
        run.log({"eval/per_question": wandb.Table(dataframe=pd.read_csv(out_dir / "per_question.csv"))})
        if figures:
            run.log({f"figures/{name}": wandb.Image(str(path)) for name, path in figures.items()})


# -- detection -----------------------------------------------------------------------------------------------------
def _detect(
    cfg: DictConfig, domain: Domain, detector: Any, out_dir: Path, progress: bool, store: ModelStore
) -> dict[str, Any]:
    """Score the clean and contaminated models with ``detector`` (see :mod:`contamlab.detection`)."""
    from contamlab.detection import run_detection  # here: a sampling job without a detector never needs it

    return run_detection(cfg, domain, detector, out_dir, progress, store)


def _run_detection_only(cfg: DictConfig, domain: Domain, detector: Any) -> dict[str, Any]:
    """``strategy=none detector=X``: detection alone, written to results.json."""
    out_dir = Path(cfg.paths.output_dir)
    started = time.perf_counter()
    store = model_store(cfg)
    results = {
        "config": OmegaConf.to_container(cfg, resolve=True),
        "models": {stage: store.model_source(domain, stage) for stage in ("clean", "contaminated")},
        "placement": store.placement.to_dict(),
        "detection": _detect(cfg, domain, detector, out_dir, bool(cfg.get("progress", True)), store),
        "timings": {"wall_s": time.perf_counter() - started},
        "run": run_metadata(),
    }
    atomic_write_json(out_dir / "results.json", results)
    domain.split.save(out_dir / "split.json")
    log.info("%s on %s/%s: results in %s", detector.name, cfg.model.name, domain.name, out_dir)
    log_sync_hint(cfg, out_dir)
    return results
