"""The tiny world's model: a GPT-NeoX (Pythia architecture) from a config, and a BPE tokenizer trained on the domain.

Digits are split into single tokens before byte-level BPE, so numbers are spelled digit by digit: the study that
preceded the default world (docs/world.md, "What it is") found that this lets a ~1M-parameter model learn arithmetic.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch
from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM, PreTrainedTokenizerFast

EOS = "<|eos|>"
PAD = "<|pad|>"


def train_tokenizer(texts: Iterable[str], vocab_size: int = 1024) -> PreTrainedTokenizerFast:
    """Train a deterministic byte-level BPE tokenizer whose digits are single tokens.

    Args:
        texts: Training corpus (iterated once, in order).
        vocab_size: Target vocabulary size including the 256 byte symbols and the two special tokens.

    Returns:
        A fast tokenizer with ``<|eos|>`` (id 0) as EOS and ``<|pad|>`` (id 1) as padding; no BOS, so a prompt's
        tokens are a prefix of the tokens of prompt + response whenever the response starts a new word.
    """
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            # Isolate each digit (with its optional leading space) so no merge ever spans two digits.
            pre_tokenizers.Split(Regex(r" ?[0-9]"), behavior="isolated"),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=[EOS, PAD],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tokenizer.train_from_iterator(texts, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tokenizer, eos_token=EOS, pad_token=PAD, clean_up_tokenization_spaces=False
    )


def build_tiny_model(
    vocab_size: int,
    hidden_size: int = 128,
    num_layers: int = 4,
    num_heads: int = 4,
    intermediate_size: int = 512,
    max_position_embeddings: int = 512,
    seed: int = 0,
    eos_token_id: int = 0,
    pad_token_id: int = 1,
) -> GPTNeoXForCausalLM:
    """A randomly initialised GPT-NeoX with tied embeddings, full rotary and no dropout (deterministic in ``seed``)."""
    config = GPTNeoXConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        intermediate_size=intermediate_size,
        max_position_embeddings=max_position_embeddings,
        rotary_pct=1.0,
        tie_word_embeddings=True,
        use_parallel_residual=True,
        attention_dropout=0.0,
        hidden_dropout=0.0,
        eos_token_id=eos_token_id,
        bos_token_id=eos_token_id,
        pad_token_id=pad_token_id,
    )
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(seed)
        model = GPTNeoXForCausalLM(config)
    return model
