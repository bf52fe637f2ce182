"""The HF sampler against plain `generate` on a small random GPT-NeoX (seconds)."""

import pytest
import torch

from contamlab.config import load_domain
from contamlab.decoding.sampler import HFSampler, common_prefix
from contamlab.models.tiny import build_tiny_model, train_tokenizer


@pytest.fixture(scope="module")
def world():
    torch.manual_seed(0)
    domain = load_domain(
        "arith",
        generator={"n_train": 200, "n_test": 12},
        prompt={
            "n_shot": 2,
            "question_prefix": "Question: ",
            "answer_prefix": "\nAnswer:",
            "solution_style": "gsm8k",
            "stop": ["\nQuestion:"],
        },
    )
    texts = [domain.prompt(q) + domain.target(q) for q in domain.train]
    tok = train_tokenizer(texts, 400)
    model = build_tiny_model(len(tok), hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, seed=1).eval()
    prompts = [domain.prompt(q) for q in domain.test]
    return domain, tok, model, prompts


def reference_greedy(model, tok, prompt, max_new):
    ids = torch.tensor([tok(prompt)["input_ids"]])
    out = model.generate(
        ids, do_sample=False, max_new_tokens=max_new, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id
    )[0, ids.shape[1] :].tolist()
    return out[: out.index(tok.eos_token_id)] if tok.eos_token_id in out else out


def test_common_prefix():
    assert common_prefix([[1, 2, 3], [1, 2, 4], [1, 2]]) == 2
    assert common_prefix([[5], [6]]) == 0


@pytest.mark.parametrize("shared_kv", [False, True])
@pytest.mark.parametrize("batch_rows", [1, 5, 64])
def test_greedy_matches_generate(world, batch_rows, shared_kv):
    domain, tok, model, prompts = world
    sampler = HFSampler(model, tok, stop=(), max_new_tokens=12, batch_rows=batch_rows, shared_kv=shared_kv)
    ids = sampler.encode(prompts)
    assert sampler.set_prefix(ids) > 10  # the 2-shot exemplars are shared
    out = sampler.decode(ids, m=1, temperature=1.0, seed=0, greedy=True)
    for q, prompt in enumerate(prompts):
        assert out[q][0] == reference_greedy(model, tok, prompt, 12)
    assert all(len(e) == 1 and e[0] > 0 for e in sampler.last_entropy)


def test_sampling_is_seeded_and_shaped(world):
    domain, tok, model, prompts = world
    sampler = HFSampler(model, tok, max_new_tokens=10, batch_rows=16)
    ids = sampler.encode(prompts)
    a = sampler.decode(ids, m=4, temperature=0.7, seed=3)
    b = sampler.decode(ids, m=4, temperature=0.7, seed=3)
    c = sampler.decode(ids, m=4, temperature=0.7, seed=4)
    assert a == b and a != c
    assert len(a) == len(prompts) and all(len(rows) == 4 for rows in a)
    assert sampler.stats.generated_tokens > 0 and sampler.stats.tokens_per_s > 0


@pytest.mark.parametrize("draw", ["multinomial", "inverse_cdf"])
@pytest.mark.parametrize("shared_kv", [False, True])
def test_samples_follow_the_model_distribution(world, shared_kv, draw):
    """First-token frequencies of many samples match softmax(logits / τ) of an unbatched forward pass."""
    domain, tok, model, prompts = world
    sampler = HFSampler(model, tok, max_new_tokens=1, batch_rows=4000, draw=draw, shared_kv=shared_kv)
    ids = sampler.encode(prompts[:1])
    out = sampler.decode(ids, m=4000, temperature=2.0, seed=0)
    first = torch.tensor([r[0] if r else tok.eos_token_id for r in out[0]])
    with torch.no_grad():
        probs = torch.softmax(model(torch.tensor(ids[:1])).logits[0, -1] / 2.0, -1)
    freq = torch.bincount(first, minlength=probs.numel()).float() / 4000
    assert (freq - probs).abs().max() < 0.03


def test_stop_string_cuts_response(world):
    domain, tok, model, prompts = world
    sampler = HFSampler(model, tok, stop=("\nQuestion:",), max_new_tokens=8)
    ids = tok(" 3 + 4 = 7\nQuestion: next", add_special_tokens=False)["input_ids"]
    trimmed = sampler._trim(ids)
    assert tok.decode(trimmed) == " 3 + 4 = 7"
    # checked every step, so the stop string is the row's tail when it completes
    ended = tok(" 3 + 4 = 7\nQuestion:", add_special_tokens=False)["input_ids"]
    other = (ended[:3] * 10)[: len(ended)]
    assert sampler._hit_stop(torch.tensor([ended, other])).tolist() == [True, False]


def test_stop_check_decodes_only_rows_whose_newest_token_can_end_a_stop_string(world):
    """The filtered check finds exactly the rows that decoding every row's tail finds."""
    domain, tok, model, prompts = world
    sampler = HFSampler(model, tok, stop=("\nQuestion:",), max_new_tokens=8)
    assert 0 < len(sampler._stop_enders) < len(tok)
    ended = tok(" 3 + 4 = 7\nQuestion:", add_special_tokens=False)["input_ids"]
    gen = torch.Generator().manual_seed(0)
    rows = torch.randint(0, len(tok), (400, 12), generator=gen)  # [R, t]
    rows[::7, -len(ended) :] = torch.tensor(ended)  # every 7th row ends with the stop string
    filtered = sampler._hit_stop(rows)
    sampler._stop_enders = None  # decode every row's tail
    assert torch.equal(filtered, sampler._hit_stop(rows))
    assert filtered[::7].all()


def test_a_prompt_outside_the_cached_prefix_is_refused(world):
    # batch_rows, draw, max_new_tokens and temperature are config values, checked once by validation.py
    # (tests/test_validation.py); the prefix is the sampler's own state
    domain, tok, model, prompts = world
    sampler = HFSampler(model, tok, max_new_tokens=4)
    ids = sampler.encode(prompts)
    sampler.set_prefix(ids)
    with pytest.raises(ValueError, match="prefix"):
        sampler.decode([[999, 998]], m=1, temperature=1.0, seed=0)


def test_inverse_cdf_draw_follows_the_distribution_and_never_picks_banned_tokens():
    from contamlab.decoding.sampler import HFSampler

    sampler = HFSampler.__new__(HFSampler)  # only the drawing rule is under test
    sampler.draw = "inverse_cdf"
    probs = torch.tensor([[0.5, 0.0, 0.3, 0.2, 0.0]]).repeat(20000, 1)  # [R, V]; tokens 1 and 4 banned
    tokens = sampler._draw(probs, torch.Generator().manual_seed(0))
    freq = torch.bincount(tokens, minlength=5).double() / len(tokens)
    assert freq[1] == 0 and freq[4] == 0
    assert torch.allclose(freq[[0, 2, 3]], torch.tensor([0.5, 0.3, 0.2], dtype=torch.float64), atol=0.015)
    again = sampler._draw(probs, torch.Generator().manual_seed(0))
    assert torch.equal(tokens, again)  # seeded


def test_shared_kv_samples_match_the_copying_sampler_and_hold_less_kv(world):
    """Sampling m rows per question with one copy of the prefix and question KV: the same tokens here (a random model
    has no near-ties at these steps), and far fewer KV bytes; the cache key names the mode."""
    domain, tok, model, prompts = world
    copying = HFSampler(model, tok, stop=(), max_new_tokens=10, batch_rows=64, shared_kv=False)
    shared = HFSampler(model, tok, stop=(), max_new_tokens=10, batch_rows=64, shared_kv=True)
    ids = copying.encode(prompts)
    assert copying.decode(ids, 8, 0.7, 5) == shared.decode(ids, 8, 0.7, 5)
    assert shared.stats.peak_kv_bytes * 4 < copying.stats.peak_kv_bytes
    assert shared.cache_fields() == {**copying.cache_fields(), "kv": "shared"}
