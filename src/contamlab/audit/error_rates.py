"""The audit's error rates: each membership verdict with its false alarms and power, measured on the audited model.

``audit.error_rates.pool=auto`` turns it on. The plain audit reads a statistic against a fixed threshold (p < α); the
error-rate audit asks the audited model how that reading behaves, on a **pool** of items it cannot have seen
(:func:`pool_items`):

1. **Null** (no training): the model scores the pool once; each of ``null_draws`` random disjoint splits puts one side
   in the benchmark's place and the other in the non-members' (:func:`~contamlab.metrics.error_rates.pool_splits`).
   The share of splits the reading flags is its false-alarm rate, with the audit's own references for the
   ``/reference`` readings.
2. **Power** (training): for each dose and each of ``twins`` seeds, a twin of the audited model is LoRA-fine-tuned on a
   random half of a pool (verbatim, with the contaminated stage's general rows; at a dose with ``fraction < 1``, on
   that share of the half) and read as the audit reads a model: that half against the other half, and against the
   audited model itself as the reference. With ``twin_pools: own`` (the default) twin seed k draws a pool of its own
   (the generator's stream ``TWIN_POOL_SEED + k``, or the file's slice k + 1), so no two twins share a leaked item and
   the twins are independent draws of items as well as of training noise; its doses share it (a paired dose curve).
   ``shared``: every twin splits the null's pool (cheaper: the audited model scores one pool). The share of twins
   flagged is the power at that dose; the weakest dose (:attr:`Dose.strength`, whatever the listed order) reaching
   ``min_power`` is the reading's detection dose (:func:`~contamlab.metrics.error_rates.with_error_rates`).

Twins are stages like any other: trained once into ``<models_dir>/<model>/twins/twin-<hash>`` (resumable, locked), and
every score goes through the detection cache, so a rerun trains and scores nothing.

Which readings get error rates: those that compare the benchmark's items with non-member items by a per-item score
(:attr:`~contamlab.detectors.base.Detector.membership_reading`): Loss, Zlib, Min-K%, Min-K%++, DC-PDD, ReCaLL, CDD,
each alone and against references. A detector with readings of its own (CoDeC, BenBench, ConStat, n-gram overlap)
reads its whole item set at once, so a split of the pool is a new scoring run; its verdicts are reported without
error rates.

A pool is valid when (a) the audited model cannot have seen any item of it (written or generated after its training
data was collected), and (b) its items are distributed like the benchmark's (same source, format and difficulty):
then the null is the benchmark's null and a twin's leak is a leak of benchmark-like items. The synthetic domains
generate such a pool (fresh problems of the benchmark's generator); for any other benchmark, give a JSONL file.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from omegaconf import DictConfig, OmegaConf

from contamlab.audit.models import AuditedModel
from contamlab.data.domain import Domain
from contamlab.data.jsonl import read_jsonl
from contamlab.data.question import Question
from contamlab.data.split import Split, draw_split
from contamlab.detectors.base import Detector
from contamlab.errors import ContamlabError
from contamlab.io import content_hash
from contamlab.metrics import error_rates as C
from contamlab.metrics import verdicts as V
from contamlab.metrics.roc import MIN_ITEMS_PER_SIDE
from contamlab.models.reference import ModelRef
from contamlab.models.store import is_done
from contamlab.training import corpus
from contamlab.training.stage_lock import stage_lock

log = logging.getLogger("contamlab")
#: The generator stream of a generated pool (the audit's non-members use 100, ReCaLL's prefixes 0).
POOL_SEED = 200
#: Twin seed k's own generated pool: stream TWIN_POOL_SEED + k, clear of the sham's (300), the shift null's (1000 +)
#: and the shift null's ReCaLL prefixes (10,000 +).
TWIN_POOL_SEED = 50_000
#: Bump when twins train differently for the same key (part of their directory's hash).
TWIN_VERSION = 1


@dataclass(frozen=True)
class Dose:
    """How strongly a twin's benchmark side leaks.

    Attributes:
        epochs: Passes over the leaked items.
        lr: Peak learning rate.
        fraction: Share of the twin's benchmark side that it trains on (1: all of it). A released model may have seen
            part of a benchmark only; the simulation's contaminated models saw half (``domain.leak_fraction``).
    """

    epochs: int
    lr: float
    fraction: float = 1.0

    @property
    def label(self) -> str:
        """The dose in words: ``2 epochs at lr 0.001`` or ``2 epochs at lr 0.001, 50% leaked``."""
        words = f"{self.epochs} epoch{'s' if self.epochs != 1 else ''} at lr {self.lr:g}"
        return words if self.fraction == 1.0 else f"{words}, {self.fraction:.0%} leaked"

    def to_key(self) -> dict[str, Any]:
        """Its part of a twin's identity (a full leak keeps the key it had before fractions existed)."""
        key: dict[str, Any] = {"epochs": self.epochs, "lr": self.lr}
        return key if self.fraction == 1.0 else {**key, "fraction": self.fraction}

    @property
    def strength(self) -> float:
        """How hard the dose leaks, to order doses: epochs x lr x fraction.

        The sum of the learning rates over the leaked items' passes, scaled by the share of the benchmark side that
        leaks: more epochs, a larger step or more leaked items each make a stronger leak. Doses that differ in more
        than one of them are ordered by this product, a proxy (the LoRA schedule is the same at every dose).
        """
        return self.epochs * self.lr * self.fraction


def _written(scores: np.ndarray) -> list[float | None]:
    """Per-item scores as a results file keeps them: 7 significant digits (float32's), None where not scored."""
    return [float(f"{x:.7g}") if np.isfinite(x) else None for x in scores]


def doses(cfg: DictConfig, domain: Domain) -> list[Dose]:
    """``audit.error_rates.doses`` resolved: a missing epochs or lr is the contaminated stage's (the simulation's).

    A missing ``fraction`` is 1: the twin's whole benchmark side leaks. The doses come back weakest first
    (:attr:`Dose.strength`; equal strengths keep the listed order), whatever order the config lists them in, so the
    first dose whose power reaches ``min_power`` is the weakest detected.
    """
    from contamlab.stages import contaminated_epochs, stage_lr  # the training service (Lightning): see train_twin

    out = []
    for node in cfg.audit.error_rates.doses:  # each checked by validation.py
        epochs, lr = node.get("epochs"), node.get("lr")
        out.append(
            Dose(
                int(epochs) if epochs is not None else contaminated_epochs(cfg, domain),
                float(lr) if lr is not None else stage_lr(cfg, domain, "contaminated"),
                float(node.get("fraction") if node.get("fraction") is not None else 1.0),
            )
        )
    return sorted(out, key=lambda dose: dose.strength)


def pool_items(domain: Domain, setting: str, size: int, exclude: list[Question], part: int = 0) -> tuple[Domain, str]:
    """A pool of unseen items, as a view of ``domain``, and what it is.

    Args:
        domain: The benchmark.
        setting: ``auto`` or ``generated`` (fresh problems of the benchmark's generator, stream :data:`POOL_SEED`;
            twin seed k's: :data:`TWIN_POOL_SEED` + k), or a JSONL file with a ``question`` field (and ``solution``,
            ``answer``) of items the model cannot have seen (its ``part``-th slice of ``size`` items).
        size: Items wanted (a file gives all of its items when it has fewer).
        exclude: Items the pool must not repeat (the benchmark, its train split, the audit's non-members): an item
            with the same question text is dropped.
        part: 0 for the null's pool; k + 1 for twin seed k's own pool (``twin_pools: own``).

    Returns:
        ``(view, description)``.
    """
    seen = {q.question.strip() for q in exclude}
    if setting in ("auto", "generated"):
        stream = POOL_SEED if not part else TWIN_POOL_SEED + part - 1
        fresh = domain.nonmember_questions(size + len(exclude) // 10 + 20, stream)
        if fresh is None:
            raise ContamlabError(
                f"audit.error_rates.pool={setting}: domain={domain.name} cannot generate problems; give a .jsonl file "
                "of items the model cannot have seen (docs/audit.md#error-rates)"
            )
        items = [q for q in fresh if q.question.strip() not in seen][:size]
        about = f"{len(items)} fresh problems of the benchmark's generator"
    else:
        path = Path(setting).expanduser()  # validation.py checked that it exists
        rows = read_jsonl(path, required=("question",))
        kept = [
            Question(f"pool-{i}", str(r["question"]), str(r.get("solution", "")), str(r.get("answer", "")))
            for i, r in enumerate(rows)
            if str(r["question"]).strip() not in seen
        ]
        items = kept[part * size : (part + 1) * size]
        where = f"items {part * size + 1}-{part * size + len(items)} of the {len(kept)} kept" if part else ""
        about = f"{len(items)} items from {path} ({where or f'{len(rows) - len(items)} dropped or beyond the size'})"
        if part and len(items) < size:
            raise ContamlabError(
                f"audit.error_rates.pool={path}: {len(kept)} usable items, too few for the null's pool and one pool "
                f"of {size} per twin seed (twin_pools: own); give a larger file, a smaller pool_size, or "
                "audit.error_rates.twin_pools=shared"
            )
    prefix = "pool" if not part else f"pool{part}"  # the null's pool keeps its ids (and its cached scores)
    items = [Question(f"{prefix}-{i}", q.question, q.solution, q.answer, q.choices) for i, q in enumerate(items)]
    if len(items) < 2 * MIN_ITEMS_PER_SIDE:
        raise ContamlabError(
            f"audit.error_rates.pool: {len(items)} items; the null splits it in two and each side needs "
            f"{MIN_ITEMS_PER_SIDE}: give at least {2 * MIN_ITEMS_PER_SIDE}"
        )
    name = f"calibration-pool:{setting}" + (f":{part}" if part else "")
    return domain.over(items, name), about


class ErrorRates:
    """The error rates of one audited target's readings: the pool, its null and its twins (see the module's docstring).

    Args:
        cfg: The audit config.
        target: The audited model.
        references: The audit's reference models.
        domain: The benchmark.
        nonmembers: The audit's non-member items (None when there are none).
        settings: The audit's test settings.
        progress: Show progress bars.
    """

    def __init__(
        self,
        cfg: DictConfig,
        target: AuditedModel,
        references: list[AuditedModel],
        domain: Domain,
        nonmembers: Domain | None,
        settings: V.Settings,
        progress: bool,
    ) -> None:
        node = cfg.audit.error_rates
        self.cfg, self.target, self.references, self.domain = cfg, target, references, domain
        self.settings, self.progress = settings, progress
        self.twins = int(node.twins)
        self.min_power = float(node.min_power)
        self.null_draws = int(node.null_draws)
        self.doses = doses(cfg, domain)
        n_bench = len(domain.test)
        n_non = len(nonmembers.test) if nonmembers is not None else n_bench
        size = int(node.pool_size) if node.get("pool_size") is not None else n_bench + n_non
        exclude = [*domain.test, *(nonmembers.test if nonmembers is not None else [])]
        if domain.has_train:
            exclude += domain.train
        self.pool, self.about = pool_items(domain, str(node.pool), size, exclude)
        self.own_pools = str(node.get("twin_pools", "own")) == "own"
        #: Each twin seed's pool: its own (twin_pools: own) or the null's.
        self.twin_pools = (
            [pool_items(domain, str(node.pool), size, exclude, k + 1)[0] for k in range(self.twins)]
            if self.own_pools
            else [self.pool] * self.twins
        )
        self.sides = (n_bench, n_non)
        # the null's bootstrap only decides each split's flag (its p to a resolution of 1/n_boot), not an interval
        self.null_settings = V.Settings(settings.alpha, min(settings.n_boot, 200), settings.confidence, settings.seed)
        #: Wall seconds of each twin trained by this run, by its directory (a twin trained before is not in it).
        self.train_seconds: dict[str, float] = {}

    def twin_models(self) -> list[tuple[Dose, int, Split, AuditedModel]]:
        """Every twin (dose, seed, sides, model), trained where it is not yet.

        ``sides.leaked`` is the twin's benchmark side of its pool (:attr:`twin_pools`), read against
        ``sides.unleaked``; the twin trained on all of its benchmark side or, at a dose with ``fraction < 1``, on a
        seeded random share of it. A twin is opened as the audited model was, so it is scored the same way.
        """
        out = []
        for dose in self.doses:
            for seed in range(self.twins):
                ids = [q.id for q in self.twin_pools[seed].test]
                sides = draw_split(ids, seed, 0.5)
                trained = sides
                if dose.fraction < 1.0:
                    part = set(draw_split(sides.leaked, seed, dose.fraction).leaked)
                    trained = Split(tuple(i for i in ids if i in part), tuple(i for i in ids if i not in part), seed)
                path = self.train_twin(dose, seed, trained)
                twin = AuditedModel(ModelRef.parse(str(path)), self.cfg, self.target.store, self.domain)
                out.append((dose, seed, sides, twin))
        return out

    def twin_key(self, dose: Dose, seed: int, split: Split) -> dict[str, Any]:
        """What decides a twin: its parent, pool, leaked half, dose, the fine-tuning recipe and its general rows."""
        store = self.target.store
        return {
            "v": TWIN_VERSION,
            "parent": store.identity(self.target.source),
            "pool": self.twin_pools[seed].items,
            "split": split.to_dict(),
            "dose": dose.to_key(),
            "finetune": OmegaConf.to_container(self.cfg.finetune, resolve=True),
            "general": self.domain.leak_general,
            "seed": seed,
            # the leak's schedule is the twin's too (contamlab.stages.stage_recipe); in the key only when set
            **({"leak_schedule": self.domain.leak_schedule} if self.domain.leak_schedule else {}),
        }

    def train_twin(self, dose: Dose, seed: int, split: Split) -> Path:
        """The twin's directory, trained now unless a finished one is there."""
        # Imported here: the training service imports Lightning (most of the audit job's 8.3 s import before; 1.7 s
        # without it, docs/performance.md), which an audit without twins never needs
        from contamlab.stages import TwinRecipe, train_stage

        key = self.twin_key(dose, seed, split)
        path = Path(self.cfg.paths.models_dir) / str(self.cfg.model.name) / "twins" / f"twin-{content_hash(key)}"
        if is_done(path):
            return path
        cfg = OmegaConf.merge(self.cfg, {"seed": seed})
        ft = cfg.finetune
        n = self.domain.leak_general if self.domain.leak_general is not None else int(ft.general.n)
        general = corpus.general_examples(self.domain, ft.general.source, n, seed, cfg.paths.get("data_dir"))
        leaked, pool = set(split.leaked), self.twin_pools[seed]
        view = pool.over(pool.test, "calibration-pool", split)  # the twin's own leaked half (split.json)
        examples = [corpus.question_example(view, q) for q in pool.test if q.id in leaked]
        examples = examples * self.domain.leak_repeats + general
        recipe = TwinRecipe(self.target.source, examples, dose.epochs, dose.lr, key)
        with stage_lock(path, "twin"):
            if not is_done(path):
                log.info("error rates: training twin %d (%s) of %s into %s", seed, dose.label, self.target.spec, path)
                started = time.perf_counter()
                train_stage(cfg, self.target.store, view, "contaminated", path, recipe)
                self.train_seconds[str(path)] = round(time.perf_counter() - started, 2)
        return path

    def _null(self, name: str, own: list[float], refs: list[list[float]], splits: list) -> dict[str, C.Rate]:
        """False alarms of a detector's readings on the pool's splits: alone, and against the references."""
        s = np.asarray(own, np.float64)  # [pool]
        r = [np.asarray(x, np.float64) for x in refs]  # [refs][pool]
        out = {name: C.false_alarms(lambda a, b: V.membership_test(s[a], s[b], self.null_settings), splits)}
        if r:
            out[f"{name}/reference"] = C.false_alarms(
                lambda a, b: V.membership_vs_references((s[a], s[b]), [(x[a], x[b]) for x in r], self.null_settings),
                splits,
            )
        return out

    def run(self, detectors: dict[str, Detector], verdicts: list[V.Verdict]) -> tuple[list[V.Verdict], dict]:
        """The verdicts with their error rates, and the error rates' own record for results.json.

        Args:
            detectors: The audit's detectors that ran.
            verdicts: The plain audit's verdicts.
        """
        measured = {n: d for n, d in detectors.items() if d.membership_reading}
        moments = any(d.reads_moments for d in measured.values())
        pool, progress = self.pool, self.progress
        log.info(
            "error rates: %s on %d pool items, the target and %d reference(s); then %d twin(s)",
            ", ".join(measured), len(pool.test), len(self.references), self.twins * len(self.doses),
        )  # fmt: skip
        own = {name: self.target.score(pool, d, progress, moments)[0].scores for name, d in measured.items()}
        # the audited model on each twin's own pool: the reference of the twin's /reference reading
        own_twin = [
            {name: self.target.score(p, d, progress, moments)[0].scores for name, d in measured.items()}
            if p is not pool
            else own
            for p in self.twin_pools
        ]
        self.target.release()
        refs = []
        for ref in self.references:
            refs.append({name: ref.score(pool, d, progress, moments)[0].scores for name, d in measured.items()})
            ref.release()
        n_pool = len(pool.test)
        splits = C.pool_splits(n_pool, *self.sides, self.null_draws, self.settings.seed)
        null: dict[str, C.Rate] = {}
        for name in measured:
            null.update(self._null(name, own[name], [x[name] for x in refs], splits))
        flags: dict[str, dict[str, list[bool | None]]] = {}
        twins, costs = [], []
        for dose, seed, sides, twin in self.twin_models():
            log.info("error rates: scoring twin %d (%s) on its pool", seed, dose.label)
            its_pool = self.twin_pools[seed]
            outputs = {name: twin.score(its_pool, d, progress, moments) for name, d in measured.items()}
            scores = {name: out[0].scores for name, out in outputs.items()}
            twin.release()
            costs.append(self._cost(dose, seed, twin, outputs.values()))
            leaked = np.array([sides.is_leaked(q.id) for q in its_pool.test])  # [pool] the benchmark side
            a, b = np.flatnonzero(leaked), np.flatnonzero(~leaked)
            for name in measured:
                t, o = np.asarray(scores[name], np.float64), np.asarray(own_twin[seed][name], np.float64)
                alone = V.membership_test(t[a], t[b], self.settings)
                vs_original = V.membership_vs_references((t[a], t[b]), [(o[a], o[b])], self.settings)
                flags.setdefault(name, {}).setdefault(dose.label, []).append(alone.flagged)
                flags.setdefault(f"{name}/reference", {}).setdefault(dose.label, []).append(vs_original.flagged)
                twins.append(
                    {"dose": dose.label, "seed": seed, "source": twin.source, "reading": name,
                     "auroc": alone.value, "p": alone.p_value, "auroc_minus_original": vs_original.value,
                     # the twin's scores of its benchmark side and of its non-member side: a power recounted
                     # without this code (tests/test_gsm8k_audit_artifacts.py)
                     "benchmark_scores": _written(t[a]), "nonmember_scores": _written(t[b])}
                )  # fmt: skip
        powers = {reading: {d: C.power(f) for d, f in per.items()} for reading, per in flags.items()}
        out = []
        for v in verdicts:
            base = v.name if v.name in null or v.name in powers else None
            if base is None:
                why = "no error rates: the detector reads its whole item set at once (no per-item score to split)"
                out.append(dataclasses.replace(v, detail={**v.detail, "error_rates": {"not_run": why}}))
                continue
            out.append(
                C.with_error_rates(v, null.get(base), powers.get(base, {}), self.min_power, self.settings.confidence)
            )
        record = {
            "pool": self.about,
            "pool_items": n_pool,
            "null_draws": len(splits),
            "sides": list(self.sides),
            "doses": [d.label for d in self.doses],
            "twins_per_dose": self.twins,
            "twin_pools": "own" if self.own_pools else "shared",
            "min_power": self.min_power,
            "readings": {
                name: {
                    "null": null[name].to_dict(self.settings.confidence) if name in null else None,
                    "power": {d: r.to_dict(self.settings.confidence) for d, r in powers.get(name, {}).items()},
                    "detection_dose": C.detection_dose(powers.get(name, {}), self.min_power),
                }
                for name in sorted({*null, *powers})
            },
            "twins": twins,
            "twin_costs": costs,
            "seconds_per_twin": _median_costs(costs),
        }
        return out, record

    def _cost(self, dose: Dose, seed: int, twin: AuditedModel, outputs) -> dict[str, Any]:
        """What one twin cost this run: training (None: trained before) and scoring (0 where every score was cached).

        The scoring seconds include loading the twin (its base and adapter, merged), which the first uncached score
        pays; a cached score costs nothing here, though its first computation's seconds are in the cache.
        """
        scored = [wall for _, wall, cached in outputs if not cached]
        return {
            "dose": dose.label,
            "seed": seed,
            "train_s": self.train_seconds.get(str(twin.source)),
            "score_s": round(sum(scored), 2),
            "scores_cached": len(scored) == 0,
        }


def _median_costs(costs: list[dict[str, Any]]) -> dict[str, float | None]:
    """Median seconds a twin cost to train and to score, over the twins this run trained or scored (None: none)."""
    trained = [c["train_s"] for c in costs if c["train_s"] is not None]
    scored = [c["score_s"] for c in costs if not c["scores_cached"]]
    return {
        "train": round(float(np.median(trained)), 2) if trained else None,
        "score": round(float(np.median(scored)), 2) if scored else None,
    }
