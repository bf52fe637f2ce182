"""ReCaLL: Relative Conditional Log-Likelihood (Xie et al., EMNLP 2024, arXiv 2406.15968).

For a target x and a prefix P of known non-member texts, with LL the mean token log-likelihood of x's own tokens
(after its first one, the same tokens in both passes):

    ReCaLL(x) = LL(x | P) / LL(x)

Both log-likelihoods are negative. The paper finds that a non-member prefix lowers a member's log-likelihood more
than a non-member's, so a member's ratio is larger: the per-question score is the ratio itself (higher = more likely
seen). The unconditional pass is the cached token statistics that Loss / Zlib / Min-K% share
(:func:`~contamlab.detectors.membership.token_stats`); only the conditioned pass is new.

Where the prefix comes from must be something the model surely never saw, and is the user's explicit choice
(``nonmember``): ``generated`` (the synthetic domain's problems from another generator seed), ``openorca`` (the
OpenOrca sample: general instruction text) or a path to a JSONL file with a ``text`` field; ``auto`` takes
``generated`` where the domain can generate and ``openorca`` elsewhere. Results record the choice.

The reading depends on which few texts the prefix holds (an item that shares wording with it gains more from it).
``prefixes`` > 1 averages each item's ratio over that many independently drawn prefixes (seeds ``seed``,
``seed + 1``, ...; disjoint slices of a JSONL file), at that many times the conditioned passes. The released code
scores one prefix (``prefixes: 1``, the default); the average is this project's option, not the paper's ensemble.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from contamlab.data.general import load_openorca
from contamlab.detectors.base import (
    RUNTIME,
    DetectionContext,
    Detector,
    DetectorOutput,
    check_text_mode,
    question_text,
    read_texts,
)
from contamlab.detectors.codec import context_ids
from contamlab.detectors.membership import token_stats
from contamlab.detectors.scoring import TokenStats, score_sequences
from contamlab.errors import ContamlabError

SOURCES = ("auto", "generated", "openorca")


def recall_score(plain: np.ndarray, conditioned: np.ndarray) -> float:
    """``LL(x | P) / LL(x)`` from the target's token log-probs without and with the prefix (NaN if LL(x) = 0).

    Args:
        plain: ``[T]`` log-probs of the target's tokens scored alone.
        conditioned: ``[T]`` log-probs of the same tokens after the non-member prefix.
    """
    if len(plain) != len(conditioned):
        raise ValueError(f"recall_score: {len(plain)} plain log-probs but {len(conditioned)} conditioned")
    ll = float(np.mean(plain, dtype=np.float64))
    if ll == 0.0:
        return math.nan
    return float(np.mean(conditioned, dtype=np.float64)) / ll


@dataclass(frozen=True)
class ReCaLLDetector(Detector):
    """ReCaLL with a configurable non-member prefix.

    Attributes:
        nonmember: Where the prefix texts come from: ``auto``, ``generated``, ``openorca`` or a JSONL path.
        n_shots: Non-member texts in the prefix.
        separator: Text between the prefix texts and before the target.
        text: What is scored: ``document`` (question block + reference response), ``question`` or ``answer``.
        seed: Seed of the choice of prefix texts (the first prefix's; the others take the next seeds).
        prefixes: Independently drawn prefixes whose ratios are averaged per item (1: the released method).
        batch_tokens: Rows x padded length per forward pass (None: 1,024 on a CPU, 8,192 on an accelerator).
    """

    name: str = "recall"
    nonmember: str = "auto"
    n_shots: int = 3
    separator: str = "\n\n"
    text: str = "document"
    seed: int = 0
    prefixes: int = 1
    batch_tokens: int | None = field(default=None, metadata=RUNTIME)

    def __post_init__(self) -> None:
        if self.n_shots < 1:
            raise ContamlabError(f"detector.n_shots={self.n_shots}: need at least one non-member text")
        if self.prefixes < 1:
            raise ContamlabError(f"detector.prefixes={self.prefixes}: need at least one prefix")
        if self.nonmember not in SOURCES and not self.nonmember.endswith(".jsonl"):
            raise ContamlabError(
                f"detector.nonmember={self.nonmember!r}: use auto, generated, openorca or a .jsonl file path"
            )
        check_text_mode(self.text)

    def prefix_texts(self, ctx: DetectionContext) -> tuple[list[list[str]], str]:
        """The non-member texts of each of the ``prefixes`` prefixes and the name of their source.

        Returns:
            ``[prefixes][n_shots]`` texts (prefix k drawn at seed ``seed + k``; a JSONL file is read once and cut
            into disjoint slices) and the source that ``auto`` resolved to.
        """
        seeds = range(self.seed, self.seed + self.prefixes)
        source = self.nonmember
        if source in ("auto", "generated"):
            generated = [ctx.domain.nonmember_questions(self.n_shots, s) for s in seeds]
            if generated[0] is not None:
                return [[question_text(ctx.domain, q, "document") for q in g] for g in generated], "generated"
            if source == "generated":
                raise ContamlabError(
                    f"detector.nonmember=generated: domain={ctx.domain.name} cannot generate problems; use openorca "
                    "or a .jsonl file of texts the model never saw"
                )
            source = "openorca"
        if source == "openorca":
            return [[f"{e.prompt}{e.response}" for e in load_openorca(self.n_shots, s)] for s in seeds], "openorca"
        texts = read_texts(source, "detector.nonmember")
        if len(texts) < self.n_shots * self.prefixes:
            raise ContamlabError(
                f"detector.nonmember={source}: {len(texts)} texts, n_shots={self.n_shots} x prefixes={self.prefixes}"
            )
        slices = [texts[k * self.n_shots : (k + 1) * self.n_shots] for k in range(self.prefixes)]
        return slices, str(Path(source).expanduser())

    def score(self, ctx: DetectionContext) -> DetectorOutput:
        """LL(x | P) / LL(x) per question (the mean over ``prefixes`` prefixes); the dataset score is the mean."""
        texts = [question_text(ctx.domain, q, self.text) for q in ctx.questions]
        plain = token_stats(ctx, texts, self.batch_tokens)  # shared with loss / zlib / mink when text matches
        ratios = np.full((self.prefixes, len(texts)), math.nan)  # [prefixes, questions]
        prefixes, source = self.prefix_texts(ctx)
        for k, prefix in enumerate(prefixes):
            ratios[k] = self.conditioned_ratios(ctx, texts, prefix, plain, desc=f"recall {k + 1}/{self.prefixes}")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # an item no prefix could score stays NaN
            scores = [float(v) for v in np.nanmean(ratios, axis=0)]
        finite = [s for s in scores if not math.isnan(s)]
        return DetectorOutput(
            scores,
            float(np.mean(finite)) if finite else None,
            {},
            {
                "nonmember": source,
                "n_shots": self.n_shots,
                "prefixes": self.prefixes,
                "dropped": len(scores) - len(finite),
            },
        )

    def conditioned_ratios(
        self, ctx: DetectionContext, texts: list[str], prefix: list[str], plain: list[TokenStats], desc: str = "recall"
    ) -> list[float]:
        """Each text's ReCaLL ratio after one prefix (NaN where the target's tokens do not line up).

        Args:
            ctx: The model and tokenizer.
            texts: The scored texts.
            prefix: The non-member texts put before each of them.
            plain: Each text's token statistics scored alone (the shared pass).
            desc: The progress bar's label.
        """
        tok = ctx.tokenizer
        joined, lengths = [], []
        for text in texts:
            ids, n_target = context_ids(tok, text, prefix, self.separator)
            joined.append(ids)
            lengths.append(n_target)
        stats = score_sequences(  # the prefix is read, not scored: only the target's positions are projected
            ctx.model,
            joined,
            tok.pad_token_id,
            batch_tokens=self.batch_tokens,
            progress=ctx.progress,
            desc=desc,
            score_from=[len(ids) - max(n, 0) for ids, n in zip(joined, lengths)],
            share_prefix=True,  # the same non-member prefix before every item: its KV is computed once
        )
        ratios = []
        for p, st, n_target in zip(plain, stats, lengths):
            if n_target <= 0 or n_target != len(p.logprobs):
                ratios.append(math.nan)
                continue
            ratios.append(recall_score(p.logprobs, st.logprobs[-n_target:]))
        return ratios
