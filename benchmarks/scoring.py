"""The detectors' scoring pass on a packaged real model: what each of its options saves, as ratios of one run.

    python benchmarks/scoring.py --model smollm2      # SmolLM2-135M (about 2 minutes on 2 cores)
    python benchmarks/scoring.py --model gemma3       # Gemma-3-270m, 262k-token vocabulary (about 5 minutes)

On the real-LM world's test problems (``experiment=real_world``), scored by
:func:`contamlab.detectors.scoring.score_sequences`:

- **moments**: per-token log-probs alone against log-probs plus the vocabulary moments Min-K%++ reads (the
  statistics every membership detector's cached pass computes);
- **target only** (CoDeC's shape: one context sample, then the target): projecting every position onto the
  vocabulary and slicing the target's log-probs, against projecting the target's positions only (``score_from``);
- **shared prefix** (ReCaLL's shape: the same three non-member texts before every item): the full pass against the
  prefix's KV computed once (``share_prefix``), both projecting the item's positions only;
- **merged adapter** (with ``--adapter <a trained LoRA stage directory>``, e.g. the real-LM world's contaminated
  model): the loss pass through the peft model as loaded against its adapter folded into the base weights.

Each row gives the seconds of both variants, the ratio, and the largest log-prob difference between them. Writes
``benchmarks/results/scoring-<model>.json``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from contamlab.config import build_domain, compose
from contamlab.detectors.scoring import score_sequences
from contamlab.io import atomic_write_json


def timed(fn) -> tuple[float, list]:
    """Seconds of one call of ``fn`` and its result."""
    start = time.perf_counter()
    out = fn()
    return time.perf_counter() - start, out


def max_diff(a: list, b: list) -> float:
    """The largest absolute difference of the log-probs of two runs (their common tail per sequence)."""
    worst = 0.0
    for x, y in zip(a, b):
        n = min(len(x.logprobs), len(y.logprobs))
        if n:
            worst = max(worst, float(np.abs(x.logprobs[-n:] - y.logprobs[-n:]).max()))
    return worst


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("smollm2", "gemma3"), default="smollm2")
    parser.add_argument("--items", type=int, default=40, help="test problems scored per variant")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--adapter", help="a LoRA stage directory of --model (adds the merged-adapter row)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from contamlab.config import model_store
    from contamlab.console import library_output
    from contamlab.models import load_causal_lm, load_tokenizer

    library_output(False)
    cfg = compose("evaluate", ["experiment=real_world", f"model={args.model}"])
    domain = build_domain(cfg.domain)
    source = model_store(cfg).base_source()
    tok, model = load_tokenizer(source), load_causal_lm(source, "float32").eval()
    pad = tok.pad_token_id
    items = [f"{q.question} {q.solution}" for q in domain.test[: args.items]]
    plain = [list(tok(t)["input_ids"]) for t in items]
    body = [list(tok(t, add_special_tokens=False)["input_ids"]) for t in items]
    sep = list(tok("\n\n", add_special_tokens=False)["input_ids"])
    # CoDeC: the next item as the context; ReCaLL: three other problems as a fixed prefix
    context = [plain[(i + 1) % len(plain)] + sep + body[i] for i in range(len(items))]
    nonmembers = [f"{q.question} {q.solution}" for q in domain.nonmember_questions(3, 0)]
    prefix = list(tok("\n\n".join(nonmembers) + "\n\n")["input_ids"])
    recall = [prefix + b for b in body]
    rows = []

    def row(name: str, slow, fast) -> None:
        slow_s, slow_out = timed(slow)
        fast_s, fast_out = timed(fast)
        entry = {
            "measure": name,
            "slow_s": round(slow_s, 2),
            "fast_s": round(fast_s, 2),
            "ratio": round(slow_s / fast_s, 2),
            "max_logprob_diff": max_diff(slow_out, fast_out),
        }
        rows.append(entry)
        print(
            f"{name:42s} {slow_s:7.2f} s -> {fast_s:7.2f} s: {entry['ratio']:.2f}x "
            f"(log-probs within {entry['max_logprob_diff']:.1e})"
        )

    score_sequences(model, plain[:4], pad)  # warm-up
    row(
        "moments: with / without",
        lambda: score_sequences(model, plain, pad, moments=True),
        lambda: score_sequences(model, plain, pad),
    )
    targets = [len(ids) - len(b) for ids, b in zip(context, body)]
    row(
        "CoDeC pass: every position / target only",
        lambda: score_sequences(model, context, pad),
        lambda: score_sequences(model, context, pad, score_from=targets),
    )
    firsts = [len(prefix)] * len(recall)
    row(
        "ReCaLL pass: full / shared prefix",
        lambda: score_sequences(model, recall, pad, score_from=firsts),
        lambda: score_sequences(model, recall, pad, score_from=firsts, share_prefix=True),
    )
    if args.adapter:
        adapted = load_causal_lm(args.adapter, "float32")
        merged = load_causal_lm(args.adapter, "float32", merge=True)
        score_sequences(merged, plain[:4], pad)  # warm-up
        row(
            "LoRA adapter: as loaded / merged",
            lambda: score_sequences(adapted, plain, pad, moments=True),
            lambda: score_sequences(merged, plain, pad, moments=True),
        )
    out = Path(__file__).parent / "results" / f"scoring-{args.model}.json"
    atomic_write_json(
        out,
        {
            "model": args.model,
            "vocabulary": int(model.config.vocab_size),
            "items": len(items),
            "tokens": {"plain": sum(map(len, plain)), "codec": sum(map(len, context)), "recall": sum(map(len, recall))},
            "machine": platform.processor() or platform.machine(),
            "cpu_count": os.cpu_count(),
            "threads": args.threads,
            "rows": rows,
        },
    )
    print(f"written {out}")


if __name__ == "__main__":
    main()
