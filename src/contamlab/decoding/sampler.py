"""The HF sampling backend: greedy and m-sample decoding for many questions at once.

Why not ``model.generate(num_return_sequences=m)``: it prefills every prompt m times. Here

- the token prefix shared by every prompt (the few-shot exemplars) is prefilled once per model and its KV cache
  reused for every chunk of questions;
- each question's own tokens are prefilled once, then its cache is expanded to its m sample rows;
- all rows of a chunk (questions × samples) decode together, one forward pass per step, and finished rows leave the
  batch (the cache is compacted once enough of them have finished);
- a strategy edits the raw logits of every row at every step (vectorised over rows), before temperature.

Prompts of different lengths share one batch through explicit position ids and an attention mask with a hole
between the shared prefix and a short question block, so no row is shifted and positions match unbatched decoding.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import torch
from transformers import DynamicCache, PreTrainedModel, PreTrainedTokenizerBase

from contamlab.decoding.kv_cache import growing_cache
from contamlab.models.padding import pad_batch

# A strategy's per-step hook: (logits [R, V], generated [R, t], owner [R]) -> logits [R, V].
StepFn = Callable[[torch.Tensor, torch.Tensor, torch.Tensor], torch.Tensor]


@dataclass
class DecodeStats:
    """Throughput figures of one decode call."""

    generated_tokens: int = 0
    forward_s: float = 0.0
    wall_s: float = 0.0

    @property
    def tokens_per_s(self) -> float:
        """Generated tokens per wall-clock second."""
        return self.generated_tokens / self.wall_s if self.wall_s > 0 else 0.0


def common_prefix(sequences: Sequence[Sequence[int]]) -> int:
    """Length of the longest token prefix shared by all sequences (tokenisation-safe shared-prefix split)."""
    if not sequences:
        return 0
    first = sequences[0]
    length = min(len(s) for s in sequences)
    for seq in sequences[1:]:
        i = 0
        while i < length and seq[i] == first[i]:
            i += 1
        length = i
    return length


def encode_prompts(tokenizer: PreTrainedTokenizerBase, prompts: Sequence[str]) -> list[list[int]]:
    """Prompt token ids exactly as an unbatched forward pass sees them (every backend encodes this way)."""
    return [list(ids) for ids in tokenizer(list(prompts), add_special_tokens=True)["input_ids"]]


def trim_response(
    ids: list[int], tokenizer: PreTrainedTokenizerBase, eos_id: int | None, stop: Sequence[str]
) -> list[int]:
    """Cut a response's tokens at EOS, and before the token where a stop string starts (every backend)."""
    if eos_id in ids:
        ids = ids[: ids.index(eos_id)]
    if stop:
        text = tokenizer.decode(ids)
        cut = min((text.find(s) for s in stop if s in text), default=-1)
        if cut >= 0:
            # Keep the longest token prefix whose text ends before the stop string.
            while ids and len(tokenizer.decode(ids)) > cut:
                ids = ids[:-1]
    return ids


class Sampler(Protocol):
    """What :mod:`~contamlab.decoding.pipeline` needs from a sampling backend (:class:`HFSampler`, ``VLLMSampler``).

    Attributes:
        name: The backend (``hf``, ``vllm``).
        tokenizer: The model's tokenizer.
        max_new_tokens: Token budget per response.
        stats: Throughput of the decode calls so far.
        last_entropy: ``[q][j]``: mean greedy entropy of response j of prompt q of the last ``greedy`` call.
    """

    name: str
    tokenizer: Any
    max_new_tokens: int
    stats: DecodeStats
    last_entropy: list[list[float]]

    def encode(self, prompts: Sequence[str]) -> list[list[int]]:
        """Tokenise prompts exactly as an unbatched forward pass would see them."""
        ...

    def set_prefix(self, prompt_ids: Sequence[Sequence[int]]) -> int:
        """Share the prompts' common prefix across calls (its KV cache computed once); returns its length."""
        ...

    def decode(
        self,
        prompt_ids: Sequence[Sequence[int]],
        m: int,
        temperature: float,
        seed: int,
        step_fn: StepFn | None = None,
        greedy: bool = False,
    ) -> list[list[list[int]]]:
        """Decode ``m`` responses for each prompt (``greedy`` ignores ``temperature`` and draws argmax).

        Args:
            prompt_ids: Token ids of each prompt (starting with the prefix set by :meth:`set_prefix`).
            m: Responses per prompt.
            temperature: Sampling temperature (> 0) for ``greedy=False``.
            seed: Seed of this call's random draws.
            step_fn: A strategy's per-step hook (:class:`~contamlab.decoding.strategy.StepHook`); ``owner`` indexes
                ``prompt_ids``.
            greedy: Argmax decoding; also records each response's mean entropy in :attr:`last_entropy`.

        Returns:
            ``out[q][j]``: generated token ids of response j of prompt q (EOS excluded, cut at a stop string).
        """
        ...

    def cache_fields(self) -> dict:
        """What of the backend's batching changes the samples (part of the sample cache key)."""
        ...


class HFSampler:
    """Batched greedy / temperature sampling with shared prompt KV caches.

    Args:
        model: A causal LM in eval mode.
        tokenizer: Its tokenizer (must define EOS; padding uses the pad or EOS id).
        stop: Strings that end a response (checked on the decoded tail of each row).
        max_new_tokens: Token budget per response.
        batch_rows: Maximum rows (questions × samples) decoded together.
        compact_fraction: Compact the cache once this share of the rows has finished.
        name: Backend name (``hf``), recorded with the results.
    """

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        stop: Sequence[str] = (),
        max_new_tokens: int = 256,
        batch_rows: int = 256,
        compact_fraction: float = 0.125,
        name: str = "hf",
        draw: str = "multinomial",
    ) -> None:
        if max_new_tokens <= 0:
            raise ValueError(f"max_new_tokens={max_new_tokens}: must be positive")
        if batch_rows <= 0:
            raise ValueError(f"sampler.batch_rows={batch_rows}: must be positive")
        self.name = name
        self.model = model
        self.tokenizer = tokenizer
        self.stop = tuple(stop)
        self.max_new_tokens = max_new_tokens
        self.batch_rows = batch_rows
        self.compact_fraction = compact_fraction
        if draw not in ("multinomial", "inverse_cdf"):
            raise ValueError(f"sampler.draw={draw!r}: use multinomial or inverse_cdf")
        self.draw = draw
        self.eos_id = tokenizer.eos_token_id
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id
        self.device = next(model.parameters()).device
        # Tokens needed to see a whole stop string in a row's tail, with slack for merges across the boundary.
        self._stop_window = max(
            (len(tokenizer(s, add_special_tokens=False)["input_ids"]) for s in self.stop), default=0
        )
        self._stop_window += 2
        self._prefix_ids: tuple[int, ...] | None = None
        self._prefix_cache: DynamicCache | None = None
        self.stats = DecodeStats()
        self.last_entropy: list[list[float]] = []  # mean greedy entropy per response of the last decode call

    # -- prompt handling -----------------------------------------------------------------------------------------
    def encode(self, prompts: Sequence[str]) -> list[list[int]]:
        """Tokenise prompts exactly as an unbatched forward pass would see them."""
        return encode_prompts(self.tokenizer, prompts)

    def set_prefix(self, prompt_ids: Sequence[Sequence[int]]) -> int:
        """Fix the shared prefix as the longest token prefix common to ``prompt_ids`` and cache its KV once.

        Keep one prefix per model and domain: call it with all prompts of the dataset, so every chunk reuses it.
        One token of every prompt is always left out of the prefix so that each question has logits to start from.
        """
        n = common_prefix(prompt_ids)
        n = min(n, min(len(p) for p in prompt_ids) - 1)
        prefix = tuple(prompt_ids[0][:n])
        if prefix != self._prefix_ids:
            self._prefix_ids = prefix
            self._prefix_cache = None
            if n > 0:
                ids = torch.tensor([prefix], device=self.device)  # [1, P]
                cache = self._new_cache()
                with torch.inference_mode():
                    self.model(input_ids=ids, cache=cache, use_cache=True)
                self._prefix_cache = cache
        return n

    def _new_cache(self) -> DynamicCache:
        """An empty KV cache; a model may bring its own kind (shortcut's patched pair: one cache per model)."""
        make_cache = getattr(self.model, "make_cache", None)
        return make_cache() if make_cache is not None else growing_cache(self.model.config)

    def _expanded_prefix(self, rows: int) -> DynamicCache:
        if self._prefix_cache is None:
            return self._new_cache()
        cache = copy.deepcopy(self._prefix_cache)  # [1, H, P, D] per layer
        cache.batch_repeat_interleave(rows)  # [rows, H, P, D]
        return cache

    # -- decoding ------------------------------------------------------------------------------------------------
    @torch.inference_mode()
    def decode(
        self,
        prompt_ids: Sequence[Sequence[int]],
        m: int,
        temperature: float,
        seed: int,
        step_fn: StepFn | None = None,
        greedy: bool = False,
    ) -> list[list[list[int]]]:
        """:meth:`Sampler.decode`: one random stream per call (same inputs and seed give the same tokens on CPU).

        The hook runs on the raw logits at every step; rows are batched up to ``batch_rows`` and finished rows leave
        the batch.
        """
        if not greedy and not temperature > 0:
            raise ValueError(f"temperature={temperature}: must be > 0 for sampling")
        if self._prefix_ids is None:
            self.set_prefix(prompt_ids)
        n_prefix = len(self._prefix_ids)
        for ids in prompt_ids:
            if tuple(ids[:n_prefix]) != self._prefix_ids or len(ids) <= n_prefix:
                raise ValueError("a prompt does not start with the cached prefix; call set_prefix on all prompts")
        out: list[list[list[int]]] = [[] for _ in prompt_ids]
        self.last_entropy = [[] for _ in prompt_ids]
        per_chunk = max(1, self.batch_rows // m)
        generator = torch.Generator(device="cpu").manual_seed(seed)
        for start in range(0, len(prompt_ids), per_chunk):
            chunk = list(range(start, min(start + per_chunk, len(prompt_ids))))
            rows, entropy = self._decode_chunk(
                [prompt_ids[q] for q in chunk], chunk, m, temperature, generator, step_fn, greedy
            )
            for q, responses, ent in zip(chunk, rows, entropy):
                out[q] = responses
                self.last_entropy[q] = ent
        return out

    def _decode_chunk(self, prompts, owners, m, temperature, generator, step_fn, greedy):
        started = time.perf_counter()
        n_prefix = len(self._prefix_ids)
        n_q = len(prompts)
        suffixes = [p[n_prefix:] for p in prompts]
        # Prefill the question blocks, right-aligned after the shared prefix: [prefix][pad…][question].
        ids, question_mask = pad_batch(suffixes, self.pad_id, left=True)  # [Q, W] each
        mask = torch.cat([torch.ones((n_q, n_prefix), dtype=torch.long), question_mask], dim=1)  # [Q, P + W]
        pos = (n_prefix + question_mask.cumsum(dim=1) - 1) * question_mask  # [Q, W]: positions go on from the prefix
        cache = self._expanded_prefix(n_q)
        t0 = time.perf_counter()
        logits = self.model(
            input_ids=ids.to(self.device),
            attention_mask=mask.to(self.device),
            position_ids=pos.to(self.device),
            cache=cache,
            use_cache=True,
        ).logits[:, -1, :]  # [Q, V]
        forward_s = time.perf_counter() - t0
        next_pos = torch.tensor([n_prefix + len(s) for s in suffixes])  # [Q]
        # Expand each question to its m rows (the question's KV is shared, never recomputed).
        if m > 1:
            cache.batch_repeat_interleave(m)
            logits = logits.repeat_interleave(m, dim=0)
            mask = mask.repeat_interleave(m, dim=0)
            next_pos = next_pos.repeat_interleave(m)
        n_rows = n_q * m
        owner_local = torch.arange(n_q).repeat_interleave(m)  # [R] index into this chunk
        owner_global = torch.tensor(owners)[owner_local]  # [R] index into the caller's prompt list
        row_index = torch.arange(n_rows)  # [R] position in the output
        generated = torch.empty((n_rows, 0), dtype=torch.long)  # [R, t]
        results: list[list[int] | None] = [None] * n_rows
        alive = torch.ones(n_rows, dtype=torch.bool)  # [R]
        entropy_sum = torch.zeros(n_rows, dtype=torch.float64)  # [R] over the row's generated steps (LNE)
        entropy_out = [0.0] * n_rows
        n_generated = 0
        for step in range(self.max_new_tokens):
            logits = logits.float()
            if greedy:
                logp = torch.log_softmax(logits, dim=-1)  # [R, V] raw logits, temperature 1
                entropy_sum += -(logp.exp() * logp).sum(-1).double().cpu() * alive
            if step_fn is not None:
                logits = step_fn(logits, generated, owner_global)
            if greedy:
                token = logits.argmax(dim=-1)  # [R]
            else:
                probs = torch.softmax(logits / temperature, dim=-1).cpu()  # [R, V]
                token = self._draw(probs, generator)  # [R]
            token = token.cpu()
            token = torch.where(alive, token, torch.full_like(token, self.pad_id))
            generated = torch.cat([generated, token[:, None]], dim=1)  # [R, t + 1]
            n_generated += int(alive.sum())
            finished = alive & (token == self.eos_id)
            if self.stop:
                finished |= alive & self._hit_stop(generated)
            if step == self.max_new_tokens - 1:
                finished |= alive
            for r in finished.nonzero().flatten().tolist():
                results[int(row_index[r])] = self._trim(generated[r].tolist())
                entropy_out[int(row_index[r])] = float(entropy_sum[r]) / (step + 1)
            alive &= ~finished
            if not alive.any():
                break
            if (~alive).sum() >= max(1, int(self.compact_fraction * alive.numel())):
                keep = alive.nonzero().flatten()  # [R']
                cache.batch_select_indices(keep.to(self.device))
                mask, next_pos, generated = mask[keep], next_pos[keep], generated[keep]
                owner_global, row_index, alive = owner_global[keep], row_index[keep], alive[keep]
                entropy_sum = entropy_sum[keep]
                token = token[keep]
            mask = torch.cat([mask, torch.ones((mask.shape[0], 1), dtype=torch.long)], dim=1)  # [R, S + 1]
            t0 = time.perf_counter()
            logits = self.model(
                input_ids=token[:, None].to(self.device),
                attention_mask=mask.to(self.device),
                position_ids=next_pos[:, None].to(self.device),
                cache=cache,
                use_cache=True,
            ).logits[:, -1, :]  # [R, V]
            forward_s += time.perf_counter() - t0
            next_pos = next_pos + 1
        self.stats.generated_tokens += n_generated
        self.stats.forward_s += forward_s
        self.stats.wall_s += time.perf_counter() - started
        responses = [[results[q * m + j] for j in range(m)] for q in range(n_q)]
        return responses, [[entropy_out[q * m + j] for j in range(m)] for q in range(n_q)]

    def _hit_stop(self, generated: torch.Tensor) -> torch.Tensor:
        """Rows whose decoded tail contains a stop string ([R] bool)."""
        tails = self.tokenizer.batch_decode(generated[:, -self._stop_window :].tolist(), skip_special_tokens=False)
        return torch.tensor([any(s in tail for s in self.stop) for tail in tails], dtype=torch.bool)

    def cache_fields(self) -> dict:
        """What besides model, prompts and seed changes this sampler's samples (the sample-cache key)."""
        fields = {"batch_rows": self.batch_rows, "compact_fraction": self.compact_fraction}
        return fields if self.draw == "multinomial" else {**fields, "draw": self.draw}

    def _draw(self, probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """One token per row from ``probs`` ([R, V] on the CPU).

        ``multinomial`` (the default world's calibrated draw) makes torch draw exponential noise for every vocabulary
        entry: 15 % of SmolLM2's decode time with a 49k vocabulary. ``inverse_cdf`` (the configs' default) draws one
        uniform per row and searches the cumulative distribution: the same distribution, other samples.
        """
        if self.draw == "multinomial":
            return torch.multinomial(probs, 1, generator=generator).squeeze(1)
        cdf = probs.double().cumsum(dim=-1)  # [R, V]
        u = torch.rand((probs.shape[0], 1), generator=generator, dtype=torch.float64) * cdf[:, -1:]  # [R, 1]
        return torch.searchsorted(cdf, u, right=True).squeeze(1).clamp_max(probs.shape[1] - 1)  # [R]

    def _trim(self, ids: list[int]) -> list[int]:
        return trim_response(ids, self.tokenizer, self.eos_id, self.stop)
