"""The real-LM world's two costs against the compute ceiling: the LoRA training step and the detectors' forward pass.

    python benchmarks/real_lm.py --model smollm2          # SmolLM2-135M (about 3 minutes on 2 cores)
    python benchmarks/real_lm.py --model gemma3           # Gemma-3-270m (about 6 minutes)

One run measures, on the world's own documents (``experiment=real_world``'s clean-stage mix, micro-batches of 4):

- this CPU's GEMM rate in fp32 and bf16 (a [512 x hidden] x [hidden x 4·hidden] product, the MLP's shape);
- the LoRA step (forward, backward, AdamW) in fp32 and under bf16 autocast, with micro-batches padded as drawn and
  grouped by length (``finetune.group_by_length``);
- the detectors' forward pass (per-token log-probabilities, what loss / zlib / Min-K% / Min-K%++ share) in fp32 and
  under bf16 autocast, on the adapter-wrapped model in micro-batches of 4;
- the same pass as an audit runs it (``score_sequences``: the plain fp32 model, length-sorted 1,024-token batches, the
  scored positions alone projected), over the first ``8 x --batches`` documents;
- with ``--compile``, that pass again with the decoder under ``torch.compile(dynamic=True)`` (timed after a first
  pass over the same documents, which compiles; the compile time and the largest log-prob difference are recorded).
  No contamlab command compiles: the scores would move by float rounding, and the compile costs minutes.

Each rate is real tokens per second (padding excluded) and its share of the ceiling: the GEMM rate divided by the
FLOPs a token costs (forward: 2 × the linear weights, the output projection included; LoRA step: forward + the
backward to the activations through the frozen weights, 2 × forward, + 6 × the adapter's weights). Writes
``benchmarks/results/real_lm-<model>.json``.
"""

from __future__ import annotations

import argparse
import os
import platform
import time
from pathlib import Path

import torch

from contamlab.config import build_domain, compose
from contamlab.io import atomic_write_json
from contamlab.provenance import run_metadata
from contamlab.stages import stage_corpus
from contamlab.training.datamodule import ExampleDataset, LengthGroupedBatches, pad_collate


def gemm_rate(hidden: int, dtype: torch.dtype, repeats: int = 20) -> float:
    """FLOP/s of a [512, hidden] x [hidden, 4 hidden] product in ``dtype``."""
    a, b = torch.randn(512, hidden, dtype=dtype), torch.randn(hidden, 4 * hidden, dtype=dtype)
    a @ b
    start = time.perf_counter()
    for _ in range(repeats):
        a @ b
    return 2 * 512 * hidden * 4 * hidden * repeats / (time.perf_counter() - start)


def linear_params(model: torch.nn.Module, trainable: bool | None = None) -> int:
    """Weights of the linear layers (the output projection included; embeddings looked up, not multiplied)."""
    total = 0
    for module in model.modules():
        if isinstance(module, torch.nn.Linear):
            for p in module.parameters(recurse=False):
                if p.dim() == 2 and (trainable is None or p.requires_grad == trainable):
                    total += p.numel()
    return total


def batches(dataset: ExampleDataset, pad_id: int, grouped: bool, n: int) -> list[dict[str, torch.Tensor]]:
    """The first ``n`` micro-batches of 4 of a seeded epoch, plain or grouped by length within steps of 8."""
    collate = pad_collate(pad_id)
    generator = torch.Generator().manual_seed(0)
    if grouped:
        order = list(LengthGroupedBatches(dataset.lengths(), 4, 8, generator))
    else:
        perm = torch.randperm(len(dataset), generator=generator).tolist()
        order = [perm[i : i + 4] for i in range(0, len(perm), 4)]
    return [collate([dataset[i] for i in idx]) for idx in order[:n]]


def timed(fn, data: list[dict[str, torch.Tensor]]) -> float:
    """Real tokens per second of ``fn`` over ``data`` (the first batch is a warm-up, not timed)."""
    fn(data[0])
    start, tokens = time.perf_counter(), 0
    for batch in data[1:]:
        fn(batch)
        tokens += int(batch["attention_mask"].sum())
    return tokens / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("smollm2", "gemma3"), default="smollm2")
    parser.add_argument("--batches", type=int, default=7, help="micro-batches timed per setting (after a warm-up)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, help="the result file (default benchmarks/results/real_lm-<model>.json)")
    parser.add_argument("--compile", action="store_true", help="also the scoring pass with a torch.compile'd decoder")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    from peft import LoraConfig, get_peft_model

    from contamlab.config import model_store
    from contamlab.console import library_output
    from contamlab.models import load_causal_lm, load_tokenizer

    library_output(False)  # no weight-loading bars between the rows

    cfg = compose("train", ["experiment=real_world", f"model={args.model}", "logger=csv"])
    domain = build_domain(cfg.domain)
    source = model_store(cfg).base_source()
    tokenizer = load_tokenizer(source)
    dataset = ExampleDataset(stage_corpus(cfg, domain, "clean"), tokenizer, int(cfg.finetune.max_length), "all")
    model = load_causal_lm(source, "float32")
    hidden = model.config.hidden_size
    lora = cfg.finetune.lora
    model = get_peft_model(
        model,
        LoraConfig(
            r=int(lora.r),
            lora_alpha=int(lora.alpha),
            lora_dropout=float(lora.dropout),
            target_modules=list(lora.target_modules),
            task_type="CAUSAL_LM",
        ),
    )
    frozen, adapter = linear_params(model, trainable=False), linear_params(model, trainable=True)
    fwd_flops = 2 * (frozen + adapter)  # per token
    step_flops = 2 * fwd_flops + 6 * adapter
    optimizer = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=1e-4)
    rates = {"gemm_fp32": gemm_rate(hidden, torch.float32), "gemm_bf16": gemm_rate(hidden, torch.bfloat16)}
    fp32, bf16 = rates["gemm_fp32"] / 1e9, rates["gemm_bf16"] / 1e9
    print(f"{args.model}: GEMM fp32 {fp32:.0f} GFLOP/s, bf16 {bf16:.0f} GFLOP/s")
    print(f"per token: forward {fwd_flops / 1e6:.0f} MFLOP, LoRA step {step_flops / 1e6:.0f} MFLOP")
    rows = []

    def step(bf16: bool):
        def run(batch):
            model.train()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                out = model(**batch)
            out.loss.backward()
            optimizer.step()
            optimizer.zero_grad()

        return run

    def forward(bf16: bool):
        def run(batch):
            model.eval()
            with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
                logits = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]).logits
                torch.log_softmax(logits.float(), dim=-1)

        return run

    def record(kind: str, precision: str, batching: str, rate: float, ceiling: float) -> None:
        """One row: the rate beside its ceiling, kept for the JSON and printed."""
        rows.append(
            {
                "kind": kind,
                "precision": precision,
                "batches": batching,
                "tokens_per_s": round(rate, 1),
                "ceiling_tokens_per_s": round(ceiling, 1),
                "share_of_ceiling": round(rate / ceiling, 3),
            }
        )
        share = f"(ceiling {ceiling:6.0f}: {rate / ceiling:.0%})"
        print(f"{kind:20s} {precision:14s} {batching:18s} {rate:7.1f} tok/s {share}")

    pad = tokenizer.pad_token_id
    for kind, make, flops in (("LoRA step", step, step_flops), ("forward (detectors)", forward, fwd_flops)):
        for grouped in (False, True):
            data = batches(dataset, pad, grouped, args.batches + 1)
            for bf16 in (False, True):
                rate = timed(make(bf16), data)
                ceiling = rates["gemm_bf16" if bf16 else "gemm_fp32"] / flops
                precision = "bf16 autocast" if bf16 else "fp32"
                record(kind, precision, "grouped by length" if grouped else "as drawn", rate, ceiling)
    # The detectors' pass as an audit runs it (contamlab.detectors.scoring.score_sequences): the model as loaded for
    # scoring (fp32, an adapter merged), length-sorted batches of about 1,024 tokens, only scored positions projected
    from contamlab.detectors.scoring import score_sequences

    plain = load_causal_lm(source, "float32")
    docs = [ids.tolist() for ids, _ in dataset.items[: 8 * args.batches]]
    score_sequences(plain, docs[:8], pad)  # warm-up
    start = time.perf_counter()
    eager = score_sequences(plain, docs, pad)
    rate = sum(len(d) for d in docs) / (time.perf_counter() - start)
    scoring_ceiling = rates["gemm_fp32"] / (2 * linear_params(plain))
    record("scoring pass (audit)", "fp32", "length-sorted, 1,024 tokens", rate, scoring_ceiling)
    compiled = {}
    if args.compile:
        # The decoder alone (score_sequences projects the scored positions itself); dynamic shapes, since every
        # length-sorted batch has its own rows x length
        plain.model = torch.compile(plain.model, dynamic=True)
        start = time.perf_counter()
        score_sequences(plain, docs, pad)  # compiles (and recompiles where a shape needs it)
        compile_s = time.perf_counter() - start
        start = time.perf_counter()
        got = score_sequences(plain, docs, pad)
        compiled_rate = sum(len(d) for d in docs) / (time.perf_counter() - start)
        record("scoring pass, compiled", "fp32", "length-sorted, 1,024 tokens", compiled_rate, scoring_ceiling)
        diff = max(float(abs(a.logprobs - b.logprobs).max()) for a, b in zip(eager, got) if len(a.logprobs))
        compiled = {
            "first_pass_s": round(compile_s, 1),
            "speedup": round(compiled_rate / rate, 3),
            "max_abs_dlogp": diff,
        }
        print(f"compiled: first pass {compile_s:.1f} s, {compiled_rate / rate:.2f}x eager, max |dlogp| {diff:.2e}")
    base = next(r for r in rows if r["kind"] == "LoRA step" and r["precision"] == "fp32" and r["batches"] == "as drawn")
    best = next(r for r in rows if r["kind"] == "LoRA step" and r["precision"] != "fp32" and r["batches"] != "as drawn")
    print(f"LoRA step, bf16 + grouped vs fp32 as drawn: {best['tokens_per_s'] / base['tokens_per_s']:.2f}x")
    out = args.out or Path(__file__).parent / "results" / f"real_lm-{args.model}.json"
    atomic_write_json(
        out,
        {
            "model": args.model,
            "machine": platform.processor() or platform.machine(),
            "run": run_metadata(),  # commit, clean tree, versions, CPU
            "cpu_count": os.cpu_count(),
            "threads": args.threads,
            "gemm_flops": rates,
            "flops_per_token": {"forward": fwd_flops, "lora_step": step_flops},
            "rows": rows,
            **({"compiled_scoring": compiled} if compiled else {}),
        },
    )
    print(f"written {out}")


if __name__ == "__main__":
    main()
