"""A plain sampling loop over ``model.generate`` used by the calibration check of the default world.

It is the straightforward baseline (left padding, ``num_return_sequences=m``, the prompt prefilled m times); the
sampler of :mod:`contamlab.decoding` supersedes it for evaluation. Kept as the reference that benchmarks compare to.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import torch
from tqdm.auto import tqdm
from transformers import PreTrainedModel, PreTrainedTokenizerBase


@dataclass
class QuestionSamples:
    """Greedy response and m sampled responses of one prompt (texts cut at the stop markers)."""

    greedy: str
    samples: list[str]


def _decode(tokenizer, ids: torch.Tensor, stop: Sequence[str]) -> str:
    text = tokenizer.decode(ids, skip_special_tokens=True)
    for marker in stop:
        index = text.find(marker)
        if index >= 0:
            text = text[:index]
    return text


@torch.inference_mode()
def generate_samples(
    model: PreTrainedModel,
    tokenizer: PreTrainedTokenizerBase,
    prompts: Sequence[str],
    m: int,
    temperature: float,
    max_new_tokens: int,
    stop: Sequence[str] = (),
    seed: int = 0,
    batch_size: int = 16,
    desc: str = "sampling",
) -> list[QuestionSamples]:
    """Greedy + ``m`` samples at ``temperature`` (full softmax: top-k 0, top-p 1) for every prompt."""
    tokenizer.padding_side = "left"
    results: list[QuestionSamples] = []
    common = {
        "max_new_tokens": max_new_tokens,
        "pad_token_id": tokenizer.pad_token_id,
        "eos_token_id": tokenizer.eos_token_id,
    }
    for start in tqdm(range(0, len(prompts), batch_size), desc=desc, unit="batch"):
        chunk = list(prompts[start : start + batch_size])
        enc = tokenizer(chunk, return_tensors="pt", padding=True)
        n_prompt = enc["input_ids"].shape[1]
        greedy = model.generate(**enc, do_sample=False, **common)  # [B, n_prompt + T]
        torch.manual_seed(seed + start)
        sampled = model.generate(
            **enc,
            do_sample=True,
            temperature=temperature,
            top_k=0,
            top_p=1.0,
            num_return_sequences=m,
            **common,
        )  # [B * m, n_prompt + T]
        for row in range(len(chunk)):
            samples = [_decode(tokenizer, sampled[row * m + j, n_prompt:], stop) for j in range(m)]
            results.append(QuestionSamples(_decode(tokenizer, greedy[row, n_prompt:], stop), samples))
    return results
