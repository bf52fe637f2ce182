"""The vLLM logits processors' logic as plain torch (no vLLM here): V1 and V2 interfaces against the pure steps."""

from types import SimpleNamespace

import pytest
import torch

from contamlab.decoding.lne import LNEBlocking
from contamlab.decoding.railcap import RailCap, build_table, railcap_reference_step
from contamlab.decoding.vllm_processors import (
    ENTROPY_KEY,
    LNE_KEY,
    RAILCAP_KEY,
    ContamlabLogits,
    V1Processor,
    V2Processor,
    entropy_args,
    lne_args,
    parse_extra_args,
    railcap_args,
)
from contamlab.decoding.vllm_sampler import strategy_extra_args
from contamlab.errors import ContamlabError

V = 12
GREEDY = [[1, 2, 3, 4, 5, 1, 2, 3, 6], [7, 8, 7, 8, 9]]


def params(extra=None):
    return SimpleNamespace(extra_args=extra)


def rc(q, n=2, mode="cap", duplicates="all"):
    return railcap_args(build_table(GREEDY, n, duplicates), q, mode)


def expected(logits, generated, greedy=None, n=2, mode="cap", n_block=0):
    """One row's step, computed independently: Algorithm 1 literally (RailCap) or Eq. 9 by hand (LNE)."""
    out = logits.clone()
    if greedy is not None:
        out = railcap_reference_step(out, generated, greedy, n, mode)
    if len(generated) < n_block:  # Eq. 9: the argmax of each of the first n_block generated positions is blocked
        top = max(range(len(out)), key=lambda v: float(out[v]))  # first maximum, as argmax
        out[top] = float("-inf")
    return out


# -- extra_args ----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("extra", "match"),
    [
        ({RAILCAP_KEY: {"n": 0, "mode": "cap", "windows": []}}, "positive integer"),
        ({RAILCAP_KEY: {"n": True, "mode": "cap", "windows": []}}, "positive integer"),
        ({RAILCAP_KEY: {"n": 2, "mode": "soft", "windows": []}}, "mode must be one of cap, ban"),
        ({RAILCAP_KEY: {"n": 2, "mode": "cap", "windows": [[1, 2]]}}, "3 non-negative token ids"),
        ({RAILCAP_KEY: {"n": 2, "mode": "cap", "windows": [[1, -2, 3]]}}, "3 non-negative token ids"),
        ({RAILCAP_KEY: {"n": 2, "mode": "cap"}}, "exactly n, mode and windows"),
        ({RAILCAP_KEY: [1, 2]}, "exactly n, mode and windows"),
        ({LNE_KEY: {"n_block": -1}}, "non-negative integer"),
        ({LNE_KEY: {"n_block": 1.5}}, "non-negative integer"),
        ({LNE_KEY: {"n": 1}}, "exactly n_block"),
        ({ENTROPY_KEY: ""}, "non-empty string"),
    ],
)
def test_bad_extra_args_raise_value_error(extra, match):
    with pytest.raises(ValueError, match=match):
        parse_extra_args(extra)
    with pytest.raises(ValueError, match=match):  # what vLLM calls at request admission
        V2Processor.validate_params(params(extra))


def test_other_keys_are_ignored_and_inactive():
    assert not parse_extra_args(None).active
    assert not parse_extra_args({"target_token": 3}).active
    args = parse_extra_args({**rc(1, mode="ban"), **lne_args(2), **entropy_args("k")})
    assert (args.railcap_n, args.railcap_mode, args.n_block, args.entropy_key) == (2, "ban", 2, "k")
    assert args.windows.shape == (3, 3)  # (7, 8) -> 7, (8, 7) -> 8, (7, 8) -> 9


def test_railcap_args_hold_the_question_windows():
    table = build_table(GREEDY, 2, "first")
    windows = railcap_args(table, 1, "cap")[RAILCAP_KEY]["windows"]
    assert sorted(map(tuple, windows)) == [(7, 8, 7), (8, 7, 8)]  # (7, 8) -> 9 dropped by duplicates=first


def test_strategy_hooks_become_per_question_args():
    rail = RailCap(n=2, mode="ban").step_fn(GREEDY, [0.1, 0.2])
    args = strategy_extra_args(rail, 2)
    assert [a[RAILCAP_KEY]["mode"] for a in args] == ["ban", "ban"]
    assert args[1] == rc(1, mode="ban")
    lne = LNEBlocking(beta=2.0, t_task=7).step_fn(GREEDY, [0.5, 3.0])
    assert strategy_extra_args(lne, 2) == [lne_args(5), lne_args(0)]
    assert strategy_extra_args(None, 3) == [{}, {}, {}]
    from contamlab.decoding.strategy import StepHook

    class HFOnly(StepHook):  # a hook that says nothing of vLLM (the base's vllm_args is None)
        def __call__(self, logits, generated, owner):
            return logits

    with pytest.raises(ContamlabError, match="sampler=hf"):
        strategy_extra_args(HFOnly(), 2)


# -- Model Runner V1 -------------------------------------------------------------------------------------------------
def v1_processor(slots=8):
    config = SimpleNamespace(
        model_config=SimpleNamespace(get_vocab_size=lambda: V), scheduler_config=SimpleNamespace(max_num_seqs=slots)
    )
    return V1Processor(config, torch.device("cpu"), False)


def batch(added=(), removed=(), moved=()):
    return SimpleNamespace(added=list(added), removed=list(removed), moved=list(moved))


def swap():
    return SimpleNamespace(name="SWAP")


def test_v1_rows_get_only_their_own_request_args():
    proc = v1_processor()
    outs = [[1, 2], [7, 8, 7, 8], [1, 2], [5], [9, 9, 9]]
    extra = [rc(0), rc(1, mode="ban"), None, lne_args(3), {"other_processor": 1}]
    proc.update_state(batch(added=[(i, params(e), None, o) for i, (e, o) in enumerate(zip(extra, outs))]))
    torch.manual_seed(0)
    logits = torch.randn(5, V)
    got = proc.apply(logits.clone())
    want = [
        expected(logits[0], outs[0], GREEDY[0]),
        expected(logits[1], outs[1], GREEDY[1], mode="ban"),
        logits[2],
        expected(logits[3], outs[3], n_block=3),
        logits[4],
    ]
    torch.testing.assert_close(got, torch.stack(want))
    assert got[1, 7] == float("-inf") and got[1, 9] == float("-inf")  # (7, 8) -> 7 and (7, 8) -> 9 banned
    assert got[3].argmax() != logits[3].argmax()  # step 1 < n_block 3: the argmax is blocked


def test_v1_follows_live_outputs_removals_and_moves():
    proc = v1_processor()
    out0, out1 = [], [7]
    proc.update_state(batch(added=[(0, params(rc(0)), None, out0), (1, params(rc(1)), None, out1)]))
    logits = torch.randn(2, V)
    torch.testing.assert_close(proc.apply(logits.clone()), logits)  # fewer than n tokens: no cap
    out0.extend([5, 1])  # the engine appends sampled tokens to the same lists
    out1.append(8)
    torch.testing.assert_close(
        proc.apply(logits.clone()),
        torch.stack([expected(logits[0], out0, GREEDY[0]), expected(logits[1], out1, GREEDY[1])]),
    )
    proc.update_state(batch(moved=[(0, 1, swap())]))  # the rows trade places
    torch.testing.assert_close(
        proc.apply(logits.clone()),
        torch.stack([expected(logits[0], out1, GREEDY[1]), expected(logits[1], out0, GREEDY[0])]),
    )
    proc.update_state(batch(removed=[0], moved=[(1, 0, SimpleNamespace(name="UNIDIRECTIONAL"))]))
    torch.testing.assert_close(proc.apply(logits[:1].clone()), expected(logits[0], out0, GREEDY[0])[None])
    proc.update_state(batch(added=[(0, params(None), None, [1, 2])]))  # a plain request replaces it
    torch.testing.assert_close(proc.apply(logits[:1].clone()), logits[:1])


def test_entropy_is_the_mean_over_kept_steps():
    """Eq. 1 of LNE, as the HF backend's greedy pass: a step whose output did not grow (partial prefill) is replaced."""
    proc = v1_processor()
    out = []
    proc.update_state(batch(added=[(0, params(entropy_args("q0")), None, out)]))
    steps = [torch.randn(1, V) for _ in range(4)]
    proc.apply(torch.randn(1, V))  # a discarded partial-prefill step (output still empty)
    for logits in steps[:3]:
        proc.apply(logits.clone())
        out.append(int(logits.argmax()))
    proc.update_state(batch(removed=[0]))

    def entropy(x):
        logp = torch.log_softmax(x[0], -1)
        return float(-(logp.exp() * logp).sum())

    assert proc.logic.pop_entropy() == {"q0": pytest.approx(sum(map(entropy, steps[:3])) / 3, rel=1e-6)}
    assert proc.logic.pop_entropy() == {}


def test_window_ids_outside_the_vocabulary_are_refused():
    with pytest.raises(ValueError, match="vocabulary"):
        v1_processor().update_state(
            batch(added=[(0, params({RAILCAP_KEY: {"n": 1, "mode": "cap", "windows": [[1, V]]}}), None, [])])
        )


# -- Model Runner V2 -------------------------------------------------------------------------------------------------
def v2_setup(requests, max_len=32):
    """A hand-built V2 request state: slot s holds prompt_s + output_s in all_token_ids."""
    slots = 6
    ids = torch.zeros(slots, max_len, dtype=torch.int32)
    prompt_len = torch.zeros(slots, dtype=torch.int32)
    total_len = torch.zeros(slots, dtype=torch.int32)
    for slot, (prompt, out, _) in requests.items():
        ids[slot, : len(prompt) + len(out)] = torch.tensor(prompt + out)
        prompt_len[slot], total_len[slot] = len(prompt), len(prompt) + len(out)
    req_states = SimpleNamespace(
        device=torch.device("cpu"),
        max_num_reqs=slots,
        vocab_size=V,
        all_token_ids=SimpleNamespace(gpu=ids),
        prompt_len=SimpleNamespace(gpu=prompt_len, np=prompt_len.numpy()),
        total_len=SimpleNamespace(gpu=total_len),
    )
    proc = V2Processor(SimpleNamespace(speculative_config=None), req_states)
    needs = {slot: proc.add_request(slot, params(extra)) for slot, (_, _, extra) in requests.items()}
    return proc, needs


def ctx_for(row_slots, req_states, local=None, input_ids=None):
    slots = torch.tensor(row_slots, dtype=torch.int32)
    last = [
        int(req_states.all_token_ids.gpu[s, int(req_states.total_len.gpu[s]) - 1]) for s in row_slots
    ]  # the token fed at each row: the last committed one
    return SimpleNamespace(
        expanded_idx_mapping=slots,
        idx_mapping=slots,
        idx_mapping_np=slots.numpy(),
        expanded_local_pos=torch.zeros(len(row_slots), dtype=torch.int32) if local is None else torch.tensor(local),
        input_ids=torch.tensor(last if input_ids is None else input_ids, dtype=torch.int32),
        pos=torch.zeros(len(row_slots), dtype=torch.int64),
        seq_lens_upper_bound_np=None,
    )


def test_v2_rows_follow_the_slot_mapping():
    requests = {
        4: ([9, 9, 9], [7, 8], rc(1)),
        1: ([3], [1, 2, 3, 4, 5, 1, 2], rc(0, mode="ban")),
        2: ([3, 3], [1, 2], None),
        0: ([5], [6], lne_args(2)),
    }
    proc, needs = v2_setup(requests)
    assert needs == {4: True, 1: True, 2: False, 0: True}
    torch.manual_seed(1)
    order = [2, 0, 4, 1]  # rows are in any slot order
    logits = torch.randn(len(order), V)
    got = proc.apply(logits.clone(), ctx_for(order, proc.req_states))
    want = torch.stack(
        [
            logits[0],
            expected(logits[1], [6], n_block=2),
            expected(logits[2], [7, 8], GREEDY[1]),
            expected(logits[3], requests[1][1], GREEDY[0], mode="ban"),
        ]
    )
    torch.testing.assert_close(got, want)
    assert got[3, 3] == float("-inf")  # (1, 2) -> 3 banned


def test_v2_slot_reuse_resets_the_state():
    proc, _ = v2_setup({0: ([1], [7, 8], rc(1, mode="ban"))})
    proc.add_request(0, params(None))  # the slot's next occupant has no contamlab args
    logits = torch.randn(1, V)
    torch.testing.assert_close(proc.apply(logits.clone(), ctx_for([0], proc.req_states)), logits)


def test_v2_draft_rows_read_their_draft_tokens():
    """Speculative-decoding layout: row 1 is the same request one draft token later (tail = (8, draft 7))."""
    proc, _ = v2_setup({3: ([2, 2], [9, 8], rc(1, mode="ban"))})
    logits = torch.randn(2, V)
    ctx = ctx_for([3, 3], proc.req_states, local=[0, 1], input_ids=[8, 7])
    got = proc.apply(logits.clone(), ctx)
    torch.testing.assert_close(got[0], logits[0])  # (9, 8) is not in H
    torch.testing.assert_close(got[1], expected(logits[1], [9, 8, 7], GREEDY[1], mode="ban"))


def test_v2_refuses_speculative_decoding_configs():
    with pytest.raises(ValueError, match="speculative"):
        V2Processor(SimpleNamespace(speculative_config=object()), SimpleNamespace())


def test_logic_without_requests_is_a_no_op():
    logic = ContamlabLogits(4, V, "cpu")
    logits = torch.randn(3, V)
    out = logic.apply(logits.clone(), torch.arange(3), [0, 1, 2], torch.zeros(3, dtype=torch.long), None)
    torch.testing.assert_close(out, logits)
