"""Where each training stage's model lives: a directory keyed by a content hash of everything that made it.

``<models_dir>/<model>/<family>/base-<hash>``, ``…/clean-<hash>`` and ``…/contaminated-<domain>-<hash>``. A stage's
key includes its parent's key, so changing the base recipe re-trains everything after it, while ``arith`` and
``arith_pq`` (one family) share the base and the clean model. evaluate.py finds models through the same keys.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from contamlab.data.domain import LEAK_FIELDS, Domain
from contamlab.errors import ContamlabError
from contamlab.io import content_hash

STAGES = ("base", "clean", "contaminated")
DONE_MARKER = "train_summary.json"
# Bump when the training code changes in a way that changes its output for the same config.
TRAIN_CODE_VERSION = 2


def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


def _model_key(cfg: DictConfig) -> dict:
    model = _plain(cfg.model)
    # Where the user's own pair lives, and how it is batched and drawn from when sampled, do not change how the
    # simulated ones are trained.
    return {k: v for k, v in model.items() if k not in ("clean", "contaminated", "batch_rows", "draw")}


def _family_key(domain: Domain) -> dict:
    # Test-set fields too: the base and clean stages never see a test question.
    return {k: v for k, v in domain.fingerprint().items() if k not in (*LEAK_FIELDS, "max_test", "n_test")}


def _finetune_key(cfg: DictConfig) -> dict:
    recipe = _plain(cfg.finetune)
    recipe.pop("precision", None)  # bf16 vs fp32 is a hardware choice, recorded in the summary instead
    return recipe


def contaminated_epochs(cfg: DictConfig, domain: Domain) -> int:
    """Epochs of the contaminated stage: the domain's ``leak_epochs``, or ``finetune.epochs`` when null."""
    if domain.leak_epochs is not None:
        return domain.leak_epochs  # validated by the domain; part of its fingerprint, hence of the stage key
    if int(cfg.finetune.epochs) < 1:
        raise ContamlabError(f"finetune.epochs={cfg.finetune.epochs}: must be >= 1")
    return int(cfg.finetune.epochs)


def needed_stages(cfg: DictConfig) -> list[str]:
    """The stages this model needs, in order (a hub or packaged model has no base stage)."""
    return list(STAGES) if cfg.model.get("pretrain", False) else list(STAGES[1:])


def stage_key(cfg: DictConfig, domain: Domain, stage: str) -> dict:
    """The full identity of a stage's output (its hash names the directory)."""
    if stage not in STAGES:
        raise ContamlabError(f"stage={stage!r}: use base, clean, contaminated or all")
    seed = int(cfg.seed)
    if stage == "base":
        if not cfg.model.get("pretrain", False):
            raise ContamlabError(f"model={cfg.model.name} is pre-trained already; it has no base stage")
        return {
            "v": TRAIN_CODE_VERSION,
            "stage": "base",
            "model": _model_key(cfg),
            "base": _plain(cfg.base),
            "family": _family_key(domain),
            "seed": seed,
        }
    if stage == "clean":
        parent = stage_key(cfg, domain, "base") if cfg.model.get("pretrain", False) else _model_key(cfg)
        return {
            "v": TRAIN_CODE_VERSION,
            "stage": "clean",
            "parent": parent,
            "finetune": _finetune_key(cfg),
            "family": _family_key(domain),
            "seed": seed,
        }
    return {
        "v": TRAIN_CODE_VERSION,
        "stage": "contaminated",
        "parent": stage_key(cfg, domain, "clean"),
        "domain": domain.fingerprint(),
        "split": domain.split.to_dict(),
        "seed": seed,
    }


def stage_dir(cfg: DictConfig, domain: Domain, stage: str) -> Path:
    """The directory of a stage's model (existing or to be trained)."""
    key = content_hash(stage_key(cfg, domain, stage))
    root = Path(cfg.paths.models_dir) / str(cfg.model.name) / domain.family
    name = f"contaminated-{domain.name}-{key}" if stage == "contaminated" else f"{stage}-{key}"
    return root / name


def is_done(path: Path) -> bool:
    """Whether a stage directory holds a finished model (its summary is written last)."""
    return (path / DONE_MARKER).is_file()


def model_source(cfg: DictConfig, domain: Domain, which: str) -> str:
    """Where evaluate.py loads the clean or contaminated model from.

    The user's own (``model.clean`` / ``model.contaminated``) when set, else the one train.py simulated.
    """
    if which not in ("clean", "contaminated"):
        raise ValueError(which)
    own = cfg.model.get(which)
    if own:
        return str(own)
    path = stage_dir(cfg, domain, which)
    if not is_done(path):
        raise ContamlabError(missing_model_message(cfg, domain, which, path))
    return str(path)


def missing_model_message(cfg: DictConfig, domain: Domain, which: str, path: Path) -> str:
    """What to do when evaluate.py finds no trained ``which`` model: one line with commands that work as typed.

    It names the ``model=`` option (``pythia``, not the model's name ``pythia-12b``), what that model needs (the hub
    or a local copy; a GPU at the paper's sizes) and what runs offline on a CPU instead.
    """
    import os

    from contamlab.config import group_choice

    option = group_choice(cfg, "model") or str(cfg.model.name)
    kind = str(cfg.model.get("kind", "hf"))
    head = f"no {which} model for model={option} domain={domain.name} (looked in {path})"
    if kind == "tiny":
        return (
            f"{head}; train it first with `python train.py model={option} domain={domain.name}` (repeat any model., "
            f"base., finetune. or domain. overrides), or set model.{which}=<hub id or path>"
        )
    # Hub and packaged models fine-tune on GSM8K or PQ; arith is the tiny offline world's synthetic domain.
    train_domain = domain.name if domain.family != "arith" else "gsm8k"
    own_pair = "model.clean=<hub id or path> model.contaminated=<hub id or path>"
    if kind == "smollm2":
        return (
            f"{head}. Train it with `python train.py model={option} domain={train_domain}` (LoRA, ~6 s a step on a "
            f"CPU) and evaluate with domain={train_domain}, or evaluate a pair of your own with {own_pair} "
            "(`make smollm2-run` uses the packaged model as both)"
        )
    offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")
    return (
        f"{head}. model={option} ({cfg.model.get('source')}) needs the hub or a local copy (model.source=<dir>"
        f"{'; HF_HUB_OFFLINE is set here' if offline else ''}) and a GPU at the paper's sizes: "
        f"`python train.py model={option} domain={train_domain} trainer=gpu`, then evaluate with "
        f"domain={train_domain}; or evaluate a pair of your own with {own_pair}. Offline on a CPU instead: "
        "`python train.py` then `python evaluate.py -m strategy=railcap,lne,ted` (model=tiny), or model=smollm2 "
        "domain=gsm8k with model.clean= and model.contaminated= set (`make smollm2-run`)"
    )
