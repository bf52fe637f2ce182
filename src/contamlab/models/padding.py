"""Token-id sequences of different lengths as one padded batch, the input of every batched forward pass."""

from __future__ import annotations

from collections.abc import Sequence

import torch


def pad_batch(
    sequences: Sequence[Sequence[int]], pad_id: int, left: bool = False, device: torch.device | str = "cpu"
) -> tuple[torch.Tensor, torch.Tensor]:
    """Pad token-id sequences to the longest one.

    Args:
        sequences: Token ids per row.
        pad_id: Id written into the padding (the attention mask hides it; never scored).
        left: Pad on the left (prompts to continue with ``generate``) instead of the right.
        device: Where the batch goes. It is filled row by row on the host and moved once (one copy, not one small
            write per row on an accelerator).

    Returns:
        ``(ids, mask)``, both ``[B, T]`` long tensors with T the longest length; ``mask`` is 1 on real tokens.
    """
    width = max((len(s) for s in sequences), default=0)
    ids = torch.full((len(sequences), width), pad_id, dtype=torch.long, device="cpu")  # [B, T]
    mask = torch.zeros((len(sequences), width), dtype=torch.long, device="cpu")  # [B, T]
    for row, seq in enumerate(sequences):
        span = slice(width - len(seq), width) if left else slice(0, len(seq))
        ids[row, span] = torch.as_tensor(seq, dtype=torch.long, device="cpu")
        mask[row, span] = 1
    return ids.to(device), mask.to(device)
