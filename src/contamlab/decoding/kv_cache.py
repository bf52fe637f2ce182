"""A KV cache that grows by doubling: a decode step writes one position instead of copying the whole cache.

transformers' ``DynamicLayer`` appends with ``torch.cat``, which copies every cached key and value at every step:
O(T) memory traffic per token, O(T²) per response. With hundreds of rows (questions × samples) and a small model
this copy is the sampler's largest cost (measured on the tiny model: ``aten::cat`` 47% of decode time). Here each
layer keeps its keys / values in a buffer with spare capacity along the sequence axis and returns views of the
filled part; the values, and so the attention results, are the same as with ``torch.cat``.
"""

from __future__ import annotations

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer

MIN_CAPACITY = 64  # positions allocated at least, so short prompts do not reallocate at every early step


class OwnCacheModel(torch.nn.Module):
    """A causal LM that brings its own KV cache kind, which the HF sampler then uses (and no shared-KV attention).

    Shortcut patching's pairs are such models: one cache per model of the pair, kept row-aligned.
    """

    def make_cache(self) -> DynamicCache:
        """An empty KV cache of the model's own kind."""
        raise NotImplementedError


class PromptBoundCache(DynamicCache):
    """A KV cache whose rows answer their prompts differently, bound to them when the sampler prefills.

    Shortcut's Step B patches each group of prompts its own way; its cache must know each row's prompt.
    """

    def bind_prompts(self, prompts: torch.Tensor) -> None:
        """Bind the rows to prompts: row r answers prompt ``prompts[r]`` (``[R]`` indices into the decoded list)."""
        raise NotImplementedError


class GrowingLayer(DynamicLayer):
    """``DynamicLayer`` with amortised O(1) appends (capacity doubles when full).

    Args:
        reserve: Positions allocated at the first update at least (a decode that knows its length allocates once).
    """

    def __init__(self, reserve: int = MIN_CAPACITY) -> None:
        super().__init__()
        self.reserve = reserve
        self.peak_bytes = 0  # the largest key + value buffers this layer has allocated

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        """Start empty; the buffers are allocated on the first update."""
        super().lazy_initialization(key_states, value_states)
        self._k: torch.Tensor | None = None  # [B, H, capacity, D]
        self._v: torch.Tensor | None = None
        self._n = 0

    def _views(self) -> None:
        self.keys = self._k[:, :, : self._n]  # [B, H, n, D] view of the filled part
        self.values = self._v[:, :, : self._n]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        """Write the new positions into the buffer (growing it when full); return keys and values so far."""
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        need = self._n + key_states.shape[-2]
        if self._k is None or need > self._k.shape[-2]:
            capacity = max(need, 2 * (0 if self._k is None else self._k.shape[-2]), self.reserve)
            k = key_states.new_empty((*key_states.shape[:2], capacity, key_states.shape[-1]))  # [B, H, cap, D]
            v = value_states.new_empty((*value_states.shape[:2], capacity, value_states.shape[-1]))
            if self._n:
                k[:, :, : self._n] = self._k[:, :, : self._n]
                v[:, :, : self._n] = self._v[:, :, : self._n]
            self._k, self._v = k, v
            self.peak_bytes = max(self.peak_bytes, 2 * k.numel() * k.element_size())
        self._k[:, :, self._n : need] = key_states
        self._v[:, :, self._n : need] = value_states
        self._n = need
        self._views()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        """Filled positions."""
        return self._n if self.is_initialized else 0

    def reset(self) -> None:
        """Drop the buffers."""
        self._k = self._v = None
        self._n = 0
        super().reset()

    def crop(self, tokens_to_remove: int) -> None:
        """Forget the last ``-tokens_to_remove`` positions (transformers' convention: a negative count)."""
        if tokens_to_remove > 0:
            raise ValueError(f"crop({tokens_to_remove}): pass a negative number of tokens to remove")
        if tokens_to_remove and self.is_initialized and self._k is not None:
            self._n = max(self._n + tokens_to_remove, 0)
            self._views()

    def batch_repeat_interleave(self, repeats: int) -> None:
        """Repeat every row ``repeats`` times (the filled part only)."""
        if self.get_seq_length() > 0:
            self._k = self._k[:, :, : self._n].repeat_interleave(repeats, dim=0)
            self._v = self._v[:, :, : self._n].repeat_interleave(repeats, dim=0)
            self.peak_bytes = max(self.peak_bytes, 2 * self._k.numel() * self._k.element_size())
            self._views()

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        """Keep the rows ``indices`` (spare capacity kept, so the next steps still append in place).

        The kept rows' filled positions move to the front of the same buffers: a copy of the filled part only, not of
        the spare capacity (which a decode that reserves its whole length makes the larger part early on).
        """
        if self.get_seq_length() > 0:
            rows = indices.numel()
            if rows > self._k.shape[0]:  # more rows than before (repeated indices): a new buffer
                self._k, self._v = self._k[indices], self._v[indices]
                self._views()
                return
            for buffer in (self._k, self._v):
                buffer[:rows, :, : self._n] = buffer[indices, :, : self._n]  # [R', H, n, D]; the right side is a copy
            self._k, self._v = self._k[:rows], self._v[:rows]
            self._views()


def growing_cache(config, reserve: int = MIN_CAPACITY) -> DynamicCache:
    """A ``DynamicCache`` for ``config`` whose full-attention layers are :class:`GrowingLayer` (others unchanged)."""
    cache = DynamicCache(config=config)
    cache.layers = [GrowingLayer(reserve) if type(layer) is DynamicLayer else layer for layer in cache.layers]
    return cache


def cache_bytes(cache: DynamicCache | None) -> int:
    """The most bytes a cache has held for keys and values, spare capacity included (what a decode batch allocates)."""
    if cache is None:
        return 0
    total = 0
    for layer in cache.layers:
        if isinstance(layer, GrowingLayer):
            total += layer.peak_bytes
        else:
            tensors = (getattr(layer, "keys", None), getattr(layer, "values", None))
            total += sum(t.numel() * t.element_size() for t in tensors if isinstance(t, torch.Tensor))
    return total
