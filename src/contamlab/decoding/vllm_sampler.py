"""The vLLM sampling backend (``sampler=vllm``): the HF sampler's interface on a vLLM engine, for GPU bulk sampling.

The :class:`~contamlab.decoding.sampler.Sampler` protocol on a vLLM engine, so :mod:`~contamlab.decoding.pipeline`
runs on either backend. Differences in how:

- the engine is built from the model's *source* (hub id, local directory, or a peft adapter directory, served as a
  vLLM ``LoRARequest`` on its base), not from a loaded HF model;
- vLLM's automatic prefix caching shares prompt prefixes, and ``SamplingParams.n = m`` prefills each prompt once;
- a strategy's per-step hook reaches vLLM as per-request ``extra_args`` read by the logits processors of
  :mod:`~contamlab.decoding.vllm_processors`, which call the same pure functions as the HF backend
  (:func:`~contamlab.decoding.railcap.railcap_step`, :func:`~contamlab.decoding.lne.lne_step`);
- each request has its own seed (drawn from the call's seed), so a call is reproducible on a given GPU and vLLM
  version, though not bit-identical to the HF backend's samples. Greedy decoding matches the HF backend.
"""

from __future__ import annotations

import gc
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import torch

from contamlab.decoding.sampler import DecodeStats, common_prefix, encode_prompts, trim_response
from contamlab.decoding.strategy import StepHook
from contamlab.decoding.vllm_processors import entropy_args, pop_entropy, processor_class
from contamlab.errors import ContamlabError
from contamlab.models.store import read_adapter

WORKER_EXTENSION = "contamlab.decoding.vllm_processors.EntropyWorkerExtension"


def strategy_extra_args(step_fn: StepHook | None, n_questions: int) -> list[dict[str, Any]]:
    """A strategy's per-step hook as per-question vLLM ``extra_args`` (the hook's own ``vllm_args``).

    Args:
        step_fn: The hook (:class:`~contamlab.decoding.strategy.StepHook`) or None for plain sampling.
        n_questions: Number of questions (rows of the hook's per-question state).

    Returns:
        One ``extra_args`` dict per question.

    Raises:
        ContamlabError: For a hook that does not say what it needs from a vLLM request (a bare Python callable).
    """
    if step_fn is None:
        return [{} for _ in range(n_questions)]
    args = step_fn.vllm_args(n_questions)
    if args is None:
        raise ContamlabError(
            f"sampler=vllm cannot run the step hook {step_fn!r}: vLLM applies strategies as logits processors "
            "(railcap, lne). Use sampler=hf for other strategies."
        )
    return args


class VLLMSampler:
    """Greedy / temperature sampling on a vLLM engine, with RailCap and LNE-blocking as logits processors.

    Args:
        model: Model source: a hub id, a local model directory, or a local peft LoRA adapter directory.
        tokenizer: The model's HF tokenizer (prompts are encoded with it, exactly as the HF backend does); loaded from
            ``model`` when None.
        stop: Strings that end a response.
        max_new_tokens: Token budget per response.
        name: Backend name (``vllm``), recorded with the results.
        tensor_parallel_size: GPUs per engine.
        gpu_memory_utilization: Share of GPU memory vLLM may take (weights + KV cache).
        enforce_eager: Skip CUDA graphs (faster start, slower steps).
        dtype: ``auto``, ``float32``, ``bfloat16`` or ``float16``.
        max_model_len: Context length (None: the model's).
        seed: Engine seed (per-request seeds come from :meth:`decode`).
        max_num_seqs: Maximum concurrent sequences.
        max_lora_rank: Largest LoRA rank served (raised to the adapter's rank when smaller).
        trust_remote_code: Allow code from the model repository (off by default).
        revision: Hub revision of the model.
        engine_kwargs: Further ``vllm.LLM`` arguments (e.g. ``distributed_executor_backend``).
    """

    # Built from the model's source (path or hub id) rather than from a loaded HF model: see pipeline.sample_model.
    takes_source: ClassVar[bool] = True

    def __init__(
        self,
        model: str | Path,
        tokenizer: Any = None,
        stop: Sequence[str] = (),
        max_new_tokens: int = 256,
        name: str = "vllm",
        tensor_parallel_size: int = 1,
        gpu_memory_utilization: float = 0.9,
        enforce_eager: bool = False,
        dtype: str = "auto",
        max_model_len: int | None = None,
        seed: int = 0,
        max_num_seqs: int = 256,
        max_lora_rank: int = 64,
        trust_remote_code: bool = False,
        revision: str | None = None,
        engine_kwargs: dict[str, Any] | None = None,
    ) -> None:
        if max_new_tokens <= 0:
            raise ValueError(f"max_new_tokens={max_new_tokens}: must be positive")
        if not isinstance(model, (str, Path)):
            raise ContamlabError(
                "sampler=vllm builds its own engine from the model source (hub id or directory), "
                f"not from a loaded model object ({type(model).__name__})"
            )
        try:
            from vllm import LLM
            from vllm.engine.arg_utils import EngineArgs
            from vllm.lora.request import LoRARequest
        except ImportError as err:
            from contamlab.decoding.vllm_processors import INSTALL_HINT

            raise ContamlabError(f"sampler=vllm: {INSTALL_HINT} ({err})") from None
        self.name = name
        self.source = str(model)
        self.stop = tuple(stop)
        self.max_new_tokens = max_new_tokens
        adapter = read_adapter(self.source) if Path(self.source).is_dir() else None
        if adapter is not None and not adapter.base:
            raise ContamlabError(f"{self.source}: adapter has no base_model_name_or_path; cannot serve it with vLLM")
        base = adapter.base if adapter else self.source
        if tokenizer is None:
            from contamlab.models.loading import load_tokenizer

            tokenizer = load_tokenizer(self.source, trust_remote_code)
        self.tokenizer = tokenizer
        self.eos_id = tokenizer.eos_token_id
        args: dict[str, Any] = dict(
            model=base,
            tokenizer=base,
            tensor_parallel_size=tensor_parallel_size,
            gpu_memory_utilization=gpu_memory_utilization,
            enforce_eager=enforce_eager,
            dtype=dtype,
            max_model_len=max_model_len,
            seed=seed,
            max_num_seqs=max_num_seqs,
            trust_remote_code=trust_remote_code,
            revision=revision,
            generation_config="vllm",  # neutral sampling defaults, as the HF backend (no model-preferred top-p)
            worker_extension_cls=WORKER_EXTENSION,
            **(engine_kwargs or {}),
        )
        self.lora_request = None
        if adapter:
            args.update(enable_lora=True, max_loras=1, max_lora_rank=max(max_lora_rank, adapter.rank))
            self.lora_request = LoRARequest("contamlab-adapter", 1, self.source)
        # The processor class must match the model runner the engine will pick (VllmConfig.use_v2_model_runner).
        self.processor = processor_class(EngineArgs(**args).create_engine_config())
        self.llm = LLM(logits_processors=[self.processor], **args)
        if self.llm.llm_engine.vllm_config.use_v2_model_runner != (self.processor.__name__.endswith("V2")):
            raise RuntimeError(f"vLLM picked another model runner than {self.processor.__name__} was built for")
        self.stats = DecodeStats()
        self.last_entropy: list[list[float]] = []
        self._prefix = 0

    # -- prompt handling (as the HF backend) -------------------------------------------------------------------------
    def encode(self, prompts: Sequence[str]) -> list[list[int]]:
        """Tokenise prompts exactly as the HF backend does."""
        return encode_prompts(self.tokenizer, prompts)

    def set_prefix(self, prompt_ids: Sequence[Sequence[int]]) -> int:
        """Length of the shared prompt prefix; vLLM's automatic prefix caching computes its KV cache once."""
        self._prefix = min(common_prefix(prompt_ids), min(len(p) for p in prompt_ids) - 1)
        return self._prefix

    def _trim(self, ids: list[int]) -> list[int]:
        # The HF backend's cut (at EOS, and before a stop string), so both backends return the same token ids.
        return trim_response(list(ids), self.tokenizer, self.eos_id, self.stop)

    # -- decoding ----------------------------------------------------------------------------------------------------
    def decode(
        self,
        prompt_ids: Sequence[Sequence[int]],
        m: int,
        temperature: float,
        seed: int,
        step_fn: StepHook | None = None,
        greedy: bool = False,
    ) -> list[list[list[int]]]:
        """:meth:`~contamlab.decoding.sampler.Sampler.decode` on the engine.

        Request q gets its own seed drawn from ``seed``, and the hook runs as a vLLM logits processor (its
        ``vllm_args``).
        """
        from vllm import SamplingParams

        if not greedy and not temperature > 0:
            raise ValueError(f"temperature={temperature}: must be > 0 for sampling")
        started = time.perf_counter()
        extra = strategy_extra_args(step_fn, len(prompt_ids))
        seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=len(prompt_ids)).tolist()
        call = uuid.uuid4().hex
        params = []
        for q, args in enumerate(extra):
            if greedy:
                args = {**args, **entropy_args(f"{call}-{q}")}
            params.append(
                SamplingParams(
                    n=m,
                    temperature=0.0 if greedy else float(temperature),
                    seed=int(seeds[q]),
                    max_tokens=self.max_new_tokens,
                    stop=list(self.stop) or None,
                    stop_token_ids=[self.eos_id] if self.eos_id is not None else None,
                    extra_args=args or None,
                )
            )
        prompts = [{"prompt_token_ids": list(ids)} for ids in prompt_ids]
        outputs = self.llm.generate(prompts, params, use_tqdm=False, lora_request=self.lora_request)
        out = [[self._trim(c.token_ids) for c in sorted(o.outputs, key=lambda c: c.index)] for o in outputs]
        entropy = pop_entropy(self.llm) if greedy else {}
        missing = [q for q in range(len(prompt_ids)) if greedy and f"{call}-{q}" not in entropy]
        if missing:  # a silent default would become LNE-blocking's n_block and be cached with the greedy set
            raise ContamlabError(f"sampler=vllm: no greedy entropy came back for {len(missing)} prompt(s)")
        self.last_entropy = [[entropy.get(f"{call}-{q}", 0.0)] * m for q in range(len(prompt_ids))]
        self.stats.generated_tokens += sum(len(c.token_ids) for o in outputs for c in o.outputs)
        self.stats.wall_s += time.perf_counter() - started
        return out

    def cache_fields(self) -> dict:
        """Nothing beyond the seed: every request draws from its own seeded stream, whatever the batching."""
        return {}

    def close(self) -> None:
        """Shut the engine down and free its memory (call before building another engine in this process)."""
        llm = self.__dict__.pop("llm", None)
        if llm is None:
            return
        llm.llm_engine.engine_core.shutdown()
        del llm
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def __enter__(self) -> VLLMSampler:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
