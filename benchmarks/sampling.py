"""Sampling throughput: contamlab's HF sampler vs plain ``generate(num_return_sequences=m)`` and vs a per-sample
``generate`` loop, its ceiling, and the overhead of RailCap, LNE-blocking and TED over identity, measured in one run on
the same prompts.

The ceiling is the model's forward passes alone at the sampler's batch shape (the same chunks of questions × m rows,
the same prefill and KV cache, then the whole token budget of decode steps with every row kept and nothing drawn): what
the sampler would reach if sampling, strategies, stop checks and bookkeeping cost nothing. With ``--compare-kv`` (the
default for SmolLM2) the copying sampler (every row holds its own copy of the prompt's KV) at its best batch size runs
next to the shared-KV sampler at 256 rows, with the KV each one held.

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
from contamlab.decoding.lne import LNEBlocking, LNEHook
from contamlab.decoding.railcap import RailCapHook, build_table
from contamlab.decoding.sampler import HFSampler, encode_prompts
from contamlab.decoding.ted import ted_survivors
from contamlab.io import atomic_write_json
from contamlab.models import load_tokenizer


def load(model_name: str):
    if model_name == "smollm2":
        cfg = compose("evaluate", ["model=smollm2", "domain=gsm8k"])
        from contamlab.config import model_store

        source = model_store(cfg).base_source()
    else:
        cfg = compose("train", ["model=tiny", "domain=arith"])
        from contamlab.config import model_store
        from contamlab.models.store import is_done

        domain = build_domain(cfg.domain)
        source = str(model_store(cfg).stage_dir(domain, "clean"))
        if not is_done(Path(source)):
            raise SystemExit(f"train the default world first (python train.py); missing {source}")
    from contamlab.config import model_store

    return cfg, build_domain(cfg.domain), model_store(cfg).load(source), load_tokenizer(source)


def configured_draw(model_name: str) -> str:
    """The HF sampler's draw that evaluate.py uses for this model (``sampler.draw``)."""
    return str(compose("evaluate", [f"model={model_name}"]).sampler.draw)


def configured_batch_rows(model_name: str) -> int:
    """The HF sampler's rows per decode batch that evaluate.py uses for this model (``sampler.batch_rows``)."""
    return int(compose("evaluate", [f"model={model_name}"]).sampler.batch_rows)


def configured_shared_kv(model_name: str) -> bool:
    """Whether evaluate.py's HF sampler shares the prompt's KV for this model (``sampler.shared_kv``)."""
    return bool(compose("evaluate", [f"model={model_name}"]).sampler.shared_kv)


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


def forward_ceiling(sampler: HFSampler, ids, m: int) -> tuple[int, float]:
    """Tokens and seconds of the model's forward passes alone at the sampler's batch shape (see the module doc)."""
    tokens, seconds = 0, 0.0
    per_chunk = max(1, sampler.batch_rows // m)
    with torch.inference_mode():
        for start in range(0, len(ids), per_chunk):
            batch = sampler.prefill(ids[start : start + per_chunk], m)
            seconds += batch.forward_s
            token = batch.logits.argmax(dim=-1)[:, None]  # [R, 1]: any token; the cost does not depend on it
            mask, pos = batch.mask, batch.next_pos
            ones = torch.ones((mask.shape[0], 1), dtype=mask.dtype, device=mask.device)
            for _ in range(sampler.max_new_tokens):
                mask = torch.cat([mask, ones], dim=1)
                t0 = time.perf_counter()
                sampler._forward(token, pos[:, None], batch.cache, mask, batch.shared)
                seconds += time.perf_counter() - t0
                tokens += token.shape[0]
                pos = pos + 1
    return tokens, seconds


def timed_identity(sampler: HFSampler, ids, m: int) -> dict:
    """One identity decode: tokens, seconds, tok/s, the share of its wall time in forward passes, its peak KV."""
    sampler.stats = type(sampler.stats)()
    t0 = time.perf_counter()
    sampler.decode(ids, m, 0.7, 0)
    seconds = time.perf_counter() - t0
    stats = sampler.stats
    return {
        "tokens": stats.generated_tokens,
        "seconds": round(seconds, 3),
        "tok_per_s": stats.generated_tokens / seconds,
        "overhead_over_forward": stats.wall_s / stats.forward_s - 1,
        "peak_kv_gb": stats.peak_kv_bytes / 1e9,
    }


def compare_kv(args, model, tokenizer, ids, draw) -> dict[str, dict]:
    """The copying sampler at ``--copy-rows`` rows and the shared-KV sampler at 256 rows: identity decodes, same ids."""
    rows = {}
    for kv, batch_rows in (("copying", args.copy_rows), ("shared", 256)):
        shared = kv == "shared"
        sampler = HFSampler(
            model, tokenizer, max_new_tokens=args.max_new_tokens, batch_rows=batch_rows, draw=draw, shared_kv=shared
        )
        sampler.set_prefix(ids)
        result = timed_identity(sampler, ids, args.m)
        rows[f"{kv} KV, {batch_rows} rows"] = result
        print(
            f"{kv + ' KV, ' + str(batch_rows) + ' rows':44s} {result['tokens']:8d} tok {result['seconds']:8.2f} s"
            f" {result['tok_per_s']:9.1f} tok/s, peak KV {result['peak_kv_gb']:.2f} GB,"
            f" overhead over its forward passes {100 * result['overhead_over_forward']:+.1f}%",
            flush=True,
        )
    return rows


def compare_kv_only(args, model, tokenizer, prompts) -> None:
    """``--only-kv``: print and write (sampling-<model>-kv.json) the copying vs shared-KV comparison alone."""
    draw = configured_draw(args.model)
    ids = encode_prompts(tokenizer, prompts)
    rows = compare_kv(args, model, tokenizer, ids, draw)
    copying, shared = rows[f"copying KV, {args.copy_rows} rows"], rows["shared KV, 256 rows"]
    speedup = shared["tok_per_s"] / copying["tok_per_s"]
    print(
        f"\nshared KV at 256 rows: {speedup:.2f}x the tok/s of the copying sampler at {args.copy_rows} rows;"
        f" peak KV {shared['peak_kv_gb']:.2f} GB vs {copying['peak_kv_gb']:.2f} GB"
    )
    summary = {
        "model": args.model,
        "questions": len(prompts),
        "m": args.m,
        "max_new_tokens": args.max_new_tokens,
        "draw": draw,
        "shared_kv_speedup": speedup,
        "threads": torch.get_num_threads(),
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "rows": rows,
    }
    out = Path(__file__).parent / "results" / f"sampling-{args.model}-kv.json"
    atomic_write_json(out, summary)
    print(f"written {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=["tiny", "smollm2"], default="tiny")
    parser.add_argument("--questions", type=int, default=32)
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--max-new-tokens", type=int, default=128)
    parser.add_argument("--threads", type=int, default=None)
    parser.add_argument("--loop-questions", type=int, default=2, help="questions for the per-sample generate loop")
    parser.add_argument(
        "--batch-rows", type=int, default=None, help="rows per decode batch (default: the model config's sampler)"
    )
    parser.add_argument("--compare-kv", action=argparse.BooleanOptionalAction, default=None, help="default: smollm2")
    parser.add_argument("--copy-rows", type=int, default=64, help="the copying sampler's rows (best: 64)")
    parser.add_argument("--skip-generate", action="store_true", help="skip the generate() baselines")
    parser.add_argument("--only-kv", action="store_true", help="only the copying vs shared-KV comparison")
    parser.add_argument("--out", type=Path, default=None, help="default: benchmarks/results/sampling-<model>.json")
    args = parser.parse_args()
    if args.batch_rows is None:
        args.batch_rows = configured_batch_rows(args.model)
    compare_kv = args.model == "smollm2" if args.compare_kv is None else args.compare_kv
    if args.threads:
        torch.set_num_threads(args.threads)
    cfg, domain, model, tokenizer = load(args.model)
    questions = domain.test[: args.questions]
    prompts = [domain.prompt(q) for q in questions]
    rows: dict[str, dict] = {}
    if args.only_kv:
        compare_kv_only(args, model, tokenizer, prompts)
        return

    def record(name, tokens, seconds, **extra):
        rows[name] = {"tokens": tokens, "seconds": round(seconds, 3), "tok_per_s": tokens / seconds, **extra}
        print(f"{name:44s} {tokens:8d} tok {seconds:8.2f} s {tokens / seconds:9.1f} tok/s", flush=True)

    if not args.skip_generate:
        # Plain generate, in batches of questions that hold the same number of rows as ours.
        t0 = time.perf_counter()
        tokens = 0
        per = max(1, args.batch_rows // args.m)
        for i in range(0, len(prompts), per):
            tokens += plain_generate(model, tokenizer, prompts[i : i + per], args.m, 0.7, args.max_new_tokens, i)
        record("generate(num_return_sequences=m)", tokens, time.perf_counter() - t0)

        # What a researcher might write first: one generate() call per sample (a few questions; a rate, not a total).
        few = prompts[: args.loop_questions]
        t0 = time.perf_counter()
        tokens = sum(
            plain_generate(model, tokenizer, [p], 1, 0.7, args.max_new_tokens, 1000 * i + j)
            for i, p in enumerate(few)
            for j in range(args.m)
        )
        record(f"per-sample generate loop ({len(few)} q)", tokens, time.perf_counter() - t0)

    draw = configured_draw(args.model)
    shared_kv = configured_shared_kv(args.model)
    sampler = HFSampler(
        model, tokenizer, max_new_tokens=args.max_new_tokens, batch_rows=args.batch_rows, draw=draw, shared_kv=shared_kv
    )
    ids = sampler.encode(prompts)
    prefix = sampler.set_prefix(ids)
    greedy = [g[0] for g in sampler.decode(ids, 1, 1.0, 0, greedy=True)]
    entropy = [e[0] for e in sampler.last_entropy]
    table = build_table(greedy, 4)
    lne_blocks = LNEBlocking().n_blocks(entropy)
    samples = None
    for name, hook in [
        ("identity", None),
        ("railcap n=4", RailCapHook(table)),  # the hooks the strategies give the sampler in an evaluation
        ("lne", LNEHook(lne_blocks)),
    ]:
        sampler.stats = type(sampler.stats)()
        t0 = time.perf_counter()
        decoded = sampler.decode(ids, args.m, 0.7, 0, step_fn=hook)
        samples = samples or decoded
        stats = sampler.stats
        record(
            f"contamlab sampler ({name})",
            stats.generated_tokens,
            time.perf_counter() - t0,
            overhead_over_forward=stats.wall_s / stats.forward_s - 1,
            peak_kv_gb=stats.peak_kv_bytes / 1e9,
        )
    # TED = identity's samples + a post-hoc filter: its extra cost is the filter alone.
    t0 = time.perf_counter()
    texts = [[tokenizer.decode(r) for r in rs] for rs in samples]
    for rs, ts, g in zip(samples, texts, greedy):
        ted_survivors(rs, g, ts, 2, True, 100)
    ted_s = time.perf_counter() - t0
    identity = rows["contamlab sampler (identity)"]
    record("contamlab sampler (ted)", identity["tokens"], identity["seconds"] + ted_s)
    # The ceiling: the same batch shape, forward passes alone.
    tokens, seconds = forward_ceiling(sampler, ids, args.m)
    record("ceiling: forward passes alone", tokens, seconds)

    ours = identity["tok_per_s"]
    ceiling = rows["ceiling: forward passes alone"]["tok_per_s"]
    summary = {
        "model": args.model,
        "questions": len(prompts),
        "m": args.m,
        "max_new_tokens": args.max_new_tokens,
        "batch_rows": args.batch_rows,
        "draw": draw,
        "shared_kv": shared_kv,
        "shared_prefix_tokens": prefix,
        "mean_prompt_tokens": sum(map(len, ids)) / len(ids),
        "share_of_ceiling": ours / ceiling,
        "overhead_over_forward": identity["overhead_over_forward"],
        "railcap_overhead": ours / rows["contamlab sampler (railcap n=4)"]["tok_per_s"] - 1,
        "lne_overhead": ours / rows["contamlab sampler (lne)"]["tok_per_s"] - 1,
        "ted_overhead": ours / rows["contamlab sampler (ted)"]["tok_per_s"] - 1,
    }
    lines = [
        f"\nidentity {ours:.1f} tok/s = {100 * ours / ceiling:.0f}% of the ceiling ({ceiling:.1f} tok/s, forward passes"
        f" alone at the same batch shape); overhead over its own forward passes"
        f" {100 * identity['overhead_over_forward']:+.1f}%",
        f"overhead over identity: RailCap {100 * summary['railcap_overhead']:+.1f}%, LNE"
        f" {100 * summary['lne_overhead']:+.1f}%, TED {100 * summary['ted_overhead']:+.1f}%",
    ]
    if not args.skip_generate:
        base = rows["generate(num_return_sequences=m)"]["tok_per_s"]
        loop = next(v for k, v in rows.items() if k.startswith("per-sample"))["tok_per_s"]
        summary.update(speedup_vs_generate=ours / base, speedup_vs_per_sample_loop=ours / loop)
        lines.append(f"speed-up over generate: {ours / base:.2f}x, over a per-sample loop: {ours / loop:.1f}x")
    if compare_kv:
        rows.update(compare_kv(args, model, tokenizer, ids, draw))
        copying, shared = rows[f"copying KV, {args.copy_rows} rows"], rows["shared KV, 256 rows"]
        summary["shared_kv_speedup"] = shared["tok_per_s"] / copying["tok_per_s"]
        lines.append(
            f"shared KV at 256 rows: {summary['shared_kv_speedup']:.2f}x the tok/s of the copying sampler at"
            f" {args.copy_rows} rows; peak KV {shared['peak_kv_gb']:.2f} GB vs {copying['peak_kv_gb']:.2f} GB"
        )
    summary.update(
        threads=torch.get_num_threads(),
        machine=platform.processor() or platform.machine(),
        cpu_count=os.cpu_count(),
        rows=rows,
    )
    print("\n".join(lines))
    out = args.out or Path(__file__).parent / "results" / f"sampling-{args.model}.json"
    atomic_write_json(out, summary)
    print(f"written {out}")


if __name__ == "__main__":
    main()
