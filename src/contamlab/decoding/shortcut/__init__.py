"""Shortcut-neuron patching: find the MLP channels a contaminated model's shortcut runs through, then overwrite them.

Implements Zhu et al. 2025, "Establishing Trustworthy LLM Evaluation via Shortcut Neuron Analysis" (ACL 2025,
arXiv 2506.04142; docs/methods/strategies.md). A neuron is one channel ``(l, j)`` of layer l's MLP
intermediate activation, the input of the MLP's output projection (``down_proj`` in Llama-family models,
``dense_4h_to_h`` in GPT-NeoX), for the layers 0..L-2 (the authors drop the final layer).

- Step A, comparative score: ``S_cmp[l, j] = sqrt(mean_t (a_con[l, j, t] - a_un[l, j, t])^2)``, the RMS difference of
  the contaminated model M_con and the uncontaminated M_un teacher-forced on M_con's greedy completions, over the
  completion tokens (``positions=completion``, the authors' code) or the last prompt token (``last_prompt``, the
  paper's formula).
- Step B, causal score: for a target T, ``delta_T[l, b] = acc(T) - acc(T with block b of layer l patched from M_un)``,
  greedy accuracy on the locate set; every channel of the block gets the block's delta. ``S_causal = delta_con -
  delta_base``: reward channels whose replacement lowers M_con's score, penalise those that hurt the base model.
- Step C, ranking: ``final = S_cmp + delta_con - delta_base``, summed unweighted and unnormalised; the shortcut set is
  the top K.
- Step D, patching: :class:`PatchedPair`, a drop-in model for :class:`~contamlab.decoding.sampler.HFSampler`. At every
  forward (prefill included) the reference runs on the same token ids with its own KV cache; then the target runs
  with its chosen channels overwritten by the reference's values at the same positions.

Rankings are cached as safetensors under a content hash of the three models and the locate configuration, so a sweep
over K or over the patch reference locates once.

One module per concept: :mod:`.hooks` (the channels and their forward hooks), :mod:`.pair` (Step D's patched pair),
:mod:`.scores` (Steps A and B), :mod:`.ranking` (Step C and its cache), :mod:`.locate` (locating on the evaluation
world) and :mod:`.strategy` (the strategy ``strategy=shortcut`` builds).
"""

from contamlab.decoding.shortcut.hooks import (
    Channels,
    capture_channels,
    mlp_output_projections,
    neuron_layers,
    overwrite_channels,
)
from contamlab.decoding.shortcut.locate import (
    LOCATE_VERSION,
    LocateConfig,
    greedy_accuracy,
    locate,
    locate_set,
)
from contamlab.decoding.shortcut.pair import BlockPatchedPair, PairCache, PatchedPair, PromptCache
from contamlab.decoding.shortcut.ranking import Ranking, cached_ranking
from contamlab.decoding.shortcut.scores import (
    POSITIONS,
    block_channels,
    causal_deltas,
    comparative_scores,
    rms_difference,
)
from contamlab.decoding.shortcut.strategy import (
    REFERENCES,
    LocatedChannels,
    ShortcutPatching,
    channels_hash,
    patched_model,
)

__all__ = [
    "LOCATE_VERSION",
    "POSITIONS",
    "REFERENCES",
    "BlockPatchedPair",
    "Channels",
    "LocateConfig",
    "LocatedChannels",
    "PairCache",
    "PatchedPair",
    "PromptCache",
    "Ranking",
    "ShortcutPatching",
    "block_channels",
    "cached_ranking",
    "capture_channels",
    "causal_deltas",
    "channels_hash",
    "comparative_scores",
    "greedy_accuracy",
    "locate",
    "locate_set",
    "mlp_output_projections",
    "neuron_layers",
    "overwrite_channels",
    "patched_model",
    "rms_difference",
]
