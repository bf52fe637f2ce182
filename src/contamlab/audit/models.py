"""The models an audit reads: the audited one and its references, where each loads from, and what is missing.

Before any model loads, :func:`missing_models_message` names in one line every simulated model that is not trained
yet, with the command that trains it and what that costs; :func:`truth` says whether a simulated target has seen the
benchmark (the meta-audit's ground truth).
"""

from __future__ import annotations

import dataclasses
import shlex
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from contamlab.config import build_domain, group_choice
from contamlab.data.domain import Domain
from contamlab.detectors.base import Detector, DetectorOutput
from contamlab.models.reference import ModelRef
from contamlab.models.store import ModelStore, is_done
from contamlab.scoring import LoadedModel, score_model

#: The default world's base pre-training (``domain=arith``: 3,000 steps of 8 x 256 tokens) and what ``python
#: train.py`` costs with it on 2-core CPUs (docs/performance.md). A missing simulated model's message quotes these
#: rather than a guess for another recipe.
DEFAULT_WORLD_BASE_STEPS = 3000
DEFAULT_WORLD_TIME = {"clean": "6-11 min", "contaminated": "6.5-12 min"}


class AuditedModel:
    """One audited or reference model: where it loads from and the config that scores it.

    Args:
        ref: The reference as typed (:class:`~contamlab.models.reference.ModelRef`): a simulated stage of ``model=``
            on ``domain=`` (``clean@1``: another seed's), or a hub id, model directory or adapter directory.
        cfg: The audit config.
        store: The audit's model store (built once by the job; another seed's is derived from it).
        domain: The benchmark.
    """

    def __init__(self, ref: ModelRef, cfg: DictConfig, store: ModelStore, domain: Domain) -> None:
        self.ref, self.spec, self.stage = ref, ref.text, ref.stage
        self.seed = ref.seed_in(int(cfg.seed))
        # another seed's simulated model: its config and store are the run's with that seed (the store is not rebuilt)
        self.cfg = cfg if self.seed == int(cfg.seed) else OmegaConf.merge(cfg, {"seed": self.seed})
        self.store = store = store if store.seed == self.seed else dataclasses.replace(store, seed=self.seed)
        #: The domain its simulated model was trained on, which keys its directory: the audit's, or another seed's
        #: where the seed draws its own problems (``experiment=real_world``: ``domain.generator.seed: ${seed}``).
        self.home = domain if self.cfg is cfg else _domain_of(self.cfg, cfg, domain)
        domain = self.home
        #: Where the simulated model would be when it is not trained yet (None: it is, or it is not simulated).
        self.missing: Path | None = None
        if self.stage is None:
            self.source = ref.text
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
        # the detector's settings (another k, another prefix) and the items: the benchmark (None) or a view of others
        key = (detector.name, repr(sorted(detector.params().items())), str(domain.items))
        if key not in self._outputs:
            self._outputs[key] = score_model(
                self.cfg,
                domain,
                detector,
                self.source,
                self.role,
                progress,
                self.store,
                self.loaded,
                moments,
                home=self.home,
            )
        return self._outputs[key]

    def release(self) -> None:
        """Unload the model (its scores stay)."""
        self.loaded.release()


def _domain_of(seed_cfg: DictConfig, cfg: DictConfig, domain: Domain) -> Domain:
    """The domain under ``seed_cfg``, the audit's config at another seed.

    ``domain`` itself when the seed changes none of its fields, else built anew (a synthetic benchmark: seconds).
    """
    if OmegaConf.to_container(seed_cfg.domain, resolve=True) == OmegaConf.to_container(cfg.domain, resolve=True):
        return domain
    return build_domain(seed_cfg.domain)


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
    if model.stage == "sham":  # trained after the contaminated model, on request
        words.append("sham=true")
    elif model.stage != "contaminated":  # train.py's stage=all ends with the contaminated model
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


def missing_models_message(target: AuditedModel, references: list[AuditedModel]) -> str | None:
    """One line naming every simulated model the audit needs and does not have, or None when none is missing.

    For each: which model, where it was looked for, how long training it takes, the exact train.py command, and how
    to audit without it (``audit.references=[]`` for a reference; a model of one's own for the target).
    """
    parts = []
    for role, model in [("target", target), *(("reference", r) for r in references)]:
        if model.missing is None:
            continue
        what = f"the {model.stage} model of seed {model.seed}"
        store, domain = model.store, model.home
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
