"""Detector forward passes: contamlab's batched, padding-masked scorer vs a one-text-at-a-time loop, same texts.

    python benchmarks/detectors.py --model tiny                  # the default world's clean model, 200 documents
    python benchmarks/detectors.py --model smollm2 --texts 64    # SmolLM2-135M on GSM8K test documents

The texts are what Loss / Zlib / Min-K% / Min-K%++ score: each test question with its reference solution. Both
paths compute the same per-token log-probs (checked here); throughput = scored tokens / wall second. Prints a table
and writes benchmarks/results/detectors-<model>.json.

Batching can only win back what the one-by-one loop leaves idle. The run also measures this machine's dense matmul
rate (a 2048 x 2048 float32 product on the same threads) and the loop's achieved rate from the model's linear-layer
FLOPs per token (2 x weights, attention scores left out, so a lower bound): ``1 / fraction`` bounds any batching gain.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch
from sampling import load  # benchmarks/ runs as a script directory: its sibling module

from contamlab.detectors.scoring import default_batch_tokens, score_sequences
from contamlab.io import atomic_write_json


def matmul_gflops(size: int = 2048, repeats: int = 5) -> float:
    """Best-of-``repeats`` float32 GEMM rate on the current torch threads: the ceiling any forward pass can reach."""
    a, b = torch.randn(size, size), torch.randn(size, size)
    a @ b  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - t0)
    return 2 * size**3 / best / 1e9


def linear_flops_per_token(model) -> int:
    """2 x the weights of every linear layer (LM head included): the matmul work of one token's forward pass."""
    return 2 * sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))


@torch.no_grad()
def one_by_one(model, sequences):
    """What a researcher would write: one forward pass and a full-vocabulary log-softmax per text."""
    out = []
    device = next(model.parameters()).device
    for seq in sequences:
        ids = torch.tensor([seq], device=device)  # [1, T]
        logp = torch.log_softmax(model(input_ids=ids).logits.float(), dim=-1)  # [1, T, V]
        out.append(logp[0, :-1].gather(-1, ids[0, 1:, None]).squeeze(-1).cpu().numpy())  # [T-1]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["tiny", "smollm2"], default="tiny")
    parser.add_argument("--texts", type=int, default=200)
    parser.add_argument("--batch-tokens", type=int, default=None, help="default: contamlab's default for the device")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    _, domain, model, tokenizer = load(args.model)
    questions = domain.test[: args.texts]
    texts = [domain.format.question_block(q.question) + domain.target(q) for q in questions]
    sequences = [tokenizer(t)["input_ids"] for t in texts]
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    tokens = sum(len(s) - 1 for s in sequences)
    rows = []

    def record(name, seconds):
        rows.append({"method": name, "tokens": tokens, "seconds": round(seconds, 3), "tok_per_s": tokens / seconds})
        print(f"{name:40s} {tokens:8d} tok {seconds:8.2f} s {tokens / seconds:9.1f} tok/s", flush=True)

    t0 = time.perf_counter()
    reference = one_by_one(model, sequences)
    record("one text per forward pass", time.perf_counter() - t0)
    chosen = args.batch_tokens or default_batch_tokens(next(model.parameters()).device)
    t0 = time.perf_counter()
    batched = score_sequences(model, sequences, pad, batch_tokens=chosen)
    record(f"contamlab batched (batch_tokens={chosen})", time.perf_counter() - t0)
    t0 = time.perf_counter()
    score_sequences(model, sequences, pad, moments=True, batch_tokens=chosen)
    record("contamlab batched + Min-K%++ moments", time.perf_counter() - t0)
    if chosen != 8192:
        t0 = time.perf_counter()
        score_sequences(model, sequences, pad, batch_tokens=8192)
        record("contamlab batched (batch_tokens=8192)", time.perf_counter() - t0)
    worst = max(float(np.abs(a - b.logprobs).max()) for a, b in zip(reference, batched))
    peak = matmul_gflops()
    flops = linear_flops_per_token(model)
    loop_gflops = rows[0]["tok_per_s"] * flops / 1e9
    summary = {
        "model": args.model,
        "texts": len(texts),
        "mean_tokens": tokens / len(texts),
        "speedup_batched": rows[1]["tok_per_s"] / rows[0]["tok_per_s"],
        "max_abs_logprob_difference": worst,
        "matmul_peak_gflops": peak,
        "linear_flops_per_token": flops,
        "one_by_one_gflops": loop_gflops,
        "one_by_one_peak_fraction": loop_gflops / peak,
        "batching_ceiling": peak / loop_gflops,
        "threads": torch.get_num_threads(),
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "rows": rows,
    }
    print(f"\nbatched vs one-by-one: {summary['speedup_batched']:.2f}x (max |Δ log p| {worst:.1e})")
    print(
        f"one-by-one runs its linear layers at {loop_gflops:.1f} GFLOP/s, {loop_gflops / peak:.0%} of this machine's "
        f"{peak:.1f} GFLOP/s float32 GEMM: no batching can be more than {peak / loop_gflops:.1f}x faster here"
    )
    out = Path(__file__).parent / "results" / f"detectors-{args.model}.json"
    atomic_write_json(out, summary)
    print(f"written {out}")


if __name__ == "__main__":
    main()
