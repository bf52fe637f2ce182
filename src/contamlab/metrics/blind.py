"""The blind baseline of a membership audit: how well the texts alone tell members from non-members.

A membership audit compares per-item scores of the benchmark's items (the suspected members) with those of items
the model cannot have seen (the non-members). If the two sides differ in distribution (source, style, length,
wording), a detector can separate them without any membership at all. Das, Zhang & Tramèr (2024, "Blind Baselines
Beat Membership Inference Attacks for Foundation Models") show that a classifier that never looks at the model, a
bag of words or of character n-grams, often separates the members and non-members of published membership
benchmarks better than the attacks evaluated on them.

:func:`blind_auroc` is that baseline: the cross-validated AUROC of a TF-IDF (word 1-2-grams and character 2-5-grams)
logistic regression telling the two sides apart, with a bootstrap interval. Read it beside the audit:

- near 0.5: the texts carry no signal a bag-of-n-grams classifier can find; a membership reading's AUROC above it is
  not explained by such a shift (a subtler one, beyond n-grams, is not ruled out);
- near 1: the sides are separable from the text alone; a membership reading whose AUROC this blind AUROC reaches
  (or whose interval overlaps the blind one) is not distinguishable from the distribution shift.

Imported on its own (like :mod:`.roc`): it loads scikit-learn.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from sklearn.pipeline import Pipeline


@dataclass(frozen=True)
class BlindResult:
    """A blind baseline: the cross-validated AUROC of a text classifier, members vs non-members.

    Attributes:
        auroc: ROC AUC of the out-of-fold decision scores, members = positive class (0.5 = chance).
        ci: The bootstrap percentile interval of ``auroc`` at the requested confidence.
        n_members: Member texts.
        n_nonmembers: Non-member texts.
        folds: Cross-validation folds.
        scores: The out-of-fold decision scores (higher = more member-like), members first then non-members, in
            input order.
    """

    auroc: float
    ci: tuple[float, float]
    n_members: int
    n_nonmembers: int
    folds: int
    scores: list[float]


def blind_pipeline() -> Pipeline:
    """The blind classifier of Das, Zhang & Tramèr (2024): word and character n-gram TF-IDF, logistic regression.

    A :class:`~sklearn.pipeline.Pipeline`, so that cross-validation refits the vocabularies and IDF weights on each
    training fold: the test fold's n-grams never enter the features it is scored with.
    """
    from sklearn.feature_extraction.text import TfidfVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import FeatureUnion, Pipeline

    features = FeatureUnion(
        [
            ("word", TfidfVectorizer(analyzer="word", ngram_range=(1, 2), sublinear_tf=True)),
            ("char", TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 5), sublinear_tf=True, min_df=2)),
        ]
    )
    return Pipeline([("features", features), ("classifier", LogisticRegression(max_iter=2000, C=1.0))])


def _check_texts(texts: Sequence[str], side: str) -> list[str]:
    out = []
    for index, text in enumerate(texts):
        if not isinstance(text, str):
            raise ValueError(f"blind_auroc: {side} text {index} is a {type(text).__name__}, not a str")
        if not text.strip():
            raise ValueError(f"blind_auroc: {side} text {index} is empty (or whitespace only)")
        out.append(text)
    return out


def _weighted_aurocs(pos: np.ndarray, neg: np.ndarray, w_pos: np.ndarray, w_neg: np.ndarray) -> np.ndarray:
    """The AUROC of each bootstrap draw, given as integer resampling weights (counts) of every item.

    A draw that takes item i ``w_i`` times has AUROC ``sum_ij w_i w_j [s_i > s_j] + ½[s_i = s_j] / (W_pos W_neg)``
    over member i and non-member j, the Mann-Whitney form of ``roc_auc_score`` on the resampled scores.

    Args:
        pos: Member scores, shape [P].
        neg: Non-member scores, shape [N].
        w_pos: Member weights per draw, shape [B, P].
        w_neg: Non-member weights per draw, shape [B, N].

    Returns:
        Shape [B].
    """
    order = np.argsort(neg, kind="stable")
    sorted_neg = neg[order]
    lo = np.searchsorted(sorted_neg, pos, side="left")  # [P]: non-members strictly below each member
    hi = np.searchsorted(sorted_neg, pos, side="right")  # [P]: ... below or tied
    cum = np.zeros((w_neg.shape[0], neg.size + 1))
    cum[:, 1:] = np.cumsum(w_neg[:, order], axis=1)  # [B, N+1]: weight of the k lowest non-members
    below = cum[:, lo]  # [B, P]
    tied = cum[:, hi] - below  # [B, P]
    wins = (w_pos * (below + 0.5 * tied)).sum(axis=1)  # [B]
    return wins / (w_pos.sum(axis=1) * w_neg.sum(axis=1))


def _counts(rng: np.random.Generator, n_draws: int, n: int) -> np.ndarray:
    """How often each of n units is taken by each of n_draws draws of n with replacement, shape [n_draws, n]."""
    picks = rng.integers(0, n, size=(n_draws, n))
    offsets = np.arange(n_draws)[:, None] * n
    return np.bincount((picks + offsets).ravel(), minlength=n_draws * n).reshape(n_draws, n)


def _bootstrap_weights(
    rng: np.random.Generator, n_draws: int, labels: np.ndarray, group_index: np.ndarray | None
) -> np.ndarray:
    """Resampling counts of every item per draw, shape [n_draws, n_items] (stratified; by cluster with groups)."""
    n_items = labels.size
    if group_index is None:
        # Stratified item bootstrap: members and non-members resampled separately, each at its own size.
        weights = np.zeros((n_draws, n_items), dtype=np.int64)
        for side in (True, False):
            where = np.flatnonzero(labels == side)
            weights[:, where] = _counts(rng, n_draws, where.size)
        return weights
    # Stratified cluster bootstrap: groups are drawn with replacement and bring all their items. Groups are strata
    # by their make-up (members only, non-members only, both), each resampled at its own size, so that every draw
    # has both classes; with one item per group this is the stratified item bootstrap above.
    n_groups = int(group_index.max()) + 1
    has_member = np.zeros(n_groups, dtype=bool)
    has_nonmember = np.zeros(n_groups, dtype=bool)
    has_member[group_index[labels]] = True
    has_nonmember[group_index[~labels]] = True
    kind = has_member.astype(int) + 2 * has_nonmember.astype(int)  # 1 members only, 2 non-members only, 3 both
    group_counts = np.zeros((n_draws, n_groups), dtype=np.int64)
    for k in (1, 2, 3):
        where = np.flatnonzero(kind == k)
        if where.size:
            group_counts[:, where] = _counts(rng, n_draws, where.size)
    return group_counts[:, group_index]  # [n_draws, n_items]: an item counts as often as its group is drawn


def blind_auroc(
    members: Sequence[str],
    nonmembers: Sequence[str],
    groups: Sequence[int | str] | None = None,
    folds: int = 5,
    seed: int = 0,
    n_boot: int = 2000,
    confidence: float = 0.95,
) -> BlindResult:
    """The blind baseline of Das, Zhang & Tramèr (2024): a cross-validated AUROC of a model-free text classifier.

    Word 1-2-gram and character 2-5-gram TF-IDF features and a logistic regression (:func:`blind_pipeline`) learn,
    on each training fold, to tell member texts from non-member texts; the held-out fold's decision scores are
    pooled over the folds, and their AUROC (members = positive) is the blind AUROC. A value near 0.5 means the
    texts alone do not separate the sides; near 1, they do, and a membership detector's AUROC that the blind AUROC
    reaches is not distinguishable from that distribution shift: it may measure the shift, not membership.

    The interval is a percentile bootstrap of the out-of-fold scores (the classifier is not refitted): members and
    non-members are resampled with replacement separately. With ``groups``, whole groups are resampled instead
    (a cluster bootstrap: group ids drawn with replacement, every item of a drawn group taken), stratified by the
    groups' make-up (members only, non-members only, both), since the items of a group are not independent.

    The interval is conditional on the fitted fold models: it leaves out the variability of refitting and of the
    fold assignment, so it is too narrow: ``python -m contamlab.studies.blind coverage`` measures by how much on
    texts with no signal (results/blind/coverage.json). Read an interval's end near 0.5 with that in mind.

    Args:
        members: Texts of the suspected members (the benchmark's items).
        nonmembers: Texts of the non-members.
        groups: One id per text, members first then non-members, or None. Texts sharing an id (an item and its
            rewording) always fall in the same fold (``StratifiedGroupKFold``), so the classifier never scores an
            item whose twin it trained on; and the interval resamples groups. None: ``StratifiedKFold``, each text
            its own unit.
        folds: Cross-validation folds (at least 2; each side needs at least this many texts).
        seed: Seed of the fold assignment (shuffled) and of the bootstrap.
        n_boot: Bootstrap draws.
        confidence: Coverage of the percentile interval, in (0, 1).

    Returns:
        The AUROC, its interval, the sizes and the out-of-fold scores.

    Raises:
        ValueError: A text that is empty or not a string, fewer than ``folds`` texts on a side, ``groups`` of the
            wrong length or with fewer than ``folds`` distinct ids, or an invalid ``folds``, ``n_boot`` or
            ``confidence``.
    """
    from sklearn.metrics import roc_auc_score
    from sklearn.model_selection import StratifiedGroupKFold, StratifiedKFold, cross_val_predict

    if folds < 2:
        raise ValueError(f"blind_auroc: folds must be at least 2, got {folds}")
    if n_boot < 1:
        raise ValueError(f"blind_auroc: n_boot must be at least 1, got {n_boot}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"blind_auroc: confidence must be in (0, 1), got {confidence}")
    pos = _check_texts(members, "member")
    neg = _check_texts(nonmembers, "non-member")
    for side, n in (("members", len(pos)), ("non-members", len(neg))):
        if n < folds:
            raise ValueError(
                f"blind_auroc: {n} {side}, but {folds}-fold cross-validation needs at least {folds} texts per side"
            )
    texts = pos + neg
    labels = np.array([True] * len(pos) + [False] * len(neg))  # [n]: True = member

    group_index = None
    if groups is None:
        cv = StratifiedKFold(n_splits=folds, shuffle=True, random_state=seed)
    else:
        if len(groups) != len(texts):
            raise ValueError(
                f"blind_auroc: {len(groups)} group ids for {len(texts)} texts "
                f"({len(pos)} members + {len(neg)} non-members; one id per text, members first)"
            )
        # Dense 0..G-1 codes: ids may be str or int (np.unique on a mix of both would fail, hence the dict).
        codes: dict[int | str, int] = {}
        group_index = np.array([codes.setdefault(g, len(codes)) for g in groups])  # [n]
        if len(codes) < folds:
            raise ValueError(
                f"blind_auroc: {len(codes)} distinct groups, but {folds}-fold cross-validation needs {folds}"
            )
        cv = StratifiedGroupKFold(n_splits=folds, shuffle=True, random_state=seed)

    # Out-of-fold: each text is scored by the pipeline fitted (vocabulary included) on the other folds only.
    scores = cross_val_predict(
        blind_pipeline(),
        texts,
        labels.astype(int),
        groups=group_index,
        cv=cv,
        method="decision_function",
    )  # [n]: log-odds of "member"
    scores = np.asarray(scores, dtype=float)
    auroc = float(roc_auc_score(labels.astype(int), scores))

    rng = np.random.default_rng(seed)
    aurocs = []
    for start in range(0, n_boot, 500):  # chunks bound the [draws, items] weight matrices' memory
        weights = _bootstrap_weights(rng, min(500, n_boot - start), labels, group_index)
        aurocs.append(_weighted_aurocs(scores[labels], scores[~labels], weights[:, labels], weights[:, ~labels]))
    alpha = 1.0 - confidence
    low, high = np.quantile(np.concatenate(aurocs), [alpha / 2, 1 - alpha / 2])
    return BlindResult(
        auroc=auroc,
        ci=(float(low), float(high)),
        n_members=len(pos),
        n_nonmembers=len(neg),
        folds=folds,
        scores=scores.tolist(),
    )
