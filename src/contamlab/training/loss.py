"""Next-token cross-entropy with the output projection applied at the labelled positions only.

A fine-tuning stage trains on the response of each document (``finetune.loss_on: response``): the prompt's and the
padding's positions carry label −100 and add nothing to the loss, yet a causal LM's forward projects every position
onto the vocabulary (49,152 logits a token for SmolLM2, 262,144 for Gemma-3) and its loss upcasts and normalises them
all. On a CPU that projection, its float32 copy and the log-softmax over it, forward and backward, were a fifth of
the LoRA step (docs/performance.md, "The training step"). Here the model returns its last hidden states, the
positions whose next token is labelled are gathered, and only those rows are projected and normalised.

The loss is the same mean over the same labelled tokens as ``model(labels=...).loss`` and each row's gradient is the
same, so a stage trains the same bytes either way (tests/test_fast_training.py); only the logged loss, a sum over
fewer rows, may differ in its last bits. ``finetune.logits`` is therefore no part of the stage key.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

IGNORE = -100  # the label of a position that is not trained on (transformers' convention)


def labelled_loss(model, input_ids: torch.Tensor, attention_mask: torch.Tensor, labels: torch.Tensor) -> torch.Tensor:
    """Mean next-token cross-entropy over the labelled tokens, projecting only their positions onto the vocabulary.

    Args:
        model: A ``transformers`` causal LM (or a peft model around one) whose ``hidden_states[-1]`` is the final
            normalised hidden state, the input of its output projection.
        input_ids: ``[B, T]`` token ids.
        attention_mask: ``[B, T]`` 1 for real tokens.
        labels: ``[B, T]`` the token ids to predict, −100 where not trained on (unshifted, as for ``labels=``).

    Returns:
        The scalar loss.
    """
    # logits_to_keep=1: the model's own projection runs on one position only; its hidden states are what we need
    out = model(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=True, logits_to_keep=1)
    hidden = out.hidden_states[-1][:, :-1]  # [B, T-1, H]: position t predicts token t+1
    targets = labels[:, 1:]  # [B, T-1]
    keep = targets != IGNORE  # [B, T-1]
    logits = model.get_output_embeddings()(hidden[keep])  # [N, V], N labelled tokens
    cap = getattr(model.config, "final_logit_softcapping", None)  # Gemma's soft cap, as its forward applies it
    if cap is not None:
        logits = torch.tanh(logits / cap) * cap
    return F.cross_entropy(logits.float(), targets[keep])  # [N, V] -> scalar, float32 as transformers' loss
