"""Write an error-rate pool of GSM8K-PQ rephrasings for ``audit.error_rates.pool`` (docs/audit.md).

    python scripts/rephrased_pool.py [--skip 100] [--n 200] --out outputs/pools/gsm8k_pq.jsonl

Each line is the PQ rephrasing of one GSM8K test question with the original solution and answer, taken from the
questions after the audited ones (``--skip`` = the audit's ``domain.max_test``), so no pool item repeats an audited
question or its rephrasing (the audit's non-members). Its caveat: the PQ rephrasings are public, and so are the
originals they reword; a pool is valid only to the extent the audited model has not seen them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from contamlab.data.gsm8k import GSM8KDomain
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip", type=int, default=100, help="test questions audited (domain.max_test)")
    parser.add_argument("--n", type=int, default=200, help="pool items")
    parser.add_argument("--out", type=Path, required=True, help="the .jsonl to write")
    args = parser.parse_args(argv)
    try:
        domain = GSM8KDomain(name="gsm8k", family="gsm8k")
        test = domain.test[: args.skip + args.n]
        if len(test) < args.skip + args.n:
            have = len(domain.test)
            raise ContamlabError(f"--skip {args.skip} --n {args.n}: GSM8K's test split has {have} questions")
        items = domain.rephrased_questions(test, "test")[args.skip :]
    except ContamlabError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"question": q.question, "solution": q.solution, "answer": q.answer} for q in items]
    atomic_write_text(args.out, "".join(json.dumps(r) + "\n" for r in rows))
    print(f"{len(items)} rephrased test questions ({args.skip + 1}-{args.skip + len(items)}) -> {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
