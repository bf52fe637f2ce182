"""Calibration check of the default world (train issue): is the tiny world a usable contamination testbed?

    python scripts/calibrate.py                      # model=tiny, domains arith and arith_pq
    python scripts/calibrate.py --m 16 --domains arith model.arch.hidden_size=128   # + train-config overrides

Targets (a): the clean model's greedy accuracy in [0.25, 0.75]; its solve probabilities (m >= 16, tau 0.7) occupy at
least 5 of 10 equal-width bins with >= 5% of questions each; the contaminated model beats the clean one on leaked
questions by >= 0.3 in mean solve probability (>= 0.25 for a paraphrased leak, ``leak_style: pq``, which transfers
less) and differs by < 0.1 on unleaked ones.

World diagnostics (``--diagnostics``, on by default; properties of real LMs the methods rely on, analysis/world.py):
(b) CoDeC in its default configuration: the clean model's dataset score in [0.3, 0.6], and the contaminated model's
score on the leaked half >= 0.15 above the clean model's; (c) sample variety: on questions the clean model solves with
r̂ >= 0.5, the median share of distinct texts among its correct samples >= 0.8; (d) runner-up survival of the clean
model (10 random steps per greedy-correct question, forced runner-up, greedy continuation) inside the 95% Wilson
interval of a real model's survival (the reference below); (e) Figure 1:
leaked samples closer to their greedy trajectory than unleaked ones (ROUGE-L difference interval above 0), and the
runner-up share over the first ten steps (reported).

    python scripts/calibrate.py --reference --max-questions 400 model=smollm2 domain=gsm8k

measures (d) on a real model instead: the packaged SmolLM2 with the 8-shot prompt, on the questions it solves
greedily among the first 400. Its branch counts are target (d)'s reference: the file it writes when there is one,
else the counts of that command as measured for this project (``REFERENCE``, docs/world.md).

Prints the numbers and writes outputs/calibration/<model>-<domain>-seed<seed>.json. Exit status 1 when a target is
missed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from contamlab.config import build_domain, compose, model_store, sampling_setup
from contamlab.decoding.pipeline import sample_model
from contamlab.decoding.strategy import Strategy
from contamlab.decoding.streams import CLEAN, strategy_role
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_json
from contamlab.metrics.verdicts import bootstrap_mean

VARIETY_TARGET = 0.8
LEAK_TARGET = {"base": 0.3, "pq": 0.25}  # by domain.leak_style
# (d)'s reference: SmolLM2-135M-Instruct on GSM8K, runner-up branches that still reach the right answer, as
# `python scripts/calibrate.py --reference --max-questions 400 model=smollm2 domain=gsm8k` measured them (seed 0).
REFERENCE = {"model": "smollm2", "domain": "gsm8k", "correct_branches": 41, "branches": 70}


def reference_name(model: str, domain: str, stage: str) -> str:
    """The file name of a ``--reference`` run (the base's keeps the name target (d) reads)."""
    suffix = "" if stage == "base" else f"-{stage}"
    return f"reference-{model}-{domain}{suffix}.json"


def reference_interval(path: Path) -> tuple[dict, tuple[float, float]]:
    """(d)'s reference counts (the ``--reference`` run's file when it exists, else :data:`REFERENCE`) and their 95%
    Wilson interval."""
    from scipy.stats import binomtest

    ref = dict(REFERENCE, source="REFERENCE")
    if path.is_file():
        survival = json.loads(path.read_text())["runner_up_survival"]
        ref = {**ref, "correct_branches": survival["correct_branches"], "branches": survival["branches"]}
        ref["source"] = str(path)
    ci = binomtest(int(ref["correct_branches"]), int(ref["branches"])).proportion_ci(0.95, method="wilson")
    return ref, (float(ci.low), float(ci.high))


def _sampler(cfg, domain, source: str):
    store = model_store(cfg)
    model, tokenizer = store.load(source), store.load_tokenizer(source)
    return sampling_setup(cfg).factory(
        model, tokenizer, stop=domain.format.stop, max_new_tokens=int(cfg.max_new_tokens)
    )


def runner_up(sampler, domain, questions, greedy, seed: int, progress: bool = False) -> dict:
    """(d) on one model (its greedy responses), with the split by the kind of token replaced; the per-branch records
    stay out of the report (their count is in it)."""
    from contamlab.analysis.world import runner_up_survival, survival_by_kind

    survival = runner_up_survival(sampler, domain, questions, greedy, seed=seed, progress=progress)
    survival["by_kind"] = survival_by_kind(survival.pop("per_branch"), sampler.tokenizer)
    survival.pop("per_question")
    return survival


def codec_labels(cfg, domain, source: str, stage: str) -> np.ndarray:
    """(b): per-question CoDeC labels of one model (the share of context draws with lower confidence in context; NaN
    where too short to score), the detector in its default configuration, cached like evaluate.py's."""
    from contamlab.config import build
    from contamlab.scoring import score_model

    detector = build(compose("evaluate", ["detector=codec"]).detector, "detector")
    output, _, _ = score_model(cfg, domain, detector, source, stage, progress=False)
    return np.asarray(output.columns["codec_label"], dtype=float)


def figure1_stats(cfg, domain, clean_greedy, contaminated_samples, source: str, leaked) -> dict:
    """(e): ROUGE-L of the contaminated model's samples to its greedy path, leaked vs unleaked, and the runner-up
    share of the clean greedy token over the first ten steps (Figure 1, as evaluate.py's analysis.figure1)."""
    from contamlab.analysis import diagnostics

    store = model_store(cfg)
    model, tokenizer = store.load(source), store.load_tokenizer(source)
    rouge, ranks = diagnostics.figure1_inputs(model, tokenizer, domain, clean_greedy, contaminated_samples, 10)
    return diagnostics.figure1_summary(rouge, ranks, leaked)


def world_diagnostics(cfg, domain, leaked, clean_src, cont_src, clean_run, cont_run, reference) -> tuple[dict, dict]:
    """(b)-(e) and their pass/fail checks; ``reference`` is (d)'s (counts, Wilson interval)."""
    from contamlab.analysis.world import sample_variety

    clean_greedy, clean_samples = clean_run
    _, cont_samples = cont_run
    d_clean = codec_labels(cfg, domain, clean_src, "clean")
    d_cont = codec_labels(cfg, domain, cont_src, "contaminated")

    def share(labels, mask):  # CoDeC's dataset score over the questions in ``mask``
        labels = labels[mask & np.isfinite(labels)]
        return float(labels.mean()) if labels.size else float("nan")

    everyone = np.ones_like(leaked)
    codec = {
        "clean_dataset_score": share(d_clean, everyone),
        "contaminated_dataset_score": share(d_cont, everyone),
        "clean_leaked_half": share(d_clean, leaked),
        "contaminated_leaked_half": share(d_cont, leaked),
    }
    variety = sample_variety(clean_samples)
    survival = runner_up(_sampler(cfg, domain, clean_src), domain, domain.test, clean_greedy, int(cfg.seed))
    fig1 = figure1_stats(cfg, domain, clean_greedy, cont_samples, cont_src, leaked)
    low, high = reference[1]
    diff_ci = fig1.get("rouge_l_diff_ci", [float("nan"), float("nan")])
    out = {
        "codec": codec,
        "sample_variety": {k: v for k, v in variety.items() if k != "shares"},
        "runner_up_survival": survival,
        "runner_up_reference": {**reference[0], "wilson_95": list(reference[1])},
        "figure1": fig1,
    }
    checks = {
        "(b) CoDeC clean dataset score in [0.3, 0.6]": 0.3 <= codec["clean_dataset_score"] <= 0.6,
        "(b) CoDeC leaked half: contaminated - clean >= 0.15": codec["contaminated_leaked_half"]
        - codec["clean_leaked_half"]
        >= 0.15,
        f"(c) sample variety: median distinct share >= {VARIETY_TARGET}": variety["median_distinct_share"]
        >= VARIETY_TARGET,
        f"(d) runner-up survival inside the reference's [{low:.3f}, {high:.3f}]": low <= survival["survival"] <= high,
        "(e) leaked samples closer to greedy than unleaked (ROUGE-L diff > 0)": diff_ci[0] > 0,
    }
    return out, checks


def print_diagnostics(diag: dict) -> None:
    c, v, r, f = diag["codec"], diag["sample_variety"], diag["runner_up_survival"], diag["figure1"]
    print(
        f"(b) CoDeC dataset score     clean {c['clean_dataset_score']:.3f}  contaminated "
        f"{c['contaminated_dataset_score']:.3f}; leaked half clean {c['clean_leaked_half']:.3f} / contaminated "
        f"{c['contaminated_leaked_half']:.3f}"
    )
    print(f"(c) sample variety          median distinct share {v['median_distinct_share']:.3f} ({v['questions']} q)")
    print(
        f"(d) runner-up survival      {r['survival']:.3f} ({r['correct_branches']} of {r['branches']} branches, "
        f"{r['questions']} greedy-correct q)"
    )
    print_kinds(r)
    ref = diag["runner_up_reference"]
    print(
        f"    reference: {ref['model']} on {ref['domain']}, {ref['correct_branches'] / ref['branches']:.3f} "
        f"({ref['correct_branches']} of {ref['branches']}), Wilson 95% [{ref['wilson_95'][0]:.3f}, "
        f"{ref['wilson_95'][1]:.3f}] ({ref['source']})"
    )
    lk, ul, ci = f["leaked"], f["unleaked"], f.get("rouge_l_diff_ci")
    ci_text = f"[{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else "none"
    print(
        f"(e) Figure 1                ROUGE-L leaked {lk['rouge_l_mean']:.3f} vs unleaked {ul['rouge_l_mean']:.3f} "
        f"(diff 95% CI {ci_text}); runner-up share, first ten steps: leaked {lk['rank2_share']:.2f} of "
        f"{lk['divergence_steps']}, unleaked {ul['rank2_share']:.2f} of {ul['divergence_steps']}"
    )


def print_kinds(survival: dict) -> None:
    split = ", ".join(
        f"{kind} {v['survival']:.2f} ({v['share']:.0%} of branches)" for kind, v in survival["by_kind"].items()
    )
    print(f"    by greedy token replaced: {split}")


def reference_run(args) -> int:
    """(d) on a real model: the packaged / pretrained base of ``model=`` (or its ``--stage`` model) on the first
    ``--max-questions``."""
    cfg = compose("evaluate", [*args.overrides])
    domain = build_domain(cfg.domain)
    questions = domain.test[: args.max_questions]
    store = model_store(cfg)
    source = store.base_source() if args.stage == "base" else store.model_source(domain, args.stage)
    sampler = _sampler(cfg, domain, source)
    from contamlab.decoding.pipeline import greedy_set

    greedy = greedy_set(sampler, domain, questions, store.identity(source), str(Path(cfg.paths.cache_dir) / "samples"))
    survival = runner_up(sampler, domain, questions, greedy, int(cfg.seed), progress=True)
    report = {
        "model": str(cfg.model.name),
        "domain": domain.name,
        "stage": args.stage,
        "source": source,
        "questions": len(questions),
        "greedy_accuracy": float(np.mean([g.greedy_correct for g in greedy])),
        "runner_up_survival": survival,
    }
    calibration = Path(cfg.paths.root_dir) / "outputs" / "error_rates"
    path = args.out or calibration / reference_name(cfg.model.name, domain.name, args.stage)
    atomic_write_json(path, json.loads(json.dumps(report, default=float)))
    print(f"\n== reference: model={cfg.model.name} domain={domain.name}, first {len(questions)} questions ==")
    print(f"greedy accuracy             {report['greedy_accuracy']:.3f}")
    r = report["runner_up_survival"]
    print(f"(d) runner-up survival      {r['survival']:.3f} ({r['correct_branches']} of {r['branches']} branches)")
    print_kinds(r)
    print(f"written {path}")
    return 0


def evaluate(cfg, domain, source: str, role: str):
    """Greedy correctness, solve probabilities (m samples, identity), wall time and the raw (greedy, samples) of one
    model: evaluate.py's cached sampling from the same random stream (``role``), so `python evaluate.py` later reuses
    these samples."""
    greedy, samples, timing = sample_model(sampling_setup(cfg), model_store(cfg), domain, source, Strategy(), role)
    return (
        np.array([g.greedy_correct for g in greedy], dtype=float),
        np.array([s.solve_probability() for s in samples]),
        timing["wall_s"],
        (greedy, samples),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--domains", default="arith,arith_pq", help="comma-separated domains")
    parser.add_argument("--m", type=int, default=16)
    parser.add_argument("--temperature", type=float, default=0.7)
    parser.add_argument("--max-new-tokens", type=int, default=None, help="default: the domain's budget, as evaluate.py")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument(
        "--diagnostics", action=argparse.BooleanOptionalAction, default=True, help="world diagnostics (b)-(e)"
    )
    parser.add_argument("--reference", action="store_true", help="(d) on a pretrained model (see above)")
    parser.add_argument("--max-questions", type=int, default=400, help="--reference: the first N test questions")
    parser.add_argument(
        "--stage",
        choices=["base", "clean", "contaminated"],
        default="base",
        help="--reference: the pretrained base (default), or the clean / contaminated model train.py made of it "
        "(model.clean= / model.contaminated= for your own)",
    )
    parser.add_argument("--out", type=Path, default=None, help="--reference: write the JSON here")
    parser.add_argument("overrides", nargs="*", help="Hydra overrides of the evaluate config, e.g. model=tiny")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.reference:
        return reference_run(args)
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
        g_cl, s_cl, w_cl, clean_run = clean_cache[clean_src]
        cont_src = model_store(cfg).model_source(domain, "contaminated")
        g_co, s_co, w_co, cont_run = evaluate(cfg, domain, cont_src, strategy_role("identity"))
        bins = np.bincount(np.minimum((s_cl * 10).astype(int), 9), minlength=10)
        share = bins / len(s_cl)
        # Each gain (the mean per-question difference = the difference of the means) with its 95% bootstrap interval
        # over questions (their m-sample noise included, not another training's): a gain near its target is read with
        # its interval.
        d_leak, leak_ci = bootstrap_mean(s_co[leaked] - s_cl[leaked])
        d_unleak, unleak_ci = bootstrap_mean(s_co[~leaked] - s_cl[~leaked])
        style = getattr(domain, "leak_style", "base")
        leak_target = LEAK_TARGET[style]
        checks = {
            "clean greedy accuracy in [0.25, 0.75]": 0.25 <= g_cl.mean() <= 0.75,
            ">= 5 of 10 solve-probability bins hold >= 5%": int((share >= 0.05).sum()) >= 5,
            f"leaked: contaminated - clean >= {leak_target} ({style} leak)": d_leak >= leak_target,
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
            "leaked_gain_ci95": leak_ci,
            "unleaked_gain_ci95": unleak_ci,
            "leaked_greedy_clean": g_cl[leaked].mean(),
            "leaked_greedy_contaminated": g_co[leaked].mean(),
            "unleaked_greedy_clean": g_cl[~leaked].mean(),
            "unleaked_greedy_contaminated": g_co[~leaked].mean(),
            "eval_seconds": {"clean": w_cl, "contaminated": w_co},
            "checks": checks,
        }
        if args.diagnostics:
            reference = reference_interval(
                Path(cfg.paths.root_dir) / "outputs" / "error_rates" / "reference-smollm2-gsm8k.json"
            )
            diag, diag_checks = world_diagnostics(
                cfg, domain, leaked, clean_src, cont_src, clean_run, cont_run, reference
            )
            report["diagnostics"] = diag
            report["checks"] = checks = {**checks, **diag_checks}
        report = json.loads(json.dumps(report, default=float))
        path = Path(cfg.paths.root_dir) / "outputs" / "error_rates" / f"{cfg.model.name}-{name}-seed{cfg.seed}.json"
        atomic_write_json(path, report)
        print(f"\n== calibration: model={cfg.model.name} domain={name} (n={len(domain.test)}, m={args.m}) ==")
        print(f"clean greedy accuracy      {g_cl.mean():.3f}   (contaminated {g_co.mean():.3f})")
        print(f"clean solve-prob bins      {bins.tolist()}  -> {int((share >= 0.05).sum())} bins >= 5%")
        rows = (("leaked  ", leaked, d_leak, leak_ci), ("unleaked", ~leaked, d_unleak, unleak_ci))
        for label, mask, gain, ci in rows:
            print(
                f"{label} solve clean/cont  {s_cl[mask].mean():.3f} / {s_co[mask].mean():.3f}  gain {gain:+.3f} "
                f"[{ci[0]:+.3f}, {ci[1]:+.3f}]"
            )
        if args.diagnostics:
            print_diagnostics(report["diagnostics"])
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
