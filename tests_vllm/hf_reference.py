"""Make the tiny models and the HF backend's reference outputs (run in a process of its own).

vLLM patches transformers' model classes when it loads a model, so the references come from the real HF backend
in a subprocess that never imports vLLM (the same .venv; ``CONTAMLAB_HF_PYTHON`` may name another Python); the vLLM
tests compare.

Usage: python tests_vllm/hf_reference.py OUT_DIR   (writes OUT_DIR/{neox,llama,lora}/ and OUT_DIR/reference.json)
"""

import json
import sys
from pathlib import Path

import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

from contamlab.decoding.lne import LNEBlocking
from contamlab.decoding.railcap import RailCap
from contamlab.decoding.sampler import HFSampler
from contamlab.models.loading import load_causal_lm
from contamlab.models.tiny import build_tiny_model, train_tokenizer

MAX_NEW = 24
STOP = ["\nQuestion:"]
RAILCAP = {"n": 2, "mode": "ban"}
LNE = {"beta": 100.0, "t_task": 7, "decode": "greedy"}  # a large beta: n_block = 6 on these near-uniform models
PROMPTS = [
    "Question: Tom has 3 apples and buys 4 more. How many?\nAnswer:",
    "Question: Tom has 12 apples and buys 9 more. How many?\nAnswer:",
    "Question: Ann has 5 pears.\nAnswer:",
    "Question: Tom has 31 apples and buys 2 more. How many?\nAnswer: 31",
]


def texts() -> list[str]:
    out = []
    for a in range(2, 40):
        b = (a * 7) % 13 + 2
        out.append(
            f"Question: Tom has {a} apples and buys {b} more. How many?\nAnswer: {a} + {b} = {a + b}. #### {a + b}"
        )
    return out


def sharpen(model: torch.nn.Module, scale: float = 3.0) -> torch.nn.Module:
    """Scale the non-norm weights of a random model, so its logits are peaked (no near-ties between backends)."""
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" not in name:
                p.mul_(scale)
    return model.eval()


def greedy(sampler: HFSampler, ids, step_fn=None):
    out = sampler.decode(ids, m=1, temperature=1.0, seed=0, step_fn=step_fn, greedy=True)
    return [rows[0] for rows in out], [e[0] for e in sampler.last_entropy]


def main(out_dir: Path) -> None:
    torch.manual_seed(0)
    tok = train_tokenizer(texts(), 300)
    neox = sharpen(build_tiny_model(len(tok), hidden_size=64, num_layers=2, num_heads=2, intermediate_size=128, seed=1))
    llama_cfg = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,  # head_dim 64: vLLM's CPU attention has no kernel for 16
        num_key_value_heads=1,
        max_position_embeddings=256,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        tie_word_embeddings=False,
    )
    torch.manual_seed(2)
    llama = sharpen(LlamaForCausalLM(llama_cfg))
    for name, model in (("neox", neox), ("llama", llama)):
        model.save_pretrained(out_dir / name)
        tok.save_pretrained(out_dir / name)
    # A LoRA adapter with random, non-zero B (init_lora_weights=False), recorded against the llama directory.
    base = LlamaForCausalLM.from_pretrained(out_dir / "llama")
    lora_cfg = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "o_proj", "down_proj"])
    lora_cfg.init_lora_weights = False
    torch.manual_seed(3)
    get_peft_model(base, lora_cfg).save_pretrained(out_dir / "lora")
    tok.save_pretrained(out_dir / "lora")

    ref: dict = {"prompts": PROMPTS, "stop": STOP, "max_new_tokens": MAX_NEW, "railcap": RAILCAP, "lne": LNE}
    hf = HFSampler(load_causal_lm(str(out_dir / "neox")), tok, stop=STOP, max_new_tokens=MAX_NEW, shared_kv=False)
    ids = hf.encode(PROMPTS)
    ref["prompt_ids"] = ids
    ref["neox_greedy"], ref["neox_entropy"] = greedy(hf, ids)
    railcap = RailCap(**RAILCAP).step_fn(ref["neox_greedy"], ref["neox_entropy"])
    ref["neox_railcap"], _ = greedy(hf, ids, railcap)
    lne = LNEBlocking(**LNE)
    ref["lne_n_blocks"] = lne.n_blocks(ref["neox_entropy"]).tolist()
    ref["neox_lne"], _ = greedy(hf, ids, lne.step_fn(ref["neox_greedy"], ref["neox_entropy"]))
    for name in ("llama", "lora"):
        sampler = HFSampler(
            load_causal_lm(str(out_dir / name)), tok, stop=STOP, max_new_tokens=MAX_NEW, shared_kv=False
        )
        ref[f"{name}_greedy"], _ = greedy(sampler, ids)
    (out_dir / "reference.json").write_text(json.dumps(ref))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
