"""Diagnostics of a world: the properties of real language models that the paper's methods rely on.

Measured on a model and a domain, independently of any strategy or detector outcome, so a simulated world can be
calibrated on them (``scripts/calibrate.py``) and compared with a real model:

- **runner-up survival** (RailCap's premise, §4): at random steps of the model's greedy trajectory on questions it
  solves greedily, force the runner-up token and continue greedily; the share of branches that still end correct.
  Real chain-of-thought has slack (connectives, restatements, formatting) where the runner-up is another valid
  continuation;
- **sample variety**: on questions the model solves with r̂ >= 0.5, the share of distinct texts among its correct
  samples (a large model's chain-of-thought at τ = 0.7 rarely repeats itself word for word).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch
from tqdm.auto import tqdm

from contamlab.analysis.diagnostics import teacher_forced_logits
from contamlab.data.domain import Domain
from contamlab.data.question import Question
from contamlab.decoding.samples import QuestionSamples


@torch.no_grad()
def runner_up_tokens(
    model: torch.nn.Module,
    prompt_ids: Sequence[Sequence[int]],
    responses: Sequence[Sequence[int]],
    pad_id: int = 0,
    batch_size: int = 16,
) -> list[list[int]]:
    """Per response and step t, the model's best token other than the response's own token t (teacher forcing).

    Args:
        model: A causal LM returning ``logits``.
        prompt_ids: Token ids of each prompt.
        responses: The model's greedy response per prompt (generated tokens only).
        pad_id: Padding id (right padding, never scored).
        batch_size: Sequences per forward pass.

    Returns:
        Per response, one token per step (the runner-up where the response is the argmax, as for a greedy one).
    """
    out: list[list[int]] = [[] for _ in responses]
    for i, step in teacher_forced_logits(model, prompt_ids, responses, pad_id, batch_size):
        step = step.clone()  # [T, V]
        step.scatter_(1, torch.tensor(list(responses[i]), device=step.device)[:, None], float("-inf"))
        out[i] = step.argmax(dim=1).tolist()  # [T]
    return out


def runner_up_survival(
    sampler: Any,
    domain: Domain,
    questions: Sequence[Question],
    greedy: Sequence[QuestionSamples],
    steps_per_question: int = 10,
    seed: int = 0,
    batch_size: int = 16,
    progress: bool = False,
) -> dict[str, Any]:
    """Share of forced-runner-up branches of greedy-correct trajectories that still end correct.

    For each question the model solves greedily, up to ``steps_per_question`` distinct steps t of its greedy
    response g are drawn uniformly (seeded); the branch is ``g[:t] + [runner-up at t]`` followed by the model's
    greedy continuation, within the same token budget as the greedy response; a forced end-of-sequence token ends
    the branch.

    Args:
        sampler: The model's HF sampler (``model``, ``tokenizer``, ``encode``, ``set_prefix``, ``decode``,
            ``max_new_tokens``); its shared-prefix cache serves every branch.
        domain: The domain (prompts and grading).
        questions: The questions, aligned with ``greedy``.
        greedy: The model's greedy responses (``greedy_ids``, ``greedy_correct``).
        steps_per_question: Branches per greedy-correct question.
        seed: Seed of the choice of steps.
        batch_size: Prompts per teacher-forcing pass and per branch-decoding call.
        progress: Show a progress bar.

    Returns:
        ``survival`` (share of correct branches), ``branches``, ``questions`` (greedy-correct ones used) and
        ``per_question`` survival shares and ``per_branch`` records (question id, step, greedy and runner-up token
        ids, whether the branch ends correct, its response text).
    """
    tok = sampler.tokenizer
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    solved = [(q, g) for q, g in zip(questions, greedy) if g.greedy_correct and g.greedy_ids]
    if not solved:
        return {
            "survival": float("nan"),
            "branches": 0,
            "correct_branches": 0,
            "questions": 0,
            "steps_per_question": steps_per_question,
            "per_question": [],
            "per_branch": [],
        }
    prompts = sampler.encode([domain.prompt(q) for q, _ in solved])
    runner = runner_up_tokens(sampler.model, prompts, [g.greedy_ids for _, g in solved], int(pad or 0), batch_size)
    rng = random.Random(seed)
    branches: list[tuple[int, list[int], list[int]]] = []  # (question index, branch prompt ids, forced prefix)
    for i, ((_, g), ids, ru) in enumerate(zip(solved, prompts, runner)):
        steps = sorted(rng.sample(range(len(g.greedy_ids)), min(steps_per_question, len(g.greedy_ids))))
        for t in steps:
            forced = list(g.greedy_ids[:t]) + [ru[t]]
            branches.append((i, list(ids) + forced, forced))
    if branches:
        sampler.set_prefix([b[1] for b in branches])
    correct = np.zeros(len(branches), dtype=bool)
    texts: list[str] = [""] * len(branches)
    for start in tqdm(range(0, len(branches), batch_size), desc="runner-up branches", disable=not progress):
        chunk = branches[start : start + batch_size]
        outs = sampler.decode([b[1] for b in chunk], m=1, temperature=1.0, seed=0, greedy=True)
        for j, ((i, _, forced), out) in enumerate(zip(chunk, outs)):
            # A forced end-of-sequence ends the response there, as it would in the sampler.
            budget = 0 if forced[-1] == tok.eos_token_id else max(0, sampler.max_new_tokens - len(forced))
            text = tok.decode(forced + list(out[0][:budget]), skip_special_tokens=True)
            correct[start + j] = domain.is_correct(text, solved[i][0])
            texts[start + j] = text
    owner = np.array([b[0] for b in branches], dtype=int)
    per_question = [float(correct[owner == i].mean()) for i in range(len(solved)) if (owner == i).any()]
    return {
        "survival": float(correct.mean()) if branches else float("nan"),
        "branches": len(branches),
        "correct_branches": int(correct.sum()),
        "questions": len(solved),
        "steps_per_question": steps_per_question,
        "per_question": per_question,
        "per_branch": [
            {
                "question": solved[i][0].id,
                "step": len(forced) - 1,
                "greedy": int(solved[i][1].greedy_ids[len(forced) - 1]),
                "runner_up": int(forced[-1]),
                "correct": bool(c),
                "text": x,
            }
            for (i, _, forced), c, x in zip(branches, correct, texts)
        ],
    }


def token_kind(text: str) -> str:
    """``digit``, ``word``, ``space`` or ``symbol``: the kind of a token's text (its first non-blank character)."""
    core = text.strip()
    if not core:
        return "space"
    if core[0].isdigit():
        return "digit"
    return "word" if core[0].isalpha() else "symbol"


def survival_by_kind(per_branch: Sequence[dict], tokenizer: Any) -> dict[str, dict[str, float]]:
    """Runner-up survival split by the kind of the greedy token the runner-up replaced (:func:`token_kind`).

    Returns:
        Per kind: ``branches``, ``share`` (of all branches) and ``survival``.
    """
    kinds: dict[str, list[bool]] = {}
    for b in per_branch:
        kinds.setdefault(token_kind(tokenizer.decode([b["greedy"]])), []).append(bool(b["correct"]))
    total = max(1, len(per_branch))
    return {
        k: {"branches": len(v), "share": len(v) / total, "survival": float(np.mean(v))}
        for k, v in sorted(kinds.items())
    }


def sample_variety(samples: Sequence[QuestionSamples], min_solve: float = 0.5) -> dict[str, Any]:
    """Median share of distinct texts among the correct samples, over questions with r̂ >= ``min_solve``.

    Returns:
        ``median_distinct_share``, ``questions`` (how many qualify) and the per-question ``shares``.
    """
    shares = []
    for s in samples:
        correct = [t.strip() for t, c in zip(s.sample_texts, s.sample_correct) if c]
        if s.m and s.solve_probability() >= min_solve and correct:
            shares.append(len(set(correct)) / len(correct))
    return {
        "median_distinct_share": float(np.median(shares)) if shares else float("nan"),
        "questions": len(shares),
        "min_solve": min_solve,
        "shares": [round(x, 4) for x in shares],
    }
