"""Shortcut patching's hook points: the MLP channels of a layer, read and overwritten through forward hooks.

A neuron is one channel ``(l, j)`` of layer l's MLP intermediate activation, the input of the MLP's output projection
(``down_proj`` in Llama-family models, ``dense_4h_to_h`` in GPT-NeoX), for the layers 0..L-2 (Zhu et al. 2025 drop
the final layer).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch
from torch import Tensor, nn

from contamlab.errors import ContamlabError

# Names of the MLP output projection across architectures (Llama/Mistral/Gemma/Qwen, GPT-NeoX, GPT-2, Phi, Mixtral).
_OUTPUT_PROJECTIONS = ("down_proj", "dense_4h_to_h", "c_proj", "fc2", "w2")

# Patched channels: layer -> sorted channel indices ([k_l] int64); layers without channels are left out.
Channels = dict[int, Tensor]


# -- hook points -------------------------------------------------------------------------------------------------
def mlp_output_projections(model: nn.Module) -> list[nn.Module]:
    """The MLP output projection of every decoder layer, in layer order; its input is the neuron activation.

    The decoder layers are the first ``nn.ModuleList`` whose every element has an ``mlp`` with a known output
    projection, so wrappers (peft, a plain ``nn.Module`` in tests) work unchanged.

    Raises:
        ContamlabError: If the architecture has no recognisable MLP output projection.
    """
    for module in model.modules():
        if isinstance(module, nn.ModuleList) and len(module) > 0:
            projections = [_output_projection(layer) for layer in module]
            if all(p is not None for p in projections):
                return projections
    raise ContamlabError(
        f"strategy=shortcut: no decoder layer with an MLP output projection ({', '.join(_OUTPUT_PROJECTIONS)}) "
        f"found in {type(model).__name__}; this architecture is not supported"
    )


def _output_projection(layer: nn.Module) -> nn.Module | None:
    mlp = getattr(layer, "mlp", None)
    if mlp is None:
        return None
    for name in _OUTPUT_PROJECTIONS:
        if isinstance(getattr(mlp, name, None), nn.Module):
            return getattr(mlp, name)
    return None


def neuron_layers(model: nn.Module, include_last_layer: bool = False) -> int:
    """Number of layers whose channels are neurons: L - 1 (the authors drop the final layer), or L."""
    n = len(mlp_output_projections(model))
    return n if include_last_layer else n - 1


@contextmanager
def capture_channels(model: nn.Module, channels: Channels | None, n_layers: int) -> Iterator[dict[int, Tensor]]:
    """Record the MLP output projection's input of the first ``n_layers`` layers while the context is open.

    Args:
        model: The model to observe (left unchanged).
        channels: Channels to keep per layer; None keeps every channel of every layer below ``n_layers``.
        n_layers: Layers 0..n_layers-1 are hooked.

    Yields:
        ``store[l]``: ``[B, S, k_l]`` activations of layer l from the latest forward pass (``k_l = d_ff`` for all).
    """
    store: dict[int, Tensor] = {}
    handles = []
    for layer, proj in enumerate(mlp_output_projections(model)[:n_layers]):
        if channels is not None and layer not in channels:
            continue
        index = None if channels is None else channels[layer]

        def hook(module, args, layer=layer, index=index):
            acts = args[0]  # [B, S, d_ff]
            store[layer] = acts if index is None else acts.index_select(-1, index.to(acts.device))  # [B, S, k]

        handles.append(proj.register_forward_pre_hook(hook))
    try:
        yield store
    finally:
        for handle in handles:
            handle.remove()


@contextmanager
def overwrite_channels(
    model: nn.Module, channels: Channels, values: dict[int, Tensor], masks: dict[int, Tensor] | None = None
) -> Iterator[None]:
    """Replace the chosen channels of the MLP output projection's input by ``values`` while the context is open.

    Args:
        model: The model to patch (its weights are untouched; the hooks go when the context closes).
        channels: ``channels[l]``: the ``k_l`` channel indices of layer l to overwrite.
        values: ``values[l]``: ``[B, S, k_l]`` replacement activations, read at each forward pass (a dict that a
            capture fills in just before).
        masks: ``masks[l]``: ``[B, k_l]`` bool, which of the chosen channels each row overwrites (Step B's rows
            patched with different blocks); None overwrites all of them in every row.
    """
    projections = mlp_output_projections(model)
    handles = []
    for layer, index in channels.items():

        def hook(module, args, layer=layer, index=index):
            acts = args[0]  # [B, S, d_ff]
            new = values[layer].to(acts.dtype)  # [B, S, k]
            if new.shape[:-1] != acts.shape[:-1]:
                raise ValueError(f"layer {layer}: patch values {tuple(new.shape)} do not fit activations {acts.shape}")
            index = index.to(acts.device)
            if masks is not None:
                new = torch.where(masks[layer][:, None, :], new, acts.index_select(acts.ndim - 1, index))  # [B, S, k]
            return (acts.index_copy(acts.ndim - 1, index, new), *args[1:])  # [B, S, d_ff]

        handles.append(projections[layer].register_forward_pre_hook(hook))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()
