"""Where the base stage's time goes: tokens/s of one pre-training step of the default world, by variant, in one run.

    python benchmarks/pretraining.py                 # the default world (domain=arith), 60 timed steps per variant
    python benchmarks/pretraining.py --steps 30 domain=arith_v1

Each variant times the same steps (the base stage's packed rows, batch and model) after a warm-up of 5, in a plain
loop: forward, backward, gradient clip, AdamW step, as ``CausalLMModule`` under Lightning does (train.py's own rate is
in each stage's train_summary.json). ``train.py`` is the first row; the others change one thing. Ratios are to the
first row. Writes benchmarks/results/pretraining-<domain>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import torch

from contamlab.config import build_domain, compose
from contamlab.io import atomic_write_json
from contamlab.models.tiny import build_tiny_model, train_tokenizer
from contamlab.stages import stage_corpus
from contamlab.training.datamodule import PackedDataset

REPO = Path(__file__).resolve().parents[1]
# name -> (threads, attention implementation, AdamW kernel, torch.compile)
VARIANTS = {
    "train.py (2 threads, sdpa, fused AdamW)": (2, "sdpa", "fused", False),
    "foreach AdamW (before)": (2, "sdpa", "foreach", False),
    "1 thread": (1, "sdpa", "fused", False),
    "eager attention": (2, "eager", "fused", False),
    "torch.compile": (2, "sdpa", "fused", True),
}


def time_variant(cfg, rows: torch.Tensor, vocab: int, threads: int, attn: str, kernel: str, compiled: bool, steps: int):
    """Tokens/s of ``steps`` base-stage steps after 5 warm-up steps (which include compilation)."""
    torch.set_num_threads(threads)
    model = build_tiny_model(vocab, seed=0, **cfg.model.arch)
    model.config._attn_implementation = attn
    base = cfg.base
    optimizer = torch.optim.AdamW(
        model.parameters(),
        lr=float(base.lr),
        weight_decay=float(base.weight_decay),
        betas=tuple(base.betas),
        fused=kernel == "fused",
        foreach=kernel == "foreach",
    )
    forward = torch.compile(model) if compiled else model
    batch = int(base.batch)
    order = torch.randperm(rows.shape[0], generator=torch.Generator().manual_seed(0))

    def step(i: int) -> None:
        ids = rows[order[(i * batch) % (rows.shape[0] - batch) :][:batch]]  # [batch, seq_len]
        loss = forward(input_ids=ids, attention_mask=torch.ones_like(ids), labels=ids).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), float(base.grad_clip))
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    started = time.perf_counter()
    for i in range(5):
        step(i)
    warmup = time.perf_counter() - started
    started = time.perf_counter()
    for i in range(5, 5 + steps):
        step(i)
    wall = time.perf_counter() - started
    return {"tokens_per_s": steps * rows[:batch].numel() / wall, "ms_per_step": 1000 * wall / steps, "warmup_s": warmup}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("overrides", nargs="*", help="train.py overrides, e.g. domain=arith_v1")
    args = parser.parse_args()
    cfg = compose("train", args.overrides)
    domain = build_domain(cfg.domain)
    docs = stage_corpus(cfg, domain, "base")
    tokenizer = train_tokenizer(docs, int(cfg.model.tokenizer.vocab_size))
    rows = PackedDataset(docs, tokenizer, int(cfg.base.seq_len)).rows  # [N, seq_len]
    results = []
    for name, (threads, attn, kernel, compiled) in VARIANTS.items():
        if threads > (os.cpu_count() or 1):
            continue
        row = {"variant": name, **time_variant(cfg, rows, len(tokenizer), threads, attn, kernel, compiled, args.steps)}
        row["ratio"] = row["tokens_per_s"] / (results[0]["tokens_per_s"] if results else row["tokens_per_s"])
        results.append(row)
        print(
            f"{name:42s} {row['tokens_per_s']:8.0f} tok/s {row['ms_per_step']:7.1f} ms/step  x{row['ratio']:.2f}  "
            f"(warm-up {row['warmup_s']:.1f} s)",
            flush=True,
        )
    steps = int(cfg.base.steps)
    print(f"base stage at the first row's rate: {steps} steps in {steps * results[0]['ms_per_step'] / 1000:.0f} s")
    out = REPO / "benchmarks" / "results" / f"pretraining-{domain.name}.json"
    meta = {"machine": platform.processor() or platform.machine(), "cores": os.cpu_count()}
    atomic_write_json(out, json.loads(json.dumps({"meta": meta, "steps": args.steps, "rows": results})))
    print(f"written {out}")


if __name__ == "__main__":
    main()
