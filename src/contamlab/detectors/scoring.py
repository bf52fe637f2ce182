"""Batched per-token log-probabilities of a causal LM, with bounded memory: the forward pass every detector shares.

Token t's log-prob is ``log_softmax(logits[t-1])[id_t]`` (docs/methods/detectors.md), so L ids give L-1 values.
Sequences are sorted by length and batched up to a token budget with right padding and an attention mask; padding is
never scored.
The vocabulary projection runs on chunks of positions (the decoder's hidden states go through the LM head a slice at a
time) so a long-vocabulary model never materialises ``[batch, length, vocab]`` logits at once. Optionally the
vocabulary-wide mean and standard deviation of log p at every position are returned (Min-K%++, Zhang et al. 2024).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import torch
from tqdm.auto import tqdm

from contamlab.errors import ContamlabError
from contamlab.models.padding import pad_batch

# Architectures whose logits are exactly ``lm_head(last_hidden_state)`` (no soft-capping or logit scaling), for which
# the head can be applied position-chunk by position-chunk. Others fall back to the model's own forward.
_PLAIN_HEAD = frozenset(
    {"gpt_neox", "llama", "mistral", "qwen2", "qwen3", "gpt2", "phi3", "olmo", "olmo2", "smollm3", "gptj", "opt"}
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
) -> list[TokenStats]:
    """Per-token log-probs (and optionally vocabulary moments) of token-id sequences.

    Args:
        model: A causal LM in eval mode (transformers or peft).
        sequences: Token ids, special tokens included as the tokenizer adds them.
        pad_id: Id used for right padding (never scored).
        moments: Also return the per-position mean and standard deviation of log p over the vocabulary.
        batch_tokens: Budget of rows x padded length per forward pass (None: :func:`default_batch_tokens`).
        logit_elements: Budget of logit elements (rows x positions x vocab) materialised at once.
        progress: Show a progress bar.
        desc: Its label.

    Returns:
        One :class:`TokenStats` per sequence, in input order; sequences shorter than 2 ids get empty arrays.
    """
    device = next(model.parameters()).device
    if batch_tokens is not None and batch_tokens < 1:
        raise ContamlabError(f"detector.batch_tokens={batch_tokens}: must be a positive number of tokens or null")
    batch_tokens = batch_tokens or default_batch_tokens(device)
    plain = _plain(model)
    out: list[TokenStats | None] = [None] * len(sequences)
    lengths = [len(s) for s in sequences]
    bar = tqdm(total=sum(lengths), desc=desc, unit="tok", disable=not progress)
    for batch in length_batches(lengths, batch_tokens):
        longest = lengths[batch[0]]
        if longest < 2:
            for i in batch:
                empty = np.zeros(0, dtype=np.float32)
                out[i] = TokenStats(empty, empty.copy() if moments else None, empty.copy() if moments else None)
            continue
        ids, mask = pad_batch([sequences[i] for i in batch], pad_id, device=device)  # [B, T] each
        if plain is not None:
            decoder, head = plain
            hidden = decoder(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state  # [B, T, H]
            project = head
        else:
            hidden = model(input_ids=ids, attention_mask=mask, use_cache=False).logits  # [B, T, V]
            project = None
        vocab = project.weight.shape[0] if project is not None else hidden.shape[-1]
        step = max(1, logit_elements // (len(batch) * vocab))
        lp, mu, sd = [], [], []
        for start in range(0, longest - 1, step):
            stop = min(start + step, longest - 1)
            chunk = hidden[:, start:stop]
            logits = (project(chunk) if project is not None else chunk).float()  # [B, c, V]
            logp = torch.log_softmax(logits, dim=-1)  # [B, c, V]
            target = ids[:, start + 1 : stop + 1]  # [B, c]
            lp.append(logp.gather(-1, target.unsqueeze(-1)).squeeze(-1))  # [B, c]
            if moments:
                p = logp.exp()  # [B, c, V]
                m1 = (p * logp).sum(-1)  # [B, c]
                # Centred second moment: E[log p^2] - mu^2 cancels catastrophically in float32.
                var = (p * (logp - m1.unsqueeze(-1)).square()).sum(-1)  # [B, c]
                mu.append(m1)
                sd.append(var.sqrt().clamp_min(1e-6))
        lp_all = torch.cat(lp, dim=1).cpu().numpy()  # [B, T-1]
        mu_all = torch.cat(mu, dim=1).cpu().numpy() if moments else None
        sd_all = torch.cat(sd, dim=1).cpu().numpy() if moments else None
        for row, i in enumerate(batch):
            n = max(lengths[i] - 1, 0)  # real positions only: padding never scored
            out[i] = TokenStats(
                lp_all[row, :n].astype(np.float32),
                mu_all[row, :n].astype(np.float32) if moments else None,
                sd_all[row, :n].astype(np.float32) if moments else None,
            )
        bar.update(sum(lengths[i] for i in batch))
    bar.close()
    return out  # type: ignore[return-value]
