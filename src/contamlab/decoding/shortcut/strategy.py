"""The shortcut-patching strategy (Zhu et al. 2025): locate the channels once (cached), then sample the patched pair."""

from __future__ import annotations

import logging
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar

from torch import nn

from contamlab.data.prompts import PROMPT_VERSION
from contamlab.decoding.shortcut.hooks import Channels
from contamlab.decoding.shortcut.locate import LOCATE_VERSION, LocateConfig, locate, locate_set
from contamlab.decoding.shortcut.pair import PatchedPair
from contamlab.decoding.shortcut.ranking import cached_ranking
from contamlab.decoding.strategy import Strategy, WrapContext
from contamlab.errors import ContamlabError
from contamlab.io import content_hash
from contamlab.models.store import model_identity

log = logging.getLogger("contamlab")


REFERENCES = ("base", "clean")


def channels_hash(channels: Channels) -> str:
    """A short content hash of a channel set (part of the sample cache key)."""
    return content_hash({str(layer): index.tolist() for layer, index in sorted(channels.items())})


def patched_model(
    model: nn.Module,
    context: WrapContext,
    top_k: int,
    reference: str,
    config: LocateConfig,
    base_model: str | None = None,
) -> tuple[PatchedPair, dict]:
    """Locate (or load the cached ranking), then pair ``model`` with the reference on its top-K channels.

    M_con is the simulated (or the user's) contaminated model, M_un the clean one and M_base ``base_model`` or, by
    default, :meth:`~contamlab.models.store.ModelStore.base_model_source`; the reference of Step D is M_base
    (``reference=base``, the authors' scripts) or M_un (``clean``).

    Returns:
        The :class:`PatchedPair` and what identifies its samples: ``ranking`` (the locate key's hash), ``channels``
        (the patched set's hash), ``locate_s`` (wall time, near zero for a cached ranking).
    """
    if reference not in REFERENCES:
        raise ContamlabError(f"strategy.reference={reference!r}: use {' or '.join(REFERENCES)}")
    started = time.perf_counter()
    store, domain = context.store, context.domain
    sources = {
        "contaminated": store.model_source(domain, "contaminated"),
        "clean": store.model_source(domain, "clean"),
        "base": base_model or store.base_model_source(domain),
    }
    revision = store.revision
    questions = locate_set(domain.test, domain.split.is_leaked, config.questions, config.seed)
    key = {
        "v": LOCATE_VERSION,
        "models": {name: model_identity(src, revision, content=True) for name, src in sources.items()},
        "dtype": str(store.dtype),
        "domain": domain.eval_fingerprint(),
        "prompt": PROMPT_VERSION,
        "questions": [q.id for q in questions],
        "locate": asdict(config),
    }
    key_hash = content_hash(key)
    loaded: dict[str, nn.Module] = {}

    def load(name: str) -> nn.Module:
        if name not in loaded:
            if sources[name] == context.source:
                loaded[name] = model
            else:
                loaded[name] = store.load(sources[name])
        return loaded[name]

    def make_sampler(m: nn.Module):
        return context.make_sampler(m, config.max_new_tokens)

    path = Path(context.cache_dir) / "shortcut" / f"{key_hash}.safetensors"
    ranking = cached_ranking(
        path,
        key,
        lambda: locate(
            load("contaminated"), load("clean"), load("base"), make_sampler, domain, questions, config, context.progress
        ),
    )
    channels = ranking.top(top_k)
    pair = PatchedPair(model, load(reference), channels)
    info = {"ranking": key_hash, "channels": channels_hash(channels), "locate_s": time.perf_counter() - started}
    log.info("shortcut: patching %d neurons from the %s model (ranking %s)", top_k, reference, path)
    return pair, info


@dataclass
class LocatedChannels:
    """What identifies the channels a :class:`ShortcutPatching` patches, known once its ``wrap_model`` has run.

    The strategy is frozen: its fields are its configuration, compared, hashed and recorded. Locating is the one
    thing a run adds to it, so that result lives in this small mutable record, held by the strategy outside
    comparison, hashing and ``repr``.

    Attributes:
        ranking: The locate key's hash (None until located).
        channels: The patched channel set's hash (None until located).
        locate_s: Wall time of locating (near zero for a cached ranking; None until located).
    """

    ranking: str | None = None
    channels: str | None = None
    locate_s: float | None = None

    @property
    def done(self) -> bool:
        """Whether the channels have been located."""
        return self.ranking is not None

    def record(self, ranking: str, channels: str, locate_s: float | None = None) -> None:
        """Keep what :func:`patched_model` reports about the channels it located."""
        self.ranking, self.channels, self.locate_s = ranking, channels, locate_s


@dataclass(frozen=True)
class ShortcutPatching(Strategy):
    """Shortcut-neuron patching (Zhu et al. 2025).

    Locates the top-K MLP channels by comparative + causal score on a locate set (cached), then samples the model
    with those channels overwritten by the reference model's activations (:func:`patched_model`).
    """

    patches_model: ClassVar[bool] = True

    name: str = "shortcut"
    top_k: int = 48
    reference: str = "base"
    # The locate settings, with LocateConfig's defaults (configs/strategy/shortcut.yaml sets the used values).
    locate_questions: int = LocateConfig.questions
    locate_seed: int = LocateConfig.seed
    block: int = LocateConfig.block
    positions: str = LocateConfig.positions
    locate_max_new_tokens: int = LocateConfig.max_new_tokens
    include_last_layer: bool = LocateConfig.include_last_layer
    base_model: str | None = None
    # Set by wrap_model: what identifies the patched channels (ranking and channel-set hashes).
    _located: LocatedChannels = field(default_factory=LocatedChannels, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.top_k < 0:
            raise ContamlabError(f"strategy.top_k={self.top_k}: must be >= 0")
        if self.reference not in REFERENCES:
            raise ContamlabError(f"strategy.reference={self.reference!r}: use {' or '.join(REFERENCES)}")
        self.locate_config()  # validates the locate settings

    def locate_config(self) -> LocateConfig:
        """The locate settings."""
        return LocateConfig(
            self.locate_questions,
            self.locate_seed,
            self.block,
            self.positions,
            self.locate_max_new_tokens,
            self.include_last_layer,
        )

    def params(self) -> dict:
        """The strategy's configuration."""
        return {k: v for k, v in asdict(self).items() if not k.startswith("_")}

    def sampling_params(self) -> dict:
        """K, the reference, and the hashes of the ranking and of the patched channels (known after wrap_model)."""
        if not self._located.done:
            raise RuntimeError("strategy=shortcut: call wrap_model before sampling (it locates the neurons)")
        return {**self.params(), "ranking": self._located.ranking, "channels": self._located.channels}

    def wrap_model(self, model, context):
        """Locate (or load the cached ranking) and return the target paired with its reference."""
        if context.backend != "hf":
            raise ContamlabError("strategy=shortcut patches activations in the HF decode loop; use sampler=hf")
        pair, info = patched_model(model, context, self.top_k, self.reference, self.locate_config(), self.base_model)
        self._located.record(**info)
        return pair
