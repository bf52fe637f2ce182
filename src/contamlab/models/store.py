"""The model store: where the model for (config, domain, stage) lives, and what identifies a model in a cache.

``<models_dir>/<model>/<family>/base-<hash>``, ``…/clean-<hash>`` and ``…/contaminated-<domain>-<hash>``. A stage's
key includes its parent's key, so changing the base recipe re-trains everything after it, while ``arith`` and
``arith_pq`` (one family) share the base and the clean model. train.py writes stages here and evaluate.py finds them
through the same keys. Adapter records are read by :func:`~contamlab.models.loading.read_adapter` (re-exported
here), the one parser of peft's ``adapter_config.json``. The jobs build a :class:`ModelStore` from the Hydra
config; nothing below them reads it.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from contamlab.data.domain import LEAK_FIELDS, Domain
from contamlab.data.jsonl import read_jsonl
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_text, content_hash
from contamlab.models.loading import Adapter, load_causal_lm, load_tokenizer, read_adapter
from contamlab.models.placement import Placement
from contamlab.models.spec import ModelSpec

__all__ = [
    "Adapter",
    "ModelSpec",
    "LEAK_RECIPE_STAGES",
    "SHAM",
    "ModelStore",
    "is_done",
    "model_identity",
    "read_adapter",
    "read_training_texts",
    "write_training_texts",
]

STAGES = ("base", "clean", "contaminated")
#: The contaminated model's matched control: the clean model trained further on the contaminated stage's recipe, with
#: fresh in-domain items in place of the leaked ones (``sham=true``; :func:`contamlab.stages.stage_corpus`).
SHAM = "sham"
#: The stages that continue from the clean model with the leak's recipe (epochs, learning rate, schedule, general rows).
LEAK_RECIPE_STAGES = ("contaminated", SHAM)
DONE_MARKER = "train_summary.json"
#: The texts a stage trained on, one JSON object (``{"text": …}``) per line, written by train.py: the ground truth the
#: corpus-side detectors read (n-gram overlap, DC-PDD's frequencies).
TRAINING_TEXTS = "training_texts.jsonl"
# Bump when the training code changes in a way that changes its output for the same config.
TRAIN_CODE_VERSION = 2


def model_identity(
    source: str, revision: str | None = None, dtype: Any = None, *, content: bool = False
) -> dict[str, Any]:
    """What identifies a model's outputs in a cache.

    Args:
        source: A hub id or a local path.
        revision: The hub revision.
        dtype: The dtype the model is loaded in.
        content: Hash the bytes of a local directory's top-level files (the shortcut locate cache, which must not
            follow a retrained model's mtime) instead of naming its files by resolved path, size and mtime (the
            sample and detector caches: cheap, no file is read, and a model retrained in place never reuses stale
            samples).

    Returns:
        ``content=False``: ``source``, ``revision``, ``dtype`` (and ``files`` for a local path);
        ``content=True``: ``{"sha256": …}`` for a local directory, else ``{"hub": source, "revision": …}``.
    """
    path = Path(source)
    if content:
        if not path.is_dir():
            return {"hub": source, "revision": revision}
        digest = hashlib.sha256()
        for file in sorted(p for p in path.iterdir() if p.is_file() and not p.name.startswith(".")):
            digest.update(file.name.encode() + b"\0")
            with file.open("rb") as handle:
                for chunk in iter(lambda: handle.read(1 << 20), b""):
                    digest.update(chunk)
        return {"sha256": digest.hexdigest()[:16]}
    identity = {"source": source, "revision": revision, "dtype": str(dtype)}
    if path.exists():
        files = sorted(p for p in path.iterdir() if p.is_file()) if path.is_dir() else [path]
        identity["source"] = str(path.resolve())
        identity["files"] = [[p.name, p.stat().st_size, int(p.stat().st_mtime)] for p in files]
    return identity


def is_done(path: Path) -> bool:
    """Whether a stage directory holds a finished model (its summary is written last)."""
    return (path / DONE_MARKER).is_file()


def write_training_texts(path: Path, texts: list[str]) -> None:
    """Record a stage's training texts in ``path / TRAINING_TEXTS`` (atomically)."""
    atomic_write_text(path / TRAINING_TEXTS, "".join(json.dumps({"text": t}, ensure_ascii=False) + "\n" for t in texts))


def read_training_texts(path: Path) -> list[str] | None:
    """A stage's recorded training texts, or None when the stage has no record."""
    file = Path(path) / TRAINING_TEXTS
    if not file.is_file():
        return None
    return [str(r["text"]) for r in read_jsonl(file, required=("text",))]


def _family_key(domain: Domain) -> dict:
    # Test-set fields too: the base and clean stages never see a test question.
    return {k: v for k, v in domain.fingerprint().items() if k not in (*LEAK_FIELDS, "max_test", "n_test", "test_data")}


@dataclass(frozen=True)
class ModelStore:
    """The trained models of one model config: their keys, directories and how to load them.

    Attributes:
        models_dir: Root of the store (``paths.models_dir``).
        model: The model's spec (the ``model`` group, built through its ``_target_``).
        seed: The run's seed (part of every stage key).
        finetune: The resolved ``finetune`` recipe (clean and contaminated stages).
        base: The resolved ``base`` recipe (tiny models' base stage); None for pretrained models.
        cache_dir: ``paths.cache_dir`` (the converted SmolLM2 lives there).
        option: The ``model=`` option as typed (``pythia``, where ``model.name`` may be ``pythia-12b``), for messages.
    """

    models_dir: str
    model: ModelSpec
    seed: int
    finetune: dict[str, Any] | None = None
    base: dict[str, Any] | None = None
    cache_dir: str | None = None
    option: str | None = None

    @property
    def name(self) -> str:
        """The model's name (``model.name``)."""
        return self.model.name

    @property
    def placement(self) -> Placement:
        """The resolved device and dtype models load in for inference (``model.device``, ``dtype``, ``device_map``)."""
        return Placement.of(self.model.device, self.model.dtype, self.model.device_map)

    @property
    def dtype(self) -> str:
        """The dtype models are loaded in for inference, resolved (``auto`` is bf16 on CUDA, fp32 on a CPU)."""
        return self.placement.dtype_name

    @property
    def revision(self) -> str | None:
        """The hub revision."""
        return self.model.revision

    @property
    def trust_remote_code(self) -> bool:
        """Whether code from the model repository may run."""
        return self.model.trust_remote_code

    @property
    def pretrain(self) -> bool:
        """Whether the model needs the base stage (the tiny world's from-scratch pre-training)."""
        return self.model.pretrain

    def identity(self, source: str) -> dict[str, Any]:
        """:func:`model_identity` of ``source`` under this config's revision and dtype."""
        return model_identity(source, self.revision, self.dtype)

    def load(self, source: str):
        """Load ``source`` for inference with this config's device, dtype, trust and revision."""
        self.ensure_base(source)
        place = self.placement
        return load_causal_lm(
            source,
            place.dtype_name,
            self.trust_remote_code,
            self.revision,
            device=place.device,
            device_map=place.device_map,
            merge=True,  # inference only: an fp32 adapter folded into the base weights
        )

    def load_tokenizer(self, source: str):
        """The tokenizer of ``source``."""
        return load_tokenizer(source, self.trust_remote_code)

    def base_source(self) -> str:
        """The pretrained base a non-tiny model fine-tunes from (:meth:`ModelSpec.base_source`)."""
        return self.model.base_source(self.cache_dir or "")

    def ensure_base(self, source: str) -> None:
        """Build the base an adapter of this model points at when it is gone from the cache.

        A packaged model's adapters (the clean and contaminated stages) point at its converted or random directory
        in the cache; :meth:`base_source` converts or builds it again (the same files) after the cache was cleared.
        """
        if not self.pretrain and read_adapter(source) is not None:
            self.base_source()  # a marker check when the directory is there

    def needed_stages(self) -> list[str]:
        """The stages this model needs, in order (a hub or packaged model has no base stage)."""
        return list(STAGES) if self.pretrain else list(STAGES[1:])

    def _model_key(self) -> dict:
        return self.model.key()

    def _finetune_key(self) -> dict:
        recipe = dict(self.finetune or {})
        recipe.pop("precision", None)  # bf16 vs fp32 is a hardware choice, recorded in the summary instead
        if not recipe.get("group_by_length"):  # off: the recipe as before the option existed, the same directories
            recipe.pop("group_by_length", None)
        # Every position projected (`logits: all`) keys as the recipe did before the option existed. The loss at the
        # labelled positions alone trains the same bytes on an AMD EPYC but not on an Intel Xeon with AMX, where the
        # bf16 products round differently (tests/test_fast_training.py): it keys a model of its own.
        if recipe.get("logits", "all") == "all":
            recipe.pop("logits", None)
        return recipe

    def stage_key(self, domain: Domain, stage: str) -> dict:
        """The full identity of a stage's output (its hash names the directory)."""
        domain = domain.trained_on  # a view over other items (the audit's non-members) names the same models
        if stage not in (*STAGES, SHAM):
            raise ContamlabError(f"stage={stage!r}: use base, clean, contaminated, sham or all")
        if stage == "base":
            if not self.pretrain:
                raise ContamlabError(f"model={self.name} is pre-trained already; it has no base stage")
            return {
                "v": TRAIN_CODE_VERSION,
                "stage": "base",
                "model": self._model_key(),
                # The thread count is the machine's, not the recipe's: the same config keys the same model anywhere.
                "base": {k: v for k, v in (self.base or {}).items() if k != "num_threads"},
                "family": _family_key(domain),
                "seed": self.seed,
            }
        if stage == "clean":
            parent = self.stage_key(domain, "base") if self.pretrain else self._model_key()
            return {
                "v": TRAIN_CODE_VERSION,
                "stage": "clean",
                "parent": parent,
                "finetune": self._finetune_key(),
                "family": _family_key(domain),
                "seed": self.seed,
            }
        # The sham's key is the contaminated one's but for its name: the same recipe, split and seed decide it (the
        # split decides how many fresh items it trains on, and which items it must not).
        return {
            "v": TRAIN_CODE_VERSION,
            "stage": stage,
            "parent": self.stage_key(domain, "clean"),
            "domain": domain.fingerprint(),
            "split": domain.split.to_dict(),
            "seed": self.seed,
        }

    def stage_dir(self, domain: Domain, stage: str) -> Path:
        """The directory of a stage's model (existing or to be trained)."""
        key = content_hash(self.stage_key(domain, stage))
        root = Path(self.models_dir) / self.name / domain.family
        name = f"{stage}-{domain.name}-{key}" if stage in LEAK_RECIPE_STAGES else f"{stage}-{key}"
        return root / name

    def model_source(self, domain: Domain, which: str) -> str:
        """Where evaluate.py loads the clean or contaminated model from.

        The user's own (``model.clean`` / ``model.contaminated``) when set, else the one train.py simulated.
        """
        own = self.model.own(which)
        if own:
            return str(own)
        path = self.stage_dir(domain, which)
        if not is_done(path):
            raise ContamlabError(self.missing_model_message(domain, which, path))
        return str(path)

    def lineage(self, domain: Domain, which: str) -> list[tuple[str, Path]] | None:
        """The stage directories a simulated ``which`` model descends from, itself last; None for the user's own."""
        if self.model.own(which):
            return None
        stages = self.needed_stages()
        chain = stages[: stages.index(which) + 1] if which != SHAM else [*stages[: stages.index("clean") + 1], SHAM]
        return [(stage, self.stage_dir(domain, stage)) for stage in chain]

    def base_model_source(self, domain: Domain) -> str:
        """M_base: the tiny world's ``base`` stage, or the pretrained model a hub / packaged model fine-tunes from."""
        if self.pretrain:
            path = self.stage_dir(domain, "base")
            if not is_done(path):
                raise ContamlabError(
                    f"no base model of model={self.name} at {path} (strategy=shortcut and audit.target=base need it); "
                    f"run `python train.py model={self.name} domain={domain.name}` first"
                )
            return str(path)
        return self.base_source()

    def missing_model_message(self, domain: Domain, which: str, path: Path) -> str:
        """What to do when evaluate.py finds no trained ``which`` model: one line with commands that work as typed.

        It names the ``model=`` option (``pythia``, not the model's name ``pythia-12b``), what that model needs (the
        hub or a local copy; a GPU at the paper's sizes) and what runs offline on a CPU instead.
        """
        option = self.option or self.name
        head = f"no {which} model for model={option} domain={domain.name} (looked in {path})"
        return self.model.missing_hint(head, which, option, domain)
