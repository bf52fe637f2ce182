"""Shortcut-neuron patching (Zhu et al. 2025): hooks, scores, ranking and its cache, the patched pair, end to end."""

import copy
import json
import logging

import pytest
import torch
from jobs import run_evaluate
from torch import nn

from contamlab.config import build, compose, load_domain
from contamlab.decoding import shortcut
from contamlab.decoding.sampler import HFSampler
from contamlab.decoding.shortcut import (
    PatchedPair,
    Ranking,
    ShortcutPatching,
    cached_ranking,
    capture_channels,
    causal_deltas,
    comparative_scores,
    locate,
    locate_set,
    mlp_output_projections,
    overwrite_channels,
    rms_difference,
)
from contamlab.errors import ContamlabError
from contamlab.models.tiny import build_tiny_model, train_tokenizer


# -- a hand-made model -------------------------------------------------------------------------------------------
class ToyMLP(nn.Module):
    def __init__(self, d: int, d_ff: int) -> None:
        super().__init__()
        self.up_proj = nn.Linear(d, d_ff)
        self.down_proj = nn.Linear(d_ff, d)

    def forward(self, x):
        return self.down_proj(torch.relu(self.up_proj(x)))


class ToyLayer(nn.Module):
    def __init__(self, d: int, d_ff: int) -> None:
        super().__init__()
        self.mlp = ToyMLP(d, d_ff)


class Toy(nn.Module):
    """Residual MLP stack: the smallest thing with decoder layers and an MLP output projection."""

    def __init__(self, n_layers: int = 3, d: int = 2, d_ff: int = 6) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.layers = nn.ModuleList([ToyLayer(d, d_ff) for _ in range(n_layers)])

    def forward(self, x):
        for layer in self.layers:
            x = x + layer.mlp(x)
        return x


def _ids(*values):
    return torch.tensor(values, dtype=torch.long)


def test_hooks_capture_and_overwrite_exactly_the_chosen_channels():
    toy = Toy()
    x = torch.randn(2, 3, 2)  # [B, S, d]
    with torch.no_grad():
        plain = toy(x)
        with capture_channels(toy, None, 3) as full:
            toy(x)
        full = {layer: acts.clone() for layer, acts in full.items()}
        channels = {0: _ids(1, 4), 1: _ids(0)}
        with capture_channels(toy, channels, 3) as chosen:
            toy(x)
        assert set(chosen) == {0, 1}
        assert torch.equal(chosen[0], full[0][..., [1, 4]]) and torch.equal(chosen[1], full[1][..., [0]])

        values = {0: torch.full((2, 3, 2), 7.0), 1: torch.full((2, 3, 1), -3.0)}
        with overwrite_channels(toy, channels, values), capture_channels(toy, None, 1) as seen:
            patched = toy(x)
        layer0 = seen[0]  # the input of layer 0's output projection after the overwrite
        assert torch.equal(layer0[..., [1, 4]], values[0])
        keep = [0, 2, 3, 5]
        assert torch.equal(layer0[..., keep], full[0][..., keep])
        assert not torch.equal(patched, plain)
        # the hooks are gone once the contexts close
        assert torch.equal(toy(x), plain)
        assert all(not p._forward_pre_hooks for p in mlp_output_projections(toy))


def test_hook_point_per_architecture():
    from transformers import LlamaConfig, LlamaForCausalLM

    neox = build_tiny_model(50, hidden_size=16, num_layers=2, num_heads=2, intermediate_size=24)
    assert [type(p).__name__ for p in mlp_output_projections(neox)] == ["Linear", "Linear"]
    assert mlp_output_projections(neox)[1] is neox.gpt_neox.layers[1].mlp.dense_4h_to_h
    llama = LlamaForCausalLM(
        LlamaConfig(vocab_size=50, hidden_size=16, intermediate_size=24, num_hidden_layers=3, num_attention_heads=2)
    )
    assert mlp_output_projections(llama)[2] is llama.model.layers[2].mlp.down_proj
    assert shortcut.neuron_layers(llama) == 2 and shortcut.neuron_layers(llama, include_last_layer=True) == 3
    with pytest.raises(ContamlabError, match="not supported"):
        mlp_output_projections(nn.Sequential(nn.Linear(2, 2)))


# -- Steps A–C on hand-made numbers ------------------------------------------------------------------------------
def test_rms_difference_is_the_comparative_formula():
    con = torch.tensor([[[1.0, 0.0]], [[3.0, 2.0]]])  # [T=2, L=1, d=2]
    un = torch.tensor([[[0.0, 0.0]], [[0.0, 4.0]]])
    # channel 0: sqrt((1 + 9) / 2) = sqrt(5); channel 1: sqrt((0 + 4) / 2) = sqrt(2)
    assert torch.allclose(rms_difference(con, un), torch.tensor([[5.0**0.5, 2.0**0.5]]))
    assert torch.equal(rms_difference(con[:0], un[:0]), torch.zeros(1, 2))


def test_ranking_is_the_unweighted_sum_in_descending_order():
    ranking = Ranking(
        comparative=torch.tensor([[0.1, 0.5, 0.2], [0.0, 0.3, 0.3]]),
        delta_con=torch.tensor([[0.5, 0.0, 0.0], [0.25, 0.0, 0.0]]),
        delta_base=torch.tensor([[0.0, 0.5, 0.0], [0.0, 0.0, 0.0]]),
    )
    final = torch.tensor([[0.6, 0.0, 0.2], [0.25, 0.3, 0.3]])
    assert torch.allclose(ranking.final, final)
    assert ranking.order().tolist() == [0, 4, 5, 3, 2, 1]  # the tie (0.3, 0.3) keeps index order
    top = ranking.top(3)
    assert {k: v.tolist() for k, v in top.items()} == {0: [0], 1: [1, 2]}
    assert ranking.top(0) == {}
    with pytest.raises(ContamlabError, match="top_k=7"):
        ranking.top(7)


def test_causal_deltas_broadcast_block_deltas():
    target, source = Toy(n_layers=3, d_ff=6), Toy(n_layers=3, d_ff=6)
    calls = []

    def accuracies(model, reference, variants):
        assert model is target and reference is source
        calls.append(len(variants))
        # the unpatched target first; block 2 of layer 1 (channels 4-5) holds the shortcut
        return [0.25 if v and {k: int(i[0]) for k, i in v.items()} == {1: 4} else 0.75 for v in variants]

    delta = causal_deltas(target, source, accuracies, n_layers=2, d_ff=6, block=2, per_decode=4)
    expected = torch.zeros(2, 6)
    expected[1, 4:6] = 0.5
    assert torch.equal(delta, expected)
    assert calls == [4, 3]  # 1 unpatched + 2 layers x 3 blocks, four channel sets per decode

    # a last block shorter than `block`; one channel set per decode
    def half(model, reference, variants):
        calls.append(len(variants))
        return [1.0 if not v else 0.5 for v in variants]

    calls.clear()
    delta = causal_deltas(target, source, half, 2, 6, block=4)
    assert torch.equal(delta, torch.full((2, 6), 0.5)) and calls == [1] * 5  # 1 unpatched + 2 layers x 2 blocks
    with pytest.raises(ValueError, match="accuracies"):
        causal_deltas(target, source, lambda t, r, vs: [1.0], 2, 6, block=4, per_decode=2)


def test_locate_set_is_a_seeded_stratified_half():
    domain = load_domain("arith", generator={"n_train": 50, "n_test": 20})
    leaked = domain.split.is_leaked
    half = locate_set(domain.test, leaked, 100, seed=42)
    assert len(half) == 10 and sum(leaked(q.id) for q in half) == 5
    assert [q.id for q in half] == [q.id for q in domain.test if q in half]  # test-set order
    assert half == locate_set(domain.test, leaked, 100, seed=42)
    assert half != locate_set(domain.test, leaked, 100, seed=43)
    small = locate_set(domain.test, leaked, 4, seed=42)
    assert len(small) == 4 and sum(leaked(q.id) for q in small) == 2


# -- the ranking cache -------------------------------------------------------------------------------------------
def test_ranking_cache_is_reused_and_a_corrupt_file_is_recomputed(tmp_path):
    path = tmp_path / "shortcut" / "abc.safetensors"
    key = {"models": {"clean": {"sha256": "1"}}, "locate": {"block": 2}}
    made = Ranking(torch.rand(2, 4), torch.rand(2, 4), torch.rand(2, 4))
    calls = []

    def compute():
        calls.append(1)
        return made

    first = cached_ranking(path, key, compute)
    assert len(calls) == 1 and path.is_file()
    assert not list(path.parent.glob(".*.tmp"))  # the atomic write left no temp file

    def fail():
        raise AssertionError("the cached ranking should have been reused")

    again = cached_ranking(path, key, fail)
    assert torch.equal(again.final, first.final) and torch.equal(again.order(), first.order())

    path.write_bytes(b"\x00garbage, not safetensors")
    cached_ranking(path, key, compute)
    assert len(calls) == 2 and torch.equal(Ranking.load(path, key).final, made.final)
    path.write_bytes(path.read_bytes()[:-5])  # truncated
    cached_ranking(path, key, compute)
    assert len(calls) == 3
    cached_ranking(path, {**key, "locate": {"block": 4}}, compute)  # another configuration
    assert len(calls) == 4


# -- the patched pair on a small random GPT-NeoX -----------------------------------------------------------------
@pytest.fixture(scope="module")
def world():
    # The generator pinned in full (not the default world's), so that the random model's outputs stay as designed.
    generator = {"n_train": 200, "n_test": 6, "level_weights": [3, 2, 1], "num_max": [9, 15, 30], "mul_max": [3, 5, 9]}
    domain = load_domain(
        "arith",
        generator=generator,
        prompt={
            "n_shot": 2,
            "question_prefix": "Question: ",
            "answer_prefix": "\nAnswer:",
            "solution_style": "gsm8k",
            "stop": ["\nQuestion:"],
        },
    )
    tok = train_tokenizer([domain.prompt(q) + domain.target(q) for q in domain.train], 400)
    kwargs = {"hidden_size": 32, "num_layers": 3, "num_heads": 2, "intermediate_size": 64}
    target = build_tiny_model(len(tok), seed=1, **kwargs).eval()
    reference = build_tiny_model(len(tok), seed=2, **kwargs).eval()
    with torch.no_grad():  # sharpen the random target, so that its greedy outputs differ between prompts
        for weight in target.parameters():
            if weight.ndim == 2:
                weight.mul_(10.0)
    prompts = [domain.prompt(q) for q in domain.test]
    return domain, tok, target, reference, prompts


def _all_channels(n_layers: int, d_ff: int):
    return {layer: torch.arange(d_ff) for layer in range(n_layers)}


def test_patching_everything_from_an_identical_reference_changes_nothing(world):
    domain, tok, target, _, prompts = world
    twin = copy.deepcopy(target)
    pair = PatchedPair(target, twin, _all_channels(2, 64))
    ids = torch.tensor([tok(prompts[0])["input_ids"]])
    with torch.no_grad():
        assert torch.equal(pair(input_ids=ids).logits, target(input_ids=ids).logits)
    plain = HFSampler(target, tok, max_new_tokens=12, batch_rows=8, shared_kv=False)  # copies KV, as the pair does
    patched = HFSampler(pair, tok, max_new_tokens=12, batch_rows=8)
    prompt_ids = plain.encode(prompts)
    assert patched.decode(prompt_ids, m=3, temperature=0.8, seed=5) == plain.decode(
        prompt_ids, m=3, temperature=0.8, seed=5
    )


def test_k0_is_identity(world):
    domain, tok, target, reference, prompts = world
    ranking = Ranking(torch.rand(2, 64), torch.zeros(2, 64), torch.zeros(2, 64))
    pair = PatchedPair(target, reference, ranking.top(0))
    plain = HFSampler(target, tok, max_new_tokens=12, batch_rows=8, shared_kv=False)  # copies KV, as the pair does
    patched = HFSampler(pair, tok, max_new_tokens=12, batch_rows=8)
    prompt_ids = plain.encode(prompts)
    assert patched.decode(prompt_ids, m=2, temperature=0.8, seed=1) == plain.decode(
        prompt_ids, m=2, temperature=0.8, seed=1
    )


def reference_patched_greedy(target, reference, channels, prompt_ids, max_new, eos):
    """Step D literally: full forward passes without cache, reference first, target with its channels replaced."""
    n_layers = max(channels) + 1
    out = list(prompt_ids)
    for _ in range(max_new):
        ids = torch.tensor([out])
        with torch.no_grad():
            with capture_channels(reference, channels, n_layers) as values:
                reference(input_ids=ids)
            with overwrite_channels(target, channels, values):
                token = int(target(input_ids=ids).logits[0, -1].argmax())
        if token == eos:
            break
        out.append(token)
    return out[len(prompt_ids) :]


@pytest.mark.parametrize(("m", "batch_rows"), [(1, 64), (2, 3)])
def test_pair_in_the_sampler_equals_the_step_by_step_loop(world, m, batch_rows):
    domain, tok, target, reference, prompts = world
    channels = {0: torch.tensor([3, 17, 40]), 1: torch.arange(0, 64, 2)}
    pair = PatchedPair(target, reference, channels)
    sampler = HFSampler(pair, tok, max_new_tokens=16, batch_rows=batch_rows, compact_fraction=0.01)
    prompt_ids = sampler.encode(prompts)
    assert sampler.set_prefix(prompt_ids) > 10  # the 2-shot exemplars are a shared prefix
    # A random model rarely says EOS: end rows at a token it emits at different steps, so the cache gets compacted.
    free = [reference_patched_greedy(target, reference, channels, p, 16, eos=-1) for p in prompt_ids]
    first = {t: {row.index(t) for row in free if t in row} for t in set(sum(free, []))}
    sampler.eos_id = max(sorted(first), key=lambda t: len(first[t]))
    out = sampler.decode(prompt_ids, m=m, temperature=1.0, seed=0, greedy=True)
    expected = [reference_patched_greedy(target, reference, channels, p, 16, sampler.eos_id) for p in prompt_ids]
    assert all(rows == [e] * m for rows, e in zip(out, expected))
    assert len({len(e) for e in expected}) > 2  # rows finished at different steps
    plain = HFSampler(target, tok, max_new_tokens=16).decode(prompt_ids, m=1, temperature=1.0, seed=0, greedy=True)
    assert [r[0] for r in plain] != free  # the patch does change the output


@pytest.mark.parametrize(("m", "batch_rows"), [(1, 64), (1, 4), (2, 5)])
def test_block_patched_pair_equals_one_pair_per_channel_set(world, m, batch_rows):
    # Step B's batched decode: each group of prompts gets exactly what its own PatchedPair decode (and the literal
    # step-by-step loop) gives, also when a decode chunk holds rows of two channel sets and rows finish apart.
    domain, tok, target, reference, prompts = world
    variants = [{}, {0: torch.tensor([3, 17, 40])}, {1: torch.arange(0, 64, 2)}]
    variants.append({0: torch.arange(32), 1: torch.tensor([5])})
    sampler = HFSampler(target, tok, max_new_tokens=16)
    prompt_ids = sampler.encode(prompts)
    free = [reference_patched_greedy(target, reference, variants[1], p, 16, eos=-1) for p in prompt_ids]
    first = {t: {row.index(t) for row in free if t in row} for t in set(sum(free, []))}
    eos = max(sorted(first), key=lambda t: len(first[t]))  # a token the rows emit at different steps
    pair = shortcut.BlockPatchedPair(target, reference, variants, len(prompt_ids))
    batched = HFSampler(pair, tok, max_new_tokens=16, batch_rows=batch_rows, compact_fraction=0.01)
    batched.eos_id = eos
    repeated = [p for _ in variants for p in prompt_ids]
    assert batched.set_prefix(repeated) > 10  # the 2-shot exemplars: computed once per channel set
    decoded = batched.decode(repeated, m=m, temperature=1.0, seed=0, greedy=True)
    assert all(rows == [rows[0]] * m for rows in decoded)  # greedy: a prompt's m rows agree
    out = [rows[0] for rows in decoded]
    n = len(prompt_ids)
    for v, channels in enumerate(variants):
        if channels:
            expected = [reference_patched_greedy(target, reference, channels, p, 16, eos) for p in prompt_ids]
        else:
            plain = HFSampler(target, tok, max_new_tokens=16, shared_kv=False)  # copies KV, as the pair does
            plain.eos_id = eos
            expected = [r[0] for r in plain.decode(prompt_ids, m=1, temperature=1.0, seed=0, greedy=True)]
        assert out[v * n : (v + 1) * n] == expected, v
    assert len({tuple(o) for o in out}) > n  # the channel sets do change the outputs
    with pytest.raises(TypeError, match="PromptCache"):
        pair(input_ids=torch.tensor([prompt_ids[0]]))


def test_prompt_cache_follows_its_rows_through_batch_edits(world):
    _, _, target, reference, _ = world
    cache = shortcut.BlockPatchedPair(target, reference, [{}], 1).make_cache()
    cache.bind_prompts(torch.tensor([7, 3, 5]))
    cache.batch_repeat_interleave(2)
    assert cache.prompt_index.tolist() == [7, 7, 3, 3, 5, 5]
    cache.batch_select_indices(torch.tensor([1, 4, 5]))
    assert cache.prompt_index.tolist() == [7, 5, 5]
    cache.reset()
    assert cache.prompt_index is None  # unbound: the next forward computes the prefix rows again


def test_comparative_scores_equal_rms_over_collected_tokens(world):
    domain, tok, target, reference, prompts = world
    prompt_ids = [tok(p)["input_ids"] for p in prompts[:3]]
    completions = [[5, 6, 7], [8], [9, 10]]
    for positions in ("completion", "last_prompt"):
        con_rows, un_rows = [], []
        for p, c in zip(prompt_ids, completions):
            keep = slice(len(p), len(p) + len(c)) if positions == "completion" else slice(len(p) - 1, len(p))
            for model, rows in ((target, con_rows), (reference, un_rows)):
                with torch.no_grad(), capture_channels(model, None, 2) as acts:
                    model(input_ids=torch.tensor([p + c]))
                rows.append(torch.stack([acts[layer][0, keep] for layer in range(2)], dim=1))  # [t, 2, d]
        expected = rms_difference(torch.cat(con_rows), torch.cat(un_rows))
        scores = comparative_scores(target, reference, prompt_ids, completions, 2, positions, batch_size=2)
        assert scores.shape == (2, 64) and torch.allclose(scores, expected, atol=1e-5)


def test_locate_on_a_tiny_world(world):
    domain, tok, target, reference, prompts = world
    base = build_tiny_model(len(tok), hidden_size=32, num_layers=3, num_heads=2, intermediate_size=64, seed=3).eval()
    config = shortcut.LocateConfig(questions=4, block=32, max_new_tokens=8)

    def make_sampler(model):
        return HFSampler(model, tok, stop=domain.format.stop, max_new_tokens=config.max_new_tokens)

    ranking = locate(target, reference, base, make_sampler, domain, domain.test[:4], config)
    assert ranking.comparative.shape == (2, 64) and (ranking.comparative > 0).all()
    for delta in (ranking.delta_con, ranking.delta_base):
        assert delta.shape == (2, 64) and (delta.abs() <= 1).all()
        assert torch.equal(delta[:, :32], delta[:, :1].expand(-1, 32))  # one value per block


# -- the strategy ----------------------------------------------------------------------------------------------
def test_strategy_from_yaml_and_its_cache_key():
    strategy = build(compose("evaluate", ["strategy=shortcut"]).strategy, "strategy")
    assert isinstance(strategy, ShortcutPatching) and strategy.reference == "base" and strategy.top_k > 0
    assert "_located" not in strategy.params()
    with pytest.raises(RuntimeError, match="wrap_model"):
        strategy.sampling_params()
    strategy._located.record(ranking="r1", channels="c1")
    params = strategy.sampling_params()
    assert params["ranking"] == "r1" and params["channels"] == "c1" and params["top_k"] == strategy.top_k
    with pytest.raises(ContamlabError, match="strategy.reference"):
        ShortcutPatching(reference="teacher")
    with pytest.raises(ContamlabError, match="strategy.positions"):
        ShortcutPatching(positions="all")


def test_evaluate_shortcut_end_to_end(trained, caplog):
    """evaluate.py's job with strategy=shortcut, in-process (tests/jobs.py): it locates once, another K reuses it."""
    tmp, _, _ = trained
    caplog.set_level(logging.INFO, logger="contamlab")
    locate_budget = [
        "strategy=shortcut",
        "strategy.include_last_layer=true",  # the tiny test world has one layer
        "strategy.block=16",
        "strategy.locate_questions=6",
        "strategy.locate_max_new_tokens=24",
    ]
    run_evaluate(tmp, tmp / "runs" / "shortcut", *locate_budget, "strategy.top_k=8")
    assert "shortcut: located" in caplog.text
    results = json.loads((tmp / "runs" / "shortcut" / "results.json").read_text())
    assert results["strategy"]["name"] == "shortcut" and results["strategy"]["top_k"] == 8
    values = results["metrics"]["all"]["values"]
    assert 0.0 <= values["sa_ppg"] <= 1.0 and values["g_app"] <= values["a_ppg"] + 1e-12
    rankings = list((tmp / "cache" / "shortcut").glob("*.safetensors"))
    assert len(rankings) == 1
    # another K reuses the ranking: no locating, no second file
    caplog.clear()
    run_evaluate(tmp, tmp / "runs" / "shortcut_k4", *locate_budget, "strategy.top_k=4")
    assert caplog.records and "shortcut: located" not in caplog.text  # the job did log, and no locating
    assert list((tmp / "cache" / "shortcut").glob("*.safetensors")) == rankings
    assert json.loads((tmp / "runs" / "shortcut_k4" / "results.json").read_text())["strategy"]["top_k"] == 4
