"""Generation-behaviour diagnostics of "Zero Gap Is Not Restoration" Figure 1.

Figure 1 (a, c): ROUGE-L F1 between each sample and its own question's greedy trajectory, leaked vs unleaked; on
leaked questions a contaminated model's samples collapse onto the greedy path.
Figure 1 (b, d): the contaminated model teacher-forced on the clean model's greedy response; over the first ten
decoding steps (t = 1..10), at those where the two models' argmax differ, the rank of the clean model's token under the
contaminated model (rank 1 cannot occur there; the paper finds rank 2 about half the time, the observation RailCap is
built on). The first ten steps of decoding count, not the first ten disagreements anywhere.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import torch
from rouge_score import rouge_scorer
from tqdm.auto import tqdm

from contamlab.decoding.samples import QuestionSamples
from contamlab.models.padding import pad_batch


def rouge_to_greedy(samples: Sequence[QuestionSamples]) -> list[list[float]]:
    """ROUGE-L F1 of every sample against its own question's greedy response (Figure 1 a, c).

    Args:
        samples: Per question, the m samples (``sample_texts``) and the greedy response (``greedy_text``).

    Returns:
        Per question, one score per sample (empty when the question has no samples).
    """
    scorer = rouge_scorer.RougeScorer(["rougeL"], use_stemmer=False)
    return [[scorer.score(s.greedy_text, text)["rougeL"].fmeasure for text in s.sample_texts] for s in samples]


@torch.no_grad()
def teacher_forced_logits(
    model: torch.nn.Module,
    prompt_ids: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    pad_id: int = 0,
    batch_size: int = 16,
    progress: bool = False,
) -> Iterator[tuple[int, torch.Tensor]]:
    """``(i, logits [T_i, V])`` for every non-empty response i: the model's logits at the steps predicting its tokens.

    Each prompt is followed by its response (teacher forcing, right padding with an attention mask); position
    ``p - 1 + t`` of the sequence predicts response token t.
    """
    device = next(model.parameters()).device
    for start in tqdm(range(0, len(prompt_ids), batch_size), desc="teacher forcing", disable=not progress):
        batch = list(range(start, min(start + batch_size, len(prompt_ids))))
        seqs = [list(prompt_ids[i]) + list(responses[i]) for i in batch]
        ids, mask = pad_batch(seqs, pad_id, device=device)  # [B, W] each
        logits = model(input_ids=ids, attention_mask=mask).logits.float()  # [B, W, V]
        for row, i in enumerate(batch):
            p, n = len(prompt_ids[i]), len(responses[i])
            if n:
                yield i, logits[row, p - 1 : p - 1 + n]  # [T, V]


@torch.no_grad()
def divergence_ranks(
    model: torch.nn.Module,
    prompt_ids: Sequence[Sequence[int]],
    clean_greedy_ids: Sequence[Sequence[int]],
    max_steps: int = 10,
    batch_size: int = 16,
    pad_id: int = 0,
    progress: bool = False,
) -> list[list[int]]:
    """Rank of the clean model's greedy token under ``model`` at the disagreement steps among the first ``max_steps``.

    ``model`` (the contaminated one) reads each prompt followed by the clean model's greedy response (teacher
    forcing). At step t = 1..max_steps it predicts token t of that response; where its argmax differs from the clean
    token, the clean token's rank is 1 + the number of tokens with a strictly larger logit (Figure 1 b, d). Steps
    after ``max_steps`` are never looked at, even when the first ones all agree.

    Args:
        model: A causal LM returning ``logits``.
        prompt_ids: Token ids of each prompt.
        clean_greedy_ids: The clean model's greedy response per prompt (generated tokens only).
        max_steps: The first decoding steps examined per question (the paper: ten).
        batch_size: Sequences per forward pass (right padding, attention mask).
        pad_id: Token id used for padding (never scored).
        progress: Show a progress bar.

    Returns:
        Per question, the ranks (each >= 2) at the disagreeing steps among the first ``max_steps``, in step order.
    """
    ranks: list[list[int]] = [[] for _ in prompt_ids]
    for i, step_logits in teacher_forced_logits(model, prompt_ids, clean_greedy_ids, pad_id, batch_size, progress):
        target = list(clean_greedy_ids[i])[:max_steps]  # decoding steps t = 1..max_steps
        step_logits = step_logits[: len(target)]  # [T, V]
        tokens = torch.tensor(target, device=step_logits.device)  # [T]
        chosen = step_logits.gather(1, tokens[:, None])  # [T, 1]
        rank = 1 + (step_logits > chosen).sum(dim=1)  # [T]
        disagree = step_logits.argmax(dim=1) != tokens  # [T]
        ranks[i] = rank[disagree].tolist()
    return ranks


def figure1_inputs(
    model: torch.nn.Module,
    tokenizer: Any,
    domain: Any,
    clean_greedy: Sequence[QuestionSamples],
    contaminated_samples: Sequence[QuestionSamples],
    max_steps: int = 10,
    progress: bool = False,
) -> tuple[list[list[float]], list[list[int]]]:
    """Figure 1's two measurements on a domain's test set: ``(ROUGE-L to greedy, divergence ranks)``.

    ROUGE-L of the contaminated model's samples to their greedy path (:func:`rouge_to_greedy`), and the ranks of the
    clean greedy tokens under ``model``, the contaminated one, over the first ``max_steps`` (:func:`divergence_ranks`).

    Args:
        model: The contaminated model.
        tokenizer: Its tokenizer (the prompts are encoded as the sampler saw them).
        domain: The domain (its test prompts).
        clean_greedy: The clean model's greedy responses, in test order.
        contaminated_samples: The contaminated model's samples, in test order.
        max_steps: The first decoding steps examined per question.
        progress: Show a progress bar.
    """
    from contamlab.decoding.sampler import encode_prompts

    prompts = encode_prompts(tokenizer, [domain.prompt(q) for q in domain.test])
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    ranks = divergence_ranks(
        model, prompts, [g.greedy_ids for g in clean_greedy], max_steps, pad_id=int(pad or 0), progress=progress
    )
    return rouge_to_greedy(contaminated_samples), ranks


def figure1_summary(
    rouge: Sequence[Sequence[float]],
    ranks: Sequence[Sequence[int]],
    leaked: Sequence[bool],
    draws: int = 1000,
    seed: int = 0,
) -> dict[str, Any]:
    """Per group (leaked / unleaked): mean per-question ROUGE-L to greedy and the rank distribution's key shares.

    Also ``rouge_l_diff_ci``: a 95 % bootstrap interval (questions resampled within each group) of the leaked minus
    unleaked mean per-question ROUGE-L, the size of the collapse onto the greedy trajectory.
    """
    leaked = np.asarray(leaked, dtype=bool)
    out: dict[str, Any] = {}
    for group, mask in (("leaked", leaked), ("unleaked", ~leaked)):
        per_q = [float(np.mean(r)) for r, keep in zip(rouge, mask) if keep and len(r)]
        flat = np.array([x for r, keep in zip(ranks, mask) if keep for x in r], dtype=float)
        out[group] = {
            "questions": int(mask.sum()),
            "rouge_l_mean": float(np.mean(per_q)) if per_q else float("nan"),
            "divergence_steps": int(flat.size),
            "rank2_share": float((flat == 2).mean()) if flat.size else float("nan"),
            "rank_le5_share": float((flat <= 5).mean()) if flat.size else float("nan"),
            "rank_median": float(np.median(flat)) if flat.size else float("nan"),
        }
    per_q = [np.array([np.mean(r) for r, k in zip(rouge, leaked) if k == g and len(r)]) for g in (True, False)]
    if all(x.size for x in per_q):
        rng = np.random.default_rng(seed)
        diffs = [
            rng.choice(per_q[0], per_q[0].size).mean() - rng.choice(per_q[1], per_q[1].size).mean()
            for _ in range(draws)
        ]
        lo, hi = np.quantile(diffs, [0.025, 0.975])
        out["rouge_l_diff_ci"] = [float(lo), float(hi)]
    return out
