"""n-gram overlap decontamination (lm-evaluation-harness's 13-gram method; Brown et al. 2020, GPT-3 §4).

A corpus-side method: it reads the training data, not the model. Both sides are normalised the harness's way
(lower case, every character that is not a letter or a digit turned into a space, split on whitespace); an item
whose word sequence shares an n-gram (n = 13) with the training corpus counts as contaminated. An item shorter
than n words is one n-gram of its own length.

    overlap(x) = |{n-grams of x} ∩ {n-grams of the corpus}| / |{n-grams of x}|

The per-question score is the overlap (higher = more likely seen); the evidence is the first matching n-gram and
where it came from (``<stage>#<document index>``). The dataset score is the share of items with any overlap, and
the clean subset (no overlap) is counted, as the harness reports. On the simulation the corpus is exactly what the
model was trained on, read from the records train.py writes (``corpus: recorded``); for other models a JSONL file
of training texts (``text`` field). Knowing the training data, it is the ground-truth baseline for the others.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from contamlab.detectors.base import (
    AuditScores,
    DetectionContext,
    Detector,
    DetectorOutput,
    check_text_mode,
    question_text,
    read_texts,
)
from contamlab.errors import ContamlabError
from contamlab.metrics import verdicts as V

_NOT_WORD = re.compile(r"[^0-9a-z]+")


def normalize_words(text: str) -> list[str]:
    """Lower case, non-alphanumerics to spaces, split (the harness's decontamination normalisation)."""
    return _NOT_WORD.sub(" ", text.lower()).split()


def ngrams(words: Sequence[str], n: int) -> list[tuple[str, ...]]:
    """The word n-grams of ``words``; a sequence shorter than n is one n-gram of its own (none when empty)."""
    if not words:
        return []
    if len(words) < n:
        return [tuple(words)]
    return [tuple(words[i : i + n]) for i in range(len(words) - n + 1)]


def corpus_index(documents: Iterable[tuple[str, str]], n: int) -> dict[tuple[str, ...], str]:
    """Every n-gram of the corpus mapped to the first place it occurs (``documents``: (place, text) pairs)."""
    index: dict[tuple[str, ...], str] = {}
    for place, text in documents:
        for gram in ngrams(normalize_words(text), n):
            index.setdefault(gram, place)
    return index


def overlap(text: str, index: dict[tuple[str, ...], str], n: int) -> tuple[float, str | None, str | None]:
    """(share of the text's n-grams in the corpus, the first matching n-gram, where it came from)."""
    grams = ngrams(normalize_words(text), n)
    if not grams:
        return float("nan"), None, None
    hits = [g for g in grams if g in index]
    if not hits:
        return 0.0, None, None
    return len(hits) / len(grams), " ".join(hits[0]), index[hits[0]]


@dataclass(frozen=True)
class NgramOverlapDetector(Detector):
    """n-gram overlap between each test item and the model's training corpus.

    Attributes:
        n: The n-gram length in words (13, as the harness).
        corpus: ``recorded`` (train.py's records of the model and its parent stages) or a JSONL path (``text``).
        text: What is matched: ``document`` (question block + reference response), ``question`` or ``answer``.
    """

    name: str = "ngram"
    reads_nonmembers: ClassVar[bool] = True  # its second reading: the benchmark's hits against the non-members'
    n: int = 13
    corpus: str = "recorded"
    text: str = "document"

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ContamlabError(f"detector.n={self.n}: the n-gram length must be >= 1")
        check_text_mode(self.text)

    def documents(self, ctx: DetectionContext) -> tuple[list[tuple[str, str]], str]:
        """The corpus as (place, text) pairs, and its name."""
        if self.corpus == "recorded":
            lineage = ctx.lineage() if ctx.lineage is not None else {}
            if not lineage:
                raise ContamlabError(
                    "detector=ngram corpus=recorded needs train.py's records of the model's training data; for a "
                    "model trained elsewhere set detector.corpus=<a .jsonl file of its training texts>"
                )
            docs = [(f"{stage}#{i}", text) for stage, texts in lineage.items() for i, text in enumerate(texts)]
            return docs, "recorded training data: " + " + ".join(lineage)
        path = Path(self.corpus).expanduser()
        texts = read_texts(self.corpus, "detector.corpus")
        return [(f"{path.name}#{i}", text) for i, text in enumerate(texts)], str(path)

    def score(self, ctx: DetectionContext) -> DetectorOutput:
        """Overlap share per question, with the evidence; no model is loaded."""
        docs, source = self.documents(ctx)
        index = corpus_index(docs, self.n)
        found = [overlap(question_text(ctx.domain, q, self.text), index, self.n) for q in ctx.questions]
        scores = [s for s, _, _ in found]
        flagged = [s > 0 for s in scores if s == s]
        return DetectorOutput(
            scores,
            float(np.mean(flagged)) if flagged else None,
            {"ngram_match": [m or "" for _, m, _ in found], "ngram_source": [w or "" for _, _, w in found]},
            {"corpus": source, "corpus_documents": len(docs), "clean_subset": int(sum(not f for f in flagged))},
        )

    def audit_readings(self, scores: AuditScores, settings: V.Settings) -> tuple[list[V.Verdict], dict[str, Any]]:
        """The share of items with an n-gram in the corpus (flagged iff any item has one).

        Where the audit has non-members, also that share against theirs: chance hits of the corpus, flagged only above.
        """
        out = scores.target
        extra = {k: out.extra.get(k) for k in ("corpus", "corpus_documents")}
        found = [overlap_verdict(out.scores, self.n, settings)]
        if scores.nonmembers is not None:
            found.append(overlap_vs_nonmembers(out.scores, scores.nonmembers.scores, self.n, settings))
        return found, extra


# -- its audit verdicts ------------------------------------------------------------------------------------------
def overlap_verdict(overlaps: Sequence[float], n: int = 13, settings: V.Settings = V.DEFAULT_SETTINGS) -> V.Verdict:
    """n-gram overlap with a corpus: the share of items sharing an n-gram with it; flagged iff any item does."""
    statistic = f"share of items with a {n}-gram in the corpus"
    share, interval = V.bootstrap_mean([float(v > 0) for v in V.finite(overlaps)], settings)
    if share is None:
        return V.Verdict("ngram", statistic, None, None, None, "no item", None)
    too_few = V.too_few_verdict("ngram", statistic, ("scored", len(V.finite(overlaps))))
    if too_few:
        return too_few
    hits = int(np.sum(V.finite(overlaps) > 0))
    return V.Verdict(
        "ngram",
        statistic,
        share,
        interval,
        None,
        f"{hits} of {len(V.finite(overlaps))} items share a {n}-gram with the corpus",
        hits > 0,
        n=len(V.finite(overlaps)),
    )


def overlap_vs_nonmembers(
    overlaps: Sequence[float],
    nonmember_overlaps: Sequence[float],
    n: int = 13,
    settings: V.Settings = V.DEFAULT_SETTINGS,
) -> V.Verdict:
    """The n-gram overlap of the benchmark set against that of non-member items, by the share of items with a hit.

    Templated benchmarks (the synthetic domains, any benchmark written from patterns) share long n-grams with
    training text they never contributed to, so :func:`overlap_verdict`'s any-hit rule flags every model that saw the
    templates. Items the model cannot have seen, matched against the same corpus, give the rate of such chance hits;
    the benchmark is flagged when its share exceeds theirs.

    Args:
        overlaps: Per benchmark item, the overlap share (> 0: the item has an n-gram in the corpus); NaN = unscored.
        nonmember_overlaps: The same for the non-member items.
        n: The n-gram length (for the words).
        settings: Test level and bootstrap.

    Returns:
        The share difference (benchmark − non-members) with its bootstrap interval and the one-sided Fisher exact
        test's p-value (H1: benchmark items hit more often); flagged iff p < settings.alpha.
    """
    bench, non = V.finite(overlaps) > 0, V.finite(nonmember_overlaps) > 0
    name, statistic = "ngram/nonmembers", f"share of items with a {n}-gram in the corpus, benchmark − non-members"
    if not bench.size or not non.size:
        return V.Verdict(name, statistic, None, None, None, "no scored items", None)
    too_few = V.too_few_verdict(name, statistic, ("benchmark", bench.size), ("reference", non.size))
    if too_few:
        return too_few
    from scipy.stats import fisher_exact  # here, as in membership_test: a module import would cost every job a second

    hits, hits_non = int(bench.sum()), int(non.sum())
    table = [[hits, bench.size - hits], [hits_non, non.size - hits_non]]
    p = float(fisher_exact(table, alternative="greater").pvalue)
    idx, idx_non = settings.draws(bench.size, non.size)  # [B, N], [B, M]
    differences = bench[idx].mean(axis=1) - non[idx_non].mean(axis=1)  # [B]
    flagged = p < settings.alpha
    counts = f"{hits} of {bench.size} benchmark items, {hits_non} of {non.size} non-members"
    return V.Verdict(
        name,
        statistic,
        float(bench.mean() - non.mean()),
        V.percentile_interval(differences, settings.confidence),
        p,
        f"{counts} share a {n}-gram with the corpus: "
        + (f"more than chance (p = {p:.2g} < {settings.alpha})" if flagged else f"no more than chance (p = {p:.2g})"),
        flagged,
        n=int(bench.size + non.size),
        detail={
            "hits": hits,
            "n_benchmark": int(bench.size),
            "hits_nonmembers": hits_non,
            "n_reference_items": int(non.size),
        },
    )
