"""Step D of shortcut patching (Zhu et al. 2025): the target with its shortcut channels overwritten by a reference.

:class:`PatchedPair` is a drop-in model for :class:`~contamlab.decoding.sampler.HFSampler`: at every forward (prefill
included) the reference runs on the same token ids with its own KV cache, then the target runs with its chosen
channels overwritten by the reference's values at the same positions. :class:`BlockPatchedPair` patches each group of
prompts with its own channel block, which Step B's causal score batches over.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from torch import Tensor, nn
from transformers import DynamicCache

from contamlab.decoding.kv_cache import OwnCacheModel, PromptBoundCache, growing_cache
from contamlab.decoding.shortcut.hooks import Channels, capture_channels, overwrite_channels


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
