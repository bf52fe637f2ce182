"""Steps A and B of shortcut patching (Zhu et al. 2025): the comparative and the causal score of every channel.

- Step A, comparative score: ``S_cmp[l, j] = sqrt(mean_t (a_con[l, j, t] - a_un[l, j, t])^2)``, the RMS difference of
  the contaminated model M_con and the uncontaminated M_un teacher-forced on M_con's greedy completions, over the
  completion tokens (``positions=completion``, the authors' code) or the last prompt token (``last_prompt``, the
  paper's formula).
- Step B, causal score: for a target T, ``delta_T[l, b] = acc(T) - acc(T with block b of layer l patched from M_un)``,
  greedy accuracy on the locate set; every channel of the block gets the block's delta.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import torch
from torch import Tensor, nn

from contamlab.decoding.shortcut.hooks import Channels, capture_channels
from contamlab.errors import ContamlabError
from contamlab.models.padding import pad_batch

POSITIONS = ("completion", "last_prompt")  # where Step A averages: the completion tokens or the last prompt token


# -- Step A: comparative score -----------------------------------------------------------------------------------
def rms_difference(con: Tensor, un: Tensor) -> Tensor:
    """The comparative score of Step A on collected activations: ``sqrt(mean_t (con - un)^2)``.

    Args:
        con: ``[T, L', d]`` activations of M_con at the T collected tokens.
        un: ``[T, L', d]`` activations of M_un at the same tokens.

    Returns:
        ``[L', d]`` float32 (zeros when T = 0).
    """
    if con.shape[0] == 0:
        return torch.zeros(con.shape[1:], device=con.device)
    return (con.double() - un.double()).pow(2).mean(dim=0).sqrt().float()


def comparative_scores(
    con: nn.Module,
    un: nn.Module,
    prompts: Sequence[Sequence[int]],
    completions: Sequence[Sequence[int]],
    n_layers: int,
    positions: str = "completion",
    batch_size: int = 16,
) -> Tensor:
    """Step A: RMS activation difference of M_con and M_un teacher-forced on prompt + completion.

    Args:
        con: M_con.
        un: M_un (same architecture).
        prompts: Token ids of each locate prompt.
        completions: M_con's greedy completion of each prompt (token ids).
        n_layers: Neuron layers (0..n_layers-1).
        positions: ``completion`` (the completion tokens, the authors' code) or ``last_prompt`` (the last prompt
            token, the paper's formula).
        batch_size: Sequences per forward pass (right-padded; padding is never collected).

    Returns:
        ``S_cmp``: ``[n_layers, d_ff]`` float32, equal to :func:`rms_difference` over all collected tokens.
    """
    if positions not in POSITIONS:
        raise ContamlabError(f"strategy.positions={positions!r}: use {' or '.join(POSITIONS)}")
    device = next(con.parameters()).device
    sq_sum: Tensor | None = None  # [L', d] float64
    count = 0
    for start in range(0, len(prompts), batch_size):
        seqs = [list(p) + list(c) for p, c in zip(prompts[start : start + batch_size], completions[start:])]
        ids, mask = pad_batch(seqs, 0, device=device)  # [B, S] each
        width = ids.shape[1]
        collect = torch.zeros((len(seqs), width), dtype=torch.bool, device="cpu")  # [B, S] filled on the host

        for row, (seq, prompt) in enumerate(zip(seqs, prompts[start:])):
            if positions == "completion":
                collect[row, len(prompt) : len(seq)] = True
            else:
                collect[row, len(prompt) - 1] = True
        collect = collect.to(device)  # tokens that enter the score
        pos = torch.arange(width, device=device).expand(len(seqs), -1)  # [B, S]
        acts = []
        for model in (con, un):
            with torch.inference_mode(), capture_channels(model, None, n_layers) as store:
                model(input_ids=ids, attention_mask=mask, position_ids=pos, use_cache=False)
            per_layer = [store[layer][collect] for layer in range(n_layers)]  # L' x [T, d]
            acts.append(torch.stack(per_layer, dim=1))  # [T, L', d]
        diff = acts[0].double() - acts[1].double()  # [T, L', d]
        batch_sq = diff.pow(2).sum(dim=0).cpu()  # [L', d]
        sq_sum = batch_sq if sq_sum is None else sq_sum + batch_sq
        count += int(collect.sum())
    if sq_sum is None or count == 0:
        raise ContamlabError("strategy=shortcut: no token to compare in Step A (empty locate set or completions)")
    return (sq_sum / count).sqrt().float()


# -- Step B: causal score ----------------------------------------------------------------------------------------
def block_channels(layer: int, index: int, size: int, d_ff: int) -> Channels:
    """Channels of block ``index`` of one layer: ``size`` consecutive channels (the last block may be shorter)."""
    # channel indices stay on the host: they build tables and key caches; the tables go to the model's device
    return {layer: torch.arange(index * size, min((index + 1) * size, d_ff), device="cpu")}


Accuracies = Callable[[nn.Module, nn.Module, Sequence[Channels]], list[float]]


def causal_deltas(
    target: nn.Module,
    source: nn.Module,
    accuracies: Accuracies,
    n_layers: int,
    d_ff: int,
    block: int,
    progress: bool = False,
    label: str = "",
    per_decode: int = 1,
) -> Tensor:
    """Step B for one target: accuracy drop when each block of ``block`` channels is patched from ``source``.

    Args:
        target: The model whose channels are patched (M_con or M_base).
        source: The patch source (M_un).
        accuracies: ``accuracies(target, source, channel_sets)``: greedy accuracy on the locate set of the target
            patched with each channel set (an empty set: the target itself), e.g. :func:`greedy_accuracy`.
        n_layers: Neuron layers.
        d_ff: Channels per layer.
        block: Consecutive channels patched together (the authors: 512).
        progress: Show a progress bar.
        label: Name of the target in the progress bar.
        per_decode: Channel sets handed to ``accuracies`` at once (rows of the same decode batches).

    Returns:
        ``delta``: ``[n_layers, d_ff]``, ``acc(target) - acc(patched target)``, equal within each block.
    """
    from tqdm.auto import tqdm

    if block < 1:
        raise ContamlabError(f"strategy.block={block}: must be >= 1")
    blocks = [block_channels(layer, b, block, d_ff) for layer in range(n_layers) for b in range(-(-d_ff // block))]
    variants: list[Channels] = [{}, *blocks]  # the unpatched target first
    accs: list[float] = []
    bar = tqdm(total=len(variants), desc=f"shortcut causal[{label}]", unit="block", disable=not progress)
    per_decode = max(1, per_decode)
    for start in range(0, len(variants), per_decode):
        group = variants[start : start + per_decode]
        got = accuracies(target, source, group)
        if len(got) != len(group):
            raise ValueError(f"shortcut: {len(got)} accuracies for {len(group)} channel sets")
        accs += got
        bar.update(len(group))
    bar.close()
    delta = torch.zeros(n_layers, d_ff, device="cpu")  # [L', d] scores on the host, as the ranking cache stores them
    for channels, acc in zip(blocks, accs[1:]):
        ((layer, index),) = channels.items()
        delta[layer, index] = accs[0] - acc
    return delta
