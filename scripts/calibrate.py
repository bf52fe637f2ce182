"""Calibration check of the default world (train issue): is the tiny world a usable contamination testbed?

    python scripts/calibrate.py                      # model=tiny, domains arith and arith_pq
    python scripts/calibrate.py --m 16 --domains arith model.arch.hidden_size=128   # + train-config overrides

Targets: the clean model's greedy accuracy in [0.25, 0.75]; its solve probabilities (m >= 16, tau 0.7) occupy at least
5 of 10 equal-width bins with >= 5% of questions each; the contaminated model beats the clean one on leaked questions
by >= 0.3 in mean solve probability and differs by < 0.1 on unleaked ones. Prints the numbers and writes
outputs/calibration/<model>-<domain>-seed<seed>.json. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from contamlab.config import build_domain, compose
from contamlab.decoding.pipeline import sample_model
from contamlab.decoding.strategy import Strategy
from contamlab.decoding.streams import CLEAN, strategy_role
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_json
from contamlab.jobs.common import model_store, sampling_setup


def evaluate(cfg, domain, source: str, role: str):
    """Greedy correctness, solve probabilities (m samples, identity) and wall time of one model: evaluate.py's
    cached sampling from the same random stream (``role``), so `python evaluate.py` later reuses these samples."""
    greedy, samples, timing = sample_model(sampling_setup(cfg), model_store(cfg), domain, source, Strategy(), role)
    return (
        np.array([g.greedy_correct for g in greedy], dtype=float),
        np.array([s.solve_probability() for s in samples]),
        timing["wall_s"],
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", default="arith,arith_pq", help="comma-separated domains")
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-new-tokens", type=int, default=None, help="default: the domain's budget, as evaluate.py")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("overrides", nargs="*", help="Hydra overrides of the evaluate config, e.g. model=tiny")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    ok = True
    clean_cache: dict[str, tuple] = {}
    for name in args.domains.split(","):
        # Same sampling settings and batching as evaluate.py, so that the two share their sample caches.
        sampling = [f"m={args.m}", f"temperature={args.temperature}"]
        if args.max_new_tokens is not None:
            sampling.append(f"max_new_tokens={args.max_new_tokens}")
        cfg = compose("evaluate", [f"domain={name}", *sampling, *args.overrides])
        domain = build_domain(cfg.domain)
        leaked = np.array([domain.split.is_leaked(q.id) for q in domain.test])
        clean_src = model_store(cfg).model_source(domain, "clean")
        if clean_src not in clean_cache:
            clean_cache[clean_src] = evaluate(cfg, domain, clean_src, CLEAN)
        g_cl, s_cl, w_cl = clean_cache[clean_src]
        g_co, s_co, w_co = evaluate(
            cfg, domain, model_store(cfg).model_source(domain, "contaminated"), strategy_role("identity")
        )
        bins = np.bincount(np.minimum((s_cl * 10).astype(int), 9), minlength=10)
        share = bins / len(s_cl)
        d_leak = s_co[leaked].mean() - s_cl[leaked].mean()
        d_unleak = s_co[~leaked].mean() - s_cl[~leaked].mean()
        checks = {
            "clean greedy accuracy in [0.25, 0.75]": 0.25 <= g_cl.mean() <= 0.75,
            ">= 5 of 10 solve-probability bins hold >= 5%": int((share >= 0.05).sum()) >= 5,
            "leaked: contaminated - clean >= 0.3": d_leak >= 0.3,
            "unleaked: |contaminated - clean| < 0.1": abs(d_unleak) < 0.1,
        }
        report = {
            "model": str(cfg.model.name),
            "domain": name,
            "m": args.m,
            "temperature": args.temperature,
            "n_test": len(domain.test),
            "n_leaked": int(leaked.sum()),
            "clean_greedy_accuracy": g_cl.mean(),
            "clean_mean_solve": s_cl.mean(),
            "clean_solve_bins_10": bins.tolist(),
            "bins_with_5pct": int((share >= 0.05).sum()),
            "contaminated_greedy_accuracy": g_co.mean(),
            "leaked_solve_clean": s_cl[leaked].mean(),
            "leaked_solve_contaminated": s_co[leaked].mean(),
            "unleaked_solve_clean": s_cl[~leaked].mean(),
            "unleaked_solve_contaminated": s_co[~leaked].mean(),
            "leaked_gain": d_leak,
            "unleaked_gain": d_unleak,
            "leaked_greedy_clean": g_cl[leaked].mean(),
            "leaked_greedy_contaminated": g_co[leaked].mean(),
            "unleaked_greedy_clean": g_cl[~leaked].mean(),
            "unleaked_greedy_contaminated": g_co[~leaked].mean(),
            "eval_seconds": {"clean": w_cl, "contaminated": w_co},
            "checks": checks,
        }
        report = json.loads(json.dumps(report, default=float))
        path = Path(cfg.paths.root_dir) / "outputs" / "calibration" / f"{cfg.model.name}-{name}-seed{cfg.seed}.json"
        atomic_write_json(path, report)
        print(f"\n== calibration: model={cfg.model.name} domain={name} (n={len(domain.test)}, m={args.m}) ==")
        print(f"clean greedy accuracy      {g_cl.mean():.3f}   (contaminated {g_co.mean():.3f})")
        print(f"clean solve-prob bins      {bins.tolist()}  -> {int((share >= 0.05).sum())} bins >= 5%")
        print(f"leaked   solve clean/cont  {s_cl[leaked].mean():.3f} / {s_co[leaked].mean():.3f}  gain {d_leak:+.3f}")
        print(
            f"unleaked solve clean/cont  {s_cl[~leaked].mean():.3f} / {s_co[~leaked].mean():.3f}  gain {d_unleak:+.3f}"
        )
        for text, passed in checks.items():
            print(f"  [{'PASS' if passed else 'FAIL'}] {text}")
            ok &= passed
        print(f"written {path}")
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except ContamlabError as err:
        print(f"contamlab: error: {err}", file=sys.stderr)
        sys.exit(2)
