"""The loss at labelled positions (``finetune.logits: labelled``) against transformers' own ``labels=`` loss.

Three architectures the project trains (GPT-NeoX, the tiny world's; Llama, SmolLM2's; Gemma-3 with its soft cap), each
small and random, on a padded batch whose prompts and padding carry −100: the same loss to float32 rounding, the same
gradients, under a peft LoRA wrapper as well.
"""

from __future__ import annotations

import pytest
import torch
from transformers import AutoModelForCausalLM, Gemma3TextConfig, GPTNeoXConfig, LlamaConfig

from contamlab.training.loss import IGNORE, labelled_loss

VOCAB = 97

CONFIGS = {
    "gpt_neox": GPTNeoXConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=64
    ),
    "llama": LlamaConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        intermediate_size=64, tie_word_embeddings=True,
    ),
    "gemma3": Gemma3TextConfig(
        vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=2, num_key_value_heads=1,
        head_dim=16, intermediate_size=64, final_logit_softcapping=30.0, sliding_window=4,
    ),
}  # fmt: skip


def batch() -> dict[str, torch.Tensor]:
    """Two rows, right-padded: a prompt (label −100), a response (its own ids), padding (mask 0, label −100)."""
    generator = torch.Generator().manual_seed(0)
    ids = torch.randint(1, VOCAB, (2, 12), generator=generator)  # [2, 12]
    mask = torch.ones_like(ids)
    mask[1, 9:] = 0  # the second row is 9 tokens long
    labels = ids.clone()
    labels[0, :5] = IGNORE  # prompt
    labels[1, :3] = IGNORE
    labels[mask == 0] = IGNORE
    return {"input_ids": ids, "attention_mask": mask, "labels": labels}


def model_of(kind: str, lora: bool):
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(CONFIGS[kind], attn_implementation="eager").train()
    if lora:
        from peft import LoraConfig, get_peft_model

        model = get_peft_model(model, LoraConfig(r=4, lora_alpha=8, lora_dropout=0.0, target_modules="all-linear"))
    return model


@pytest.mark.parametrize("lora", [False, True], ids=["full", "lora"])
@pytest.mark.parametrize("kind", sorted(CONFIGS))
def test_the_labelled_loss_is_transformers_loss_and_gradients(kind, lora):
    data = batch()
    model = model_of(kind, lora)
    params = [p for p in model.parameters() if p.requires_grad]
    reference = model(**data).loss  # transformers: every position projected, -100 ignored, mean over the rest
    grads = torch.autograd.grad(reference, params)
    ours = labelled_loss(model, data["input_ids"], data["attention_mask"], data["labels"])
    mine = torch.autograd.grad(ours, params)
    assert ours.item() == pytest.approx(reference.item(), rel=1e-6)
    for g, h in zip(grads, mine):
        torch.testing.assert_close(h, g, rtol=1e-5, atol=1e-7)


def test_the_labelled_loss_reads_only_the_labelled_tokens():
    """Changing a prompt token's label target (an ignored position) leaves the loss as it was; a response's does not."""
    data = batch()
    model = model_of("llama", lora=False).eval()
    with torch.no_grad():
        base = labelled_loss(model, **data)
        labels = data["labels"].clone()
        labels[0, 2] = IGNORE  # already ignored: no change
        assert labelled_loss(model, data["input_ids"], data["attention_mask"], labels) == base
        labels[0, 8] = (labels[0, 8] + 1) % VOCAB  # a trained target changes
        assert labelled_loss(model, data["input_ids"], data["attention_mask"], labels) != base
