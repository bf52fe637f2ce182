"""Blind baselines of the membership audits: whether the texts alone tell the members from the non-members.

A membership audit's AUROC means membership only where the non-members are drawn like the members. This command
measures, for the comparisons the project runs, the blind AUROC of Das, Zhang & Tramèr (2024): a model-free word and
character n-gram classifier's cross-validated AUROC (:func:`contamlab.metrics.blind.blind_auroc`). Near 0.5: the
texts give no n-gram signal. Near 1: a membership reading that the blind AUROC reaches is not distinguishable from the
distribution shift between the sides.

``python -m contamlab.studies.blind gsm8k-pq [--out results/blind/gsm8k_pq.json]``
    GSM8K test questions (question text only) against (a) the PQ rephrasings of the first 100, (b) the PQ
    rephrasings of all of them, each item and its rephrasing in one group (same fold; the interval resamples items),
    and (c) as many GSM8K train questions drawn at random (seed 0), the IID choice of non-members.
``python -m contamlab.studies.blind arith [--out results/blind/arith.json]``
    The synthetic arithmetic world of ``configs/experiment/real_world.yaml``, seeds 0, 1 and 2: its test items
    against the audit's generated non-members (:data:`contamlab.audit.nonmembers.NONMEMBER_SEED`), and its leaked
    half against its unleaked half, each text the document form: the question, a newline, the solution.
``python -m contamlab.studies.blind coverage [--out results/blind/coverage.json] [--draws 80]``
    The interval's coverage where there is no signal: per draw, GSM8K test questions split at random into two
    sides of 50 (then 100) texts each, and whether the blind AUROC's interval covers 0.5. The interval resamples
    the out-of-fold scores of fitted folds, so it leaves out the refitting's variability: this measures by how much.

Each writes one JSON artifact (``contamlab.io.atomic_write_json``) with the command line, the scikit-learn and numpy
versions and the wall time. ``$CONTAMLAB_DATA_DIR`` must hold ``gsm8k/`` and ``gsm8k-pq/`` for ``gsm8k-pq``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

import numpy as np

from contamlab.io import atomic_write_json
from contamlab.metrics.blind import blind_auroc

GSM8K_OUT = Path("results/blind/gsm8k_pq.json")
ARITH_OUT = Path("results/blind/arith.json")
COVERAGE_OUT = Path("results/blind/coverage.json")
ARITH_SEEDS = (0, 1, 2)
#: Items a side of the coverage draws.
COVERAGE_SIDES = (50, 100)
#: Seed of the random draw of GSM8K train questions (cell c).
TRAIN_DRAW_SEED = 0


def _cell(
    what: str, members: Sequence[str], nonmembers: Sequence[str], groups: Sequence[Any] | None, **kw: Any
) -> dict[str, Any]:
    """One blind AUROC as the artifact records it (``kw``: folds, seed, n_boot, confidence of blind_auroc)."""
    start = time.perf_counter()
    result = blind_auroc(members, nonmembers, groups=groups, **kw)
    cell = {
        "what": what,
        "auroc": result.auroc,
        "ci": list(result.ci),
        "n": {"members": result.n_members, "nonmembers": result.n_nonmembers},
        "grouped": groups is not None,
        "folds": result.folds,
        "seconds": round(time.perf_counter() - start, 2),
    }
    low, high = result.ci
    print(f"{result.auroc:.3f} [{low:.3f}, {high:.3f}]  n={result.n_members}+{result.n_nonmembers}  {what}", flush=True)
    return cell


def _method(args: argparse.Namespace) -> dict[str, Any]:
    return {
        "reference": "Das, Zhang & Tramèr (2024), Blind Baselines Beat Membership Inference Attacks for Foundation "
        "Models",
        "classifier": "Pipeline(FeatureUnion(word TF-IDF 1-2-grams sublinear_tf; char_wb TF-IDF 2-5-grams "
        "sublinear_tf min_df=2), LogisticRegression(C=1.0, max_iter=2000))",
        "cross_validation": f"{args.folds}-fold, shuffled (random_state={args.seed}): StratifiedGroupKFold where "
        "grouped, else StratifiedKFold; out-of-fold decision_function scores pooled, roc_auc_score, member = 1",
        "interval": f"{args.confidence:.0%} percentile bootstrap of the out-of-fold scores, {args.n_boot} draws "
        f"(default_rng({args.seed})): members and non-members resampled separately; where grouped, whole groups "
        "(cluster bootstrap, stratified by group make-up)",
        "folds": args.folds,
        "seed": args.seed,
        "n_boot": args.n_boot,
        "confidence": args.confidence,
    }


def _provenance(argv: Sequence[str], started: float) -> dict[str, Any]:
    return {
        "command": shlex.join([Path(sys.executable).name, "-m", "contamlab.studies.blind", *argv]),
        "versions": {
            "scikit-learn": version("scikit-learn"),
            "numpy": np.__version__,
            "contamlab": version("contamlab"),
        },
        "wall_time_s": round(time.perf_counter() - started, 2),
    }


def gsm8k_pq(args: argparse.Namespace) -> dict[str, Any]:
    """Cells (a), (b), (c) of GSM8K test questions against PQ rephrasings and against train questions."""
    from contamlab.data.gsm8k import GSM8KDomain, load_gsm8k_split

    kw = {"folds": args.folds, "seed": args.seed, "n_boot": args.n_boot, "confidence": args.confidence}
    test = load_gsm8k_split("test")  # $CONTAMLAB_DATA_DIR/gsm8k/test.jsonl (else the hub)
    train = load_gsm8k_split("train")
    gsm8k = GSM8KDomain(name="gsm8k", family="gsm8k")
    pq = gsm8k.rephrased_questions(test, "test")  # the PQ file's rewording of each test question, same ids
    if pq is None or [q.id for q in pq] != [q.id for q in test]:
        raise SystemExit("the PQ rephrasings do not pair with the GSM8K test questions")
    cells = {}
    # A few lines of the PQ file have an empty question ("Question: \nAnswer: …"): such an item is left out of both
    # sides (its pair would be one text), and listed in the artifact.
    empty = [q.id for q in pq if not q.question.strip()]
    for key, n, label in (("a_first100_vs_pq", 100, "the first"), ("b_all_vs_pq", len(test), "all")):
        pairs = [(t, p) for t, p in zip(test[:n], pq[:n]) if p.id not in empty]
        ids = [t.id for t, _ in pairs]
        left_out = [q.id for q in pq[:n] if q.id in empty]
        cells[key] = _cell(
            f"{label} {n} GSM8K test questions vs their PQ rephrasings, grouped by item (both wordings in one fold)"
            + (f"; {len(left_out)} items with an empty rephrasing left out" if left_out else ""),
            [t.question for t, _ in pairs],
            [p.question for _, p in pairs],
            ids + ids,
            **kw,
        )
        cells[key]["left_out"] = left_out
    draw = np.sort(np.random.default_rng(TRAIN_DRAW_SEED).choice(len(train), size=len(test), replace=False))
    cells["c_test_vs_train"] = _cell(
        f"all {len(test)} GSM8K test questions vs {len(test)} GSM8K train questions drawn at random "
        f"(seed {TRAIN_DRAW_SEED}): IID non-members",
        [q.question for q in test],
        [train[i].question for i in draw],
        None,
        **kw,
    )
    return {
        "benchmark": "GSM8K test (Cobbe et al. 2021) vs PQ (its paraphrased test set) and vs GSM8K train",
        "text": "the question text only (no solution, no 'Question:' / 'Answer:' framing)",
        "data": {
            "test": f"gsm8k/test.jsonl ({len(test)} questions)",
            "train": f"gsm8k/train.jsonl ({len(train)} questions)",
            "pq": f"{gsm8k.reference_file} (paired with the test set by index)",
            "pq_empty_questions": empty,
            "train_draw": f"numpy default_rng({TRAIN_DRAW_SEED}).choice({len(train)}, size={len(test)}, "
            "replace=False), sorted",
        },
        "cells": cells,
    }


def arith(args: argparse.Namespace) -> dict[str, Any]:
    """Per seed: test items vs generated non-members, and leaked half vs unleaked half (document texts)."""
    from contamlab.audit.nonmembers import NONMEMBER_SEED
    from contamlab.config import build_domain, compose

    kw = {"folds": args.folds, "seed": args.seed, "n_boot": args.n_boot, "confidence": args.confidence}
    cells = {}
    for s in ARITH_SEEDS:
        cfg = compose("train", ["experiment=real_world", "model=smollm2", f"seed={s}"])
        domain = build_domain(cfg.domain)
        test = domain.test
        nonmembers = domain.nonmember_questions(len(test), NONMEMBER_SEED)
        if nonmembers is None:
            raise SystemExit(f"domain={domain.name} generates no non-members")
        by_id = {q.id: q for q in test}

        def doc(q: Any) -> str:
            return q.question + "\n" + q.solution

        cells[f"seed{s}_test_vs_nonmembers"] = _cell(
            f"seed {s}: the {len(test)} test items vs {len(nonmembers)} fresh problems of the same generator "
            f"(nonmember_questions(seed={NONMEMBER_SEED}), the audit's non-members)",
            [doc(q) for q in test],
            [doc(q) for q in nonmembers],
            None,
            **kw,
        )
        leaked, unleaked = domain.split.leaked, domain.split.unleaked
        cells[f"seed{s}_leaked_vs_unleaked"] = _cell(
            f"seed {s}: the {len(leaked)} leaked test items vs the {len(unleaked)} unleaked ones",
            [doc(by_id[i]) for i in leaked],
            [doc(by_id[i]) for i in unleaked],
            None,
            **kw,
        )
    return {
        "benchmark": "the synthetic arithmetic world of configs/experiment/real_world.yaml (model=smollm2), seeds "
        + ", ".join(map(str, ARITH_SEEDS)),
        "text": 'the document form: question + "\\n" + solution',
        "cells": cells,
    }


def coverage(args: argparse.Namespace) -> dict[str, Any]:
    """Per side size and draw: two disjoint random halves of GSM8K test questions, and the blind interval's cover.

    Draw d takes ``default_rng(d)``'s permutation of the test questions; its first ``n`` are the "members", the next
    ``n`` the "non-members" (exchangeable by construction: a true AUROC of 0.5), and the cross-validation and
    bootstrap use seed d too, so each draw is an independent repetition of the whole procedure.
    """
    from contamlab.data.gsm8k import load_gsm8k_split

    questions = [q.question for q in load_gsm8k_split("test")]
    sides = {}
    for n in COVERAGE_SIDES:
        draws = []
        for d in range(args.draws):
            order = np.random.default_rng(d).permutation(len(questions))
            members = [questions[i] for i in order[:n]]
            nonmembers = [questions[i] for i in order[n : 2 * n]]
            result = blind_auroc(
                members, nonmembers, folds=args.folds, seed=d, n_boot=args.n_boot, confidence=args.confidence
            )
            draws.append({"draw": d, "auroc": result.auroc, "ci": list(result.ci)})
        sides[str(n)] = _coverage_summary(draws, args.confidence) | {"draws": draws}
        print(f"{n} a side: {sides[str(n)]['covered']} of {args.draws} intervals cover 0.5", flush=True)
    return {
        "benchmark": "GSM8K test questions (question text only), two disjoint random halves per draw: no signal",
        "draws": args.draws,
        "sides": sides,
    }


def _coverage_summary(draws: Sequence[dict[str, Any]], confidence: float) -> dict[str, Any]:
    """How many intervals cover 0.5, and the AUROC's spread over draws against the interval's own spread.

    The interval's own standard deviation is read off its width, ``(high - low) / (2 z)`` with z the normal quantile
    of the confidence (a percentile interval of a near-normal bootstrap).
    """
    from scipy.stats import norm

    aurocs = np.array([d["auroc"] for d in draws])  # [D]
    widths = np.array([d["ci"][1] - d["ci"][0] for d in draws])  # [D]
    z = norm.ppf(0.5 + confidence / 2)
    spread = float(aurocs.std(ddof=1))
    own = float((widths / (2 * z)).mean())
    return {
        "covered": sum(d["ci"][0] <= 0.5 <= d["ci"][1] for d in draws),
        "mean_auroc": round(float(aurocs.mean()), 4),
        "sd_over_draws": round(spread, 4),
        "sd_of_interval": round(own, 4),
        "ratio": round(spread / own, 2),
    }


def coverage_line(artifact: dict[str, Any]) -> str:
    """The sentence under docs/audit.md's blind table: the interval's coverage with no signal."""
    parts = []
    for n, side in sorted(artifact["sides"].items(), key=lambda kv: int(kv[0])):
        parts.append(
            f"{n} a side: {side['covered']} of {artifact['draws']} "
            f"({side['covered'] / artifact['draws']:.0%}), spread over draws {side['ratio']:.2f}× the interval's"
        )
    return "The interval with no signal (GSM8K test questions split at random into two sides) covered 0.5 in " + (
        "; ".join(parts) + "."
    )


#: The GSM8K rows of docs/audit.md's table: (cell of the ``gsm8k-pq`` artifact, label).
GSM8K_ROWS = (
    ("a_first100_vs_pq", "GSM8K test, first 100, vs their PQ rephrasings"),
    ("b_all_vs_pq", "GSM8K test vs their PQ rephrasings"),
    ("c_test_vs_train", "GSM8K test vs GSM8K train (drawn at random)"),
)


def table(gsm8k: dict[str, Any], arith: dict[str, Any], cover: dict[str, Any] | None = None) -> str:
    """docs/audit.md's table of blind AUROCs, from the artifacts (``gsm8k-pq``, ``arith`` and ``coverage``)."""
    lines = ["| benchmark vs non-members | blind AUROC [95 % interval] | items a side |", "|---|---|---|"]
    for key, label in GSM8K_ROWS:
        cell = gsm8k["cells"][key]
        low, high = cell["ci"]
        if cell.get("left_out"):
            label += f" ({len(cell['left_out'])} empty rephrasings left out)"
        lines.append(f"| {label} | {cell['auroc']:.3f} [{low:.3f}, {high:.3f}] | {cell['n']['members']:,} |")
    seeds = [arith["cells"][f"seed{s}_test_vs_nonmembers"] for s in ARITH_SEEDS]
    covers = (
        "each interval covers 0.5" if all(c["ci"][0] <= 0.5 <= c["ci"][1] for c in seeds) else "not each covers 0.5"
    )
    values = ", ".join(f"{c['auroc']:.3f}" for c in seeds)
    sizes = ", ".join(str(n) for n in sorted({c["n"]["members"] for c in seeds}))
    names = ", ".join(map(str, ARITH_SEEDS))
    lines.append(f"| synthetic benchmark vs its generated non-members, seeds {names} | {values} ({covers}) | {sizes} |")
    if cover is not None:
        lines += ["", coverage_line(cover)]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> None:
    """The command line: ``gsm8k-pq``, ``arith`` or ``coverage``, each with ``[--out PATH]``."""
    started = time.perf_counter()
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, out, about in (
        ("gsm8k-pq", GSM8K_OUT, "GSM8K test questions vs PQ rephrasings and vs train questions"),
        ("arith", ARITH_OUT, "the real-world arithmetic domain: test vs non-members, leaked vs unleaked"),
        ("coverage", COVERAGE_OUT, "the interval's coverage of 0.5 on random halves of GSM8K test questions"),
    ):
        p = sub.add_parser(name, help=about)
        p.add_argument("--out", type=Path, default=out)
        p.add_argument("--folds", type=int, default=5)
        p.add_argument("--seed", type=int, default=0, help="fold assignment and bootstrap seed")
        p.add_argument("--n-boot", type=int, default=2000)
        p.add_argument("--confidence", type=float, default=0.95)
        if name == "coverage":
            p.add_argument("--draws", type=int, default=80, help="repetitions per side size")
    args = parser.parse_args(argv)
    body = {"gsm8k-pq": gsm8k_pq, "arith": arith, "coverage": coverage}[args.command](args)
    artifact = {"method": _method(args), **body, **_provenance(argv, started)}
    atomic_write_json(args.out, artifact)
    print(args.out)


if __name__ == "__main__":
    main()
