"""Sampling throughput: contamlab's HF sampler vs plain ``generate(num_return_sequences=m)`` and vs a per-sample
``generate`` loop, and the overhead of RailCap, LNE-blocking and TED over identity, measured in one run on the same
prompts.

    python benchmarks/sampling.py --model tiny                     # the default world's clean model (or a random one)
    python benchmarks/sampling.py --model smollm2 --questions 4    # SmolLM2-135M with the real 8-shot GSM8K prompt

Prints a table and writes benchmarks/results/sampling-<model>.json. Throughput = generated tokens / wall second;
every figure is a ratio between rows of the same run.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import torch

from contamlab.config import build_domain, compose
from contamlab.decoding.lne import LNEBlocking, lne_step
from contamlab.decoding.railcap import build_table, railcap_step
from contamlab.decoding.sampler import HFSampler
from contamlab.decoding.ted import ted_survivors
from contamlab.io import atomic_write_json
from contamlab.models import load_causal_lm, load_tokenizer


def load(model_name: str):
    if model_name == "smollm2":
        cfg = compose("evaluate", ["model=smollm2", "domain=gsm8k"])
        from contamlab.jobs.common import model_store

        source = model_store(cfg).base_source()
    else:
        cfg = compose("train", ["model=tiny", "domain=arith"])
        from contamlab.jobs.common import model_store
        from contamlab.models.store import is_done

        domain = build_domain(cfg.domain)
        source = str(model_store(cfg).stage_dir(domain, "clean"))
        if not is_done(Path(source)):
            raise SystemExit(f"train the default world first (python train.py); missing {source}")
    return cfg, build_domain(cfg.domain), load_causal_lm(source), load_tokenizer(source)


def configured_draw(model_name: str) -> str:
    """The HF sampler's draw that evaluate.py uses for this model (``sampler.draw``)."""
    return str(compose("evaluate", [f"model={model_name}"]).sampler.draw)


def plain_generate(model, tokenizer, prompts, m, temperature, max_new, seed):
    """What a researcher would write: left-padded batch, prompt prefilled m times."""
    tokenizer.padding_side = "left"
    enc = tokenizer(prompts, return_tensors="pt", padding=True)
    torch.manual_seed(seed)
    out = model.generate(
        **enc,
        do_sample=True,
        temperature=temperature,
        top_k=0,
        top_p=1.0,
        max_new_tokens=max_new,
        num_return_sequences=m,
        pad_token_id=tokenizer.pad_token_id,
        eos_token_id=tokenizer.eos_token_id,
    )
    new = out[:, enc["input_ids"].shape[1] :]
    return int(((new != tokenizer.pad_token_id) & (new != tokenizer.eos_token_id)).sum())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["tiny", "smollm2"], default="tiny")
    parser.add_argument("--questions", type=int, default=32)
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--loop-questions", type=int, default=2, help="questions for the per-sample generate loop")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg, domain, model, tokenizer = load(args.model)
    questions = domain.test[: args.questions]
    prompts = [domain.prompt(q) for q in questions]
    rows = []

    def record(name, tokens, seconds):
        rows.append({"method": name, "tokens": tokens, "seconds": round(seconds, 3), "tok_per_s": tokens / seconds})
        print(f"{name:34s} {tokens:8d} tok {seconds:8.2f} s {tokens / seconds:9.1f} tok/s", flush=True)

    # Plain generate, in batches of questions that hold the same number of rows as ours.
    t0 = time.perf_counter()
    tokens = 0
    per = max(1, 256 // args.m)
    for i in range(0, len(prompts), per):
        tokens += plain_generate(model, tokenizer, prompts[i : i + per], args.m, 0.7, args.max_new_tokens, i)
    record("generate(num_return_sequences=m)", tokens, time.perf_counter() - t0)

    # What a researcher might write first: one generate() call per sample (on a few questions; a rate, not a total).
    few = prompts[: args.loop_questions]
    t0 = time.perf_counter()
    tokens = sum(
        plain_generate(model, tokenizer, [p], 1, 0.7, args.max_new_tokens, 1000 * i + j)
        for i, p in enumerate(few)
        for j in range(args.m)
    )
    record(f"per-sample generate loop ({len(few)} q)", tokens, time.perf_counter() - t0)

    draw = configured_draw(args.model)
    sampler = HFSampler(model, tokenizer, stop=(), max_new_tokens=args.max_new_tokens, batch_rows=256, draw=draw)
    ids = sampler.encode(prompts)
    prefix = sampler.set_prefix(ids)
    greedy = [g[0] for g in sampler.decode(ids, 1, 1.0, 0, greedy=True)]
    entropy = [e[0] for e in sampler.last_entropy]
    table = build_table(greedy, 4)
    lne_blocks = LNEBlocking().n_blocks(entropy)
    samples = None
    for name, hook in [
        ("contamlab sampler (identity)", None),
        ("contamlab sampler (railcap n=4)", lambda lg, gen, own: railcap_step(lg, gen, own, table)),
        ("contamlab sampler (lne)", lambda lg, gen, own: lne_step(lg, gen.shape[1], own, lne_blocks)),
    ]:
        sampler.stats = type(sampler.stats)()
        t0 = time.perf_counter()
        decoded = sampler.decode(ids, args.m, 0.7, 0, step_fn=hook)
        samples = samples or decoded
        record(name, sampler.stats.generated_tokens, time.perf_counter() - t0)
        rows[-1]["forward_share"] = sampler.stats.forward_s / sampler.stats.wall_s
    # TED = identity's samples + a post-hoc filter: its extra cost is the filter alone.
    t0 = time.perf_counter()
    texts = [[tokenizer.decode(r) for r in rs] for rs in samples]
    for rs, ts, g in zip(samples, texts, greedy):
        ted_survivors(rs, g, ts, 2, True, 100)
    ted_s = time.perf_counter() - t0
    identity = rows[2]
    record("contamlab sampler (ted)", identity["tokens"], identity["seconds"] + ted_s)

    base, loop, ours, rail = (rows[i]["tok_per_s"] for i in (0, 1, 2, 3))
    summary = {
        "model": args.model,
        "questions": len(prompts),
        "m": args.m,
        "max_new_tokens": args.max_new_tokens,
        "draw": draw,
        "shared_prefix_tokens": prefix,
        "mean_prompt_tokens": sum(map(len, ids)) / len(ids),
        "speedup_vs_generate": ours / base,
        "speedup_vs_per_sample_loop": ours / loop,
        "railcap_overhead": ours / rail - 1,
        "lne_overhead": ours / rows[4]["tok_per_s"] - 1,
        "ted_overhead": ours / rows[5]["tok_per_s"] - 1,
        "threads": torch.get_num_threads(),
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "rows": rows,
    }
    print(
        f"\nspeed-up over generate: {ours / base:.2f}x, over a per-sample loop: {ours / loop:.1f}x; overhead over"
        f" identity: RailCap {100 * summary['railcap_overhead']:+.1f}%, LNE {100 * summary['lne_overhead']:+.1f}%,"
        f" TED {100 * summary['ted_overhead']:+.1f}%"
    )
    out = Path(__file__).parent / "results" / f"sampling-{args.model}.json"
    atomic_write_json(out, summary)
    print(f"written {out}")


if __name__ == "__main__":
    main()
