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
    membership_reading: ClassVar[bool] = False  # its audit readings are its own, one of them against non-members
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

    def audit_readings(
        self, out: DetectorOutput, references: Sequence[DetectorOutput], settings: V.Settings
    ) -> tuple[list[V.Verdict], dict[str, Any]]:
        """The share of items with an n-gram in the corpus; flagged iff any item has one."""
        extra = {k: out.extra.get(k) for k in ("corpus", "corpus_documents")}
        return [V.overlap_verdict(out.scores, self.n, settings)], extra

    def nonmember_readings(
        self, out: DetectorOutput, nonmembers: DetectorOutput, settings: V.Settings
    ) -> list[V.Verdict]:
        """The benchmark's share of items with an n-gram in the corpus against the non-members' (chance hits)."""
        return [V.overlap_vs_nonmembers(out.scores, nonmembers.scores, self.n, settings)]
