"""contamlab beside benchleak (0.4.0 on PyPI): the same Min-K% scores, AUC and p, and each tool's wall time.

    pip install 'contamlab[peers]'                     # benchleak==0.4.0
    python benchmarks/peers.py --model smollm2         # SmolLM2-135M, the first 100 GSM8K items vs their PQ rephrasings
    python benchmarks/peers.py --model tiny            # the default world's contaminated model (make train first)

benchleak scores one text at a time with Min-K% (Shi et al. 2024) and decides by a Mann-Whitney AUC against a
reference set. Here both tools read the same model weights (loaded by contamlab's loader, which benchleak's
``--model`` cannot do for a GGUF file), the same benchmark texts (contamlab's ``document`` text of each item) and the
same reference texts (the audit's non-member items), with k = 20 %:

- **benchleak**: ``MinKProbDetector(model, tokenizer, k=20).score_batch`` on both sides, then
  ``benchleak.core.compare_distributions`` (AUC and one-sided p);
- **contamlab, Min-K% only**: ``python audit.py audit.detectors=[mink]``;
- **contamlab, four detectors**: ``python audit.py audit.detectors=[loss,zlib,mink,minkpp]`` (one shared pass).

Every measured run is its own process, started cold (no score cached), the tools alternated over ``--repeats``
rounds; the wall time is the process's, from start to exit: imports, model load, scoring and the verdict. Both tools
load the same converted weights from disk: a packaged GGUF model is converted once before the rounds (benchleak could
not read the GGUF at all), and each contamlab run's fresh cache holds hard links to that conversion, so neither
tool's time includes it. The script prints the largest difference of the per-text scores, their Spearman
correlation, both AUCs and p-values, every wall time, each run's median and the medians' ratios to benchleak's, and
writes ``benchmarks/results/peers-<model>.json``.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from contamlab.provenance import cpu_description, run_metadata

REPO = Path(__file__).resolve().parents[1]
K_PERCENT = 20.0

# The benchleak run: contamlab's loader for the weights, benchleak's own scoring loop and verdict.
PEER = """
import json, sys, time
start = time.perf_counter()
import torch
from benchleak.core import compare_distributions
from benchleak.detectors.pretrain import MinKProbDetector
from contamlab.models.loading import load_causal_lm, load_tokenizer
torch.set_num_threads({threads})
job = json.load(open(sys.argv[1]))
model = load_causal_lm(job["source"], job["dtype"], False, None, merge=True)
tokenizer = load_tokenizer(job["source"], False)
detector = MinKProbDetector(model, tokenizer, k={k})
bench, ref = detector.score_batch(job["benchmark"]), detector.score_batch(job["reference"])
auc, p = compare_distributions(bench, ref)
print(json.dumps({{"benchmark": bench, "reference": ref, "auc": float(auc), "p": float(p)}}))
"""


def setup(model: str, items: int) -> tuple[list[str], dict]:
    """The audit overrides for ``model`` and the job both tools score: model source, benchmark and reference texts."""
    from contamlab.audit.models import AuditedModel
    from contamlab.audit.nonmembers import nonmember_items
    from contamlab.config import build_domain, compose, model_store
    from contamlab.detectors.base import question_text
    from contamlab.models.reference import ModelRef

    if model == "tiny":
        overrides = ["model=tiny", "domain=arith", f"domain.max_test={items}", "audit.target=contaminated"]
    else:
        overrides = [f"model={model}", "domain=gsm8k", f"domain.max_test={items}", "audit.target=base"]
    overrides += ["audit.references=[]", "audit.mitigate=[]", "detectors.mink.k=0.2", "progress=false"]
    cfg = compose("audit", overrides)
    domain = build_domain(cfg.domain)
    target = AuditedModel(ModelRef.parse(cfg.audit.target, "audit.target"), cfg, model_store(cfg), domain)
    if target.missing is not None:
        sys.exit(f"peers: {target.missing} is not trained yet (make train)")
    nonmembers, about = nonmember_items(domain, "auto")
    job = {
        "source": target.source,
        "cache_dir": str(cfg.paths.cache_dir),
        "dtype": target.store.placement.dtype_name,  # as the audit loads it
        "benchmark": [question_text(domain, q, "document") for q in domain.test],
        "reference": [question_text(domain, q, "document") for q in nonmembers.test],
        "reference_is": about,
    }
    return overrides, job


def timed_process(args: list[str], env: dict) -> tuple[float, str]:
    """Wall seconds of one process from start to exit, and its standard output."""
    start = time.perf_counter()
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if done.returncode:
        sys.exit(f"peers: {' '.join(args[:3])} failed:\n{done.stderr[-2000:]}")
    return wall, done.stdout


def run_contamlab(overrides: list[str], detectors: str, job: dict, env: dict, work: Path) -> tuple[float, dict]:
    """``python audit.py`` cold (no score cached); returns its wall time and its Min-K% reading and scores."""
    out = Path(tempfile.mkdtemp(dir=work))
    source, cache = Path(job["source"]), Path(job["cache_dir"])
    if source.is_relative_to(cache):  # the converted weights benchleak reads too: linked, not converted again
        shutil.copytree(source, out / "cache" / source.relative_to(cache), copy_function=os.link)
    args = [sys.executable, "audit.py", *overrides, f"audit.detectors=[{detectors}]"]
    args += [f"paths.cache_dir={out / 'cache'}", f"hydra.run.dir={out}"]
    wall, _ = timed_process(args, env)
    results = json.loads((out / "results.json").read_text())["audit"]
    mink = next(v for v in results["verdicts"] if v["name"] == "mink")
    with (out / "audit_scores.csv").open() as f:
        rows = [r for r in csv.DictReader(f) if r["detector"] == "mink"]
    scores = {side: [float(r["score"]) for r in rows if r["items"] == side] for side in ("benchmark", "reference")}
    return wall, {"auc": mink["value"], "p": mink["p_value"], **scores}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", choices=("tiny", "smollm2", "gemma3"), default="smollm2")
    parser.add_argument("--items", type=int, default=100, help="benchmark items (and as many reference items)")
    parser.add_argument("--repeats", type=int, default=1, help="rounds of the three runs, alternated")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--out", type=Path, help="the result file (default benchmarks/results/peers-<model>.json)")
    args = parser.parse_args()
    try:
        import benchleak  # noqa: F401
    except ImportError:
        print("peers: benchleak is not installed (pip install 'contamlab[peers]'); skipped")
        return
    from scipy.stats import spearmanr

    overrides, job = setup(args.model, args.items)
    overrides += [f"threads={args.threads}"]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled"}
    walls: dict[str, list[float]] = {"benchleak": [], "contamlab_mink": [], "contamlab_four": []}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        (work / "job.json").write_text(json.dumps(job))
        peer = PEER.format(threads=args.threads, k=K_PERCENT)
        for _ in range(args.repeats):
            wall, out = timed_process([sys.executable, "-c", peer, str(work / "job.json")], env)
            walls["benchleak"].append(wall)
            theirs = json.loads(out.strip().splitlines()[-1])
            wall, ours = run_contamlab(overrides, "mink", job, env, work)
            walls["contamlab_mink"].append(wall)
            wall, _ = run_contamlab(overrides, "loss,zlib,mink,minkpp", job, env, work)
            walls["contamlab_four"].append(wall)
    a = np.concatenate([theirs["benchmark"], theirs["reference"]])
    b = np.concatenate([ours["benchmark"], ours["reference"]])
    median = {k: float(np.median(v)) for k, v in walls.items()}
    spread = {k: [round(min(v) / median[k] - 1, 3), round(max(v) / median[k] - 1, 3)] for k, v in walls.items()}
    report = {
        "model": args.model,
        "items": {
            "benchmark": len(job["benchmark"]),
            "reference": len(job["reference"]),
            "reference_is": job["reference_is"],
        },
        "scores": {"max_abs_diff": float(np.abs(a - b).max()), "spearman": float(spearmanr(a, b).statistic)},
        "auc": {"benchleak": theirs["auc"], "contamlab": ours["auc"]},
        "p": {"benchleak": theirs["p"], "contamlab": ours["p"]},
        "wall_s": walls,
        "median_s": median,
        "spread_around_median": spread,
        "ratio_to_benchleak": {k: median[k] / median["benchleak"] for k in median},
        "machine": {"platform": platform.platform(), "processor": platform.processor(), "threads": args.threads},
        "cpu_flags": sorted(cpu_description()["kernel_flags"]),
        "run": run_metadata(),  # commit, clean tree, versions (torch is imported here, after the timed runs)
        "command": " ".join(["python", "benchmarks/peers.py", *sys.argv[1:]]),
    }
    print(json.dumps(report, indent=2))
    out = args.out or REPO / "benchmarks" / "results" / f"peers-{args.model}.json"
    out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
