"""Strategies inside the real sampler, the sample pipeline and its cache, on a small random GPT-NeoX."""

import pytest
import torch

from contamlab.config import load_domain
from contamlab.decoding import railcap
from contamlab.decoding.lne import LNEBlocking
from contamlab.decoding.pipeline import greedy_set, sample_set
from contamlab.decoding.railcap import RailCap
from contamlab.decoding.sampler import HFSampler
from contamlab.decoding.strategy import AllZero, StepHook, Strategy
from contamlab.decoding.ted import TED
from contamlab.models.tiny import build_tiny_model, train_tokenizer


@pytest.fixture(scope="module")
def world():
    domain = load_domain("arith", generator={"n_train": 200, "n_test": 6})
    tok = train_tokenizer([domain.prompt(q) + domain.target(q) for q in domain.train], 400)
    model = build_tiny_model(len(tok), hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, seed=2).eval()
    # Sharpen the random model so that samples follow its greedy path often enough to trigger RailCap.
    with torch.no_grad():
        model.gpt_neox.final_layer_norm.weight.mul_(12.0)
    return domain, tok, model


def reference_decode(model, prompt_ids, greedy, m, temperature, seed, n, mode, max_new, eos, greedy_decode=False):
    """Algorithm 1 step by step: full forward passes (no cache), the literal per-row RailCap rule."""
    generator = torch.Generator().manual_seed(seed)
    rows = [[] for _ in range(m)]
    alive = [True] * m
    for _ in range(max_new):
        seqs = torch.tensor([prompt_ids + r for r in rows])  # all rows have the same length
        with torch.no_grad():
            logits = model(seqs).logits[:, -1, :].float()
        for i in range(m):
            if alive[i]:
                logits[i] = railcap.railcap_reference_step(logits[i], rows[i], greedy, n, mode)
        if greedy_decode:
            token = logits.argmax(-1)
        else:
            token = torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=generator).squeeze(1)
        for i in range(m):
            if alive[i]:
                rows[i].append(int(token[i]))
                alive[i] = int(token[i]) != eos
            else:
                rows[i].append(1)
        if not any(alive):
            break
    return [r[: r.index(eos)] if eos in r else r for r in rows]


@pytest.mark.parametrize(("mode", "greedy_decode", "temperature"), [("cap", False, 0.5), ("ban", True, 1.0)])
def test_railcap_sampler_equals_reference_loop(world, mode, greedy_decode, temperature):
    domain, tok, model = world
    # no compaction; the reference loop draws with torch.multinomial over full forward passes (copied KV)
    sampler = HFSampler(
        model, tok, max_new_tokens=30, batch_rows=64, compact_fraction=1.0, draw="multinomial", shared_kv=False
    )
    prompt = sampler.encode([domain.prompt(domain.test[0])])
    sampler.set_prefix(prompt)
    greedy = sampler.decode(prompt, m=1, temperature=1.0, seed=0, greedy=True)[0][0]
    table = railcap.build_table([greedy], 2)
    calls = {"capped": 0}

    class Counting(StepHook):  # RailCap's step, counting the rows it changes
        def __call__(self, logits, generated, owner):
            before = logits.clone()
            after = railcap.railcap_step(logits, generated, owner, table, mode=mode)
            calls["capped"] += int((after != before).any(-1).sum())
            return after

    hook = Counting()

    m = 1 if greedy_decode else 6
    ours = sampler.decode(prompt, m=m, temperature=temperature, seed=11, step_fn=hook, greedy=greedy_decode)[0]
    ref = reference_decode(model, prompt[0], greedy, m, temperature, 11, 2, mode, 30, tok.eos_token_id, greedy_decode)
    assert calls["capped"] > 0, "the test never exercised a cap"
    assert ours == ref
    if mode == "ban":
        assert ours[0] != greedy


def test_pipeline_strategies_and_cache(world, tmp_path):
    domain, tok, model = world
    # multinomial draw, copied KV: under inverse_cdf with shared KV the ban below changes none of these few samples
    sampler = HFSampler(
        model, tok, stop=domain.format.stop, max_new_tokens=24, batch_rows=64, draw="multinomial", shared_kv=False
    )
    qs, key = domain.test, {"source": "random-tiny"}
    greedy = greedy_set(sampler, domain, qs, key, str(tmp_path), chunk_questions=4, progress=False)
    assert [g.id for g in greedy] == [q.id for q in qs] and all(g.greedy_entropy > 0 for g in greedy)

    def run(strategy, m=4):
        return sample_set(
            sampler,
            domain,
            qs,
            strategy,
            m=m,
            temperature=0.7,
            seed=5,
            model_key=key,
            cache_root=str(tmp_path),
            greedy=greedy,
            chunk_questions=4,
            progress=False,
        )

    identity = run(Strategy())
    assert all(s.m == 4 and all(s.kept) for s in identity)
    ted = run(TED(tau=1000))  # every sample within 1000 tokens of the greedy: none survives
    assert [s.sample_texts for s in ted] == [s.sample_texts for s in identity]  # reuses identity's samples
    assert all(s.solve_probability() == 0.0 and not any(s.kept) for s in ted)
    zero = run(AllZero())
    assert all(s.solve_probability() == 0.0 for s in zero)
    blocked = run(LNEBlocking(decode="greedy"))
    assert all(len(set(map(tuple, s.sample_ids))) == 1 for s in blocked)
    capped = run(RailCap(n=2, mode="ban"))
    assert [s.sample_texts for s in capped] != [s.sample_texts for s in identity]

    # a finished set is reused without generating anything
    before = sampler.stats.generated_tokens
    assert [s.sample_texts for s in run(Strategy())] == [s.sample_texts for s in identity]
    assert sampler.stats.generated_tokens == before


def test_resume_after_kill_and_damaged_chunk(world, tmp_path):
    domain, tok, model = world
    sampler = HFSampler(model, tok, stop=domain.format.stop, max_new_tokens=16, batch_rows=64)
    qs, key = domain.test, {"source": "random-tiny"}
    greedy = greedy_set(sampler, domain, qs, key, str(tmp_path), chunk_questions=2, progress=False)
    run = dict(m=3, temperature=0.7, seed=0, model_key=key, cache_root=str(tmp_path), greedy=greedy, chunk_questions=2)
    full = sample_set(sampler, domain, qs, Strategy(), **run, progress=False)
    chunks = sorted(tmp_path.rglob("chunk-*.parquet"))
    sample_chunks = [c for c in chunks if (c.parent / "meta.json").read_text().count('"samples"')]
    assert len(sample_chunks) == 3
    sample_chunks[2].unlink()  # the run was killed before its last chunk
    sample_chunks[0].write_bytes(b"garbage")  # and a file was damaged
    before = sampler.stats.generated_tokens
    again = sample_set(sampler, domain, qs, Strategy(), **run, progress=False)
    assert [s.sample_texts for s in again] == [s.sample_texts for s in full]
    assert sampler.stats.generated_tokens > before  # two chunks were recomputed
    assert not list(tmp_path.rglob("*.tmp"))
