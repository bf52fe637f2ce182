"""Shortcut-neuron patching: find the MLP channels a contaminated model's shortcut runs through, then overwrite them.

Implements Zhu et al. 2025, "Establishing Trustworthy LLM Evaluation via Shortcut Neuron Analysis" (ACL 2025,
arXiv 2506.04142; docs/methods/strategies.md). A neuron is one channel ``(l, j)`` of layer l's MLP
intermediate activation, the input of the MLP's output projection (``down_proj`` in Llama-family models,
``dense_4h_to_h`` in GPT-NeoX), for the layers 0..L-2 (the authors drop the final layer).

- Step A, comparative score: ``S_cmp[l, j] = sqrt(mean_t (a_con[l, j, t] - a_un[l, j, t])^2)``, the RMS difference of
  the contaminated model M_con and the uncontaminated M_un teacher-forced on M_con's greedy completions, over the
  completion tokens (``positions=completion``, the authors' code) or the last prompt token (``last_prompt``, the
  paper's formula).
- Step B, causal score: for a target T, ``delta_T[l, b] = acc(T) - acc(T with block b of layer l patched from M_un)``,
  greedy accuracy on the locate set; every channel of the block gets the block's delta. ``S_causal = delta_con -
  delta_base``: reward channels whose replacement lowers M_con's score, penalise those that hurt the base model.
- Step C, ranking: ``final = S_cmp + delta_con - delta_base``, summed unweighted and unnormalised; the shortcut set is
  the top K.
- Step D, patching: :class:`PatchedPair`, a drop-in model for :class:`~contamlab.decoding.sampler.HFSampler`. At every
  forward (prefill included) the reference runs on the same token ids with its own KV cache; then the target runs
  with its chosen channels overwritten by the reference's values at the same positions.

Rankings are cached as safetensors under a content hash of the three models and the locate configuration, so a sweep
over K or over the patch reference locates once.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save as safetensors_bytes
from torch import Tensor, nn
from transformers import DynamicCache

from contamlab.data.prompts import PROMPT_VERSION
from contamlab.decoding.kv_cache import OwnCacheModel, PromptBoundCache, growing_cache
from contamlab.decoding.strategy import Strategy, WrapContext
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_bytes, content_hash
from contamlab.models.padding import pad_batch
from contamlab.models.store import model_identity

if TYPE_CHECKING:
    from contamlab.data.domain import Domain
    from contamlab.data.question import Question

log = logging.getLogger("contamlab")

LOCATE_VERSION = 1  # bump when locating changes its output for the same inputs
POSITIONS = ("completion", "last_prompt")
REFERENCES = ("base", "clean")
# Names of the MLP output projection across architectures (Llama/Mistral/Gemma/Qwen, GPT-NeoX, GPT-2, Phi, Mixtral).
_OUTPUT_PROJECTIONS = ("down_proj", "dense_4h_to_h", "c_proj", "fc2", "w2")

# Patched channels: layer -> sorted channel indices ([k_l] int64); layers without channels are left out.
Channels = dict[int, Tensor]


# -- hook points -------------------------------------------------------------------------------------------------
def mlp_output_projections(model: nn.Module) -> list[nn.Module]:
    """The MLP output projection of every decoder layer, in layer order; its input is the neuron activation.

    The decoder layers are the first ``nn.ModuleList`` whose every element has an ``mlp`` with a known output
    projection, so wrappers (peft, a plain ``nn.Module`` in tests) work unchanged.

    Raises:
        ContamlabError: If the architecture has no recognisable MLP output projection.
    """
    for module in model.modules():
        if isinstance(module, nn.ModuleList) and len(module) > 0:
            projections = [_output_projection(layer) for layer in module]
            if all(p is not None for p in projections):
                return projections
    raise ContamlabError(
        f"strategy=shortcut: no decoder layer with an MLP output projection ({', '.join(_OUTPUT_PROJECTIONS)}) "
        f"found in {type(model).__name__}; this architecture is not supported"
    )


def _output_projection(layer: nn.Module) -> nn.Module | None:
    mlp = getattr(layer, "mlp", None)
    if mlp is None:
        return None
    for name in _OUTPUT_PROJECTIONS:
        if isinstance(getattr(mlp, name, None), nn.Module):
            return getattr(mlp, name)
    return None


def neuron_layers(model: nn.Module, include_last_layer: bool = False) -> int:
    """Number of layers whose channels are neurons: L - 1 (the authors drop the final layer), or L."""
    n = len(mlp_output_projections(model))
    return n if include_last_layer else n - 1


@contextmanager
def capture_channels(model: nn.Module, channels: Channels | None, n_layers: int) -> Iterator[dict[int, Tensor]]:
    """Record the MLP output projection's input of the first ``n_layers`` layers while the context is open.

    Args:
        model: The model to observe (left unchanged).
        channels: Channels to keep per layer; None keeps every channel of every layer below ``n_layers``.
        n_layers: Layers 0..n_layers-1 are hooked.

    Yields:
        ``store[l]``: ``[B, S, k_l]`` activations of layer l from the latest forward pass (``k_l = d_ff`` for all).
    """
    store: dict[int, Tensor] = {}
    handles = []
    for layer, proj in enumerate(mlp_output_projections(model)[:n_layers]):
        if channels is not None and layer not in channels:
            continue
        index = None if channels is None else channels[layer]

        def hook(module, args, layer=layer, index=index):
            acts = args[0]  # [B, S, d_ff]
            store[layer] = acts if index is None else acts.index_select(-1, index.to(acts.device))  # [B, S, k]

        handles.append(proj.register_forward_pre_hook(hook))
    try:
        yield store
    finally:
        for handle in handles:
            handle.remove()


@contextmanager
def overwrite_channels(
    model: nn.Module, channels: Channels, values: dict[int, Tensor], masks: dict[int, Tensor] | None = None
) -> Iterator[None]:
    """Replace the chosen channels of the MLP output projection's input by ``values`` while the context is open.

    Args:
        model: The model to patch (its weights are untouched; the hooks go when the context closes).
        channels: ``channels[l]``: the ``k_l`` channel indices of layer l to overwrite.
        values: ``values[l]``: ``[B, S, k_l]`` replacement activations, read at each forward pass (a dict that a
            capture fills in just before).
        masks: ``masks[l]``: ``[B, k_l]`` bool, which of the chosen channels each row overwrites (Step B's rows
            patched with different blocks); None overwrites all of them in every row.
    """
    projections = mlp_output_projections(model)
    handles = []
    for layer, index in channels.items():

        def hook(module, args, layer=layer, index=index):
            acts = args[0]  # [B, S, d_ff]
            new = values[layer].to(acts.dtype)  # [B, S, k]
            if new.shape[:-1] != acts.shape[:-1]:
                raise ValueError(f"layer {layer}: patch values {tuple(new.shape)} do not fit activations {acts.shape}")
            index = index.to(acts.device)
            if masks is not None:
                new = torch.where(masks[layer][:, None, :], new, acts.index_select(acts.ndim - 1, index))  # [B, S, k]
            return (acts.index_copy(acts.ndim - 1, index, new), *args[1:])  # [B, S, d_ff]

        handles.append(projections[layer].register_forward_pre_hook(hook))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


# -- Step D: the patched pair ------------------------------------------------------------------------------------
class PairCache(DynamicCache):
    """The target's KV cache (this object) plus the reference's (``reference``); batch edits apply to both.

    :class:`~contamlab.decoding.sampler.HFSampler` expands a question's cache to its m rows and drops finished rows
    with ``batch_repeat_interleave`` / ``batch_select_indices``; forwarding them keeps both caches row-aligned.
    """

    def __init__(self, target_config: Any, reference_config: Any) -> None:
        super().__init__(config=target_config)
        self.layers = growing_cache(target_config).layers  # in-place appends (see kv_cache.py)
        self.reference = growing_cache(reference_config)

    def batch_repeat_interleave(self, repeats: int) -> None:
        """Repeat every row ``repeats`` times in both caches."""
        super().batch_repeat_interleave(repeats)
        self.reference.batch_repeat_interleave(repeats)

    def batch_select_indices(self, indices: Tensor) -> None:
        """Keep only the rows ``indices`` in both caches."""
        super().batch_select_indices(indices)
        self.reference.batch_select_indices(indices)

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Reorder the rows of both caches (beam search)."""
        super().reorder_cache(beam_idx)
        self.reference.reorder_cache(beam_idx)

    def crop(self, max_length: int) -> None:
        """Crop both caches to ``max_length`` tokens."""
        super().crop(max_length)
        self.reference.crop(max_length)

    def reset(self) -> None:
        """Empty both caches."""
        super().reset()
        self.reference.reset()


class PatchedPair(OwnCacheModel):
    """Step D: the target with its shortcut channels overwritten by a reference model's activations.

    It has the causal LM's forward signature and returns the target's outputs, so HFSampler's decode loop (batched
    rows, shared-prefix cache, position ids, attention mask, compaction) runs it unchanged; the sampler obtains a
    :class:`PairCache` from :meth:`make_cache`. Generated tokens always come from the target, so the reference is
    teacher-forced on the target's trajectory. With no channel it is the target itself (K = 0 is identity).

    Args:
        target: The model under test.
        reference: The guide whose activations are copied in (same architecture).
        channels: The target's channels to overwrite (:meth:`Ranking.top`).
    """

    def __init__(self, target: nn.Module, reference: nn.Module, channels: Channels) -> None:
        super().__init__()
        self.target = target
        self.reference = reference
        self.channels = {layer: index for layer, index in channels.items() if index.numel() > 0}
        self.config = getattr(target, "config", None)

    def make_cache(self) -> PairCache:
        """An empty KV cache for both models."""
        return PairCache(self.target.config, self.reference.config)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        cache: PairCache | None = None,
        use_cache: bool | None = None,
        **kwargs: Any,
    ):
        """Reference forward (capturing the chosen channels), then the target forward with them overwritten."""
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids, **kwargs}
        if not self.channels:
            return self.target(**inputs, cache=cache, use_cache=use_cache)
        if cache is not None and not isinstance(cache, PairCache):
            raise TypeError("PatchedPair needs the PairCache of make_cache(), one KV cache per model")
        reference_cache = cache.reference if cache is not None else None
        n_layers = max(self.channels) + 1
        with capture_channels(self.reference, self.channels, n_layers) as values:
            self.reference(**inputs, cache=reference_cache, use_cache=use_cache)
        with overwrite_channels(self.target, self.channels, values):
            return self.target(**inputs, cache=cache, use_cache=use_cache)


class PromptCache(PairCache, PromptBoundCache):
    """A :class:`PairCache` that knows which prompt each row answers (``prompt_index``), through every batch edit.

    Prompts come in groups of ``group_size`` that the model treats alike (:class:`BlockPatchedPair`). A cache that
    holds the shared prefix (HFSampler.set_prefix) has one row per group until :meth:`bind_prompts` gives each prompt
    its group's prefix row.

    Args:
        target_config: The target's model config.
        reference_config: The reference's model config.
        group_size: Prompts per group.
    """

    def __init__(self, target_config: Any, reference_config: Any, group_size: int) -> None:
        super().__init__(target_config, reference_config)
        self.group_size = group_size
        self.prompt_index: Tensor | None = None  # [R] index of each row's prompt in the decoded list

    def bind_prompts(self, prompts: Tensor) -> None:
        """Bind the rows to prompts (HFSampler's prefill): row r answers prompt ``prompts[r]``.

        Args:
            prompts: ``[R]`` indices into the decoded prompt list. A cache holding prefix rows keeps, for each prompt,
                a copy of its group's row.

        Raises:
            ValueError: If a prompt's group has no prefix row.
        """
        if self.prompt_index is not None and self.get_seq_length() > 0:
            groups, wanted = self.prompt_index // self.group_size, prompts // self.group_size  # [G], [R]
            match = groups[None, :] == wanted[:, None]  # [R, G]
            if not match.any(dim=1).all():
                raise ValueError("PromptCache: a prompt's group has no prefix row")
            PairCache.batch_select_indices(self, match.int().argmax(dim=1))  # [R] the group's prefix row
        self.prompt_index = prompts

    def batch_repeat_interleave(self, repeats: int) -> None:
        """Repeat every row ``repeats`` times in both caches and in the prompt index."""
        super().batch_repeat_interleave(repeats)
        if self.prompt_index is not None:
            self.prompt_index = self.prompt_index.repeat_interleave(repeats)

    def batch_select_indices(self, indices: Tensor) -> None:
        """Keep only the rows ``indices`` in both caches and in the prompt index."""
        super().batch_select_indices(indices)
        if self.prompt_index is not None:
            self.prompt_index = self.prompt_index[indices.to(self.prompt_index.device)]

    def reorder_cache(self, beam_idx: torch.LongTensor) -> None:
        """Reorder the rows of both caches and of the prompt index."""
        super().reorder_cache(beam_idx)
        if self.prompt_index is not None:
            self.prompt_index = self.prompt_index[beam_idx.to(self.prompt_index.device)]

    def reset(self) -> None:
        """Empty both caches and unbind the rows."""
        super().reset()
        self.prompt_index = None


class BlockPatchedPair(OwnCacheModel):
    """Step B in one decode: the target patched from the reference with another channel set for each group of prompts.

    Prompt ``i`` of the decoded list is patched with ``variants[i // n_prompts]``: the caller repeats the locate
    prompts once per variant, and every variant's greedy decode runs as rows of the same batches instead of a decode of
    its own. Each row computes what :class:`PatchedPair` with its variant's channels computes. A patch changes the
    KV of the prompts' common prefix too, so the prefix is computed once per variant (a forward on an unbound cache
    runs every variant) and each prompt's rows start from their variant's copy (:meth:`PromptCache.bind_prompts`).

    Args:
        target: The model whose channels are patched.
        reference: The patch source (same architecture).
        variants: One channel set per group of prompts (an empty set leaves that group's rows unpatched).
        n_prompts: Prompts per group.
    """

    def __init__(self, target: nn.Module, reference: nn.Module, variants: Sequence[Channels], n_prompts: int) -> None:
        super().__init__()
        if n_prompts < 1 or not variants:
            raise ValueError("BlockPatchedPair needs at least one variant and one prompt per variant")
        self.target = target
        self.reference = reference
        self.n_prompts = n_prompts
        self.variants = [{layer: index.cpu() for layer, index in v.items() if index.numel() > 0} for v in variants]
        layers = sorted({layer for v in self.variants for layer in v})
        # Per layer: the union of the variants' channels (the only ones captured and written), and which of them
        # each variant overwrites.
        self.channels: Channels = {
            layer: torch.cat([v[layer] for v in self.variants if layer in v]).unique() for layer in layers
        }  # layer -> [k_l] sorted
        device = next(target.parameters()).device
        self.tables: dict[int, Tensor] = {
            layer: torch.stack([torch.isin(union, v.get(layer, union[:0])) for v in self.variants]).to(device)
            for layer, union in self.channels.items()
        }  # layer -> [V, k_l] bool, on the model's device
        self.config = getattr(target, "config", None)

    def make_cache(self) -> PromptCache:
        """An empty KV cache for both models that follows each row's prompt."""
        return PromptCache(self.target.config, self.reference.config, self.n_prompts)

    def forward(
        self,
        input_ids: Tensor,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        cache: PromptCache | None = None,
        use_cache: bool | None = None,
        **kwargs: Any,
    ):
        """Reference forward (capturing the variants' channels), then the target with each row's own overwritten."""
        if not isinstance(cache, PromptCache):
            raise TypeError("BlockPatchedPair needs the PromptCache of make_cache(), bound to its prompts by HFSampler")
        if cache.prompt_index is None:  # the shared prefix (HFSampler.set_prefix): one row per variant
            if input_ids.shape[0] != 1 or attention_mask is not None:
                raise ValueError("BlockPatchedPair: an unbound cache takes one unpadded prefix row")
            input_ids = input_ids.expand(len(self.variants), -1)  # [V, P]
            position_ids = None if position_ids is None else position_ids.expand(len(self.variants), -1)
            first = torch.arange(len(self.variants), device=input_ids.device) * self.n_prompts  # [V]
            cache.prompt_index = first  # each variant's first prompt
        inputs = {"input_ids": input_ids, "attention_mask": attention_mask, "position_ids": position_ids, **kwargs}
        if not self.channels:
            return self.target(**inputs, cache=cache, use_cache=use_cache)
        variant = cache.prompt_index // self.n_prompts  # [R]
        with capture_channels(self.reference, self.channels, max(self.channels) + 1) as values:
            self.reference(**inputs, cache=cache.reference, use_cache=use_cache)
        masks = {layer: table[variant.to(table.device)] for layer, table in self.tables.items()}  # [R, k_l]
        with overwrite_channels(self.target, self.channels, values, masks):
            return self.target(**inputs, cache=cache, use_cache=use_cache)


# -- Step A: comparative score -----------------------------------------------------------------------------------
def rms_difference(con: Tensor, un: Tensor) -> Tensor:
    """The comparative score of Step A on collected activations: ``sqrt(mean_t (con - un)^2)``.

    Args:
        con: ``[T, L', d]`` activations of M_con at the T collected tokens.
        un: ``[T, L', d]`` activations of M_un at the same tokens.

    Returns:
        ``[L', d]`` float32 (zeros when T = 0).
    """
    if con.shape[0] == 0:
        return torch.zeros(con.shape[1:], device=con.device)
    return (con.double() - un.double()).pow(2).mean(dim=0).sqrt().float()


def comparative_scores(
    con: nn.Module,
    un: nn.Module,
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    n_layers: int,
    positions: str = "completion",
    batch_size: int = 16,
) -> Tensor:
    """Step A: RMS activation difference of M_con and M_un teacher-forced on prompt + completion.

    Args:
        con: M_con.
        un: M_un (same architecture).
        prompts: Token ids of each locate prompt.
        completions: M_con's greedy completion of each prompt (token ids).
        n_layers: Neuron layers (0..n_layers-1).
        positions: ``completion`` (the completion tokens, the authors' code) or ``last_prompt`` (the last prompt
            token, the paper's formula).
        batch_size: Sequences per forward pass (right-padded; padding is never collected).

    Returns:
        ``S_cmp``: ``[n_layers, d_ff]`` float32, equal to :func:`rms_difference` over all collected tokens.
    """
    if positions not in POSITIONS:
        raise ContamlabError(f"strategy.positions={positions!r}: use {' or '.join(POSITIONS)}")
    device = next(con.parameters()).device
    sq_sum: Tensor | None = None  # [L', d] float64
    count = 0
    for start in range(0, len(prompts), batch_size):
        seqs = [list(p) + list(c) for p, c in zip(prompts[start : start + batch_size], completions[start:])]
        ids, mask = pad_batch(seqs, 0, device=device)  # [B, S] each
        width = ids.shape[1]
        collect = torch.zeros((len(seqs), width), dtype=torch.bool, device="cpu")  # [B, S] filled on the host

        for row, (seq, prompt) in enumerate(zip(seqs, prompts[start:])):
            if positions == "completion":
                collect[row, len(prompt) : len(seq)] = True
            else:
                collect[row, len(prompt) - 1] = True
        collect = collect.to(device)  # tokens that enter the score
        pos = torch.arange(width, device=device).expand(len(seqs), -1)  # [B, S]
        acts = []
        for model in (con, un):
            with torch.inference_mode(), capture_channels(model, None, n_layers) as store:
                model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False)
            per_layer = [store[layer][collect] for layer in range(n_layers)]  # L' x [T, d]
            acts.append(torch.stack(per_layer, dim=1))  # [T, L', d]
        diff = acts[0].double() - acts[1].double()  # [T, L', d]
        batch_sq = diff.pow(2).sum(dim=0).cpu()  # [L', d]
        sq_sum = batch_sq if sq_sum is None else sq_sum + batch_sq
        count += int(collect.sum())
    if sq_sum is None or count == 0:
        raise ContamlabError("strategy=shortcut: no token to compare in Step A (empty locate set or completions)")
    return (sq_sum / count).sqrt().float()


# -- Step B: causal score ----------------------------------------------------------------------------------------
def block_channels(layer: int, index: int, size: int, d_ff: int) -> Channels:
    """Channels of block ``index`` of one layer: ``size`` consecutive channels (the last block may be shorter)."""
    # channel indices stay on the host: they build tables and key caches; the tables go to the model's device
    return {layer: torch.arange(index * size, min((index + 1) * size, d_ff), device="cpu")}


Accuracies = Callable[[nn.Module, nn.Module, Sequence[Channels]], list[float]]


def causal_deltas(
    target: nn.Module,
    source: nn.Module,
    accuracies: Accuracies,
    n_layers: int,
    d_ff: int,
    block: int,
    progress: bool = False,
    label: str = "",
    per_decode: int = 1,
) -> Tensor:
    """Step B for one target: accuracy drop when each block of ``block`` channels is patched from ``source``.

    Args:
        target: The model whose channels are patched (M_con or M_base).
        source: The patch source (M_un).
        accuracies: ``accuracies(target, source, channel_sets)``: greedy accuracy on the locate set of the target
            patched with each channel set (an empty set: the target itself), e.g. :func:`greedy_accuracy`.
        n_layers: Neuron layers.
        d_ff: Channels per layer.
        block: Consecutive channels patched together (the authors: 512).
        progress: Show a progress bar.
        label: Name of the target in the progress bar.
        per_decode: Channel sets handed to ``accuracies`` at once (rows of the same decode batches).

    Returns:
        ``delta``: ``[n_layers, d_ff]``, ``acc(target) - acc(patched target)``, equal within each block.
    """
    from tqdm.auto import tqdm

    if block < 1:
        raise ContamlabError(f"strategy.block={block}: must be >= 1")
    blocks = [block_channels(layer, b, block, d_ff) for layer in range(n_layers) for b in range(-(-d_ff // block))]
    variants: list[Channels] = [{}, *blocks]  # the unpatched target first
    accs: list[float] = []
    bar = tqdm(total=len(variants), desc=f"shortcut causal[{label}]", unit="block", disable=not progress)
    per_decode = max(1, per_decode)
    for start in range(0, len(variants), per_decode):
        group = variants[start : start + per_decode]
        got = accuracies(target, source, group)
        if len(got) != len(group):
            raise ValueError(f"shortcut: {len(got)} accuracies for {len(group)} channel sets")
        accs += got
        bar.update(len(group))
    bar.close()
    delta = torch.zeros(n_layers, d_ff, device="cpu")  # [L', d] scores on the host, as the ranking cache stores them
    for channels, acc in zip(blocks, accs[1:]):
        ((layer, index),) = channels.items()
        delta[layer, index] = accs[0] - acc
    return delta


# -- Step C: ranking and its cache -------------------------------------------------------------------------------
@dataclass
class Ranking:
    """The scores of Steps A–B per neuron and their unweighted sum (Step C).

    Attributes:
        comparative: ``[L', d]`` S_cmp.
        delta_con: ``[L', d]`` Step B accuracy drop of M_con (rewarded).
        delta_base: ``[L', d]`` Step B accuracy drop of M_base (penalised).
    """

    comparative: Tensor
    delta_con: Tensor
    delta_base: Tensor

    def __post_init__(self) -> None:
        shapes = {tuple(t.shape) for t in (self.comparative, self.delta_con, self.delta_base)}
        if len(shapes) != 1 or self.comparative.ndim != 2:
            raise ValueError(f"ranking scores must share one [layers, channels] shape, got {sorted(shapes)}")

    @property
    def final(self) -> Tensor:
        """``[L', d]`` final score: S_cmp + delta_con - delta_base (no weights, no normalisation)."""
        return self.comparative + self.delta_con - self.delta_base

    @property
    def n_neurons(self) -> int:
        """Number of ranked neurons, L' * d."""
        return self.comparative.numel()

    def order(self) -> Tensor:
        """``[L' * d]`` flat neuron indices ``l * d + j`` by descending final score (ties: lower index first)."""
        return torch.sort(self.final.flatten(), descending=True, stable=True).indices

    def top(self, k: int) -> Channels:
        """The shortcut set: the top ``k`` neurons as sorted channel indices per layer."""
        if not 0 <= k <= self.n_neurons:
            raise ContamlabError(
                f"strategy.top_k={k}: must be in [0, {self.n_neurons}] (the model's {self.comparative.shape[0]} "
                f"neuron layers x {self.comparative.shape[1]} channels)"
            )
        chosen = self.order()[:k]  # [k]
        layers, cols = chosen // self.comparative.shape[1], chosen % self.comparative.shape[1]  # [k], [k]
        return {int(layer): cols[layers == layer].sort().values for layer in layers.unique()}

    def save(self, path: str | Path, key: dict) -> None:
        """Write the scores and their key as safetensors, atomically (temp file + rename)."""
        tensors = {"comparative": self.comparative, "delta_con": self.delta_con, "delta_base": self.delta_base}
        blob = safetensors_bytes({k: v.float().contiguous() for k, v in tensors.items()}, {"key": json.dumps(key)})
        atomic_write_bytes(path, blob)

    @classmethod
    def load(cls, path: str | Path, key: dict) -> Ranking | None:
        """The ranking stored at ``path`` for ``key``; None when missing, unreadable, corrupt or of another key."""
        path = Path(path)
        if not path.is_file():
            return None
        try:
            with safe_open(str(path), framework="pt") as handle:
                stored_key = json.loads((handle.metadata() or {}).get("key", "null"))
                tensors = {name: handle.get_tensor(name) for name in ("comparative", "delta_con", "delta_base")}
            ranking = cls(**tensors)
        except (OSError, ValueError, SafetensorError) as err:
            log.warning("shortcut: ranking cache %s is unreadable (%s); locating again", path, err)
            return None
        if stored_key != json.loads(json.dumps(key)):
            log.warning("shortcut: ranking cache %s belongs to another configuration; locating again", path)
            return None
        if not all(torch.isfinite(t).all() for t in tensors.values()):
            log.warning("shortcut: ranking cache %s holds non-finite scores; locating again", path)
            return None
        return ranking


def cached_ranking(path: str | Path, key: dict, compute: Callable[[], Ranking]) -> Ranking:
    """The ranking cached at ``path`` under ``key``, or ``compute()`` written there (a corrupt file is recomputed)."""
    ranking = Ranking.load(path, key)
    if ranking is None:
        ranking = compute()
        ranking.save(path, key)
    return ranking


# -- locating on the evaluation world ----------------------------------------------------------------------------
@dataclass(frozen=True)
class LocateConfig:
    """The locate budget and choices (see ``configs/strategy/shortcut.yaml``)."""

    questions: int = 100
    seed: int = 42
    block: int = 128  # as configs/strategy/shortcut.yaml (4 blocks per tiny-model layer)
    positions: str = "completion"
    max_new_tokens: int = 128
    include_last_layer: bool = False

    def __post_init__(self) -> None:
        if self.questions < 1:
            raise ContamlabError(f"strategy.locate_questions={self.questions}: must be >= 1")
        if self.block < 1:
            raise ContamlabError(f"strategy.block={self.block}: must be >= 1")
        if self.positions not in POSITIONS:
            raise ContamlabError(f"strategy.positions={self.positions!r}: use {' or '.join(POSITIONS)}")
        if self.max_new_tokens < 1:
            raise ContamlabError(f"strategy.locate_max_new_tokens={self.max_new_tokens}: must be >= 1")


def locate_set(questions: Sequence[Question], is_leaked: Callable[[str], bool], n: int, seed: int) -> list[Question]:
    """The locate questions: a seeded random half of the test set, stratified by leaked / unleaked, at most ``n``.

    The authors locate on a seeded half of GSM8K's test set (seed 42). Our test set is split leaked / unleaked, so
    each part contributes the same share (half, or less to fit the budget ``n``): Step A compares the models where
    M_con memorised and where it did not, in the test set's proportions, and Step B's accuracies see both. The
    located neurons are then patched on the whole test set, as in the paper (locating and evaluating overlap).

    Returns:
        The chosen questions in test-set order.
    """
    share = min(0.5, n / len(questions)) if questions else 0.0
    rng = random.Random(seed)
    chosen: set[str] = set()
    for leaked in (True, False):
        ids = [q.id for q in questions if is_leaked(q.id) == leaked]
        rng.shuffle(ids)
        chosen.update(ids[: round(len(ids) * share)])
    return [q for q in questions if q.id in chosen][:n]


def greedy_accuracy(make_sampler: Callable[[nn.Module], Any], domain: Domain, questions, prompt_ids) -> Accuracies:
    """Step B's accuracies: greedy decoding of the locate prompts, checked by the domain, for several channel sets.

    The prompts are repeated once per channel set and decoded as rows of the same batches by a
    :class:`BlockPatchedPair` (one decode, where patching block by block took one decode per block).
    """

    def accuracies(target: nn.Module, source: nn.Module, variants: Sequence[Channels]) -> list[float]:
        sampler = make_sampler(BlockPatchedPair(target, source, variants, len(prompt_ids)))
        repeated = [ids for _ in variants for ids in prompt_ids]  # variant-major: prompt i has variant i // Q
        sampler.set_prefix(repeated)
        responses = sampler.decode(repeated, m=1, temperature=1.0, seed=0, greedy=True)
        texts = [sampler.tokenizer.decode(r[0], skip_special_tokens=True) for r in responses]
        n = len(questions)
        correct = [domain.is_correct(text, questions[i % n]) for i, text in enumerate(texts)]
        return [sum(correct[v * n : (v + 1) * n]) / n for v in range(len(variants))]

    return accuracies


def locate(
    con: nn.Module,
    un: nn.Module,
    base: nn.Module,
    make_sampler: Callable[[nn.Module], Any],
    domain: Domain,
    questions: Sequence[Question],
    config: LocateConfig,
    progress: bool = False,
) -> Ranking:
    """Steps A–B on the locate questions (Step C is :meth:`Ranking.final`).

    Args:
        con: M_con, the contaminated model.
        un: M_un, the uncontaminated model (Step B's patch source).
        base: M_base, the pretrained base.
        make_sampler: Builds an HFSampler with the locate token budget for a model (or a :class:`BlockPatchedPair`).
        domain: Prompts and answer checker.
        questions: The locate set (:func:`locate_set`).
        config: Block size, positions, budget.
        progress: Show progress bars.
    """
    n_layers = neuron_layers(con, config.include_last_layer)
    if n_layers < 1:
        raise ContamlabError(
            "strategy=shortcut: the model has one layer and the final layer is excluded; set "
            "strategy.include_last_layer=true to patch it"
        )
    started = time.perf_counter()
    sampler = make_sampler(con)
    prompt_ids = sampler.encode([domain.prompt(q) for q in questions])
    sampler.set_prefix(prompt_ids)
    completions = [r[0] for r in sampler.decode(prompt_ids, m=1, temperature=1.0, seed=0, greedy=True)]
    comparative = comparative_scores(con, un, prompt_ids, completions, n_layers, config.positions)
    t_a = time.perf_counter() - started
    accuracies = greedy_accuracy(make_sampler, domain, questions, prompt_ids)
    d_ff = comparative.shape[1]
    per_decode = max(1, getattr(sampler, "batch_rows", 0) // len(questions))  # blocks that fill one decode batch
    delta_con, delta_base = (
        causal_deltas(target, un, accuracies, n_layers, d_ff, config.block, progress, label, per_decode)
        for target, label in ((con, "contaminated"), (base, "base"))
    )
    log.info(
        "shortcut: located %d neurons on %d questions in %.1f s (Step A %.1f s)",
        comparative.numel(),
        len(questions),
        time.perf_counter() - started,
        t_a,
    )
    return Ranking(comparative, delta_con, delta_base)


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
