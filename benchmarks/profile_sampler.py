"""Where the sampler's time goes: a torch.profiler table of one decode, and its overhead over the pure forward passes.

    python benchmarks/profile_sampler.py --model smollm2      # SmolLM2-135M, the real 8-shot GSM8K prompt
    python benchmarks/profile_sampler.py --model tiny

The sampler times its own model forward calls (``stats.forward_s``); everything else in ``stats.wall_s`` is the
sampler's overhead (sampling, stop checks, strategy hooks, cache compaction). The profiler groups the self CPU time
by operator. Prints both and writes benchmarks/results/profile-<model>.json.
"""

from __future__ import annotations

import argparse
import os
import platform
from pathlib import Path

import torch
from sampling import configured_draw, load  # benchmarks/ runs as a script directory: its sibling module
from torch.profiler import ProfilerActivity, profile

from contamlab.decoding.sampler import HFSampler
from contamlab.io import atomic_write_json


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["tiny", "smollm2"], default="smollm2")
    parser.add_argument("--questions", type=int, default=2)
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--top", type=int, default=15)
    parser.add_argument("--draw", choices=["multinomial", "inverse_cdf"], default=None, help="default: the model's")
    args = parser.parse_args()
    args.draw = args.draw or configured_draw(args.model)
    _, domain, model, tokenizer = load(args.model)
    prompts = [domain.prompt(q) for q in domain.test[: args.questions]]
    # The copying sampler (shared_kv=False), as this profile has always measured; evaluate.py shares the prompt's KV
    # (sampling.configured_shared_kv).
    sampler = HFSampler(model, tokenizer, stop=(), max_new_tokens=args.max_new_tokens, draw=args.draw, shared_kv=False)
    ids = sampler.encode(prompts)
    sampler.set_prefix(ids)
    sampler.decode(ids[:1], 2, 0.7, 0)  # warm-up
    sampler.stats = type(sampler.stats)()
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        sampler.decode(ids, args.m, 0.7, 0)
    stats = sampler.stats
    events = sorted(prof.key_averages(), key=lambda e: e.self_cpu_time_total, reverse=True)
    total = sum(e.self_cpu_time_total for e in events)
    top = [
        {"op": e.key, "calls": e.count, "self_s": e.self_cpu_time_total / 1e6, "share": e.self_cpu_time_total / total}
        for e in events[: args.top]
    ]
    print(f"{'operator':40s} {'calls':>7s} {'self s':>8s} {'share':>6s}")
    for row in top:
        print(f"{row['op'][:40]:40s} {row['calls']:7d} {row['self_s']:8.2f} {100 * row['share']:5.1f}%")
    overhead = stats.wall_s / stats.forward_s - 1 if stats.forward_s else float("nan")
    print(
        f"\ndecode {stats.wall_s:.1f} s, of which model forward {stats.forward_s:.1f} s:"
        f" sampler overhead {100 * overhead:+.1f}% over the forward passes ({stats.generated_tokens} tokens)"
    )
    summary = {
        "model": args.model,
        "draw": args.draw,
        "questions": len(prompts),
        "m": args.m,
        "max_new_tokens": args.max_new_tokens,
        "decode_s": stats.wall_s,
        "forward_s": stats.forward_s,
        "overhead_over_forward": overhead,
        "generated_tokens": stats.generated_tokens,
        "top_ops": top,
        "threads": torch.get_num_threads(),
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
    }
    suffix = "" if args.draw == "multinomial" else f"-{args.draw}"
    out = Path(__file__).parent / "results" / f"profile-{args.model}{suffix}.json"
    atomic_write_json(out, summary)
    print(f"written {out}")


if __name__ == "__main__":
    main()
