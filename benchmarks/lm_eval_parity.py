"""SmolLM2's greedy accuracy on GSM8K through contamlab's ``domain=lm_eval`` beside ``lm_eval --model hf``.

    pip install 'contamlab[lm-eval]'
    python benchmarks/lm_eval_parity.py                 # the first 100 GSM8K test items, gsm8k_cot (8-shot CoT)
    python benchmarks/lm_eval_parity.py --items 20      # a quicker look

Both tools read the same converted model directory (contamlab's safetensors copy of the packaged SmolLM2 GGUF), the
same task (``gsm8k_cot``, its 8 fixed few-shot examples, stop strings and answer filters) and the same first N test
items (``domain.max_test`` / ``--limit``), and decode greedily up to 256 new tokens in float32:

- **contamlab**: the greedy pass of the evaluation job (:func:`contamlab.decoding.pipeline.greedy_set`: the shared
  prompt KV cache, batched rows), each response judged by the domain's checker, strict and flexible;
- **lm-eval**: the ``lm_eval`` command in its own process, ``--model hf``, offline, with a copy of ``gsm8k_cot``
  whose dataset is the local ``gsm8k/test.jsonl`` under ``CONTAMLAB_DATA_DIR`` (``--include_path``), and
  ``--log_samples`` for its per-item responses.

The script prints both accuracies (strict-match and flexible-extract), every item where the two disagree (in
correctness or in the response text, cut at the task's stop strings) with both responses' first difference, and
writes ``benchmarks/results/lm-eval-parity.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TASK = "gsm8k_cot"
FILTERS = ("strict-match", "flexible-extract")


def contamlab_greedy(items: int, threads: int, extra: list[str]) -> tuple[dict[str, dict], str, float | None]:
    """contamlab's greedy response and correctness (per filter) of the first ``items`` items, the model dir, seconds.

    The greedy responses go through the sample cache under ``paths.cache_dir``, as the evaluation job's do: a rerun
    reads them, and its seconds are then None (a reading is not a generation to time).
    """
    import torch

    from contamlab.config import build_domain, compose, model_store, sampling_setup
    from contamlab.decoding.pipeline import greedy_set

    torch.set_num_threads(threads)
    overrides = ["model=smollm2", "domain=lm_eval", f"domain.task={TASK}", f"domain.max_test={items}", *extra]
    cfg = compose("evaluate", [*overrides, "progress=true"])  # the converted model in the usual cache
    domain = build_domain(cfg.domain)
    store, setup = model_store(cfg), sampling_setup(cfg)
    source = store.base_source()
    cache_root = Path(setup.cache_dir) / "samples"
    before = set(cache_root.rglob("*")) if cache_root.exists() else set()
    started = time.perf_counter()
    sampler = setup.factory(
        store.load(source), store.load_tokenizer(source), stop=domain.format.stop, max_new_tokens=setup.max_new_tokens
    )
    rows = greedy_set(sampler, domain, domain.test, setup.model_key(store, source), str(cache_root))
    wall = time.perf_counter() - started
    if not set(cache_root.rglob("*")) - before:  # nothing new written: every response was read, none generated
        wall = None
    from lm_eval.models.utils import postprocess_generated_text

    out = {}
    for index, (q, row) in enumerate(zip(domain.test, rows)):
        out[str(index)] = {
            "id": q.id,
            "response": postprocess_generated_text(row.greedy_text, list(domain.until), None),  # as lm-eval logs it
            **{f: domain.graded(row.greedy_text, q, filter=f)[1] for f in FILTERS},
        }
    return out, source, wall


def task_copy(folder: Path, data_dir: str) -> str:
    """A copy of ``gsm8k_cot`` named ``gsm8k_cot_local`` whose test split is the local file; returns its name."""
    import yaml

    from contamlab.data.lm_eval import task_yaml

    cfg = yaml.safe_load(Path(task_yaml(TASK, None)).read_text())
    cfg.pop("tag", None)
    cfg.pop("dataset_name", None)
    cfg.update(
        task=f"{TASK}_local",
        dataset_path="json",
        dataset_kwargs={"data_files": {"test": [str(Path(data_dir) / "gsm8k" / "test.jsonl")]}},
    )
    (folder / f"{TASK}_local.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    return cfg["task"]


def lm_eval_greedy(model_dir: str, items: int, threads: int, batch_size: int) -> tuple[dict[str, dict], float]:
    """``lm_eval --model hf`` on the same directory and items: per-item response and correctness, and its seconds."""
    data_dir = os.environ.get("CONTAMLAB_DATA_DIR")
    if not data_dir:
        sys.exit("lm_eval_parity: set CONTAMLAB_DATA_DIR (the folder with gsm8k/test.jsonl)")
    with tempfile.TemporaryDirectory() as tmp:
        name = task_copy(Path(tmp), data_dir)
        out_dir = Path(tmp) / "out"
        command = [
            str(Path(sys.executable).parent / "lm_eval"),
            "--model", "hf",
            "--model_args", f"pretrained={model_dir},dtype=float32",
            "--device", "cpu",
            "--tasks", name,
            "--include_path", tmp,
            "--limit", str(items),
            "--batch_size", str(batch_size),
            "--output_path", str(out_dir),
            "--log_samples",
        ]  # fmt: skip
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)}
        started = time.perf_counter()
        subprocess.run(command, check=True, env=env)
        wall = time.perf_counter() - started
        files = sorted(out_dir.rglob(f"samples_{name}_*.jsonl"))
        if not files:
            sys.exit(f"lm_eval_parity: lm_eval wrote no samples file under {out_dir}")
        out: dict[str, dict] = {}
        for line in files[-1].read_text().splitlines():
            row = json.loads(line)
            item = out.setdefault(str(row["doc_id"]), {"response": row["resps"][0][0]})
            item[row["filter"]] = bool(row["exact_match"])
    return out, wall


def first_difference(a: str, b: str) -> str:
    """Where two responses part, with a little context from each."""
    at = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
    return f"at character {at}: contamlab {a[max(0, at - 20) : at + 30]!r} | lm-eval {b[max(0, at - 20) : at + 30]!r}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100, help="the first N GSM8K test items (lm_eval --limit)")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=16, help="lm_eval's --batch_size")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results" / "lm-eval-parity.json")
    parser.add_argument("overrides", nargs="*", help="contamlab config overrides, e.g. paths.cache_dir=/tmp/c")
    args = parser.parse_args()
    ours, model_dir, ours_s = contamlab_greedy(args.items, args.threads, args.overrides)
    theirs, theirs_s = lm_eval_greedy(model_dir, args.items, args.threads, args.batch_size)
    missing = sorted(set(ours) ^ set(theirs), key=int)
    if missing:
        sys.exit(f"lm_eval_parity: the tools scored different items ({', '.join(missing[:5])} …)")
    report: dict = {"items": args.items, "task": TASK, "model_dir": model_dir, "wall_s": {}, "accuracy": {}}
    report["wall_s"] = {
        "contamlab": round(ours_s, 1) if ours_s is not None else "read from the sample cache (not timed)",
        "lm_eval": round(theirs_s, 1),
    }
    for f in FILTERS:
        report["accuracy"][f] = {
            "contamlab": sum(v[f] for v in ours.values()) / len(ours),
            "lm_eval": sum(v[f] for v in theirs.values()) / len(theirs),
        }
    differ = []
    for key in sorted(ours, key=int):
        a, b = ours[key], theirs[key]
        if a["response"] != b["response"] or any(a[f] != b[f] for f in FILTERS):
            differ.append(
                {
                    "doc_id": int(key),
                    "id": a["id"],
                    **{f"{f} (contamlab, lm_eval)": [a[f], b[f]] for f in FILTERS},
                    "where": first_difference(a["response"], b["response"]),
                }
            )
    report["same_response"] = len(ours) - sum(ours[k]["response"] != theirs[k]["response"] for k in ours)
    report["same_correctness"] = {f: sum(ours[k][f] == theirs[k][f] for k in ours) for f in FILTERS}
    report["differences"] = differ
    report["machine"] = {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count()}
    report["commit"] = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, cwd=REPO
    ).stdout.strip()
    for f in FILTERS:
        acc = report["accuracy"][f]
        print(f"{f:17s} contamlab {acc['contamlab']:.3f}  lm_eval {acc['lm_eval']:.3f}  "
              f"same verdict on {report['same_correctness'][f]}/{len(ours)} items")  # fmt: skip
    print(f"identical responses: {report['same_response']}/{len(ours)}; wall s: {report['wall_s']}")
    for d in differ:
        print(f"  item {d['doc_id']} ({d['id']}): {d['where']}")
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
