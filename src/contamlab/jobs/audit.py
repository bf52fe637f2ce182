"""audit.py's job: one model, one benchmark, a verdict per detector, with no clean twin and no leaked/unleaked split.

The detection job (:mod:`contamlab.detection`) scores a pair it trained and knows which questions leaked; an audit
has one released model and must read each method's statistic on its own terms (:mod:`contamlab.metrics.verdicts`):

- CoDeC: the dataset score by its guide's bands, and against reference models;
- BenBench: Δ of answer perplexity and n-gram accuracy (original vs paraphrases), δ_train-test, the items whose every
  n-gram the model predicts, with those n-grams;
- ConStat: the score on the original against the rephrased benchmark, relative to reference models;
- per-item membership scores: the benchmark's items against non-member items (fresh problems where the domain can
  generate them, its rewrites otherwise, or a file), by AUROC and a Mann-Whitney test, and against references;
- n-gram overlap with a corpus (given one);
- the mitigated score: the mean solve probability under identity and each strategy asked for;
- the Benchmark Transparency Card, filled from what was measured.

Every score goes through the detection job's cache (per model, item set and detector) and every sample set through
the sample cache, so an interrupted audit resumes, reference models are scored once per benchmark, and a detector
that cannot run (a missing corpus) is reported as not run without losing the others. The mitigated score's solve
probabilities are cached as well (:mod:`contamlab.audit.mitigation`), so that a rerun loads no model at all.

Before any model loads, the job refuses a benchmark with fewer than
:data:`~contamlab.metrics.roc.MIN_ITEMS_PER_SIDE` items, and names in one line every simulated model that is not
trained yet, with the command that trains it and what that costs
(:func:`~contamlab.audit.models.missing_models_message`). The services are the :mod:`contamlab.audit` package's; this
module composes them.
"""

from __future__ import annotations

import csv
import io
import logging
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from contamlab.audit.blind import beside, blind_baseline
from contamlab.audit.error_rates import ErrorRates
from contamlab.audit.mitigation import mitigated_score, mitigation_strategies
from contamlab.audit.models import AuditedModel, missing_models_message, truth
from contamlab.audit.nonmembers import nonmember_items
from contamlab.audit.readings import ItemScore, read_detector, score_all
from contamlab.audit.shift_null import closest_condition, with_shift_null
from contamlab.audit.shift_null import load as load_shift_null
from contamlab.config import build, build_domain, model_store, set_threads
from contamlab.console import library_output
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_json, atomic_write_text
from contamlab.metrics import verdicts as V
from contamlab.metrics.roc import MIN_ITEMS_PER_SIDE, too_few_items
from contamlab.models.reference import ModelRef
from contamlab.provenance import run_metadata
from contamlab.tracking import log_sync_hint, tracking_run

log = logging.getLogger("contamlab")


def run(cfg: DictConfig) -> dict[str, Any]:
    """Audit one model on one benchmark; write results.json, audit.md, audit_scores.csv, the card and W&B logs."""
    from contamlab.analysis.audit import audit_markdown
    from contamlab.analysis.transparency_card import card_from_audit, write_card

    set_threads(cfg.get("threads"))
    progress = bool(cfg.get("progress", True))
    library_output(progress)
    started = time.perf_counter()
    audit = cfg.audit
    domain = build_domain(cfg.domain)
    domain.check_data(train=False)  # every data file read and checked before any model loads
    too_few = too_few_items(("", len(domain.test)))
    if too_few:  # no reading could be computed: say so before a model loads, not after every detector has run
        raise ContamlabError(
            f"domain={domain.name}: {too_few} for an audit; every reading compares at least {MIN_ITEMS_PER_SIDE} "
            "benchmark items with as many non-member items (raise domain.max_test or use a larger benchmark)"
        )
    store = model_store(cfg)  # built once: every model of the audit reads it (another seed's derives from it)
    target = AuditedModel(ModelRef.parse(audit.target, "audit.target"), cfg, store, domain)
    references = [AuditedModel(ModelRef.parse(s, "audit.references"), cfg, store, domain) for s in audit.references]
    missing = missing_models_message(target, references)
    if missing:
        raise ContamlabError(missing)
    if any(r.source == target.source for r in references):
        raise ContamlabError(f"audit.references: {target.spec} is also the target; a model is no reference for itself")
    detectors = {name: build(cfg.detectors[name], f"detectors.{name}") for name in audit.detectors}
    strategies = mitigation_strategies(cfg)
    settings = V.Settings(float(audit.alpha), int(audit.n_boot), float(audit.confidence), int(cfg.seed))
    # The fingerprint reads the train split (its size keys every cache): read once here, so that the non-member view
    # copies it instead of generating it again (the synthetic domains generate it: seconds).
    domain.fingerprint()
    nonmembers, about_nonmembers = nonmember_items(domain, str(audit.nonmembers))
    if nonmembers is not None and len(nonmembers.test) < MIN_ITEMS_PER_SIDE:
        log.warning(
            "audit: only %d non-member items (%s): the membership readings will say too few items (need >= %d)",
            len(nonmembers.test),
            about_nonmembers,
            MIN_ITEMS_PER_SIDE,
        )
    error_rates = None
    if audit.error_rates.get("pool") is not None:  # the pool and doses read here, before any model loads
        error_rates = ErrorRates(cfg, target, references, domain, nonmembers, settings, progress)
    shift_null = load_shift_null(audit.shift_null.file) if audit.shift_null.get("file") else None  # read before models
    out_dir = Path(cfg.paths.output_dir)
    found: list[V.Verdict] = []
    per_detector: dict[str, Any] = {}
    items: list[ItemScore] = []  # the membership scores behind each AUROC
    # every score first, one model at a time (each loads once); a detector that cannot run leaves the others
    failed: dict[str, str] = {}
    scoring_s: dict[str, float] = {}  # per model: loading and scoring in this run (0 when every score was cached)
    for model in (target, *references):
        mark = time.perf_counter()
        pending = {k: v for k, v in detectors.items() if k not in failed}
        failed.update(score_all(model, pending, domain, nonmembers, progress))
        scoring_s[model.spec] = round(time.perf_counter() - mark, 3)
    for name, detector in detectors.items():
        if name in failed:  # e.g. a corpus-side method with no corpus
            log.warning("audit: detector %s not run: %s", name, failed[name])
            per_detector[name] = {"not_run": failed[name]}
            continue
        read = read_detector(detector, target, references, domain, nonmembers, settings, progress)
        items += read.items
        per_detector[name] = read.extra
        found += read.verdicts
        for v in read.verdicts:
            log.info("audit %s: %s = %s -> %s", v.name, v.statistic, _fmt(v.value), v.verdict)
    blind_record = None
    # the blind baseline needs a few items a side, as every membership reading does
    if nonmembers is not None and audit.blind and len(nonmembers.test) >= MIN_ITEMS_PER_SIDE:
        found, blind_record = beside(found, blind_baseline(domain, nonmembers, int(cfg.seed)))
    shift_record = None
    if shift_null is not None:
        condition = str(audit.shift_null.condition)
        if condition == "auto":
            condition = closest_condition(str(audit.nonmembers), about_nonmembers)
        found, shift_record = with_shift_null(found, shift_null, condition, float(audit.shift_null.max_rate))
    measured = None
    if error_rates is not None:
        mark = time.perf_counter()
        ran = {k: d for k, d in detectors.items() if k not in failed}
        found, measured = error_rates.run(ran, found)
        measured["wall_s"] = round(time.perf_counter() - mark, 3)
    mark = time.perf_counter()
    mitigation, mitigation_extra = mitigated_score(strategies, target, domain, settings, progress)
    found += mitigation
    results: dict[str, Any] = {
        "config": OmegaConf.to_container(cfg, resolve=True),
        "audit": {
            "target": {"spec": target.spec, "source": target.source},
            "references": [{"spec": r.spec, "source": r.source} for r in references],
            "benchmark": domain.name,
            "questions": len(domain.test),
            "nonmembers": about_nonmembers,
            "blind": blind_record,
            "shift_null": shift_record,
            "truth": truth(target, domain),
            "verdicts": [v.to_dict() for v in found],
            "detectors": per_detector,
            "scoring_s": scoring_s,
            "mitigation": {**mitigation_extra, "total_s": round(time.perf_counter() - mark, 3)},
            "error_rates": measured,
        },
        "placement": target.store.placement.to_dict(),
        "timings": {"wall_s": round(time.perf_counter() - started, 3)},
        "run": run_metadata(),
    }
    card = card_from_audit(results, domain)
    results["audit"]["card"] = card
    write_card(card, out_dir)
    atomic_write_json(out_dir / "results.json", results)
    atomic_write_text(out_dir / "audit.md", audit_markdown(results))
    buffer = io.StringIO()
    rows = [[i.detector, i.items, i.id, "" if i.score != i.score else f"{i.score:.9g}"] for i in items]
    csv.writer(buffer).writerows([["detector", "items", "id", "score"], *rows])
    atomic_write_text(out_dir / "audit_scores.csv", buffer.getvalue())
    _log_wandb(cfg, results, out_dir)
    flagged = [v.name for v in found if v.flagged]
    log.info(
        "audit of %s on %s: %d of %d verdicts flag it (%s); %.1f s; results in %s",
        target.spec,
        domain.name,
        len(flagged),
        sum(v.flagged is not None for v in found),
        ", ".join(flagged) or "none",
        results["timings"]["wall_s"],
        out_dir,
    )
    log_sync_hint(cfg, out_dir)
    return results


def _fmt(value: Any) -> str:
    return "n/a" if value is None else f"{value:.4g}"


def _log_wandb(cfg: DictConfig, results: dict[str, Any], out_dir: Path) -> None:
    audit = results["audit"]
    group = f"audit-{cfg.model.name}-{audit['benchmark']}"
    with tracking_run(cfg, out_dir, group, f"audit-{audit['target']['spec']}") as run:
        if run is None:
            return
        import pandas as pd
        import wandb

        flat = {}
        for v in audit["verdicts"]:
            if v["value"] is not None:
                flat[f"audit/{v['name']}/value"] = v["value"]
            if v["p_value"] is not None:
                flat[f"audit/{v['name']}/p_value"] = v["p_value"]
            if v["flagged"] is not None:
                flat[f"audit/{v['name']}/flagged"] = int(v["flagged"])
        run.log(flat)
        rows = [{k: v[k] for k in ("name", "statistic", "value", "p_value", "verdict")} for v in audit["verdicts"]]
        run.log({"audit/verdicts": wandb.Table(dataframe=pd.DataFrame(rows))})
