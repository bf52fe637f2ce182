"""The strategy protocol of "Zero Gap Is Not Restoration" §5.1, with Identity and the All-Zero reference.

Every strategy yields m readable samples per question, from which r̂ = c / m. Each strategy is a small frozen
dataclass built by Hydra from ``configs/strategy/<name>.yaml``. It says whether it needs the contaminated model's
greedy responses, gives the sampler a per-step logits hook built from them (:class:`StepHook`, which also says what
it needs from a vLLM request), may replace the model it samples from (shortcut), and may filter samples after
generation (TED). One strategy, one module: :mod:`~contamlab.decoding.railcap`, :mod:`~contamlab.decoding.lne`,
:mod:`~contamlab.decoding.ted`, :mod:`~contamlab.decoding.shortcut`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import torch

if TYPE_CHECKING:
    from contamlab.data.domain import Domain
    from contamlab.models.store import ModelStore


@dataclass(frozen=True)
class WrapContext:
    """What a strategy may use to replace the model it samples from (:meth:`Strategy.wrap_model`).

    Attributes:
        store: The model store of the run's model config (sources of the clean, contaminated and base models, and
            how to load them).
        domain: The evaluation domain.
        source: Where the model under test was loaded from.
        make_sampler: ``make_sampler(model, max_new_tokens)``: the job's sampler for another model.
        backend: The sampling backend (``hf`` or ``vllm``).
        cache_dir: The job's cache root (``paths.cache_dir``).
        progress: Show progress bars.
    """

    store: ModelStore
    domain: Domain
    source: str
    make_sampler: Callable[[Any, int], Any]
    backend: str = "hf"
    cache_dir: str = "."
    progress: bool = True


class StepHook:
    """Base of a strategy's per-step logits hook, on both backends.

    The HF sampler calls it on every decode step; the vLLM sampler asks it for per-request ``extra_args`` read by
    the logits processors of :mod:`~contamlab.decoding.vllm_processors` (which call the same pure functions).
    """

    def __call__(self, logits: torch.Tensor, generated: torch.Tensor, owner: torch.Tensor) -> torch.Tensor:
        """``logits [rows, V]``, ``generated [rows, t]``, ``owner [rows]`` (each row's question) -> ``[rows, V]``."""
        raise NotImplementedError

    def vllm_args(self, n_questions: int) -> list[dict[str, Any]] | None:
        """One vLLM ``SamplingParams.extra_args`` dict per question; None (the default): the hook runs on HF only."""
        return None

    def to(self, device: torch.device) -> StepHook:
        """The hook with its tables on ``device``: the HF sampler calls it once per decode with the model's device.

        The default returns the hook itself (a hook without tensors).
        """
        return self


@dataclass(frozen=True)
class Strategy:
    """Identity: the contaminated model sampled as is."""

    name: str = "identity"

    generates: ClassVar[bool] = True  # All-Zero produces no text at all
    #: Whether :meth:`wrap_model` replaces the model sampled from (shortcut patching: the contaminated model paired
    #: with its clean twin, patched in the HF decode loop). Such a strategy needs the HF sampler and a clean twin.
    patches_model: ClassVar[bool] = False

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

    def step_fn(self, greedy_ids: Sequence[Sequence[int]], greedy_entropy: Sequence[float]) -> StepHook | None:
        """The per-step logits hook for a list of questions (None: plain sampling)."""
        return None

    def keep(self, sample_ids: Sequence[Sequence[int]], sample_texts: Sequence[str], greedy_ids: Sequence[int]):
        """Which samples count in the readout (all, except for TED)."""
        return [True] * len(sample_ids)


@dataclass(frozen=True)
class AllZero(Strategy):
    """The synthetic All-Zero reference: no generation, every readout 0."""

    name: str = "all_zero"
    generates: ClassVar[bool] = False

    def keep(self, sample_ids, sample_texts, greedy_ids):
        """Nothing counts, so r̂ = 0."""
        return [False] * len(sample_ids)
