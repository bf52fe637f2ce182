"""Attention over KV caches shared by many rows: one copy of a prompt's KV for all rows that read it.

One copy of the few-shot prefix serves every row of a batch, one copy of each question's own tokens its m sample
rows. The copying sampler (``HFSampler(shared_kv=False)``) expands the prefix's and each question's KV into every
row, so a batch of R rows holds R copies of the 8-shot prompt and reads all of them at every decode step (SmolLM2
with the 8-shot GSM8K prompt: 730 shared tokens, 46 KB of KV per token and row). Here the model's attention layers
call :func:`shared_kv_attention`, which scores the queries of each row against three key sets, softmax over their union:

- the **prefix** (``[1, Hkv, P, D]`` per layer): all rows' queries form one matrix, multiplied by the one copy;
- the **question blocks** (``[Qn, Hkv, W, D]``, left-padded): the rows of question j (contiguous in the batch)
  against block j;
- the **rows' own cache** (``[R, Hkv, S, D]``): what the model's ``cache`` argument holds, as usual.

Only the attention layers see the difference; the result equals attention over the concatenated keys up to float
rounding (a test compares it with the copying sampler), so samples can differ in rare near-ties and the sample cache
key names the mode.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass, field

import torch
from transformers import AttentionInterface, DynamicCache

ATTENTION = "contamlab_shared_kv"


@dataclass
class SharedKV:
    """What a decode call's rows share; passed to the model as the ``shared_kv`` keyword of every forward call.

    Attributes:
        prefix: Per layer ``[1, Hkv, P, D]``: the shared prefix, visible to every row (or None).
        blocks: Per layer ``[Qn, Hkv, W, D]``: each question's own tokens (or None, as while they are prefilled).
        block_mask: ``[Qn, W]`` bool: the real tokens of each question block (left padding is False).
        owner: ``[R]``: the question block of each row, non-decreasing (rows of a question are contiguous).
        row_mask: ``[R, S]`` bool: valid keys of the rows' own cache (None: all), for the padded question prefill.
    """

    prefix: DynamicCache | None
    blocks: DynamicCache | None = None
    block_mask: torch.Tensor | None = None
    owner: torch.Tensor | None = None
    row_mask: torch.Tensor | None = None
    _groups: list[tuple[int, int, int]] = field(default_factory=list, repr=False)

    def __post_init__(self) -> None:
        if self.owner is not None:
            self.set_owner(self.owner)

    def set_owner(self, owner: torch.Tensor) -> None:
        """Set the rows' question blocks (after finished rows leave the batch); rows must stay grouped by block."""
        owner = owner.cpu()
        if owner.numel() > 1 and bool((owner[1:] < owner[:-1]).any()):
            raise ValueError("SharedKV.owner must be non-decreasing: the rows of a question are contiguous")
        self.owner = owner
        blocks, counts = torch.unique_consecutive(owner, return_counts=True)
        stops = counts.cumsum(0).tolist()
        self._groups = [(int(b), stop - int(c), stop) for b, c, stop in zip(blocks, counts, stops)]


def _against_one(queries: torch.Tensor, keys: torch.Tensor) -> torch.Tensor:
    """Scores of n rows' queries against one shared key set, without expanding the keys.

    Args:
        queries: ``[n, Hkv, G, D]`` (G = query heads per KV head × query length).
        keys: ``[Hkv, L, D]``.

    Returns:
        ``[n, Hkv, G, L]``.
    """
    n, hkv, g, d = queries.shape
    flat = queries.transpose(0, 1).reshape(hkv, n * g, d)  # [Hkv, n*G, D]: all rows as one query matrix
    return torch.matmul(flat, keys.transpose(1, 2)).view(hkv, n, g, -1).transpose(0, 1)  # [n, Hkv, G, L]


def _mix_one(probs: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
    """``probs [n, Hkv, G, L]`` applied to one shared ``values [Hkv, L, D]`` -> ``[n, Hkv, G, D]``."""
    n, hkv, g, length = probs.shape
    flat = probs.transpose(0, 1).reshape(hkv, n * g, length)  # [Hkv, n*G, L]
    return torch.matmul(flat, values).view(hkv, n, g, -1).transpose(0, 1)  # [n, Hkv, G, D]


def shared_kv_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    scaling: float | None = None,
    dropout: float = 0.0,
    shared_kv: SharedKV | None = None,
    **kwargs,
) -> tuple[torch.Tensor, None]:
    """Softmax attention over prefix, question-block and row keys (transformers' attention-function interface).

    Args:
        module: The attention layer (``layer_idx``; ``num_key_value_groups`` for grouped-query attention).
        query: ``[R, H, q, D]``.
        key: ``[R, Hkv, S, D]``: the rows' own keys, the ``q`` new ones last.
        value: ``[R, Hkv, S, D]``.
        attention_mask: Unused (transformers builds none for this implementation; the masks are in ``shared_kv``).
        scaling: Score scale (default ``D ** -0.5``).
        dropout: Must be 0 (inference only).
        shared_kv: The shared caches and masks of this batch.
        **kwargs: The model's other attention keywords (unused).

    Returns:
        ``([R, q, H, D], None)``.
    """
    if shared_kv is None:
        raise RuntimeError(f"attention {ATTENTION!r} needs the shared_kv keyword on every forward call")
    if dropout:
        raise ValueError("shared-KV attention is for inference (dropout must be 0)")
    rows, heads, q, d = query.shape
    hkv, s = key.shape[1], key.shape[2]
    group = heads // hkv
    scale = scaling if scaling is not None else d**-0.5
    qg = query.reshape(rows, hkv, group * q, d)  # [R, Hkv, g*q, D]: a KV head's query heads adjacent (repeat_kv order)
    layer = module.layer_idx
    scores, masks = [], []
    prefix = shared_kv.prefix.layers[layer] if shared_kv.prefix is not None else None
    if prefix is not None and prefix.get_seq_length():
        scores.append(_against_one(qg, prefix.keys[0]))  # [R, Hkv, gq, P]
        masks.append(torch.ones((rows, 1, 1, 1, prefix.get_seq_length()), dtype=torch.bool, device=query.device))
    blocks = shared_kv.blocks.layers[layer] if shared_kv.blocks is not None else None
    if blocks is not None:
        width = blocks.get_seq_length()
        block_scores = query.new_empty((rows, hkv, group * q, width))  # [R, Hkv, gq, W]
        for b, start, stop in shared_kv._groups:
            block_scores[start:stop] = _against_one(qg[start:stop], blocks.keys[b])
        scores.append(block_scores)
        masks.append(shared_kv.block_mask[shared_kv.owner][:, None, None, None, :])  # [R, 1, 1, 1, W]
    scores.append(torch.matmul(qg, key.transpose(-1, -2)))  # [R, Hkv, gq, S]
    # Causal among the q new keys; a row's padding keys hidden, but every query sees itself (left-padded rows with
    # no prefix would otherwise have no key at all).
    keys_at = torch.arange(s, device=query.device)  # [S]
    queries_at = torch.arange(s - q, s, device=query.device)  # [q]
    seen = keys_at[None, :] <= queries_at[:, None]  # [q, S]
    own = seen & shared_kv.row_mask[:, None, :] if shared_kv.row_mask is not None else seen[None]  # [R or 1, q, S]
    own = own | (keys_at[None, :] == queries_at[:, None])
    masks.append(own.expand(rows, q, s)[:, None, None])  # [R, 1, 1, q, S]
    logits = torch.cat(scores, dim=-1).view(rows, hkv, group, q, -1) * scale  # [R, Hkv, g, q, L]
    mask = torch.cat([m.expand(rows, 1, 1, q, m.shape[-1]) for m in masks], dim=-1)  # [R, 1, 1, q, L]
    probs = torch.softmax(logits.masked_fill(~mask, float("-inf")), dim=-1).view(rows, hkv, group * q, -1)
    out = torch.zeros_like(qg)  # [R, Hkv, gq, D]
    at = 0
    if prefix is not None and prefix.get_seq_length():
        at = prefix.get_seq_length()
        out += _mix_one(probs[..., :at], prefix.values[0])
    if blocks is not None:
        width = blocks.get_seq_length()
        for b, start, stop in shared_kv._groups:
            out[start:stop] += _mix_one(probs[start:stop, ..., at : at + width], blocks.values[b])
        at += width
    out += torch.matmul(probs[..., at:], value)
    return out.view(rows, hkv, group, q, d).reshape(rows, heads, q, d).transpose(1, 2).contiguous(), None


AttentionInterface.register(ATTENTION, shared_kv_attention)


@contextlib.contextmanager
def shared_kv_attention_for(model: torch.nn.Module) -> Iterator[None]:
    """Route ``model``'s attention layers through :func:`shared_kv_attention` inside the block."""
    config = model.config
    before = config._attn_implementation
    config._attn_implementation = ATTENTION
    try:
        yield
    finally:
        config._attn_implementation = before
