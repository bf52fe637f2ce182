"""The frozen base of a LoRA stage held in bf16 under bf16 autocast: the casts autocast would repeat every pass, once.

Under ``trainer.precision: bf16-mixed`` every matrix multiply casts its float32 weight to bf16 on each forward pass of
each micro-batch. A LoRA stage never updates the base's linear weights, so those casts give the same bf16 tensor every
time: holding the weights in bf16 from the start gives autocast nothing to cast, and the multiplies the same inputs
bit for bit (a float32 -> bf16 cast rounds the same way once or a thousand times). The adapters stay float32, as do
the norms and the embeddings (read outside autocast's matrix multiplies), and the output projection where it is the
input embedding (tied weights).
"""

from __future__ import annotations

import torch
from torch import nn


def hold_frozen_linears(model: nn.Module, dtype: torch.dtype = torch.bfloat16) -> int:
    """Cast the weights and biases of every frozen ``nn.Linear`` of ``model`` to ``dtype``, in place.

    Args:
        model: A causal LM with a LoRA adapter (its trainable parameters are left as they are).
        dtype: The autocast dtype.

    Returns:
        The number of parameters cast.
    """
    embeddings = model.get_input_embeddings()  # a tied output projection shares its weight: it stays float32
    tied = {id(p) for p in embeddings.parameters()} if embeddings is not None else set()
    cast = 0
    for module in model.modules():
        if type(module) is not nn.Linear:  # a LoRA layer's own base_layer is a plain nn.Linear
            continue
        params = list(module.parameters(recurse=False))
        if any(p.requires_grad or id(p) in tied for p in params):
            continue
        for p in params:
            p.data = p.data.to(dtype)
            cast += p.numel()
    return cast
