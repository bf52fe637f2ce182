"""Detection on a known leak (evaluate.py with ``detector=``): score the clean and the contaminated model, evaluate it.

For each model the detector gives per-question scores (higher = more likely seen) and its own dataset-level score.
On the contaminated model the leaked questions are the seen ones, so AUROC / TPR@5%FPR / FPR@95%TPR of leaked vs
unleaked measure the detector; the clean model saw neither half, so its AUROC is the control (about 0.5), and its
dataset score is the "unseen" reference for the contaminated one's. Scores are cached per (model, domain, split,
detector parameters) under ``paths.cache_dir/detect`` (JSON, atomic), so re-running a grid costs nothing.

With fewer than :data:`~contamlab.metrics.roc.MIN_ITEMS_PER_SIDE` scored questions on a side there is no AUROC, TPR or
FPR: the entry says "too few items" instead (``too_few``), and the per-question scores are still written.
"""

from __future__ import annotations

import csv
import io
import logging
import math
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig

from contamlab.config import model_store
from contamlab.data.domain import Domain
from contamlab.detectors.base import Detector, DetectorOutput
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_text
from contamlab.metrics.roc import auroc_interval, roc_metrics, roc_points, too_few_items
from contamlab.models.store import ModelStore
from contamlab.scoring import score_model
from contamlab.tracking import tracking_run

log = logging.getLogger("contamlab")
#: The models a detection run scores, in order: the contaminated one first (its AUROC is the reading), then its
#: controls; with ``sham=true`` the sham model (its matched control) before the clean one.
SCORED = ("contaminated", "clean")
SCORED_WITH_SHAM = ("contaminated", "sham", "clean")


def run_detection(
    cfg: DictConfig,
    domain: Domain,
    detector: Detector,
    out_dir: Path,
    progress: bool = True,
    store: ModelStore | None = None,
) -> dict[str, Any]:
    """Score both models, evaluate leaked vs unleaked, write ``detection_per_question.csv`` and log to W&B.

    Returns:
        A JSON-able dict: ``detector`` (its parameters), ``contaminated`` and ``clean`` (``auroc``,
        ``tpr_at_5fpr``, ``fpr_at_95tpr``, ``dataset_score``, counts, the method's extra numbers, timings; with too
        few scored questions on a side the ROC numbers are None and ``too_few`` says why) and ``counts``.
    """
    if not isinstance(detector, Detector):
        raise ContamlabError(f"detector config builds {type(detector).__name__}, not a contamlab detector")
    out_dir = Path(out_dir)
    leaked = np.array([domain.split.is_leaked(q.id) for q in domain.test])
    too_few = too_few_items(("leaked", int(leaked.sum())), ("unleaked", int((~leaked).sum())))
    if too_few:
        log.warning("%s on %s: %s; the scores are written, no AUROC is reported", detector.name, domain.name, too_few)
    results: dict[str, Any] = {"detector": detector.params()}
    outputs: dict[str, DetectorOutput] = {}
    store = store or model_store(cfg)  # the job's, when it has one
    scored = SCORED_WITH_SHAM if cfg.get("sham") else SCORED
    for stage in scored:
        source = store.model_source(domain, stage)
        output, wall, cached = score_model(cfg, domain, detector, source, stage, progress, store)
        outputs[stage] = output
        entry = roc_metrics(output.scores, leaked)
        entry["too_few"] = too_few_items(("leaked", entry["n_positive"]), ("unleaked", entry["n_negative"]))
        if entry["too_few"]:  # an AUROC of a handful of questions reads as a finding; report none
            entry.update(dict.fromkeys(("auroc", "tpr_at_5fpr", "tpr_at_1fpr", "fpr_at_95tpr")))
        interval = None if entry["too_few"] else auroc_interval(output.scores, leaked, seed=int(cfg.seed))
        entry.update(
            {
                "auroc_ci": list(interval) if interval else None,
                "roc": None if entry["too_few"] else roc_points(output.scores, leaked),
                "source": source,
                "dataset_score": output.dataset_score,
                "extra": {**output.extra, **detector.split_summary(output, leaked)},
                "wall_s": round(wall, 3),
                "cached": cached,
                "mean_score_leaked": _nanmean(np.asarray(output.scores, float)[leaked]),
                "mean_score_unleaked": _nanmean(np.asarray(output.scores, float)[~leaked]),
            }
        )
        results[stage] = entry
        log.info(
            "%s on %s (%s): %s, dataset score %s (%.1f s%s)",
            detector.name,
            stage,
            domain.name,
            entry["too_few"] or f"AUROC {_fmt(entry['auroc'])}, TPR@5%FPR {_fmt(entry['tpr_at_5fpr'])}",
            _fmt(output.dataset_score),
            wall,
            ", cached" if cached else "",
        )
    if detector.compares_models:
        results["comparison"] = _compare(cfg, domain, detector, outputs, progress, store)
    results["counts"] = {
        "questions": len(domain.test),
        "leaked": int(leaked.sum()),
        "unleaked": int((~leaked).sum()),
        "scored_contaminated": results["contaminated"]["n_scored"],
        "scored_clean": results["clean"]["n_scored"],
    }
    for control in scored[1:]:  # dataset_score_gap: against clean, as before; against sham its matched form
        name = "dataset_score_gap" if control == "clean" else f"dataset_score_gap_{control}"
        results[name] = (
            None
            if results["contaminated"]["dataset_score"] is None or results[control]["dataset_score"] is None
            else results["contaminated"]["dataset_score"] - results[control]["dataset_score"]
        )
    if "sham" in outputs:
        results["counts"]["scored_sham"] = results["sham"]["n_scored"]
    _write_csv(out_dir / "detection_per_question.csv", domain, leaked, outputs)
    _log_wandb(cfg, detector, results, out_dir)
    return results


def _compare(
    cfg: DictConfig,
    domain: Domain,
    detector: Detector,
    outputs: dict[str, DetectorOutput],
    progress: bool,
    store: ModelStore,
) -> dict[str, Any]:
    """A model-comparison detector's test (ConStat): the contaminated model against the clean one and any others.

    The simulation's truth rides along: the clean model's own score on the original benchmark, which an estimate of
    the contaminated model's uncontaminated score should cover.
    """
    references = [outputs["clean"]]
    for source in detector.reference_models():
        references.append(score_model(cfg, domain, detector, str(source), "clean", progress, store)[0])
    out = detector.compare(outputs["contaminated"], references)
    truth = outputs["clean"].extra.get("score_original")
    low, high = out["estimated_clean_ci"]
    out["truth_clean_score"] = truth
    out["covers_truth"] = None if truth is None else bool(low <= truth <= high)
    log.info(
        "%s: contaminated %.3f on D, estimated uncontaminated %.3f [%.3f, %.3f] (clean model's truth %s), "
        "effect %.3f, p = %.4f",
        detector.name,
        out["score_original"],
        out["estimated_clean"],
        low,
        high,
        _fmt(truth),
        out["effect"],
        out["p_value"],
    )
    return out


def _nanmean(values: np.ndarray) -> float | None:
    values = values[~np.isnan(values)]
    return float(values.mean()) if values.size else None


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4f}"


def _cell(value: Any) -> Any:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return ""
    if isinstance(value, float):
        return repr(value)  # every digit: an AUROC recomputed from the file ties exactly where the job's did
    return value


def _write_csv(path: Path, domain: Domain, leaked: np.ndarray, outputs: dict[str, DetectorOutput]) -> None:
    extra = {stage: sorted(out.columns) for stage, out in outputs.items()}
    header = ["id", "leaked", *(f"score_{s}" for s in outputs)]
    header += [f"{c}_{s}" for s in outputs for c in extra[s]]
    rows = [header]
    for i, (q, lk) in enumerate(zip(domain.test, leaked)):
        row = [q.id, int(lk), *(_cell(outputs[s].scores[i]) for s in outputs)]
        row += [_cell(outputs[s].columns[c][i]) for s in outputs for c in extra[s]]
        rows.append(row)
    buffer = io.StringIO()
    csv.writer(buffer).writerows(rows)
    atomic_write_text(path, buffer.getvalue())


def _log_wandb(cfg: DictConfig, detector: Detector, results: dict[str, Any], out_dir: Path) -> None:
    group = f"detect-{cfg.model.name}-{cfg.domain.name}"
    with tracking_run(cfg, out_dir, group, f"detect-{detector.name}") as run:
        if run is None:
            return
        import pandas as pd
        import wandb

        flat = {}
        for stage in (s for s in SCORED_WITH_SHAM if s in results):
            for key in ("auroc", "tpr_at_5fpr", "fpr_at_95tpr", "dataset_score"):
                if results[stage].get(key) is not None:
                    flat[f"detect/{stage}/{key}"] = results[stage][key]
        flat["detect/auroc"] = results["contaminated"]["auroc"]
        run.log({k: v for k, v in flat.items() if v is not None})
        table = pd.read_csv(out_dir / "detection_per_question.csv")
        run.log({"detect/per_question": wandb.Table(dataframe=table)})
