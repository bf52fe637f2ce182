"""The growing KV cache: same keys / values as transformers' torch.cat cache under every sampler operation."""

import torch
from transformers.cache_utils import DynamicLayer

from contamlab.decoding.kv_cache import MIN_CAPACITY, GrowingLayer


def _kv(rows, steps, seed):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(rows, 2, steps, 4, generator=g), torch.randn(rows, 2, steps, 4, generator=g)


def test_matches_dynamic_layer_through_prefill_repeat_decode_select_crop():
    grow, ref = GrowingLayer(), DynamicLayer()
    for layer in (grow, ref):
        layer.update(*_kv(1, 5, 0))  # prefill one question
        layer.batch_repeat_interleave(3)  # its m = 3 rows
    for step in range(MIN_CAPACITY + 10):  # past the first capacity: one reallocation
        k, v = _kv(3 if step < 20 else 2, 1, step + 1)
        if step == 20:
            for layer in (grow, ref):
                layer.batch_select_indices(torch.tensor([0, 2]))  # a row finished
        if step == 30:
            for layer in (grow, ref):
                layer.batch_select_indices(torch.tensor([1, 0]))  # moved in place, in any order
        out_grow, out_ref = grow.update(k, v), ref.update(k, v)
        assert torch.equal(out_grow[0], out_ref[0]) and torch.equal(out_grow[1], out_ref[1])
    assert grow.get_seq_length() == ref.get_seq_length() == 5 + MIN_CAPACITY + 10
    grow.crop(-3)
    ref.crop(-3)
    assert torch.equal(grow.keys, ref.keys) and grow.get_seq_length() == ref.get_seq_length()


def test_appends_in_place_until_full():
    layer = GrowingLayer()
    layer.update(*_kv(2, 3, 0))
    buffer = layer._k
    layer.update(*_kv(2, 1, 1))
    assert layer._k is buffer and layer.keys.data_ptr() == buffer.data_ptr()  # no copy of the cache per step
    layer.reset()
    assert layer.get_seq_length() == 0
