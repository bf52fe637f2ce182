"""Where a LoRA training step's time goes: the real stage loop under torch.profiler, and the loop's own floor.

    python benchmarks/training_step.py --model smollm2            # the real-LM world's step, profiled (~3 min)
    python benchmarks/training_step.py --model smollm2 --floor    # the same loop on a model that computes nothing
    python benchmarks/training_step.py --model smollm2 --floor --overrides finetune.max_length=4   # ... on 4 tokens

Both run the stage service itself (:func:`contamlab.stages.train_stage`, the Lightning loop with its checkpoint,
progress and logger callbacks) on the real-LM world's recipe (``experiment=real_world``: LoRA, bf16 autocast,
micro-batches of 4, 8 documents a step grouped by length) over the first ``--steps`` optimiser steps of the clean
stage's documents. The first step is the warm-up and is not counted.

``--model`` profiles the packaged model. The step's time is split by what ran (``torch.profiler`` self CPU time of
every operator, grouped): the matrix multiplies (the frozen base's and the adapter's), attention, the casts of
autocast, the loss (log-softmax over the vocabulary), the optimizer, the data loader, the other operators, and what
is left of the wall time: the loop itself (Python, Lightning's hooks, logging, checkpoint bookkeeping).

``--floor`` trains a model of the same vocabulary and tokenizer whose layers compute almost nothing (1 layer, hidden
size 16): what is left is what every step pays whatever the model, the floor of a GPU step too. Its documents still
project each labelled token onto the 49,152-word vocabulary, work a GPU does in microseconds and this CPU in hundreds
of milliseconds; ``--overrides finetune.max_length=4`` cuts every document to its last 4 tokens (all labelled), so
that what remains of a step is the loop alone.

Writes ``benchmarks/results/training_step-<model>[-floor].json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import lightning as L
import torch
from real_lm import gemm_rate, linear_params  # benchmarks/ is the script's folder

from contamlab import stages
from contamlab.config import build_domain, compose, model_store
from contamlab.console import library_output
from contamlab.io import atomic_write_json
from contamlab.provenance import run_metadata
from contamlab.stages import TwinRecipe, stage_corpus, stage_lr, train_stage
from contamlab.training.module import CausalLMModule

#: Operator name prefixes by the part of a step they are (self CPU time; the first match wins).
GROUPS = {
    "matrix multiplies": ("aten::mm", "aten::addmm", "aten::bmm", "aten::baddbmm", "aten::linear"),
    "attention": ("aten::_scaled_dot_product", "aten::scaled_dot_product"),
    "autocast casts": ("aten::_to_copy", "aten::copy_", "aten::to", "aten::_autocast"),
    "loss (log-softmax, NLL)": ("aten::_log_softmax", "aten::log_softmax", "aten::nll_loss", "aten::cross_entropy"),
    "optimizer": ("aten::_fused_adamw", "aten::_foreach", "Optimizer.", "aten::addcdiv", "aten::lerp"),
    "data loader": ("enumerate(DataLoader)",),
}


def floor_model(source: str, out: Path) -> str:
    """A 1-layer Llama of hidden size 16 with ``source``'s vocabulary and tokenizer, saved to ``out``."""
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    config = AutoConfig.from_pretrained(source)
    config.num_hidden_layers, config.hidden_size, config.intermediate_size = 1, 16, 32
    config.num_attention_heads, config.num_key_value_heads, config.head_dim = 2, 2, 8
    torch.manual_seed(0)
    AutoModelForCausalLM.from_config(config).save_pretrained(out)
    AutoTokenizer.from_pretrained(source).save_pretrained(out)
    return str(out)


def group_of(name: str) -> str:
    for group, prefixes in GROUPS.items():
        if name.startswith(prefixes):
            return group
    return "other operators"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("smollm2", "gemma3"), default="smollm2")
    parser.add_argument("--floor", action="store_true", help="a model of the same vocabulary that computes nothing")
    parser.add_argument("--steps", type=int, default=4, help="optimiser steps (the first is a warm-up)")
    parser.add_argument("--profile", action=argparse.BooleanOptionalAction, default=True)
    parser.add_argument(
        "--baseline", nargs="*", default=[], help="overrides of a variant timed against the recipe, rounds alternated"
    )
    parser.add_argument("--rounds", type=int, default=1, help="alternating rounds of recipe and baseline")
    parser.add_argument("--overrides", nargs="*", default=[], help="train.py overrides of every run (e.g. max_length)")
    parser.add_argument("--out", type=Path, help="the result file (default benchmarks/results/training_step-...)")
    parser.add_argument(
        "--baseline-casts", action="store_true", help="the baseline casts its frozen weights every pass (as before)"
    )
    args = parser.parse_args()
    library_output(False)
    work = Path(tempfile.mkdtemp(prefix="contamlab-step-"))
    common = ["experiment=real_world", f"model={args.model}", "logger=csv", f"paths.models_dir={work / 'models'}"]
    common += ["trainer.enable_progress_bar=false", *args.overrides]
    cfg = compose("train", common)
    domain = build_domain(cfg.domain)
    store = model_store(cfg)
    parent = store.base_source()
    if args.floor:
        parent = floor_model(parent, work / "floor")
    per_step = int(cfg.finetune.global_batch)
    corpus = stage_corpus(cfg, domain, "clean")
    # cycled when --steps asks for more than one epoch of the clean stage (64 documents: 8 steps): a long stage
    # checkpoints every fifth of its steps (at most 100), a short one at every step
    examples = [corpus[i % len(corpus)] for i in range(per_step * args.steps)]
    lr = stage_lr(cfg, domain, "clean")
    torch.set_num_threads(int(cfg.trainer.num_threads))
    accumulate = per_step // int(cfg.finetune.micro_batch)
    ends: list[float] = []  # the clock at the end of every micro-batch of a fit
    fits: dict[str, object] = {}
    original_fit = L.Trainer.fit
    original_hook = CausalLMModule.on_train_batch_end

    def on_train_batch_end(self, *hook_args):
        ends.append(time.perf_counter())
        return original_hook(self, *hook_args)

    def fit(self, module, *fit_args, **fit_kwargs):  # the fit alone is measured: not the model's load, not the save
        ends.clear()
        fits["params"] = (linear_params(module.model, False), linear_params(module.model, True))
        fits["hidden"] = int(module.model.config.hidden_size)
        with contextlib.ExitStack() as stack:
            if fits.get("profile"):
                from torch.profiler import ProfilerActivity, profile

                fits["prof"] = stack.enter_context(profile(activities=[ProfilerActivity.CPU]))
            fits["start"] = time.perf_counter()
            out = original_fit(self, module, *fit_args, **fit_kwargs)
            fits["wall"] = time.perf_counter() - fits["start"]
        return out

    L.Trainer.fit, CausalLMModule.on_train_batch_end = fit, on_train_batch_end
    runs = 0

    def run(variant: list[str]) -> list[float]:
        """Seconds of each optimiser step after the first (the first carries the loop's start-up)."""
        nonlocal runs
        runs += 1
        run_cfg = compose("train", [*common, *variant])
        path = work / f"run-{runs}"
        hold = stages.hold_frozen_linears
        if variant is args.baseline and args.baseline_casts:
            stages.hold_frozen_linears = lambda model, dtype: 0
        try:
            train_stage(run_cfg, store, domain, "contaminated", path, TwinRecipe(parent, examples, 1, lr, {"b": 1}))
        finally:
            stages.hold_frozen_linears = hold
        marks = [fits["start"], *ends[accumulate - 1 :: accumulate]]
        return [b - a for a, b in zip(marks[1:], marks[2:])]

    variants = {"recipe": []} | ({"baseline": args.baseline} if args.baseline or args.baseline_casts else {})
    times: dict[str, list[float]] = {name: [] for name in variants}
    for _ in range(args.rounds):
        for name, variant in variants.items():
            times[name] += run(variant)
    frozen, adapter = fits["params"]
    step_flops = 2 * 2 * (frozen + adapter) + 6 * adapter  # per token: forward, backward to the inputs, adapter grads
    # the MLP's shape, measured now: the best of five trials of 100 products (one trial is noisy on a shared machine)
    ceiling = {"gemm_bf16": max(gemm_rate(fits["hidden"], torch.bfloat16, repeats=100) for _ in range(5))}
    summary = json.loads((work / "run-1" / "train_summary.json").read_text())
    tokens_per_step = int(summary["tokens_per_epoch"]) / max(1, int(summary["steps"]))
    label = f"{args.model}{' floor' if args.floor else ''}"
    result = {
        "model": args.model,
        "floor": args.floor,
        "overrides": args.overrides,
        "command": "python benchmarks/training_step.py " + " ".join(sys.argv[1:]),
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "run": run_metadata(),  # commit, clean tree, versions, CPU
        "threads": int(cfg.trainer.num_threads),
        "precision": str(cfg.trainer.precision),
        "tokens_per_step": round(tokens_per_step, 1),
        "flops_per_token": step_flops,
        "gemm_bf16_flops": ceiling["gemm_bf16"],
        "ceiling_tokens_per_s": round(ceiling["gemm_bf16"] / step_flops, 1),
        "variants": {},
    }
    for name, steps in times.items():
        ms = 1e3 * statistics.median(steps)
        rate = tokens_per_step / ms * 1e3
        share = rate / result["ceiling_tokens_per_s"]
        result["variants"][name] = {
            "overrides": variants[name],
            "step_s": [round(s, 4) for s in steps],
            "ms_per_step": round(ms, 2),
            "tokens_per_s": round(rate, 2),
            "share_of_ceiling": round(share, 3),
        }
        top = result["ceiling_tokens_per_s"]
        print(f"{label} {name} {' '.join(variants[name])}: {ms:.1f} ms a step (median of {len(steps)}), "
              f"{rate:.1f} tok/s, {share:.0%} of the bf16 GEMM ceiling ({top:.0f} tok/s)")  # fmt: skip
    if "baseline" in variants:
        result["baseline_casts"] = args.baseline_casts
        ratio = result["variants"]["baseline"]["ms_per_step"] / result["variants"]["recipe"]["ms_per_step"]
        result["speedup_vs_baseline"] = round(ratio, 3)
        print(f"recipe vs baseline: {ratio:.2f}x")
    if args.profile:
        fits["profile"] = True
        run([])
        groups: dict[str, float] = defaultdict(float)
        for event in fits["prof"].key_averages():
            groups[group_of(event.key)] += event.self_cpu_time_total / 1e6
        wall = float(fits["wall"])
        # the operators' self times sum to the time spent inside them; the rest of the fit is the loop's own
        inside = sum(groups.values())
        shares = {g: round(s / wall, 4) for g, s in sorted(groups.items(), key=lambda kv: -kv[1])}
        shares["the loop itself (Python, hooks, logging, checkpoints)"] = round(max(0.0, wall - inside) / wall, 4)
        print(f"profiled fit of the recipe {wall:.2f} s; share of its wall time:")
        for g, s in shares.items():
            print(f"  {g:55s} {s:6.1%}")
        top = sorted(fits["prof"].key_averages(), key=lambda e: -e.self_cpu_time_total)[:15]
        result["profile"] = {
            "fit_wall_s": round(wall, 3),
            "seconds": {g: round(s, 4) for g, s in groups.items()},
            "share_of_fit": shares,
            "top_operators_s": {e.key: round(e.self_cpu_time_total / 1e6, 4) for e in top},
        }
    tag = f"{'-floor' if args.floor else ''}{'-short' if any('max_length' in o for o in args.overrides) else ''}"
    out = args.out or Path(__file__).parent / "results" / f"training_step-{args.model}{tag}.json"
    atomic_write_json(out, result)
    print(f"written {out}")
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
