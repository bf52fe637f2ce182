"""A tiny tokenizer and causal LM for detector tests, and the unbatched per-token log-probs they are checked with."""

import torch

from contamlab.models.tiny import build_tiny_model, train_tokenizer

TEXTS = [
    "Question: Mia has 12 stickers. She buys 7 more. How many stickers does Mia have now?",
    "Answer: Mia has 12 + 7 = <<12+7=19>>19 stickers.\n#### 19",
    "Leo owns 5 boxes with 4 apples each. How many apples does he have?",
    "Taking away 3 leaves 15 - 3 = <<15-3=12>>12 beads.",
] * 20


def tiny_tokenizer():
    """A 300-token byte-level BPE trained on :data:`TEXTS`."""
    return train_tokenizer(TEXTS, vocab_size=300)


def tiny_model(tokenizer):
    """A one-layer GPT-NeoX over ``tokenizer``'s vocabulary, in eval mode."""
    return build_tiny_model(len(tokenizer), hidden_size=32, num_layers=1, num_heads=2, intermediate_size=64).eval()


def token_logprobs(model, ids):
    """Per-token log-probs of one unpadded sequence, float64 (token t's log-prob comes from position t - 1)."""
    with torch.no_grad():
        logp = torch.log_softmax(model(torch.tensor([ids])).logits[0].double(), -1)  # [T, V]
    return logp[:-1].gather(-1, torch.tensor(ids[1:])[:, None])[:, 0].numpy()
