"""Batched per-token log-probabilities of a causal LM, with bounded memory: the forward pass every detector shares.

Token t's log-prob is ``log_softmax(logits[t-1])[id_t]`` (docs/methods/detectors.md), so L ids give L-1 values.
Sequences are sorted by length and batched up to a token budget with right padding and an attention mask; padding is
never scored.
The vocabulary projection runs on chunks of positions (the decoder's hidden states go through the LM head a slice at a
time) so a long-vocabulary model never materialises ``[batch, length, vocab]`` logits at once. Optionally the
vocabulary-wide mean and standard deviation of log p at every position are returned (Min-K%++, Zhang et al. 2024).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from contamlab.decoding.sampler import common_prefix
from contamlab.errors import ContamlabError
from contamlab.models.padding import pad_batch

# Architectures whose logits are exactly ``lm_head(last_hidden_state)`` (no soft-capping or logit scaling), for which
# the head can be applied position-chunk by position-chunk. Others fall back to the model's own forward.
# Soft-capped configs (Gemma-2) are caught by _plain.
_PLAIN_HEAD = frozenset(
    {"gpt_neox", "llama", "mistral", "qwen2", "qwen3", "gpt2", "phi3", "olmo", "olmo2", "smollm3", "gptj", "opt"}
    | {"gemma", "gemma2", "gemma3_text"}
)


@dataclass
class TokenStats:
    """Per-token statistics of one sequence (length = number of ids - 1).

    Attributes:
        logprobs: ``log p(x_t | x_<t)`` for t = 1..L-1 (float32).
        mu: Vocabulary mean of log p at each position, ``Σ_v p_v log p_v`` (Min-K%++), or None.
        sigma: Vocabulary standard deviation of log p at each position (clamped to >= 1e-6), or None.
    """

    logprobs: np.ndarray
    mu: np.ndarray | None = None
    sigma: np.ndarray | None = None


def _plain(model) -> tuple[torch.nn.Module, torch.nn.Module] | None:
    """(decoder, lm_head) when the logits are a plain projection of the decoder's output, else None."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model  # peft: LoRA layers stay active
    config = getattr(base, "config", None)
    if config is None or getattr(config, "model_type", None) not in _PLAIN_HEAD:
        return None
    if getattr(config, "final_logit_softcapping", None) or getattr(config, "logit_scale", None):
        return None
    decoder, head = getattr(base, "base_model", None), base.get_output_embeddings()
    if decoder is None or decoder is base or head is None:
        return None
    return decoder, head


def default_batch_tokens(device: torch.device) -> int:
    """Rows x padded length per forward pass when the config leaves ``batch_tokens`` null.

    A CPU's caches favour batches of about a thousand tokens: ``benchmarks/detectors.py`` measured batched scoring
    at 2.27-2.52x the one-text loop with 1,024-token batches and 1.84-2.00x with 8,192 (tiny model), 1.21x and 0.88x
    (SmolLM2, whose one-text loop already runs its matmuls at half the CPU's GEMM rate). Accelerators want large
    batches.
    """
    return 1024 if device.type == "cpu" else 8192


def length_batches(lengths: Sequence[int], batch_tokens: int) -> list[list[int]]:
    """Indices grouped longest first so that rows x longest length stays within ``batch_tokens``."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    for index in order:
        if batches and (len(batches[-1]) + 1) * lengths[batches[-1][0]] <= batch_tokens:
            batches[-1].append(index)
        else:
            batches.append([index])
    return batches


@torch.no_grad()
def score_sequences(
    model,
    sequences: Sequence[Sequence[int]],
    pad_id: int,
    moments: bool = False,
    batch_tokens: int | None = None,
    logit_elements: int = 2**25,
    progress: bool = False,
    desc: str = "log-probs",
    score_from: Sequence[int] | None = None,
    share_prefix: bool = False,
) -> list[TokenStats]:
    """Per-token log-probs (and optionally vocabulary moments) of token-id sequences.

    Only the positions that are scored go through the vocabulary projection: padding never does, nor the context
    before ``score_from`` (CoDeC's in-context examples, ReCaLL's prefix). For a large-vocabulary model the projection
    is most of a forward pass (Gemma-3-270m: 262k x 640 against about 100M transformer weights per token).

    Args:
        model: A causal LM in eval mode (transformers or peft).
        sequences: Token ids, special tokens included as the tokenizer adds them.
        pad_id: Id used for right padding (never scored).
        moments: Also return the per-position mean and standard deviation of log p over the vocabulary.
        batch_tokens: Budget of rows x padded length per forward pass (None: :func:`default_batch_tokens`).
        logit_elements: Budget of logit elements (positions x vocab) materialised at once.
        progress: Show a progress bar.
        desc: Its label.
        score_from: Per sequence, the index of the first token whose log-prob is returned (default 1: every token
            after the first). Sequence i then gets ``len(ids_i) - score_from[i]`` values, those of its last tokens.
        share_prefix: Run the token prefix common to every sequence once and reuse its KV cache for every batch
            (ReCaLL's prefix: the same non-member texts before each item). The prefix stops before the first scored
            position; models without a plain head ignore it. The log-probs equal the full pass's up to float
            rounding.

    Returns:
        One :class:`TokenStats` per sequence, in input order; sequences shorter than 2 ids get empty arrays.
    """
    device = next(model.parameters()).device
    if batch_tokens is not None and batch_tokens < 1:
        raise ContamlabError(f"detector.batch_tokens={batch_tokens}: must be a positive number of tokens or null")
    batch_tokens = batch_tokens or default_batch_tokens(device)
    firsts = [1] * len(sequences) if score_from is None else [max(1, int(f)) for f in score_from]
    if len(firsts) != len(sequences):
        raise ValueError(f"score_from has {len(firsts)} entries for {len(sequences)} sequences")
    plain = _plain(model)
    out: list[TokenStats | None] = [None] * len(sequences)
    lengths = [len(s) for s in sequences]
    n_shared, prefix_cache = 0, None
    if share_prefix and plain is not None and sequences:
        n_shared = min(common_prefix(sequences), min(firsts) - 1, min(lengths) - 1)
        if n_shared > 0:
            from transformers import DynamicCache

            prefix_cache = DynamicCache(config=plain[0].config)
            prefix = torch.tensor([list(sequences[0][:n_shared])], device=device)  # [1, P]
            plain[0](input_ids=prefix, cache=prefix_cache, use_cache=True)
    bar = tqdm(total=sum(lengths), desc=desc, unit="tok", disable=not progress)
    for batch in length_batches(lengths, batch_tokens):
        counts = [max(lengths[i] - firsts[i], 0) for i in batch]  # scored tokens per row
        if sum(counts) == 0:
            for i in batch:
                empty = np.zeros(0, dtype=np.float32)
                out[i] = TokenStats(empty, empty.copy() if moments else None, empty.copy() if moments else None)
            bar.update(sum(lengths[i] for i in batch))
            continue
        ids, mask = pad_batch([sequences[i] for i in batch], pad_id, device=device)  # [B, T] each
        offset = 0  # the first position ``hidden`` holds
        if prefix_cache is not None:  # the rows go on from the shared prefix: positions P.. of each sequence
            decoder, project = plain
            cache = copy.deepcopy(prefix_cache)
            cache.batch_repeat_interleave(len(batch))  # [1, H, P, D] -> [B, H, P, D] per layer
            full_mask = torch.cat([mask.new_ones((len(batch), n_shared)), mask[:, n_shared:]], dim=1)  # [B, T]
            hidden = decoder(  # [B, T - P, H]: positions P.. (only positions >= P are scored)
                input_ids=ids[:, n_shared:], attention_mask=full_mask, cache=cache, use_cache=True
            ).last_hidden_state
            offset = n_shared
        elif plain is not None:
            decoder, project = plain
            hidden = decoder(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state  # [B, T, H]
        else:
            hidden = model(input_ids=ids, attention_mask=mask, use_cache=False).logits  # [B, T, V]
            project = None
        # The scored positions, packed: position p predicts token p + 1.
        rows = torch.repeat_interleave(torch.tensor(counts, device=device))  # [N]: each scored position's row
        pos = [torch.arange(lengths[i] - c - 1, lengths[i] - 1, device=device) for i, c in zip(batch, counts)]
        pos = torch.cat(pos)  # [N]
        packed = hidden[rows, pos - offset]  # [N, H] (or [N, V] without a plain head)
        targets = ids[rows, pos + 1]  # [N]
        vocab = project.weight.shape[0] if project is not None else hidden.shape[-1]
        step = max(1, logit_elements // vocab)
        lp, mu, sd = [], [], []
        for start in range(0, len(targets), step):
            chunk = packed[start : start + step]
            logits = (project(chunk) if project is not None else chunk).float()  # [c, V]
            logp = torch.log_softmax(logits, dim=-1)  # [c, V]
            lp.append(logp.gather(-1, targets[start : start + step, None]).squeeze(-1))  # [c]
            if moments:
                p = logp.exp()  # [c, V]
                m1 = torch.linalg.vecdot(p, logp)  # [c]: a reduction without a [c, V] temporary
                # Centred second moment: E[log p^2] - mu^2 cancels catastrophically in float32. In place on logp,
                # which is not read again: a [c, V] pass is memory-bound, and a 262k vocabulary makes each one count.
                var = torch.linalg.vecdot(p, logp.sub_(m1.unsqueeze(-1)).square_())  # [c]
                mu.append(m1)
                sd.append(var.sqrt().clamp_min(1e-6))
        splits = np.cumsum(counts)[:-1]
        lp_rows = np.split(torch.cat(lp).float().cpu().numpy(), splits)
        mu_rows = np.split(torch.cat(mu).cpu().numpy(), splits) if moments else [None] * len(batch)
        sd_rows = np.split(torch.cat(sd).cpu().numpy(), splits) if moments else [None] * len(batch)
        for i, a, m, s in zip(batch, lp_rows, mu_rows, sd_rows):
            out[i] = TokenStats(
                a.astype(np.float32),
                m.astype(np.float32) if moments else None,
                s.astype(np.float32) if moments else None,
            )
        bar.update(sum(lengths[i] for i in batch))
    bar.close()
    return out  # type: ignore[return-value]
