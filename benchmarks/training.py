"""Training throughput (tokens/s) of train.py's stages, read from each stage's train_summary.json.

    python benchmarks/training.py --model tiny          # base pre-training, full fine-tune and LoRA on the tiny model
    python benchmarks/training.py --model smollm2       # a few LoRA steps on SmolLM2-135M (slow on a CPU)

Runs the real train.py in a temporary models directory with shortened schedules (the throughput of a step does not
depend on the schedule's length). Prints a table and writes benchmarks/results/training-<model>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
from pathlib import Path

from contamlab.io import atomic_write_json

REPO = Path(__file__).resolve().parents[1]
RUNS = {
    "tiny": {
        "full fine-tune (1 doc/step)": ["base.steps=200", "finetune.epochs=1"],
        "full fine-tune (1 doc/step), base on 1 thread": ["base.steps=200", "base.num_threads=1", "finetune.epochs=1"],
        "LoRA r64 (global batch 32)": [
            "base.steps=200",
            "finetune.epochs=1",
            "finetune.peft=lora",
            "finetune.global_batch=32",
            "finetune.micro_batch=4",
        ],
    },
    "smollm2": {
        "LoRA r64 (micro 4, global 32)": [
            "model=smollm2",
            "domain=gsm8k",
            "finetune.general.n=8",
            "finetune.clean_n_domain=24",
            "finetune.epochs=1",
            "finetune.max_length=512",
        ],
    },
}


def train(models_dir: Path, overrides: list[str]) -> dict[str, dict]:
    """Run train.py up to the clean stage; return each stage's summary."""
    args = [sys.executable, str(REPO / "train.py"), f"paths.models_dir={models_dir}", "stage=clean", "logger=csv"]
    args += ["trainer.enable_progress_bar=false", f"hydra.run.dir={models_dir / 'hydra'}", *overrides]
    done = subprocess.run(args, cwd=REPO, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(done.stderr[-2000:])
    return {p.parent.name.split("-")[0]: json.loads(p.read_text()) for p in models_dir.rglob("train_summary.json")}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=sorted(RUNS), default="tiny")
    args = parser.parse_args()
    rows = []
    for name, overrides in RUNS[args.model].items():
        with tempfile.TemporaryDirectory() as tmp:
            summaries = train(Path(tmp), overrides)
        threads = "1 thread" if "base.num_threads=1" in overrides else "2 threads"
        for stage in ("base", "clean"):
            label = f"base pre-training (packed 8x256, {threads})" if stage == "base" else name
            if stage not in summaries or any(r["run"] == label for r in rows):
                continue
            s = summaries[stage]
            row = {"stage": stage, "run": label, "steps": s["steps"], "wall_s": s["wall_s"]}
            row["tokens_per_s"] = s.get("tokens_per_s")
            rows.append(row)
            print(f"{label:36s} {s['steps']:6d} steps {s['wall_s']:8.1f} s {row['tokens_per_s']:9.0f} tok/s")
    base = {r["run"]: r["tokens_per_s"] for r in rows if r["stage"] == "base"}
    if len(base) == 2:
        two, one = (base[f"base pre-training (packed 8x256, {t})"] for t in ("2 threads", "1 thread"))
        print(f"base pre-training, 2 threads vs 1: {two / one:.2f}x")
    summary = {
        "model": args.model,
        "machine": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "rows": rows,
    }
    out = Path(__file__).parent / "results" / f"training-{args.model}.json"
    atomic_write_json(out, summary)
    print(f"written {out}")


if __name__ == "__main__":
    main()
