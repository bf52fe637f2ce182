"""BenBench: benchmark-leakage detection by perplexity and n-gram accuracy (Xu et al. 2024, arXiv 2404.18824).

As in docs/methods/detectors.md, following GAIR-NLP/benbench:

- Answer-only perplexity: text = question + " Answer: " + solution; PPL = exp(mean NLL of the tokens after the first
  "Answer:" id sequence). Domain PPL = arithmetic mean of per-sample PPLs.
- n-gram accuracy (n = 5 and 10): tokens of question + " " + solution, 5 starting points
  ``linspace(2, min(L, max_positions) - n, 5)`` (truncated); each prefix is detokenised, re-tokenised, and continued
  greedily for exactly n tokens; correct iff the generated ids equal the next n reference ids (a continuation that
  stops early is wrong from its end on). The greedy predictions come from one teacher-forced pass over each text;
  only the part after a prompt's first mismatch is generated
  (:func:`~contamlab.detectors.continuation.teacher_forced_ngrams`, same continuations).
  Lenient variants on decoded strings: edit similarity > 0.75 and ROUGE-L F > 0.75, the authors' rule in
  ``metric_utils.py`` (strictly greater); ``inclusive=true`` and other thresholds give a stricter rule (e.g. edit
  similarity >= 0.9, the figure in the authors' README). A sample with all five n-grams correct is flagged (instance
  level).
- Δ = relative gap between the original and its paraphrased references (the mean over the references, 3 full
  rewrites where available), in percent, positive = the original is more predictable. The paper normalises the
  decrement by the *original* score (§3.3, Figure 3): δ_acc = (M_ori - M_ref) / M_ori x 100 (None when M_ori = 0),
  δ_PPL = (PPL_ref - PPL_ori) / PPL_ori x 100. δ_train-test = Δ_train - Δ_test. We also report δ_seen-unseen =
  Δ_leaked - Δ_unleaked (the paper's meta-experiment).

Per-question score (higher = more likely seen): the configured atomic metric on the original question (``ngram_5`` by
default; ``ppl`` scores -log PPL), optionally minus its value on the references (``relative``). Dataset score = Δ_test
of that metric (percent), or its plain mean when the domain has no reference version.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np
from rapidfuzz.distance import Levenshtein

from contamlab.data.question import Question
from contamlab.detectors.base import RUNTIME, AuditScores, DetectionContext, Detector, DetectorOutput

# greedy_continuations is re-exported: ConStat imports it from here.
from contamlab.detectors.continuation import greedy_continuations as greedy_continuations
from contamlab.detectors.continuation import teacher_forced_ngrams
from contamlab.detectors.paraphrase import Paraphraser, reference_versions
from contamlab.detectors.scoring import score_sequences
from contamlab.errors import ContamlabError
from contamlab.metrics import verdicts as V

SEPARATORS = (" Answer:", "Answer:")


# -- atomic metrics -------------------------------------------------------------------------------------------------
def find_sublist(ids: Sequence[int], pattern: Sequence[int]) -> int:
    """Index of the first occurrence of ``pattern`` in ``ids`` (-1 if absent)."""
    n = len(pattern)
    for start in range(len(ids) - n + 1):
        if list(ids[start : start + n]) == list(pattern):
            return start
    return -1


def answer_mask_start(tokenizer, ids: Sequence[int]) -> int | None:
    """Position of the first answer token: just after the first " Answer:" (or "Answer:") id sequence."""
    for sep in SEPARATORS:
        pattern = list(tokenizer(sep, add_special_tokens=False)["input_ids"])
        at = find_sublist(ids, pattern) if pattern else -1
        if at >= 0:
            return at + len(pattern)
    return None


def answer_ppl(logprobs: np.ndarray, answer_start: int) -> float:
    """exp(mean NLL) over the tokens at positions >= ``answer_start`` (token t's log-prob is ``logprobs[t-1]``)."""
    scored = logprobs[answer_start - 1 :]
    if scored.size == 0:
        return math.nan
    return float(math.exp(-np.mean(scored, dtype=np.float64)))


def ngram_starts(length: int, n: int, k: int = 5, max_positions: int | None = None) -> list[int] | None:
    """BenBench's starting points ``linspace(2, min(L, max_positions) - n, k)`` cast to int; None if too short."""
    if length - n - 1 <= 0:
        return None
    end = min(length, max_positions) if max_positions else length
    return [int(s) for s in np.linspace(2, end - n, k)]


def edit_similarity(pred: str, ref: str) -> float:
    """1 - Levenshtein(pred, ref) / max(len) at character level (1.0 for two empty strings)."""
    longest = max(len(pred), len(ref))
    return 1.0 - Levenshtein.distance(pred, ref) / longest if longest else 1.0


_ROUGE = None


def rouge_l(ref: str, pred: str) -> float:
    """ROUGE-L F-measure of ``pred`` against ``ref`` (rouge_score, rougeL, stemmer on)."""
    global _ROUGE
    if _ROUGE is None:
        from rouge_score import rouge_scorer

        _ROUGE = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=True)
    return float(_ROUGE.score(ref, pred)["rougeL"].fmeasure)


def lenient_hit(similarity: float, threshold: float, inclusive: bool) -> bool:
    """Whether a decoded n-gram counts as predicted: ``similarity > threshold`` (the authors), ``>=`` if inclusive."""
    return similarity >= threshold if inclusive else similarity > threshold


def exact_match(generated: Sequence[int], reference: Sequence[int]) -> bool:
    """Token-level exact match of a greedy continuation with the reference n-gram."""
    return len(generated) == len(reference) and list(generated) == list(reference)


def with_reference_mean(ori: list, versions: list[list]) -> tuple[list[float], list[float]]:
    """(per-item metric on the originals, its mean over the item's reference versions; NaN where none)."""
    plain = np.asarray([np.nan if v is None else v for v in ori], np.float64)
    if not versions:
        return list(plain), [float("nan")] * len(plain)
    stacked = np.stack([np.asarray([np.nan if v is None else v for v in vs], np.float64) for vs in versions])
    with np.errstate(all="ignore"):
        return list(plain), list(np.nanmean(stacked, axis=0))


def pair_on_test(out: DetectorOutput, metric: str) -> tuple[list[float], list[float]]:
    """BenBench on the test items: the ``metric`` column and its ``ref<v>_<metric>`` columns."""
    refs = [k for k in out.columns if k.startswith("ref") and k.split("_", 1)[1] == metric]
    return with_reference_mean(out.columns[metric], [out.columns[k] for k in refs])


def pair_on_train(out: DetectorOutput, metric: str) -> tuple[list[float], list[float]] | None:
    """BenBench: the same pair on the train split's items (None without paraphrases of the train split)."""
    items = out.extra.get("train_items")
    if not items or not items["refs"]:
        return None
    return with_reference_mean(items["ori"][metric], [r[metric] for r in items["refs"]])


@dataclass(frozen=True)
class BenBenchDetector(Detector):
    """BenBench's atomic metrics, Δ against paraphrased references, δ_train-test and instance-level flags.

    Attributes:
        ngram: The n of the n-gram accuracies (5 and 10).
        n_starts: Starting points per sample (5).
        edit_threshold: Edit-similarity threshold of the lenient match (0.75, as the authors' code).
        rouge_threshold: ROUGE-L threshold of the lenient match (0.75).
        inclusive: A lenient hit is ``similarity >= threshold`` instead of the authors' ``>``.
        score_by: Per-question score: ``ngram_<n>``, ``ngram_<n>_edit``, ``ngram_<n>_rouge`` or ``ppl``.
        relative: Subtract the metric's mean over the reference versions per question.
        include_train: Also score (a sample of) the training split, for δ_train-test.
        max_samples: Items per split (random subset, Python random seed 666, as the reference code; 3000 there).
        paraphraser: Source of references where the domain has none (an instantiated :class:`Paraphraser`).
        batch_size: Prompts per generation batch.
        batch_tokens: Rows x padded length per perplexity forward pass (None: 1,024 on a CPU, 8,192 on an accelerator).
    """

    # 2: Δ over the original score; three full rewrites as arith's references. 3: per-item reference and train
    # columns and the matching n-grams (the audit's intervals and evidence). 4: the authors' lenient rule (> 0.75).
    # 5: the leaked and unleaked summaries leave the cached output (split_summary)
    version: ClassVar[int] = 5

    name: str = "benbench"
    ngram: list[int] = field(default_factory=lambda: [5, 10])
    n_starts: int = 5
    edit_threshold: float = 0.75
    rouge_threshold: float = 0.75
    inclusive: bool = False
    score_by: str = "ngram_5"
    relative: bool = False
    include_train: bool = True
    max_samples: int | None = 3000
    paraphraser: Paraphraser | None = None
    batch_size: int = field(default=64, metadata=RUNTIME)
    batch_tokens: int | None = field(default=None, metadata=RUNTIME)

    def __post_init__(self) -> None:
        if not self.ngram or min(self.ngram) < 1:
            raise ContamlabError(f"detector.ngram={list(self.ngram)}: give positive n-gram lengths")
        valid = {"ppl"} | {f"ngram_{n}{v}" for n in self.ngram for v in ("", "_edit", "_rouge")}
        if self.score_by not in valid:
            raise ContamlabError(f"detector.score_by={self.score_by!r}: choose one of {', '.join(sorted(valid))}")

    def params(self) -> dict[str, Any]:
        """Everything that changes the scores (the paraphraser by its identity)."""
        params = super().params()
        params["paraphraser"] = self.paraphraser.identity() if self.paraphraser is not None else None
        return params

    # -- metrics of one list of questions ----------------------------------------------------------------------------
    def metrics(self, ctx: DetectionContext, questions: Sequence[Question | None], desc: str) -> dict[str, np.ndarray]:
        """Per-question atomic metrics: ``ppl``, ``ngram_<n>`` (+ ``_edit``, ``_rouge``) and ``all_<n>`` flags.

        Missing questions (None) get NaN everywhere. ``matches_<n>`` (a list per question, not a metric) holds the
        reference n-grams the model predicted exactly: the instance-level evidence.
        """
        tok, model = ctx.tokenizer, ctx.model
        present = [i for i, q in enumerate(questions) if q is not None]
        out: dict[str, np.ndarray] = {"ppl": np.full(len(questions), np.nan)}
        # answer-only perplexity
        texts = [f"{questions[i].question} Answer: {questions[i].solution}" for i in present]
        ids = [list(x) for x in tok(texts, add_special_tokens=True)["input_ids"]] if texts else []
        stats = score_sequences(
            model, ids, tok.pad_token_id, batch_tokens=self.batch_tokens, progress=ctx.progress, desc=f"{desc} ppl"
        )
        for i, seq, st in zip(present, ids, stats):
            start = answer_mask_start(tok, seq)
            if start is not None and start < len(seq):
                out["ppl"][i] = answer_ppl(st.logprobs, start)
        # n-gram accuracy: one teacher-forced pass over every text gives the greedy prediction after each of its
        # prefixes; generation is needed only from a prompt's first mismatch on (teacher_forced_ngrams).
        max_pos = getattr(getattr(model, "config", None), "max_position_embeddings", None)
        tokens = {
            i: list(tok(f"{questions[i].question} {questions[i].solution}", add_special_tokens=False)["input_ids"])
            for i in present
        }
        head = list(tok("", add_special_tokens=True)["input_ids"])
        jobs: list[tuple[int, int, int]] = []  # (question index, start, n)
        for n in self.ngram:
            for i in present:
                jobs += [(i, s, n) for s in ngram_starts(len(tokens[i]), n, self.n_starts, max_pos) or []]
        prompts = [list(tok(tok.decode(tokens[i][:s]), add_special_tokens=True)["input_ids"]) for i, s, _ in jobs]
        continuations = teacher_forced_ngrams(
            model,
            head,
            tokens,
            jobs,
            prompts,
            tok.pad_token_id,
            tok.eos_token_id,
            self.batch_size,
            self.batch_tokens,
            max_pos,
            progress=ctx.progress,
            desc=f"{desc} n-grams",
        )
        for n in self.ngram:
            picked = [(i, s, gen) for (i, s, n_job), gen in zip(jobs, continuations) if n_job == n]
            em, ed, rl = (np.full((len(questions), self.n_starts), np.nan) for _ in range(3))
            matches: list[list[str]] = [[] for _ in questions]
            slot: dict[int, int] = {}
            for i, s, gen in picked:
                j = slot.get(i, 0)
                slot[i] = j + 1
                ref_ids = tokens[i][s : s + n]
                pred, ref = tok.decode(gen), tok.decode(ref_ids)
                em[i, j] = float(exact_match(gen, ref_ids))
                if em[i, j]:
                    matches[i].append(ref)
                ed[i, j] = float(lenient_hit(edit_similarity(pred, ref), self.edit_threshold, self.inclusive))
                rl[i, j] = float(lenient_hit(rouge_l(ref, pred), self.rouge_threshold, self.inclusive))
            for suffix, table in (("", em), ("_edit", ed), ("_rouge", rl)):
                scored = ~np.isnan(table).any(axis=1)
                acc = np.full(len(questions), np.nan)
                acc[scored] = table[scored].mean(axis=1)
                out[f"ngram_{n}{suffix}"] = acc
                flag = np.full(len(questions), np.nan)
                flag[scored] = (table[scored] == 1.0).all(axis=1)
                out[f"all_{n}{suffix}"] = flag
            out[f"matches_{n}"] = np.array(matches + [None], dtype=object)[:-1]  # a list per question
        return out

    # -- the job ---------------------------------------------------------------------------------------------------
    def score(self, ctx: DetectionContext) -> DetectorOutput:
        """Metrics on the original and reference test (and train) sets; per-question score and Δ / δ summaries."""
        if self.paraphraser is not None:
            self.paraphraser.default_cache(ctx.cache_dir)
        test = list(ctx.questions)
        splits: dict[str, list[Question]] = {"test": test}
        # δ_train-test needs a train split; a test-only benchmark (a JSONL of test items) reports the test side only
        if self.include_train and ctx.domain.has_train:
            train = list(ctx.domain.train)
            if self.max_samples is not None and len(train) > int(self.max_samples):
                train = random.Random(666).sample(train, int(self.max_samples))
            splits["train"] = train
        per: dict[str, dict[str, Any]] = {}
        for split, questions in splits.items():
            refs, about = reference_versions(ctx.domain, split, questions, self.paraphraser)
            ori = self.metrics(ctx, questions, f"benbench {split}")
            ref_metrics = [self.metrics(ctx, version, f"benbench {split}-ref{v}") for v, version in enumerate(refs)]
            per[split] = {"ori": ori, "refs": ref_metrics, "about": about}
        test_ori, test_refs = per["test"]["ori"], per["test"]["refs"]
        primary = test_ori[self.score_by]
        raw = -np.log(primary) if self.score_by == "ppl" else primary
        scores = raw.copy()
        if self.relative and test_refs:
            ref_vals = np.nanmean(np.stack([r[self.score_by] for r in test_refs]), axis=0)
            scores = raw - (-np.log(ref_vals) if self.score_by == "ppl" else ref_vals)
        summary: dict[str, Any] = {"test": _summarise(test_ori, test_refs, None)}
        if "train" in per:
            summary["train"] = _summarise(per["train"]["ori"], per["train"]["refs"], None)
        deltas = {}
        for metric in summary["test"]:
            d_test = summary["test"][metric]["delta"]
            d_train = summary.get("train", {}).get(metric, {}).get("delta")
            deltas[metric] = {"delta_train_test": None if d_train is None or d_test is None else d_train - d_test}
        flags = {
            key: {"test": int(np.nansum(test_ori[key].astype(float)))} for key in test_ori if key.startswith("all_")
        }
        primary_summary = summary["test"][self.score_by]
        dataset = primary_summary["delta"] if primary_summary["delta"] is not None else primary_summary["ori"]
        columns = {k: list(v) for k, v in test_ori.items() if not k.startswith("matches_")}
        for v, ref in enumerate(test_refs):  # every metric of every version: the audit's item bootstrap
            columns.update({f"ref{v}_{k}": list(vals) for k, vals in ref.items() if is_metric(k)})
        n = min(self.ngram)
        matched = test_ori.get(f"matches_{n}", [[]] * len(test))
        evidence = [
            {"id": q.id, "ngrams": list(matched[i])} for i, q in enumerate(test) if test_ori[f"all_{n}"][i] == 1.0
        ]
        return DetectorOutput(
            [float(s) for s in scores],
            dataset,
            columns,
            {
                "summary": summary,
                "deltas": deltas,
                "instance_flags": flags,
                "references": {split: p["about"] for split, p in per.items()},
                # the items with every n-gram of the shortest n predicted exactly, with those n-grams
                "evidence": evidence,
                "train_items": _per_item(per["train"]) if "train" in per else None,
                "dataset_score_is": "delta_test_percent" if primary_summary["delta"] is not None else "mean",
                "dropped": int(np.isnan(primary).sum()),
            },
        )

    def split_summary(self, out: DetectorOutput, leaked: np.ndarray) -> dict[str, Any]:
        """Δ on the leaked and the unleaked test items, δ_seen-unseen, and the instance flags of each side.

        The paper's meta-experiment (§4): a leaked item's original should be more predictable than its references
        than an unleaked one's is. Read from the per-item columns, so the cached output serves every split.
        """
        ori = {k: np.asarray(v, np.float64) for k, v in out.columns.items() if not k.startswith("ref")}
        names = sorted({k.split("_", 1)[0] for k in out.columns if k.startswith("ref")})
        refs = [
            {k.split("_", 1)[1]: np.asarray(v, np.float64) for k, v in out.columns.items() if k.startswith(f"{r}_")}
            for r in names
        ]
        leaked = np.asarray(leaked, bool)
        summary = {**out.extra["summary"]}
        summary["test_leaked"] = _summarise(ori, refs, leaked)
        summary["test_unleaked"] = _summarise(ori, refs, ~leaked)
        deltas = {}
        for metric, entry in out.extra["deltas"].items():
            seen, unseen = summary["test_leaked"][metric]["delta"], summary["test_unleaked"][metric]["delta"]
            deltas[metric] = {**entry, "delta_seen_unseen": None if seen is None or unseen is None else seen - unseen}
        flags = {
            key: {**counts, "leaked": int(np.nansum(ori[key][leaked])), "unleaked": int(np.nansum(ori[key][~leaked]))}
            for key, counts in out.extra["instance_flags"].items()
        }
        return {"summary": summary, "deltas": deltas, "instance_flags": flags}

    def audit_readings(self, scores: AuditScores, settings: V.Settings) -> tuple[list[V.Verdict], dict[str, Any]]:
        """Δ of answer PPL and of the shortest n-gram accuracy (against the references' Δ), and δ_train-test."""
        out, found = scores.target, []
        for metric in ("ppl", f"ngram_{min(self.ngram)}"):
            test = pair_on_test(out, metric)
            refs = [pair_on_test(r, metric) for r in scores.references]
            found.append(benbench_delta_test(metric, test, refs, settings))
            train = pair_on_train(out, metric)
            if train is not None:
                found.append(delta_train_test(metric, train, test, settings))
        keys = ("summary", "instance_flags", "evidence", "references")
        return found, {k: out.extra.get(k) for k in keys}


def is_metric(key: str) -> bool:
    """Whether a key of :meth:`BenBenchDetector.metrics` is an averaged metric (not a flag or the evidence)."""
    return not key.startswith(("all_", "matches_"))


def _mean(values: np.ndarray, mask: np.ndarray | None) -> float | None:
    picked = values if mask is None else values[mask]
    picked = picked[~np.isnan(picked)]
    return float(picked.mean()) if picked.size else None


def _per_item(split: dict[str, Any]) -> dict[str, Any]:
    """A split's per-item metrics on the original and on each reference version (JSON-able; NaN as None)."""

    def plain(values: dict[str, np.ndarray]) -> dict[str, list]:
        return {k: [None if x != x else float(x) for x in v] for k, v in values.items() if is_metric(k)}

    return {"ori": plain(split["ori"]), "refs": [plain(r) for r in split["refs"]]}


def relative_delta(metric: str, ori: float | None, ref: float | None) -> float | None:
    """Δ in percent, positive = the original is more predictable than its references (BenBench §3.3, Figure 3).

    The decrement from the original to the references, normalised by the original's score: accuracies
    (ori - ref) / ori x 100; perplexity (lower is better) (ref - ori) / ori x 100. None when ori is 0 or missing.
    """
    if ori is None or ref is None or ori <= 0:
        return None
    if metric == "ppl":
        return (ref - ori) / ori * 100.0
    return (ori - ref) / ori * 100.0


def _summarise(ori: dict[str, np.ndarray], refs: list[dict[str, np.ndarray]], mask: np.ndarray | None) -> dict:
    out = {}
    for metric, values in ori.items():
        if not is_metric(metric):
            continue
        m_ori = _mean(values, mask)
        ref_means = [_mean(r[metric], mask) for r in refs]
        ref_means = [r for r in ref_means if r is not None]
        m_ref = float(np.mean(ref_means)) if ref_means else None
        out[metric] = {"ori": m_ori, "ref": m_ref, "delta": relative_delta(metric, m_ori, m_ref)}
    return out


# -- its audit verdicts ------------------------------------------------------------------------------------------
def relative_drop(metric: str, ori: float, ref: float) -> float:
    """BenBench's Δ in percent, positive = the original is more predictable (NaN when ori <= 0).

    Accuracies: (ori - ref) / ori x 100; perplexity (lower is better): (ref - ori) / ori x 100.
    """
    if not ori > 0:
        return float("nan")
    return (ref - ori) / ori * 100.0 if metric == "ppl" else (ori - ref) / ori * 100.0


def delta_draws(metric: str, ori: np.ndarray, ref: np.ndarray, idx: np.ndarray) -> np.ndarray:
    """Δ of each draw: ori, ref [N] per item; idx [B, N] -> [B]."""
    o, r = ori[idx].mean(axis=1), ref[idx].mean(axis=1)  # [B] each
    with np.errstate(divide="ignore", invalid="ignore"):
        out = (r - o) / o * 100.0 if metric == "ppl" else (o - r) / o * 100.0
    return np.where(o > 0, out, np.nan)


def benbench_delta_test(
    metric: str,
    target: tuple[Sequence[float], Sequence[float]],
    references: Sequence[tuple[Sequence[float], Sequence[float]]] = (),
    settings: V.Settings = V.DEFAULT_SETTINGS,
) -> V.Verdict:
    """BenBench's Δ_test of one metric with an item bootstrap, alone or against reference models.

    Args:
        metric: ``ppl`` (answer perplexity) or an n-gram accuracy (``ngram_5`` …).
        target: ``(metric on the original items [N], its mean over the paraphrased versions [N])`` of the model.
        references: The same pair for each reference model (the same items).
        settings: Test level and bootstrap.

    Returns:
        Without references: flagged iff Δ > 0 at level alpha (bootstrap p of Δ <= 0). A paraphrase that is easier
        or harder than its original moves Δ for every model, so with references the statistic is Δ minus the
        highest reference Δ, flagged iff that difference is > 0 at level alpha.
    """
    name = f"benbench/{metric}"
    models = [target, *references]
    ori = np.stack([np.asarray(m[0], np.float64) for m in models])  # [M, N]
    ref = np.stack([np.asarray(m[1], np.float64) for m in models])  # [M, N]
    keep = np.isfinite(ori).all(axis=0) & np.isfinite(ref).all(axis=0)
    ori, ref = ori[:, keep], ref[:, keep]
    if not keep.any():
        return V.Verdict(name, f"Δ {metric} (%)", None, None, None, "no item with a paraphrase scored", None)
    n = int(keep.sum())
    too_few = V.too_few_verdict(name, f"Δ {metric} (%)", ("with a paraphrase", n))
    if too_few:
        return too_few
    deltas = [relative_drop(metric, float(o.mean()), float(r.mean())) for o, r in zip(ori, ref)]
    (idx,) = settings.draws(n)
    boot = np.stack([delta_draws(metric, o, r, idx) for o, r in zip(ori, ref)])  # [M, B]
    detail = {"delta": deltas[0], "ori": float(ori[0].mean()), "ref": float(ref[0].mean())}
    if not np.isfinite(deltas[0]):
        return V.Verdict(name, f"Δ {metric} (%)", None, None, None, f"{metric} is 0 on the original items", None, n=n)
    if not references:
        draws = boot[0][np.isfinite(boot[0])]
        p = V.one_sided_p(draws)
        flagged = p < settings.alpha
        return V.Verdict(
            name,
            f"Δ {metric} (%): original vs paraphrases",
            deltas[0],
            V.percentile_interval(draws, settings.confidence),
            p,
            f"the original is {'more' if flagged else 'not more'} predictable than its paraphrases (p = {p:.2g})",
            flagged,
            n=n,
            detail=detail,
        )
    best = float(np.nanmax(deltas[1:]))
    diff = boot[0] - np.nanmax(boot[1:], axis=0)  # [B]
    diff = diff[np.isfinite(diff)]
    p = V.one_sided_p(diff)
    flagged = p < settings.alpha
    return V.Verdict(
        name,
        f"Δ {metric} - best reference Δ (points)",
        deltas[0] - best,
        V.percentile_interval(diff, settings.confidence),
        p,
        f"Δ {deltas[0]:.1f}% {'above' if flagged else 'not above'} the references' {best:.1f}% (p = {p:.2g})",
        flagged,
        reference=best,
        n=n,
        detail={**detail, "reference_deltas": [float(d) for d in deltas[1:]]},
    )


def delta_train_test(
    metric: str,
    train: tuple[Sequence[float], Sequence[float]],
    test: tuple[Sequence[float], Sequence[float]],
    settings: V.Settings = V.DEFAULT_SETTINGS,
) -> V.Verdict:
    """BenBench's δ_train-test = Δ_train - Δ_test of one metric, train and test items resampled separately.

    A reading of which split the model favours, not a test-set flag: positive means the train split is the more
    predictable relative to its paraphrases (the model trained on it more closely than on the test split).
    """
    name = f"benbench/delta_train_test_{metric}"
    parts = []
    for ori, ref in (train, test):
        o, r = np.asarray(ori, np.float64), np.asarray(ref, np.float64)
        keep = np.isfinite(o) & np.isfinite(r)
        parts.append((o[keep], r[keep]))
    if not parts[0][0].size or not parts[1][0].size:
        return V.Verdict(name, f"δ_train-test {metric}", None, None, None, "a split has no scored item", None)
    too_few = V.too_few_verdict(name, f"δ_train-test {metric}", ("train", parts[0][0].size), ("test", parts[1][0].size))
    if too_few:
        return too_few
    value = relative_drop(metric, parts[0][0].mean(), parts[0][1].mean()) - relative_drop(
        metric, parts[1][0].mean(), parts[1][1].mean()
    )
    idx = settings.draws(parts[0][0].size, parts[1][0].size)
    draws = [delta_draws(metric, o, r, i) for (o, r), i in zip(parts, idx)]
    diff = draws[0] - draws[1]
    diff = diff[np.isfinite(diff)]
    if not np.isfinite(value):
        why = f"{metric} is 0 on the original items of a split"
        return V.Verdict(name, f"δ_train-test {metric}", None, None, None, why, None)
    interval = V.percentile_interval(diff, settings.confidence) if diff.size else None
    favoured = interval is not None and interval[0] > 0
    return V.Verdict(
        name,
        f"δ_train-test {metric} (points)",
        float(value),
        interval,
        None,
        "the train split is favoured over the test split" if favoured else "neither split favoured",
        None,
        n=int(parts[0][0].size + parts[1][0].size),
    )
