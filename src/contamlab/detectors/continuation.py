"""Greedy continuations of many short prompts: plain batched ``generate``, and a teacher-forced engine reusing KV.

BenBench's n-gram accuracy (:mod:`~contamlab.detectors.benbench`) continues tens of thousands of prompts by 5 or 10
greedy tokens, each prompt a prefix of a text the model is scored on; ConStat (:mod:`~contamlab.detectors.constat`)
continues its questions greedily. Prefilling every such prompt on its own through ``generate`` made BenBench the
slowest detector. This module holds the two ways to get the same continuations:

- :func:`greedy_continuations`: left-padded batches through ``model.generate``, cut at the first EOS (the reference
  behaviour, and the fallback);
- :func:`teacher_forced_ngrams`: one teacher-forced pass over each whole text gives the greedy continuation of every
  prompt that is the text's own prefix up to its first mismatch with the text; the pass's KV cache is the prefill of
  the rest, so a row that mismatches decodes only its remaining tokens (:func:`_continue_from_cache`), with no
  prefill of its own. Same continuations, up to float rounding of other batch shapes.

It lives apart from BenBench's metrics because it is a decoding engine (KV slicing, right-aligned cache rebuilding,
batched decode steps) with its own invariants and tests, used by more than one detector.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm

from contamlab.detectors.scoring import default_batch_tokens, length_batches
from contamlab.models.padding import pad_batch


@torch.no_grad()
def greedy_continuations(
    model,
    prompts: Sequence[Sequence[int]],
    n: int,
    pad_id: int,
    eos_id: int | None,
    batch_size: int = 64,
    progress: bool = False,
    desc: str = "greedy decoding",
) -> list[list[int]]:
    """Greedy continuations of at most ``n`` tokens (left-padded batches), cut at the first EOS.

    ``progress``: a bar over the prompts (ConStat decodes hundreds of few-shot prompts: minutes on a CPU).
    """
    device = next(model.parameters()).device
    out: list[list[int] | None] = [None] * len(prompts)
    order = sorted(range(len(prompts)), key=lambda i: -len(prompts[i]))
    bar = tqdm(total=len(prompts), desc=desc, unit="prompt", disable=not progress)
    for start in range(0, len(order), batch_size):
        batch = order[start : start + batch_size]
        ids, mask = pad_batch([prompts[i] for i in batch], pad_id, left=True, device=device)  # [B, T] each
        generated = model.generate(
            input_ids=ids,
            attention_mask=mask,
            max_new_tokens=n,
            do_sample=False,
            pad_token_id=pad_id,
        )[:, ids.shape[1] :]  # [B, <= n]: finished rows are padded, all-finished batches stop early
        for row, i in enumerate(batch):
            tokens = generated[row].tolist()
            if eos_id is not None and eos_id in tokens:
                tokens = tokens[: tokens.index(eos_id)]
            out[i] = tokens
        bar.update(len(batch))
    bar.close()
    return out  # type: ignore[return-value]


@torch.no_grad()
def teacher_forced_ngrams(
    model,
    head: Sequence[int],
    texts: dict[int, list[int]],
    jobs: Sequence[tuple[int, int, int]],
    prompts: Sequence[Sequence[int]],
    pad_id: int,
    eos_id: int | None,
    batch_size: int = 64,
    batch_tokens: int | None = None,
    max_positions: int | None = None,
    progress: bool = False,
    desc: str = "n-grams",
) -> list[list[int]]:
    """The greedy continuations of :func:`greedy_continuations`, read off one teacher-forced pass over each text.

    Greedy decoding reproduces the reference for as long as the argmax after each reference prefix is the next
    reference token. So for a prompt that is its text's own prefix (``head + tokens[:s]``: true unless re-tokenising
    the decoded prefix changed it), one forward pass over the whole text gives the continuation up to its first
    mismatch, and the KV cache of that pass is the prompt's prefill for the rest: a row that mismatches at step j
    decodes its remaining ``n - j - 1`` tokens from the cache, with no prefill of its own. Other prompts (and models
    whose cache is not a plain per-position one) are continued by :func:`greedy_continuations` as a whole.

    Args:
        model: The causal LM.
        head: The ids the tokenizer puts before a text (BOS or nothing).
        texts: Token ids of each text, by question index.
        jobs: ``(question index, start, n)`` per prompt: continue ``n`` tokens after ``texts[i][:start]``.
        prompts: The re-tokenised prefixes, one per job.
        pad_id: Padding id.
        eos_id: A continuation ends at EOS (excluded), as :func:`greedy_continuations` cuts it.
        batch_size: Rows per generation batch of the fallback.
        batch_tokens: Rows x length per teacher-forced pass (None: :func:`default_batch_tokens`).
        max_positions: The model's context; texts are cut to it.
        progress: Show a progress bar over the prompts.
        desc: Its label.

    Returns:
        Per job the continuation ids (at most ``n``): those of ``greedy_continuations(model, [prompt], n)`` up to float
        rounding of the other batch shapes.
    """
    from transformers.cache_utils import DynamicLayer  # here, not at import: validating a config needs none

    device = next(model.parameters()).device
    head = list(head)
    full = {i: (head + seq)[:max_positions] if max_positions else head + seq for i, seq in texts.items()}
    out: list[list[int]] = [[] for _ in jobs]
    by_text: dict[int, list[int]] = {}  # text -> the jobs read off its pass
    whole: list[int] = []  # jobs generated from their prompt
    for r, ((i, s, n), prompt) in enumerate(zip(jobs, prompts)):
        if list(prompt) != head + texts[i][:s] or len(head) + s + n > len(full[i]):
            whole.append(r)
        else:
            by_text.setdefault(i, []).append(r)
    order = list(by_text)
    budget = batch_tokens or default_batch_tokens(device)
    pending: list[_Row] = []  # rows to continue, decoded together once enough of them have gathered
    bar = tqdm(total=len(jobs), desc=desc, unit="prompt", disable=not progress)
    for group in length_batches([len(full[i]) for i in order], budget):
        group_texts = [order[g] for g in group]
        ids, mask = pad_batch([full[i] for i in group_texts], pad_id, device=device)  # [B, T] each, right-padded
        result = model(input_ids=ids, attention_mask=mask, use_cache=True)
        top1 = result.logits.argmax(dim=-1).cpu()  # [B, T]: the greedy choice after each prefix
        plain = all(type(layer) is DynamicLayer for layer in result.cache.layers)
        for b, i in enumerate(group_texts):
            for r in by_text[i]:
                _, s, n = jobs[r]
                start = len(head) + s  # prompt length: top1[b, start - 1 + j] is the greedy choice for token s + j
                ref = texts[i][s : s + n]
                j = 0
                while j < n and int(top1[b, start - 1 + j]) == ref[j]:
                    j += 1
                out[r] = list(ref[:j])
                if j == n:
                    continue
                token = int(top1[b, start - 1 + j])
                if token == eos_id:
                    continue
                out[r].append(token)
                if j == n - 1:
                    continue
                length = start + j  # the row's prefix: full[i][:length], then token
                if plain:  # its keys and values from the pass ([H, length, D] per layer)
                    kv = [
                        (lay.keys[b, :, :length].clone(), lay.values[b, :, :length].clone())
                        for lay in result.cache.layers
                    ]
                    pending.append(_Row(r, length, token, n - 1 - j, kv))
                else:
                    pending.append(_Row(r, length, token, n - 1 - j, None, full[i][:length] + [token]))
        if len(pending) >= _PENDING_ROWS or sum(row.nbytes() for row in pending) >= _PENDING_BYTES:
            _flush(model, pending, out, pad_id, eos_id, batch_size)
        bar.update(sum(len(by_text[i]) for i in group_texts))
    _flush(model, pending, out, pad_id, eos_id, batch_size)
    if whole:
        generated = greedy_continuations(
            model, [prompts[r] for r in whole], max(jobs[r][2] for r in whole), pad_id, eos_id, batch_size
        )
        for r, tokens in zip(whole, generated):
            out[r] = tokens[: jobs[r][2]]  # a greedy continuation's first n tokens do not depend on how many follow
        bar.update(len(whole))
    bar.close()
    return out


# A batch of continuations is decoded once this many rows, or this much prefix KV, have gathered (larger batches
# measured slower on a CPU: their fresh buffers cost more in page faults than the fewer steps save).
_PENDING_ROWS = 256
_PENDING_BYTES = 2**28


@dataclass
class _Row:
    """A continuation to decode: job ``job`` goes on after its prefix (``length`` positions) with ``token``."""

    job: int
    length: int
    token: int
    steps: int  # tokens still to generate after ``token``
    kv: list[tuple[torch.Tensor, torch.Tensor]] | None  # the prefix's keys and values per layer, [H, length, D] each
    prompt: list[int] | None = None  # prefix + token, for a model whose cache cannot be sliced (generated whole)

    def nbytes(self) -> int:
        return sum(k.numel() * k.element_size() * 2 for k, _ in self.kv or [])


def _flush(model, pending: list[_Row], out: list[list[int]], pad_id: int, eos_id: int | None, batch_size: int) -> None:
    """Decode the pending continuations into ``out`` (and empty ``pending``)."""
    cached = [row for row in pending if row.kv is not None]
    if cached:
        _continue_from_cache(model, cached, out, eos_id)
    prompted = [row for row in pending if row.kv is None]
    if prompted:
        tails = greedy_continuations(
            model, [row.prompt for row in prompted], max(row.steps for row in prompted), pad_id, eos_id, batch_size
        )
        for row, tail in zip(prompted, tails):
            out[row.job] += tail[: row.steps]
    pending.clear()


def _continue_from_cache(model, rows: list[_Row], out: list[list[int]], eos_id: int | None) -> None:
    """Greedy steps for ``rows`` after their prefixes, from the prefixes' keys and values.

    Each row's prefix KV is right-aligned in one width and the left padding masked, as a left-padded prefill leaves
    it; then the rows decode together, each for its own number of steps (or to EOS, which is not kept).
    """
    from contamlab.decoding.kv_cache import growing_cache

    device = next(model.parameters()).device
    count = len(rows)
    lengths = torch.tensor([row.length for row in rows], device=device)  # [R]
    steps = torch.tensor([row.steps for row in rows], device=device)  # [R]
    width, most = int(lengths.max()), int(steps.max())
    mask = (torch.arange(width, device=device)[None, :] >= (width - lengths)[:, None]).long()  # [R, W]: 0 = padding
    cache = growing_cache(model.config, reserve=width + most)
    for index in range(len(rows[0].kv)):
        heads, _, dim = rows[0].kv[index][0].shape
        keys = rows[0].kv[index][0].new_empty((count, heads, width, dim))  # [R, H, W, D]
        values = torch.empty_like(keys)
        for r, row in enumerate(rows):
            pad = width - row.length
            keys[r, :, :pad] = values[r, :, :pad] = 0  # masked, but must be finite (0 x NaN is NaN)
            keys[r, :, pad:], values[r, :, pad:] = row.kv[index]
        cache.update(keys, values, index)
    token = torch.tensor([row.token for row in rows], device=device)[:, None]  # [R, 1]
    position = lengths[:, None].clone()  # [R, 1]: the position of the token fed next
    generated = torch.full((count, most), -1, dtype=torch.long, device=device)  # [R, S]
    done = torch.zeros(count, dtype=torch.bool, device=device)  # [R]
    column = torch.ones((count, 1), dtype=mask.dtype, device=device)  # [R, 1]
    for step in range(most):
        mask = torch.cat([mask, column], dim=1)  # [R, W + step + 1]
        logits = model(
            input_ids=token,
            attention_mask=mask,
            position_ids=position,
            cache=cache,
            use_cache=True,
        ).logits[:, -1, :]  # [R, V]
        token = logits.argmax(dim=-1, keepdim=True)  # [R, 1]
        generated[:, step] = token[:, 0]
        position = position + 1
        done |= (token[:, 0] == eos_id) | (steps <= step + 1)
        if done.all():
            break
    for row, tokens in zip(rows, generated.tolist()):
        tokens = tokens[: row.steps]
        out[row.job] += tokens[: tokens.index(eos_id)] if eos_id in tokens else tokens
