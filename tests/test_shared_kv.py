"""Shared-KV attention against attention over the concatenated keys (torch's SDPA), and the sampler built on it."""

import types

import pytest
import torch
from transformers import DynamicCache

from contamlab.decoding.kv_cache import GrowingLayer
from contamlab.decoding.shared_kv import SharedKV, shared_kv_attention


def _cache(keys: torch.Tensor, values: torch.Tensor) -> DynamicCache:
    """A one-layer growing cache holding ``keys`` / ``values``."""
    cache = DynamicCache()
    cache.layers = [GrowingLayer()]
    cache.update(keys, values, 0)
    return cache


@pytest.mark.parametrize("q_len", [1, 3])
def test_matches_sdpa_over_the_concatenated_keys(q_len):
    """Rows of two questions (3 and 2 rows), a shared prefix, left-padded question blocks, grouped-query heads."""
    torch.manual_seed(0)
    hkv, group, d, p, w, s = 2, 3, 8, 5, 4, 6  # s: the rows' own keys, the q_len new ones last
    owner = torch.tensor([0, 0, 0, 1, 1])
    rows = len(owner)
    kp, vp = torch.randn(1, hkv, p, d), torch.randn(1, hkv, p, d)
    kb, vb = torch.randn(2, hkv, w, d), torch.randn(2, hkv, w, d)
    kr, vr = torch.randn(rows, hkv, s, d), torch.randn(rows, hkv, s, d)
    query = torch.randn(rows, hkv * group, q_len, d)
    block_mask = torch.tensor([[False, True, True, True], [False, False, True, True]])  # left padding
    shared = SharedKV(_cache(kp, vp), _cache(kb, vb), block_mask, owner)
    module = types.SimpleNamespace(layer_idx=0, num_key_value_groups=group)
    out, _ = shared_kv_attention(module, query, kr, vr, None, scaling=0.3, shared_kv=shared)

    # Oracle: every row's full key sequence materialised, heads repeated, one boolean mask, torch's SDPA.
    keys = torch.cat([kp.expand(rows, -1, -1, -1), kb[owner], kr], dim=2).repeat_interleave(group, dim=1)
    values = torch.cat([vp.expand(rows, -1, -1, -1), vb[owner], vr], dim=2).repeat_interleave(group, dim=1)
    causal = torch.arange(s)[None, :] <= torch.arange(s - q_len, s)[:, None]  # [q, S]
    mask = torch.cat(
        [
            torch.ones(rows, q_len, p, dtype=torch.bool),
            block_mask[owner][:, None, :].expand(rows, q_len, w),
            causal.expand(rows, q_len, s),
        ],
        dim=-1,
    )[:, None]  # [R, 1, q, P + W + S]
    expected = torch.nn.functional.scaled_dot_product_attention(query, keys, values, attn_mask=mask, scale=0.3)
    assert out.shape == (rows, q_len, hkv * group, d)
    assert torch.allclose(out, expected.transpose(1, 2), atol=1e-5)


def test_rows_must_stay_grouped_by_question():
    with pytest.raises(ValueError, match="contiguous"):
        SharedKV(None, owner=torch.tensor([0, 1, 0]))


def test_needs_its_keyword():
    module = types.SimpleNamespace(layer_idx=0)
    x = torch.zeros(1, 1, 1, 4)
    with pytest.raises(RuntimeError, match="shared_kv"):
        shared_kv_attention(module, x, x, x, None)
