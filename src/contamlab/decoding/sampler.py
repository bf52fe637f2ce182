"""The HF sampling backend: greedy and m-sample decoding for many questions at once.

Why not ``model.generate(num_return_sequences=m)``: it prefills every prompt m times. Here

- the token prefix shared by every prompt (the few-shot exemplars) is prefilled once per model and its KV cache
  reused for every chunk of questions;
- each question's own tokens are prefilled once, then its cache is expanded to its m sample rows (``shared_kv``:
  neither the prefix nor a question's tokens are copied into the rows; the attention layers read one copy of each,
  :mod:`~contamlab.decoding.shared_kv`);
- all rows of a chunk (questions × samples) decode together, one forward pass per step, and finished rows leave the
  batch (the cache is compacted once enough of them have finished);
- a strategy edits the raw logits of every row at every step (vectorised over rows), before temperature.

Prompts of different lengths share one batch through explicit position ids and an attention mask with a hole
between the shared prefix and a short question block, so no row is shifted and positions match unbatched decoding.
"""

from __future__ import annotations

import copy
import time
from collections.abc import Sequence
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

import torch

from contamlab.models.padding import pad_batch

# transformers (through the KV cache modules) is imported by the methods that decode, not with this module: a
# config's validation imports every group's target to read its signature, and reports a bad value before
# transformers loads (about 1.5 s instead of 5 on a small machine).
if TYPE_CHECKING:
    from transformers import DynamicCache, PreTrainedModel, PreTrainedTokenizerBase

    from contamlab.decoding.shared_kv import SharedKV
    from contamlab.decoding.strategy import StepHook

# A strategy's per-step hook: (logits [R, V], generated [R, t], owner [R]) -> logits [R, V].


@dataclass
class DecodeStats:
    """Throughput figures of one decode call."""

    generated_tokens: int = 0
    forward_s: float = 0.0
    wall_s: float = 0.0
    peak_kv_bytes: int = 0  # the most KV (keys and values, spare capacity included) one decode batch held

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


@dataclass
class Prefilled:
    """One chunk after its prefill: rows are questions × samples, each question's rows contiguous.

    Attributes:
        logits: ``[R, V]`` next-token logits of every row.
        cache: The rows' KV cache (the model's ``cache`` argument).
        shared: The KV the rows share (shared-KV mode) or None.
        mask: ``[R, S]`` attention mask over the rows' positions so far (copying mode).
        next_pos: ``[R]`` the position of each row's next token.
        owner: ``[R]`` each row's question within the chunk.
        kv_held: Bytes of KV held besides the rows' cache (the prefix, the question blocks).
        forward_s: Seconds in the model's forward pass.
    """

    logits: torch.Tensor
    cache: DynamicCache
    shared: SharedKV | None
    mask: torch.Tensor
    next_pos: torch.Tensor
    owner: torch.Tensor
    kv_held: int
    forward_s: float


@dataclass
class Rows:
    """The per-row state of one decoding chunk, on the model's device; :meth:`keep` compacts every field at once.

    Attributes:
        mask: ``[R, S + T]`` attention mask: the prompt positions, then one column per generated token.
        next_pos: ``[R]`` the position of each row's next token.
        tokens: ``[R, T]`` the tokens generated so far, written one column per step (padding after a row ends).
        owner_local: ``[R]`` each row's question within the chunk (what shared-KV attention reads).
        owner_global: ``[R]`` each row's prompt in the caller's list (what the strategies' hooks read).
        row_index: ``[R]`` each row's place in the chunk's output.
        alive: ``[R]`` rows still generating.
        entropy_sum: ``[R]`` float64 sum of each row's greedy entropies (LNE's mean entropy).
    """

    mask: torch.Tensor
    next_pos: torch.Tensor
    tokens: torch.Tensor
    owner_local: torch.Tensor
    owner_global: torch.Tensor
    row_index: torch.Tensor
    alive: torch.Tensor
    entropy_sum: torch.Tensor

    def keep(self, index: torch.Tensor) -> None:
        """Keep only the rows ``index`` (``[R']``) in every field."""
        for f in fields(self):
            setattr(self, f.name, getattr(self, f.name)[index])


class Sampler(Protocol):
    """What :mod:`~contamlab.decoding.pipeline` needs from a sampling backend (:class:`HFSampler`, ``VLLMSampler``).

    Attributes:
        name: The backend (``hf``, ``vllm``).
        tokenizer: The model's tokenizer.
        max_new_tokens: Token budget per response.
        stats: Throughput of the decode calls so far.
        last_entropy: ``[q][j]``: mean greedy entropy of response j of prompt q of the last ``greedy`` call.
        takes_source: The backend is built from the model's source (path or hub id) and loads it itself (vLLM),
            rather than from a model contamlab loaded (a strategy that patches the model cannot run on it).
    """

    takes_source: ClassVar[bool]
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
        step_fn: StepHook | None = None,
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

    def close(self) -> None:
        """Free what the backend holds beyond the model (a vLLM engine: a second would not fit beside it)."""
        ...


class HFSampler:
    """Batched greedy / temperature sampling with shared prompt KV caches.

    The defaults are those ``configs/sampler/hf.yaml`` resolves to for a model config that sets none of its own
    (``model.batch_rows``, ``model.draw``, ``model.shared_kv``), so a sampler built in code samples as a job does.

    Args:
        model: A causal LM in eval mode.
        tokenizer: Its tokenizer (must define EOS; padding uses the pad or EOS id).
        stop: Strings that end a response (checked on the decoded tail of each row).
        max_new_tokens: Token budget per response.
        batch_rows: Maximum rows (questions × samples) decoded together.
        compact_fraction: Compact the cache once this share of the rows has finished.
        name: Backend name (``hf``), recorded with the results.
        draw: How a token is drawn from a row's distribution (:meth:`_draw`): ``inverse_cdf`` or ``multinomial``.
        shared_kv: Keep one copy of the shared prefix and of each question's tokens for all their rows
            (:mod:`~contamlab.decoding.shared_kv`) instead of a copy per row: far less memory and memory traffic with a
            long few-shot prompt. Same distribution, float rounding of another attention kernel (so the sample cache
            key names it). Ignored for a model that brings its own cache (``make_cache``).
    """

    takes_source: ClassVar[bool] = False  # decodes the model it is given

    def __init__(
        self,
        model: PreTrainedModel,
        tokenizer: PreTrainedTokenizerBase,
        stop: Sequence[str] = (),
        max_new_tokens: int = 256,
        batch_rows: int = 256,
        compact_fraction: float = 0.125,
        name: str = "hf",
        draw: str = "inverse_cdf",
        shared_kv: bool = True,
    ) -> None:
        # max_new_tokens, batch_rows and draw are checked once, by contamlab.validation, before any model loads
        self.name = name
        self.model = model
        self.tokenizer = tokenizer
        self.stop = tuple(stop)
        self.max_new_tokens = max_new_tokens
        self.batch_rows = batch_rows
        self.compact_fraction = compact_fraction
        self.draw = draw
        from contamlab.decoding.kv_cache import OwnCacheModel

        self.shared_kv = bool(shared_kv) and not isinstance(model, OwnCacheModel)  # its own cache: no shared KV
        self.eos_id = tokenizer.eos_token_id
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else self.eos_id
        self.device = next(model.parameters()).device
        # Tokens needed to see a whole stop string in a row's tail, with slack for merges across the boundary.
        self._stop_window = max(
            (len(tokenizer(s, add_special_tokens=False)["input_ids"]) for s in self.stop), default=0
        )
        self._stop_window += 2
        # Tokens that can complete a stop string: their text holds a stop string's last character, or is not a whole
        # character alone (a byte of a multi-byte character, completed by its neighbours). A stop string ending in
        # whitespace disables the filter (a tokenizer may drop a lone token's leading space when decoding it).
        ends = {s[-1] for s in self.stop if s}
        self._stop_enders: torch.Tensor | None = None
        if ends and not any(c.isspace() for c in ends):
            texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
            enders = [i for i, text in enumerate(texts) if any(c in text for c in ends) or "\ufffd" in text]
            self._stop_enders = torch.tensor(enders, dtype=torch.long, device=self.device)
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
        from contamlab.decoding.kv_cache import OwnCacheModel, growing_cache

        return self.model.make_cache() if isinstance(self.model, OwnCacheModel) else growing_cache(self.model.config)

    def _expanded_prefix(self, owners: Sequence[int]) -> DynamicCache:
        """The prefix KV for one row per prompt.

        A model's own cache that answers prompts differently (shortcut's Step B: one patch per group of prompts) binds
        its rows to the prompts itself (``bind_prompts``), its prefix rows included.

        Args:
            owners: The prompts' indices in the caller's list.

        Returns:
            A cache of ``len(owners)`` rows (empty when no prefix is cached).
        """
        from contamlab.decoding.kv_cache import PromptBoundCache

        cache = self._new_cache() if self._prefix_cache is None else copy.deepcopy(self._prefix_cache)
        if isinstance(cache, PromptBoundCache):
            cache.bind_prompts(torch.tensor(list(owners), dtype=torch.long, device=self.device))  # [Q]
        elif self._prefix_cache is not None:
            cache.batch_repeat_interleave(len(owners))  # [1, H, P, D] -> [Q, H, P, D] per layer
        return cache

    # -- decoding ------------------------------------------------------------------------------------------------
    @torch.inference_mode()
    def decode(
        self,
        prompt_ids: Sequence[Sequence[int]],
        m: int,
        temperature: float,
        seed: int,
        step_fn: StepHook | None = None,
        greedy: bool = False,
    ) -> list[list[list[int]]]:
        """:meth:`Sampler.decode`: one random stream per call (same inputs and seed give the same tokens on CPU).

        The hook runs on the raw logits at every step; rows are batched up to ``batch_rows`` and finished rows leave
        the batch.
        """
        if self._prefix_ids is None:
            self.set_prefix(prompt_ids)
        n_prefix = len(self._prefix_ids)
        for ids in prompt_ids:
            if tuple(ids[:n_prefix]) != self._prefix_ids or len(ids) <= n_prefix:
                raise ValueError("a prompt does not start with the cached prefix; call set_prefix on all prompts")
        out: list[list[list[int]]] = [[] for _ in prompt_ids]
        self.last_entropy = [[] for _ in prompt_ids]
        per_chunk = max(1, self.batch_rows // m)
        # The random stream lives on the CPU on every device, so a seed draws the same uniforms on a GPU as here.
        generator = torch.Generator(device="cpu").manual_seed(seed)
        if step_fn is not None:
            step_fn = step_fn.to(self.device)  # the hook's tables onto the model's device once, not at every step
        for start in range(0, len(prompt_ids), per_chunk):
            chunk = list(range(start, min(start + per_chunk, len(prompt_ids))))
            rows, entropy = self._decode_chunk(
                [prompt_ids[q] for q in chunk], chunk, m, temperature, generator, step_fn, greedy
            )
            for q, responses, ent in zip(chunk, rows, entropy):
                out[q] = responses
                self.last_entropy[q] = ent
        return out

    def _forward(self, ids, pos, cache, mask, shared: SharedKV | None) -> torch.Tensor:
        """The model's last-position logits ``[rows, V]`` (through shared-KV attention when ``shared`` is given).

        The inputs are on the model's device already (the row state lives there).
        """
        from contamlab.decoding.shared_kv import shared_kv_attention_for

        if shared is None:
            return self.model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=pos,
                cache=cache,
                use_cache=True,
            ).logits[:, -1, :]
        with shared_kv_attention_for(self.model):
            return self.model(
                input_ids=ids,
                position_ids=pos,
                cache=cache,
                use_cache=True,
                shared_kv=shared,
            ).logits[:, -1, :]

    def prefill(self, prompts: Sequence[Sequence[int]], m: int, owners: Sequence[int] | None = None) -> Prefilled:
        """Prefill one chunk's question blocks after the cached prefix and set up its ``len(prompts) * m`` rows.

        ``owners`` are the prompts' indices in the caller's list (default ``0..len(prompts)-1``), for a model's own
        cache that answers prompts differently (:meth:`_expanded_prefix`).
        """
        from contamlab.decoding.kv_cache import cache_bytes, growing_cache
        from contamlab.decoding.shared_kv import SharedKV

        n_prefix = len(self._prefix_ids)
        n_q = len(prompts)
        suffixes = [p[n_prefix:] for p in prompts]
        # Prefill the question blocks, right-aligned after the shared prefix: [prefix][pad…][question].
        ids, question_mask = pad_batch(suffixes, self.pad_id, left=True, device=self.device)  # [Q, W] each
        prefix_mask = torch.ones((n_q, n_prefix), dtype=torch.long, device=self.device)  # [Q, P]
        mask = torch.cat([prefix_mask, question_mask], dim=1)  # [Q, P + W]
        pos = (n_prefix + question_mask.cumsum(dim=1) - 1) * question_mask  # [Q, W]: positions go on from the prefix
        owner = torch.arange(n_q, device=self.device).repeat_interleave(m)  # [R] index into this chunk
        shared = None
        t0 = time.perf_counter()
        if self.shared_kv:
            # The question blocks get their own cache, read by their m rows; the rows' cache starts empty.
            blocks = growing_cache(self.model.config)
            prefill = SharedKV(prefix=self._prefix_cache, row_mask=question_mask.bool())
            logits = self._forward(ids, pos, blocks, None, prefill)  # [Q, V]
            shared = SharedKV(self._prefix_cache, blocks, question_mask.bool(), owner)
            cache = growing_cache(self.model.config, reserve=self.max_new_tokens)
            kv_held = cache_bytes(self._prefix_cache) + cache_bytes(blocks)
        else:
            cache = self._expanded_prefix(range(n_q) if owners is None else owners)
            logits = self._forward(ids, pos, cache, mask, None)  # [Q, V]
            kv_held = cache_bytes(self._prefix_cache)
        forward_s = time.perf_counter() - t0
        next_pos = torch.tensor([n_prefix + len(s) for s in suffixes], device=self.device)  # [Q]
        # Expand each question to its m rows (the question's KV is computed once).
        if m > 1:
            if shared is None:
                cache.batch_repeat_interleave(m)
            logits = logits.repeat_interleave(m, dim=0)
            mask = mask.repeat_interleave(m, dim=0)
            next_pos = next_pos.repeat_interleave(m)
        return Prefilled(logits, cache, shared, mask, next_pos, owner, kv_held, forward_s)

    def _decode_chunk(self, prompts, owners, m, temperature, generator, step_fn, greedy):
        from contamlab.decoding.kv_cache import cache_bytes

        started = time.perf_counter()
        batch = self.prefill(prompts, m, owners)
        logits, cache, shared, forward_s, n_q = batch.logits, batch.cache, batch.shared, batch.forward_s, len(prompts)
        n_rows = n_q * m
        # Every row's state lives on the model's device: the per-step hooks and the forward read it without copies.
        device = self.device
        n_seen = batch.mask.shape[1]
        ahead = torch.ones((n_rows, self.max_new_tokens), dtype=batch.mask.dtype, device=device)  # [R, T]
        rows = Rows(
            mask=torch.cat([batch.mask, ahead], dim=1),  # [R, S + T]
            next_pos=batch.next_pos,
            # written in place, one column per step (no copy of the whole history per step); hooks see views
            tokens=torch.full((n_rows, self.max_new_tokens), self.pad_id, dtype=torch.long, device=device),
            owner_local=batch.owner,
            owner_global=torch.tensor(owners, device=device)[batch.owner],
            row_index=torch.arange(n_rows, device=device),
            alive=torch.ones(n_rows, dtype=torch.bool, device=device),
            entropy_sum=torch.zeros(n_rows, dtype=torch.float64, device=device),
        )
        results: list[list[int] | None] = [None] * n_rows
        entropy_out = [0.0] * n_rows
        n_generated = 0
        for step in range(self.max_new_tokens):
            logits = logits.float()
            if greedy:
                logp = torch.log_softmax(logits, dim=-1)  # [R, V] raw logits, temperature 1
                rows.entropy_sum += -(logp.exp() * logp).sum(-1).double() * rows.alive
            if step_fn is not None:
                logits = step_fn(logits, rows.tokens[:, :step], rows.owner_global)
            if greedy:
                token = logits.argmax(dim=-1)  # [R]
            else:
                probs = torch.softmax(logits / temperature, dim=-1)  # [R, V]
                token = self._draw(probs, generator)  # [R]
            token = torch.where(rows.alive, token, torch.full_like(token, self.pad_id))
            rows.tokens[:, step] = token
            generated = rows.tokens[:, : step + 1]  # [R, t + 1]
            n_generated += int(rows.alive.sum())
            finished = rows.alive & (token == self.eos_id)
            if self.stop:
                finished |= self._hit_stop(generated, rows.alive & ~finished)
            if step == self.max_new_tokens - 1:
                finished |= rows.alive
            for r in finished.nonzero().flatten().tolist():
                results[int(rows.row_index[r])] = self._trim(generated[r].tolist())
                entropy_out[int(rows.row_index[r])] = float(rows.entropy_sum[r]) / (step + 1)
            rows.alive &= ~finished
            if not rows.alive.any():
                break
            if (~rows.alive).sum() >= max(1, int(self.compact_fraction * rows.alive.numel())):
                keep = rows.alive.nonzero().flatten()  # [R']
                rows.keep(keep)
                cache.batch_select_indices(keep)
                token = token[keep]
                if shared is not None:
                    shared.set_owner(rows.owner_local)
            t0 = time.perf_counter()
            logits = self._forward(
                token[:, None], rows.next_pos[:, None], cache, rows.mask[:, : n_seen + step + 1], shared
            )
            forward_s += time.perf_counter() - t0  # logits: [R, V]
            rows.next_pos = rows.next_pos + 1
        kv_held = batch.kv_held + cache_bytes(cache)
        self.stats.peak_kv_bytes = max(self.stats.peak_kv_bytes, kv_held)
        self.stats.generated_tokens += n_generated
        self.stats.forward_s += forward_s
        self.stats.wall_s += time.perf_counter() - started
        responses = [[results[q * m + j] for j in range(m)] for q in range(n_q)]
        return responses, [[entropy_out[q * m + j] for j in range(m)] for q in range(n_q)]

    def _hit_stop(self, generated: torch.Tensor, rows: torch.Tensor | None = None) -> torch.Tensor:
        """Rows (among ``rows``, default all) whose decoded tail contains a stop string ([R] bool).

        Checked every step, so a stop string can only have completed with the newest token, which then produces its
        last character: only rows whose newest token can (:attr:`_stop_enders`) are decoded.
        """
        device = generated.device
        candidates = (
            torch.ones(generated.shape[0], dtype=torch.bool, device=device) if rows is None else rows.clone()
        )  # [R]
        if self._stop_enders is not None:
            candidates &= torch.isin(generated[:, -1], self._stop_enders)
        hit = torch.zeros(generated.shape[0], dtype=torch.bool, device=device)  # [R]
        check = candidates.nonzero().flatten()
        if check.numel():
            tails = generated[check, -self._stop_window :].tolist()
            tails = self.tokenizer.batch_decode(tails, skip_special_tokens=False)
            found = [any(s in tail for s in self.stop) for tail in tails]
            hit[check] = torch.tensor(found, dtype=torch.bool, device=device)
        return hit

    def cache_fields(self) -> dict:
        """What besides model, prompts and seed changes this sampler's samples (the sample-cache key)."""
        fields = {"batch_rows": self.batch_rows, "compact_fraction": self.compact_fraction}
        if self.draw != "multinomial":
            fields["draw"] = self.draw
        if self.shared_kv:
            fields["kv"] = "shared"  # another attention kernel: other float rounding, so possibly other samples
        return fields

    def close(self) -> None:
        """Nothing to free: the model belongs to the caller, and the prefix cache goes with this object."""

    def _draw(self, probs: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """One token per row from ``probs`` ([R, V] on the model's device), returned on that device.

        ``multinomial`` makes torch draw exponential noise for every vocabulary entry: 15 % of SmolLM2's decode time
        with a 49k vocabulary, 21 % of the tiny model's; it runs on the CPU (the generator's device), so on a GPU it
        copies ``probs`` to the host every step. ``inverse_cdf`` (every model config's draw) draws one uniform per row
        on the CPU generator, moves those R numbers to the device and searches the cumulative distribution there:
        the same distribution, other samples, and the same uniforms for a seed on every device.
        """
        if self.draw == "multinomial":
            return torch.multinomial(probs.cpu(), 1, generator=generator).squeeze(1).to(probs.device)
        cdf = probs.double().cumsum(dim=-1)  # [R, V]
        u = torch.rand((probs.shape[0], 1), generator=generator, dtype=torch.float64, device="cpu")  # [R, 1]
        u = u.to(probs.device) * cdf[:, -1:]  # [R, 1]
        return torch.searchsorted(cdf, u, right=True).squeeze(1).clamp_max(probs.shape[1] - 1)  # [R]

    def _trim(self, ids: list[int]) -> list[int]:
        return trim_response(ids, self.tokenizer, self.eos_id, self.stop)
