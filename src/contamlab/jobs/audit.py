"""audit.py's job: one model, one benchmark, a verdict per detector, with no clean twin and no leaked/unleaked split.

The detection job (:mod:`contamlab.jobs.detect`) scores a pair it trained and knows which questions leaked; an audit
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
probabilities are cached as well (:func:`_mitigation`), so that a rerun loads no model at all.

Before any model loads, the job refuses a benchmark with fewer than
:data:`~contamlab.metrics.roc.MIN_ITEMS_PER_SIDE` items, and names in one line every simulated model that is not
trained yet, with the command that trains it and what that costs (:func:`missing_models_message`).
"""

from __future__ import annotations

import csv
import io
import json
import logging
import shlex
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from contamlab.config import build, build_domain, group_choice, set_threads
from contamlab.data.domain import Domain
from contamlab.data.jsonl import read_jsonl
from contamlab.data.prompts import PROMPT_VERSION
from contamlab.data.question import Question
from contamlab.decoding.pipeline import sample_model
from contamlab.decoding.strategy import Strategy
from contamlab.decoding.streams import strategy_role
from contamlab.detectors.base import Detector, DetectorOutput
from contamlab.detectors.paraphrase import reference_versions
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_json, atomic_write_text, content_hash
from contamlab.jobs.common import library_output, log_sync_hint, model_store, sampling_setup, tracking_run
from contamlab.jobs.detect import LoadedModel, score_model
from contamlab.jobs.metadata import run_metadata
from contamlab.metrics import verdicts as V
from contamlab.metrics.roc import MIN_ITEMS_PER_SIDE, too_few_items
from contamlab.models.store import ModelStore, is_done
from contamlab.preflight import SIMULATED

log = logging.getLogger("contamlab")
#: The generator stream of the generated non-members (ReCaLL's prefixes use seed 0 of the same family of streams).
NONMEMBER_SEED = 100
#: Bump when the cached solve probabilities of the mitigated score change meaning (:func:`_mitigation`).
MITIGATION_CACHE_VERSION = 1
#: The default world's base pre-training (``domain=arith``: 3,000 steps of 8 x 256 tokens) and what ``python
#: train.py`` costs with it on 2-core CPUs (docs/performance.md: base 345-640 s, clean 12-19 s, contaminated 23-37 s
#: on two machines). A missing simulated model's message quotes these rather than a guess for another recipe.
DEFAULT_WORLD_BASE_STEPS = 3000
DEFAULT_WORLD_TIME = {"clean": "6-11 min", "contaminated": "6.5-12 min"}


class AuditedModel:
    """One audited or reference model: where it loads from and the config that scores it.

    Args:
        spec: As typed: ``base``, ``clean`` or ``contaminated`` (the simulated models of ``model=`` on ``domain=``,
            ``@<seed>`` for another seed's, e.g. ``clean@1``), or a hub id, model directory or adapter directory.
        cfg: The audit config.
        domain: The benchmark.
    """

    def __init__(self, spec: str, cfg: DictConfig, domain: Domain) -> None:
        spec = str(spec).strip()
        if not spec:
            raise ContamlabError("audit: an empty model name; give base, clean, contaminated or a hub id / directory")
        name, at, seed = spec.partition("@")
        self.spec, self.stage = spec, name if name in SIMULATED else None
        self.cfg = cfg
        if self.stage is not None and at:
            if not seed.isdigit():
                raise ContamlabError(f"audit: {spec!r}: the seed after @ must be a non-negative integer")
            self.cfg = OmegaConf.merge(cfg, {"seed": int(seed)})
        self.seed = int(self.cfg.seed)
        self.store = store = model_store(self.cfg)
        #: Where the simulated model would be when it is not trained yet (None: it is, or it is not simulated).
        self.missing: Path | None = None
        if self.stage is None:
            self.source = spec
        elif self.stage == "base" and not store.pretrain:  # the pretrained model a hub model starts from
            self.source = store.base_source()
        elif self.stage == "base" or not store.model.own(self.stage):  # simulated here: trained yet?
            path = store.stage_dir(domain, self.stage)
            self.source = str(path)
            self.missing = None if is_done(path) else path
        else:  # the user's own clean / contaminated model (model.clean=…)
            self.source = store.model_source(domain, self.stage)
        # the random stream of any samples it needs (CDD): the contaminated model's identity batch or the clean one
        self.role = "contaminated" if self.stage == "contaminated" else "clean"
        #: The model, loaded by the first score that is not cached and kept until :meth:`release`.
        self.loaded = LoadedModel(store, self.source)
        self._outputs: dict[tuple[str, str], tuple[DetectorOutput, float, bool]] = {}  # (detector, items) -> score

    def score(
        self, domain: Domain, detector: Detector, progress: bool, moments: bool = True
    ) -> tuple[DetectorOutput, float, bool]:
        """The detector's output on ``domain``'s test items (cached, and kept for this audit).

        ``moments``: whether a shared token pass computed now also computes the vocabulary moments.

        Returns:
            ``(output, wall seconds of its first computation, whether it came from the cache)``.
        """
        key = (detector.name, str(domain.items))  # the benchmark (items None) or a view of other items (Domain.over)
        if key not in self._outputs:
            self._outputs[key] = score_model(
                self.cfg, domain, detector, self.source, self.role, progress, self.store, self.loaded, moments
            )
        return self._outputs[key]

    def release(self) -> None:
        """Unload the model (its scores stay)."""
        self.loaded.release()


# -- before any model loads: what is missing -------------------------------------------------------------------------
#: The overrides of an audit command that also decide which model train.py trains (the rest are the audit's own).
_TRAIN_KEYS = ("model", "domain", "base", "finetune", "experiment", "paths", "hydra.searchpath")


def _train_overrides(cfg: DictConfig) -> list[str]:
    """The audit command's overrides that train.py needs to train the same models.

    Read from the running Hydra app, or from the config's own ``hydra`` node (``compose(...,
    return_hydra_config=True)``); none without either.
    """
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        task = list(HydraConfig.get().overrides.task)
    else:
        node = cfg.get("hydra") if "hydra" in cfg else None
        task = list(OmegaConf.select(node, "overrides.task", default=[]) or []) if node is not None else []
    kept = []
    for override in task:
        key = override.lstrip("+~").partition("=")[0]
        if key in ("model", "domain"):  # the command names both itself
            continue
        if any(key == k or key.startswith(f"{k}.") for k in _TRAIN_KEYS):
            kept.append(shlex.quote(override))
    return kept


def train_command(model: AuditedModel, domain: Domain) -> str:
    """The train.py command that trains a simulated model as the audit looks for it (its seed, up to its stage)."""
    cfg = model.cfg
    option = group_choice(cfg, "model") or str(cfg.model.name)
    words = ["python train.py", f"model={option}", f"domain={group_choice(cfg, 'domain') or domain.name}"]
    words += _train_overrides(cfg)
    if model.seed:
        words.append(f"seed={model.seed}")
    if model.stage != "contaminated":  # train.py's stage=all ends with the contaminated model
        words.append(f"stage={model.stage}")
    return " ".join(words)


def _training_cost(model: AuditedModel, domain: Domain) -> str:
    """What training a missing simulated model costs, from the default world's measured times, as a clause.

    The base pre-training is nearly all of it; a model whose base is trained already needs only fine-tuning.
    """
    store = model.store
    if model.stage != "base" and is_done(store.stage_dir(domain, "base")):
        return "training it takes under a minute on a 2-core CPU (its base model is trained already; only fine-tuning)"
    steps = int((model.cfg.get("base") or {}).get("steps", 0))
    when = DEFAULT_WORLD_TIME["contaminated" if model.stage == "contaminated" else "clean"]
    if steps == DEFAULT_WORLD_BASE_STEPS:
        return f"training it takes {when} on a 2-core CPU, nearly all of it the base pre-training ({steps:,} steps)"
    return (
        f"training it is mostly its base pre-training, {steps:,} steps here (with the default world's "
        f"{DEFAULT_WORLD_BASE_STEPS:,} it takes {when} on a 2-core CPU)"
    )


def missing_models_message(target: AuditedModel, references: list[AuditedModel], domain: Domain) -> str | None:
    """One line naming every simulated model the audit needs and does not have, or None when none is missing.

    For each: which model, where it was looked for, how long training it takes, the exact train.py command, and how
    to audit without it (``audit.references=[]`` for a reference; a model of one's own for the target).
    """
    parts = []
    for role, model in [("target", target), *(("reference", r) for r in references)]:
        if model.missing is None:
            continue
        what = f"the {model.stage} model of seed {model.seed}"
        store = model.store
        if not store.pretrain:  # a hub model's LoRA stages: the model's own hint (a GPU, a pair of one's own)
            how = store.missing_model_message(domain, model.stage, model.missing)
            if model.seed:
                how += f" (for {model.spec}: add seed={model.seed} stage={model.stage} to that command)"
        else:
            how = (
                f"audit.{'target' if role == 'target' else 'references'}: {model.spec} ({what}) is not trained yet "
                f"(looked in {model.missing}); {_training_cost(model, domain)}: "
                f"`{train_command(model, domain)}`"
            )
        if role == "reference":
            how += "; or audit without a reference model: add audit.references=[] (readings that need one give none)"
        else:
            how += "; or audit a model of your own: audit.target=<hub id or model directory>"
        parts.append(how)
    return ". Also ".join(parts) + "." if parts else None


def nonmember_items(domain: Domain, setting: str) -> tuple[Domain | None, str]:
    """The reference items the membership scores are compared with, as a view of ``domain``, and what they are.

    Args:
        domain: The benchmark.
        setting: ``auto`` (``generated`` where the domain can generate problems, else ``rewrites``), ``generated``
            (fresh problems of the same generator: the cleanest non-members), ``rewrites`` (the domain's first
            paraphrased version of each test item) or a JSONL file with a ``question`` field (and optionally
            ``solution`` and ``answer``) of items the model cannot have seen.

    Returns:
        ``(view, description)``; view is None where the domain has no such items (membership tests then report it).
    """
    generated = (
        domain.nonmember_questions(len(domain.test), NONMEMBER_SEED) if setting in ("auto", "generated") else None
    )
    if setting == "auto":
        setting = "generated" if generated is not None else "rewrites"
    if setting == "generated":
        if generated is None:
            raise ContamlabError(f"audit.nonmembers=generated: domain={domain.name} cannot generate problems")
        return domain.over(generated, "generated"), f"{len(generated)} fresh problems of the same generator"
    if setting == "rewrites":
        versions, about = reference_versions(domain, "test", domain.test, None)
        items = [q for q in versions[0] if q is not None] if versions else []
        if not items:
            return None, "none (the domain has no rewrites: give audit.nonmembers=<a .jsonl file>)"
        return domain.over(items, "rewrites"), f"{len(items)} rewrites of the test items ({about['kind']})"
    path = Path(setting).expanduser()
    if not path.is_file():
        raise ContamlabError(f"audit.nonmembers={setting}: use auto, generated, rewrites or an existing .jsonl file")
    rows = read_jsonl(path, required=("question",))
    items = [
        Question(f"nonmember-{i}", str(r["question"]), str(r.get("solution", "")), str(r.get("answer", "")))
        for i, r in enumerate(rows)
    ]
    return domain.over(items, f"file:{path.name}"), f"{len(items)} items from {path}"


def truth(target: AuditedModel, domain: Domain) -> dict[str, Any] | None:
    """Whether a simulated target has seen the test set, and how (None where that is not known).

    Not known for a model not simulated here, nor for the base and clean stages of a model pre-trained elsewhere (a
    hub or packaged model) on a public benchmark: its pre-training may have read the test set. On a benchmark generated
    here it cannot have.
    """
    if target.stage is None:
        return None
    contaminated = target.stage == "contaminated"
    if not contaminated and not target.store.pretrain and not domain.generated:
        return None
    return {"contaminated": contaminated, "leak": domain.leak_wording if contaminated else None}


# -- one detector ---------------------------------------------------------------------------------------------------
def score_all(
    model: AuditedModel, detectors: dict[str, Detector], domain: Domain, nonmembers: Domain | None, progress: bool
) -> dict[str, str]:
    """Every score an audit reads from ``model``, then unload it: each model loads once, and only if a score is new.

    Returns:
        The detectors that cannot run, with the reason (e.g. a corpus-side method without a corpus).
    """
    failed = {}
    moments = any(d.reads_moments for d in detectors.values())  # else the shared token pass skips them
    for name, detector in detectors.items():
        sets = [domain] + ([nonmembers] if detector.reads_nonmembers and nonmembers is not None else [])
        try:
            for items in sets:
                model.score(items, detector, progress, moments)
        except ContamlabError as err:
            failed[name] = str(err)
    model.release()
    return failed


def audit_detector(
    detector: Detector,
    target: AuditedModel,
    references: list[AuditedModel],
    domain: Domain,
    nonmembers: Domain | None,
    settings: V.Settings,
    progress: bool,
) -> tuple[list[V.Verdict], dict[str, Any]]:
    """Every reading of one detector on the target (and the references it compares with); returns (verdicts, extra).

    ``extra`` has ``wall_s``, the seconds of the target's scores when first computed, and ``cached``, whether this
    run read them all from the cache.
    """
    out, wall, cached = target.score(domain, detector, progress)
    extra: dict[str, Any] = {"wall_s": round(wall, 3), "cached": cached, "dataset_score": out.dataset_score}
    refs = [r.score(domain, detector, progress)[0] for r in references] if references else []
    own = detector.audit_readings(out, refs, settings)
    if own is not None:
        extra.update(own[1])
    non = None  # the non-member items' output: the membership reading's other side, or nonmember_readings'
    if nonmembers is not None and (own is None or detector.reads_nonmembers):
        non, wall_non, cached_non = target.score(nonmembers, detector, progress)
        extra.update(wall_s=round(wall + wall_non, 3), cached=cached and cached_non)
    if own is not None:
        return [*own[0], *(detector.nonmember_readings(out, non, settings) if non is not None else [])], extra
    # a per-item membership score: benchmark items against non-members
    if non is None:
        why = "no non-member items to compare with (give audit.nonmembers=<a .jsonl file>)"
        return [V.Verdict(detector.name, "AUROC benchmark vs reference items", None, None, None, why, None)], extra
    extra["_items"] = [("benchmark", q.id, s) for q, s in zip(domain.test, out.scores)]
    extra["_items"] += [("reference", q.id, s) for q, s in zip(nonmembers.test, non.scores)]
    pairs = [(r.scores, m.score(nonmembers, detector, progress)[0].scores) for r, m in zip(refs, references)]
    return [
        V.membership_test(out.scores, non.scores, settings, name=detector.name),
        V.membership_vs_references((out.scores, non.scores), pairs, settings, name=f"{detector.name}/reference"),
    ], extra


def mitigation_strategies(cfg: DictConfig) -> dict[str, Strategy]:
    """Identity and each strategy of ``audit.mitigate``, built (and checked) before any model loads."""
    names = list(cfg.audit.mitigate)
    if not names:
        return {}
    strategies = {}
    for name in ["identity", *[n for n in names if n != "identity"]]:
        if name not in cfg.strategies:
            raise ContamlabError(f"audit.mitigate: no strategy {name!r}; choose from {', '.join(cfg.strategies)}")
        strategy = build(cfg.strategies[name], f"strategies.{name}")
        if strategy.patches_model:
            raise ContamlabError(f"audit.mitigate: strategy={name} needs a clean twin (it patches the model pair)")
        strategies[name] = strategy
    return strategies


def _solve_key(cfg: DictConfig, store: ModelStore, domain: Domain, source: str, name: str, strategy: Strategy) -> dict:
    """What decides one strategy's sample set of one model, read from the config.

    The sample cache's key, less the fields only a loaded sampler knows; those come from the ``sampler`` and
    ``model`` nodes that the sampler is built from.
    """
    plain = {k: OmegaConf.to_container(cfg[k], resolve=True) for k in ("sampler", "model")}
    return {
        "v": MITIGATION_CACHE_VERSION,
        "model": store.identity(source),
        "config": plain,  # batch rows, draw, shared KV, backend: they change the samples
        "domain": domain.eval_fingerprint(),
        "ids": content_hash([q.id for q in domain.test]),
        "prompt": PROMPT_VERSION,
        "strategy": strategy.params(),
        "role": strategy_role(name),
        **{k: cfg.get(k) for k in ("m", "temperature", "max_new_tokens", "seed", "chunk_questions")},
    }


def _solve_probabilities(
    target: AuditedModel, store: ModelStore, domain: Domain, name: str, strategy: Strategy, progress: bool
) -> tuple[list[float], float]:
    """Per-item solve probability of the target under one strategy, and the wall seconds of computing it.

    Read from ``<cache_dir>/audit/solve`` when an earlier audit computed it: the sample cache holds the samples, but
    reading them back needs the model loaded (the sampler keys them by its own settings), which is most of a cached
    rerun's time. The first computation's wall time is kept, as the detection cache keeps its scores'.
    """
    root = target.cfg.paths.get("cache_dir")
    key = _solve_key(target.cfg, store, domain, target.source, name, strategy)
    path = Path(root) / "audit" / "solve" / f"{name}-{content_hash(key)}.json" if root else None
    if path is not None and path.is_file():
        try:
            data = json.loads(path.read_text())
            if data.get("key") == json.loads(json.dumps(key, default=str)) and len(data["solve"]) == len(domain.test):
                return [float(v) for v in data["solve"]], float(data.get("wall_s", 0.0))
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("audit: solve-probability cache %s unreadable; reading the samples", path)
    started = time.perf_counter()
    setup = sampling_setup(target.cfg)
    role = strategy_role(name)
    _, samples, _ = sample_model(setup, store, domain, target.source, strategy, role, progress, label=target.spec)
    solve, wall = [s.solve_probability() for s in samples], time.perf_counter() - started
    if path is not None:
        atomic_write_json(path, {"key": key, "solve": solve, "wall_s": wall})
    return solve, wall


def _mitigation(
    strategies: dict[str, Strategy], target: AuditedModel, domain: Domain, settings: V.Settings, progress: bool
):
    """Mean solve probability under identity and each other strategy (cached sample sets and solve probabilities)."""
    if not strategies:
        return [], {}
    if not domain.generates_answers:
        why = f"domain={domain.name}: its items are not answered by generation, so there is no solve probability"
        log.warning("audit: the mitigated score is not run: %s", why)
        return [], {"not_run": why}
    store = target.store
    solve: dict[str, list[float]] = {}
    walls: dict[str, float] = {}
    for name, strategy in strategies.items():
        solve[name], wall = _solve_probabilities(target, store, domain, name, strategy, progress)
        walls[name] = round(wall, 3)
    found = [V.mitigation_share(solve["identity"], solve[n], n, settings) for n in strategies if n != "identity"]
    return found, {"solve_probability": {n: sum(v) / len(v) for n, v in solve.items()}, "wall_s": walls}


# -- the job --------------------------------------------------------------------------------------------------------
def run(cfg: DictConfig) -> dict[str, Any]:
    """Audit one model on one benchmark; write results.json, audit.md, the transparency card and W&B logs."""
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
    target = AuditedModel(str(audit.target), cfg, domain)
    references = [AuditedModel(str(spec), cfg, domain) for spec in audit.references]
    missing = missing_models_message(target, references, domain)
    if missing:
        raise ContamlabError(missing)
    if any(r.source == target.source for r in references):
        raise ContamlabError(f"audit.references: {target.spec} is also the target; a model is no reference for itself")
    unknown = [n for n in audit.detectors if n not in cfg.detectors]
    if unknown:
        raise ContamlabError(f"audit.detectors: no detector {unknown[0]!r}; choose from {', '.join(cfg.detectors)}")
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
    calibration = None
    if audit.calibrate.get("pool") is not None:  # the pool and doses checked here, before any model loads
        from contamlab.jobs.calibrate import Calibration

        calibration = Calibration(cfg, target, references, domain, nonmembers, settings, progress)
    out_dir = Path(cfg.paths.output_dir)
    found: list[V.Verdict] = []
    per_detector: dict[str, Any] = {}
    item_rows = [["detector", "items", "id", "score"]]  # the membership scores behind each AUROC
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
        readings, extra = audit_detector(detector, target, references, domain, nonmembers, settings, progress)
        item_rows += [
            [name, kind, qid, "" if score != score else f"{score:.9g}"] for kind, qid, score in extra.pop("_items", [])
        ]
        per_detector[name] = extra
        found += readings
        for v in readings:
            log.info("audit %s: %s = %s -> %s", v.name, v.statistic, _fmt(v.value), v.verdict)
    calibrated = None
    if calibration is not None:
        mark = time.perf_counter()
        ran = {k: d for k, d in detectors.items() if k not in failed}
        found, calibrated = calibration.run(ran, found)
        calibrated["wall_s"] = round(time.perf_counter() - mark, 3)
    mark = time.perf_counter()
    mitigation, mitigation_extra = _mitigation(strategies, target, domain, settings, progress)
    found += mitigation
    results: dict[str, Any] = {
        "config": OmegaConf.to_container(cfg, resolve=True),
        "audit": {
            "target": {"spec": target.spec, "source": target.source},
            "references": [{"spec": r.spec, "source": r.source} for r in references],
            "benchmark": domain.name,
            "questions": len(domain.test),
            "nonmembers": about_nonmembers,
            "truth": truth(target, domain),
            "verdicts": [v.to_dict() for v in found],
            "detectors": per_detector,
            "scoring_s": scoring_s,
            "mitigation": {**mitigation_extra, "total_s": round(time.perf_counter() - mark, 3)},
            "calibration": calibrated,
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
    csv.writer(buffer).writerows(item_rows)
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
