"""The two-level bootstrap behind the generated results pages: what sharing the draws and counting U pairwise save.

    python benchmarks/bootstrap.py            # about 5 minutes on 2 cores (three rounds)

Regenerates docs/results_evidence.md and docs/results_restoration.md from the committed artifacts
(``results/evidence``, ``results/restoration``) four ways, alternating, ``--rounds`` times each:

- **as shipped**: every interval of a page reuses the page's item draws (:mod:`contamlab.metrics.seeds` draws once per
  set of sizes) and their member counts, and small sides count the Mann-Whitney U pairwise
  (:func:`contamlab.metrics.roc.auroc_draws`);
- **shared draws, cumulative U**: the draws shared, U always by cumulative counts (the large-side path);
- **draws per interval**: each interval draws its items again (a draw cache of size 0), and counts them once for
  that interval;
- **draws per interval, cumulative U**: both (the code before the draws were shared).

All four give the same page, byte for byte (checked here: the draws and U are the same numbers, only computed once
or many times). Prints the median seconds of each and its ratio to the shipped one; writes
``benchmarks/results/bootstrap.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import json
import statistics
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from contamlab.io import atomic_write_json
from contamlab.metrics import roc, seeds
from contamlab.provenance import run_metadata
from contamlab.studies import evidence, restoration

REPO = Path(__file__).resolve().parents[1]


def _pages() -> dict[str, Callable[[], str]]:
    ev = evidence.load(REPO / evidence.ARTIFACTS)
    rs = [json.loads(p.read_text()) for p in sorted((REPO / restoration.ARTIFACTS).glob("*.json"))]
    return {"evidence": lambda: evidence.page(ev), "restoration": lambda: restoration.page(rs, ev)}


@contextlib.contextmanager
def _variant(share_draws: bool, pairwise: bool) -> Iterator[None]:
    """Compute the pages inside with the draws shared or drawn per interval, and U pairwise on small sides or not."""
    saved = (seeds._item_draws, seeds._strata_draws, roc.PAIRWISE_MAX)
    if not share_draws:  # a cache of size 0: every interval draws (and so counts) its items again
        seeds._item_draws = functools.lru_cache(maxsize=0)(seeds._item_draws.__wrapped__)
        seeds._strata_draws = functools.lru_cache(maxsize=0)(seeds._strata_draws.__wrapped__)
    if not pairwise:
        roc.PAIRWISE_MAX = 0
    seeds._item_draws.cache_clear()
    seeds._strata_draws.cache_clear()
    try:
        yield
    finally:
        seeds._item_draws, seeds._strata_draws, roc.PAIRWISE_MAX = saved


#: Each variant's (share_draws, pairwise).
VARIANTS = {
    "as shipped": (True, True),
    "shared draws, cumulative U": (True, False),
    "draws per interval": (False, True),
    "draws per interval, cumulative U": (False, False),
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds of every variant")
    args = parser.parse_args()
    pages = _pages()
    seconds: dict[str, dict[str, list[float]]] = {name: {v: [] for v in VARIANTS} for name in pages}
    reference: dict[str, str] = {}
    for _ in range(args.rounds):
        for name, make in pages.items():
            for variant, how in VARIANTS.items():
                with _variant(*how):
                    start = time.perf_counter()
                    text = make()
                    seconds[name][variant].append(time.perf_counter() - start)
                if reference.setdefault(name, text) != text:
                    raise SystemExit(f"{name}: {variant} gives another page")
    rows = []
    for name, by_variant in seconds.items():
        shipped = statistics.median(by_variant["as shipped"])
        for variant, times in by_variant.items():
            median = statistics.median(times)
            rows.append(
                {
                    "page": name,
                    "variant": variant,
                    "median_s": round(median, 2),
                    "rounds_s": [round(t, 2) for t in times],
                    "vs_shipped": round(median / shipped, 2),
                }
            )
            print(f"{name:12s} {variant:34s} {median:6.2f} s  ({median / shipped:4.2f}x)  rounds {times}")
    out = REPO / "benchmarks" / "results" / "bootstrap.json"
    atomic_write_json(out, {"command": "python benchmarks/bootstrap.py", "run": run_metadata(), "rows": rows})
    print(f"written {out}")


if __name__ == "__main__":
    main()
