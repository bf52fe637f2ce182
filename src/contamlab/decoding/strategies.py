"""Mitigation strategies under the common protocol of "Zero Gap Is Not Restoration" §5.1.

Every strategy yields m readable samples per question, from which r̂ = c / m.

Each strategy is a small object built by Hydra from ``configs/strategy/<name>.yaml``. It says whether it needs the
contaminated model's greedy responses, gives the sampler a per-step logits hook built from them (the pure
functions of :mod:`~contamlab.decoding.railcap` and :mod:`~contamlab.decoding.lne`), and may filter samples after
generation (TED).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, ClassVar

import torch

from contamlab.decoding import lne, railcap, shortcut, ted
from contamlab.decoding.sampler import StepFn
from contamlab.errors import ContamlabError


@dataclass(frozen=True)
class WrapContext:
    """What a strategy may use to replace the model it samples from (:meth:`Strategy.wrap_model`).

    Attributes:
        cfg: The evaluate config (model, domain, paths, sampler, seed).
        domain: The evaluation domain.
        source: Where the model under test was loaded from.
        make_sampler: ``make_sampler(model, max_new_tokens)``: the job's sampler for another model.
        progress: Show progress bars.
    """

    cfg: Any
    domain: Any
    source: str
    make_sampler: Callable[[Any, int], Any]
    progress: bool = True


@dataclass(frozen=True)
class Strategy:
    """Identity: the contaminated model sampled as is."""

    name: str = "identity"

    generates: ClassVar[bool] = True  # All-Zero produces no text at all

    @property
    def greedy_decode(self) -> bool:
        """Decode one greedy response that stands for all m (LNE's original protocol)."""
        return False

    def params(self) -> dict:
        """The strategy's configuration."""
        return asdict(self)

    def sampling_params(self) -> dict:
        """What changes the generated samples (the sample cache key); post-hoc filters share identity's."""
        return self.params()

    def wrap_model(self, model: Any, context: WrapContext) -> Any:
        """The model to sample from, given the loaded one (default: the model itself; shortcut: a patched pair)."""
        return model

    def step_fn(self, greedy_ids: Sequence[Sequence[int]], greedy_entropy: Sequence[float]) -> StepFn | None:
        """The per-step logits hook for a list of questions (None: plain sampling)."""
        return None

    def keep(self, sample_ids: Sequence[Sequence[int]], sample_texts: Sequence[str], greedy_ids: Sequence[int]):
        """Which samples count in the readout (all, except for TED)."""
        return [True] * len(sample_ids)


@dataclass(frozen=True)
class RailCap(Strategy):
    """RailCap (paper §4, Algorithm 1).

    Caps the greedy-trajectory successor of a matching trailing n-gram to the runner-up logit (``ban``: to −∞).
    """

    name: str = "railcap"
    n: int = 4
    mode: str = "cap"
    duplicates: str = "all"

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ContamlabError(f"strategy.n={self.n}: must be >= 1")
        if self.mode not in ("cap", "ban"):
            raise ContamlabError(f"strategy.mode={self.mode!r}: use cap or ban")
        if self.duplicates not in ("all", "first", "last"):
            raise ContamlabError(f"strategy.duplicates={self.duplicates!r}: use all, first or last")

    def step_fn(self, greedy_ids, greedy_entropy):
        """Cap on every row whose last n tokens match its own question's greedy trajectory."""
        table = railcap.build_table(greedy_ids, self.n, self.duplicates)
        return RailCapHook(table, self.mode)


@dataclass(frozen=True)
class RailCapHook:
    """RailCap's per-step hook: the questions' n-gram table and the suppression mode (backends read both)."""

    table: railcap.RailCapTable
    mode: str = "cap"

    def __call__(self, logits, generated, owner):
        """Cap (or ban) the rail successors on every matching row (see :func:`railcap.railcap_step`)."""
        return railcap.railcap_step(logits, generated, owner, self.table, mode=self.mode)


@dataclass(frozen=True)
class LNEBlocking(Strategy):
    """LNE-blocking (Hou et al. 2025).

    Masks the argmax at the first n_block positions, n_block from the greedy pass's mean entropy; then samples at
    τ (``decode=sample``, ours) or decodes greedily (``decode=greedy``, the original).
    """

    name: str = "lne"
    beta: float = 2.0
    t_task: int = 7
    decode: str = "sample"
    rounding: str = "floor"

    def __post_init__(self) -> None:
        if self.decode not in ("sample", "greedy"):
            raise ContamlabError(f"strategy.decode={self.decode!r}: use sample or greedy")
        if self.beta <= 0 or self.t_task < 0:
            raise ContamlabError(f"strategy.beta={self.beta}, t_task={self.t_task}: need beta > 0, t_task >= 0")
        if self.rounding not in ("floor", "round"):
            raise ContamlabError(f"strategy.rounding={self.rounding!r}: use floor or round")

    @property
    def greedy_decode(self) -> bool:
        """``decode=greedy``: the original method's single blocked greedy response."""
        return self.decode == "greedy"

    def n_blocks(self, greedy_entropy: Sequence[float]) -> torch.Tensor:
        """n_block per question ([Q] int64)."""
        return torch.tensor([lne.n_block(e, self.t_task, self.beta, self.rounding) for e in greedy_entropy])

    def step_fn(self, greedy_ids, greedy_entropy):
        """Block the argmax while the row's step is below its question's n_block."""
        return LNEHook(self.n_blocks(greedy_entropy))


@dataclass(frozen=True)
class LNEHook:
    """LNE-blocking's per-step hook: the n_block of every question ([Q] int64)."""

    n_blocks: torch.Tensor

    def __call__(self, logits, generated, owner):
        """Block the argmax while a row's step is below its question's n_block (see :func:`lne.lne_step`)."""
        return lne.lne_step(logits, generated.shape[1], owner, self.n_blocks)


@dataclass(frozen=True)
class TED(Strategy):
    """TED (Dong et al. 2024).

    Drops samples within ``tau`` tokens of the greedy output and exact duplicates; r̂ = c / m over the survivors,
    0 when none survive.
    """

    name: str = "ted"
    tau: int = 2
    dedup: bool = True
    max_tokens: int = 100

    def sampling_params(self) -> dict:
        """TED filters identity's samples, so it reuses them."""
        return {"name": "identity"}

    def keep(self, sample_ids, sample_texts, greedy_ids):
        """TED's survivors."""
        return ted.ted_survivors(sample_ids, greedy_ids, sample_texts, self.tau, self.dedup, self.max_tokens)


@dataclass(frozen=True)
class AllZero(Strategy):
    """The synthetic All-Zero reference: no generation, every readout 0."""

    name: str = "all_zero"
    generates: ClassVar[bool] = False

    def keep(self, sample_ids, sample_texts, greedy_ids):
        """Nothing counts, so r̂ = 0."""
        return [False] * len(sample_ids)


@dataclass(frozen=True)
class ShortcutPatching(Strategy):
    """Shortcut-neuron patching (Zhu et al. 2025).

    Locates the top-K MLP channels by comparative + causal score on a locate set (cached), then samples the model
    with those channels overwritten by the reference model's activations (:mod:`~contamlab.decoding.shortcut`).
    """

    name: str = "shortcut"
    top_k: int = 48
    reference: str = "base"
    # The locate settings, with LocateConfig's defaults (configs/strategy/shortcut.yaml sets the used values).
    locate_questions: int = shortcut.LocateConfig.questions
    locate_seed: int = shortcut.LocateConfig.seed
    block: int = shortcut.LocateConfig.block
    positions: str = shortcut.LocateConfig.positions
    locate_max_new_tokens: int = shortcut.LocateConfig.max_new_tokens
    include_last_layer: bool = shortcut.LocateConfig.include_last_layer
    base_model: str | None = None
    # Set by wrap_model: what identifies the patched channels (ranking and channel-set hashes).
    _located: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.top_k < 0:
            raise ContamlabError(f"strategy.top_k={self.top_k}: must be >= 0")
        if self.reference not in shortcut.REFERENCES:
            raise ContamlabError(f"strategy.reference={self.reference!r}: use {' or '.join(shortcut.REFERENCES)}")
        self.locate_config()  # validates the locate settings

    def locate_config(self) -> shortcut.LocateConfig:
        """The locate settings."""
        return shortcut.LocateConfig(
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
        if not self._located:
            raise RuntimeError("strategy=shortcut: call wrap_model before sampling (it locates the neurons)")
        return {**self.params(), "ranking": self._located["ranking"], "channels": self._located["channels"]}

    def wrap_model(self, model, context):
        """Locate (or load the cached ranking) and return the target paired with its reference."""
        if context.cfg.sampler.get("name") != "hf":
            raise ContamlabError("strategy=shortcut patches activations in the HF decode loop; use sampler=hf")
        pair, info = shortcut.patched_model(
            model, context, self.top_k, self.reference, self.locate_config(), self.base_model
        )
        self._located.update(info)
        return pair
