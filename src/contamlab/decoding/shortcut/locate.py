"""Locating the shortcut channels on the evaluation world: the locate set, greedy accuracy and Steps A to C."""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from torch import nn

from contamlab.decoding.shortcut.hooks import Channels, neuron_layers
from contamlab.decoding.shortcut.pair import BlockPatchedPair
from contamlab.decoding.shortcut.ranking import Ranking
from contamlab.decoding.shortcut.scores import POSITIONS, Accuracies, causal_deltas, comparative_scores
from contamlab.errors import ContamlabError

if TYPE_CHECKING:
    from contamlab.data.domain import Domain
    from contamlab.data.question import Question
    from contamlab.decoding.sampler import HFSampler

log = logging.getLogger("contamlab")


LOCATE_VERSION = 1  # bump when locating changes its output for the same inputs


# -- locating on the evaluation world ----------------------------------------------------------------------------
@dataclass(frozen=True)
class LocateConfig:
    """The locate budget and choices (see ``configs/strategy/shortcut.yaml``)."""

    questions: int = 100
    seed: int = 42
    block: int = 128  # as configs/strategy/shortcut.yaml (4 blocks per tiny-model layer)
    positions: str = "completion"
    max_new_tokens: int = 128
    include_last_layer: bool = False

    def __post_init__(self) -> None:
        if self.questions < 1:
            raise ContamlabError(f"strategy.locate_questions={self.questions}: must be >= 1")
        if self.block < 1:
            raise ContamlabError(f"strategy.block={self.block}: must be >= 1")
        if self.positions not in POSITIONS:
            raise ContamlabError(f"strategy.positions={self.positions!r}: use {' or '.join(POSITIONS)}")
        if self.max_new_tokens < 1:
            raise ContamlabError(f"strategy.locate_max_new_tokens={self.max_new_tokens}: must be >= 1")


def locate_set(questions: Sequence[Question], is_leaked: Callable[[str], bool], n: int, seed: int) -> list[Question]:
    """The locate questions: a seeded random half of the test set, stratified by leaked / unleaked, at most ``n``.

    The authors locate on a seeded half of GSM8K's test set (seed 42). Our test set is split leaked / unleaked, so
    each part contributes the same share (half, or less to fit the budget ``n``): Step A compares the models where
    M_con memorised and where it did not, in the test set's proportions, and Step B's accuracies see both. The
    located neurons are then patched on the whole test set, as in the paper (locating and evaluating overlap).

    Returns:
        The chosen questions in test-set order.
    """
    share = min(0.5, n / len(questions)) if questions else 0.0
    rng = random.Random(seed)
    chosen: set[str] = set()
    for leaked in (True, False):
        ids = [q.id for q in questions if is_leaked(q.id) == leaked]
        rng.shuffle(ids)
        chosen.update(ids[: round(len(ids) * share)])
    return [q for q in questions if q.id in chosen][:n]


def greedy_accuracy(
    make_sampler: Callable[[nn.Module], HFSampler], domain: Domain, questions, prompt_ids
) -> Accuracies:
    """Step B's accuracies: greedy decoding of the locate prompts, checked by the domain, for several channel sets.

    The prompts are repeated once per channel set and decoded as rows of the same batches by a
    :class:`BlockPatchedPair` (one decode, where patching block by block took one decode per block).
    """

    def accuracies(target: nn.Module, source: nn.Module, variants: Sequence[Channels]) -> list[float]:
        sampler = make_sampler(BlockPatchedPair(target, source, variants, len(prompt_ids)))
        repeated = [ids for _ in variants for ids in prompt_ids]  # variant-major: prompt i has variant i // Q
        sampler.set_prefix(repeated)
        responses = sampler.decode(repeated, m=1, temperature=1.0, seed=0, greedy=True)
        texts = [sampler.tokenizer.decode(r[0], skip_special_tokens=True) for r in responses]
        n = len(questions)
        correct = [domain.is_correct(text, questions[i % n]) for i, text in enumerate(texts)]
        return [sum(correct[v * n : (v + 1) * n]) / n for v in range(len(variants))]

    return accuracies


def locate(
    con: nn.Module,
    un: nn.Module,
    base: nn.Module,
    make_sampler: Callable[[nn.Module], HFSampler],
    domain: Domain,
    questions: Sequence[Question],
    config: LocateConfig,
    progress: bool = False,
) -> Ranking:
    """Steps A–B on the locate questions (Step C is :meth:`Ranking.final`).

    Args:
        con: M_con, the contaminated model.
        un: M_un, the uncontaminated model (Step B's patch source).
        base: M_base, the pretrained base.
        make_sampler: Builds an HFSampler with the locate token budget for a model (or a :class:`BlockPatchedPair`).
        domain: Prompts and answer checker.
        questions: The locate set (:func:`locate_set`).
        config: Block size, positions, budget.
        progress: Show progress bars.
    """
    n_layers = neuron_layers(con, config.include_last_layer)
    if n_layers < 1:
        raise ContamlabError(
            "strategy=shortcut: the model has one layer and the final layer is excluded; set "
            "strategy.include_last_layer=true to patch it"
        )
    started = time.perf_counter()
    sampler = make_sampler(con)
    prompt_ids = sampler.encode([domain.prompt(q) for q in questions])
    sampler.set_prefix(prompt_ids)
    completions = [r[0] for r in sampler.decode(prompt_ids, m=1, temperature=1.0, seed=0, greedy=True)]
    comparative = comparative_scores(con, un, prompt_ids, completions, n_layers, config.positions)
    t_a = time.perf_counter() - started
    accuracies = greedy_accuracy(make_sampler, domain, questions, prompt_ids)
    d_ff = comparative.shape[1]
    per_decode = max(1, sampler.batch_rows // len(questions))  # blocks that fill one decode batch
    delta_con, delta_base = (
        causal_deltas(target, un, accuracies, n_layers, d_ff, config.block, progress, label, per_decode)
        for target, label in ((con, "contaminated"), (base, "base"))
    )
    log.info(
        "shortcut: located %d neurons on %d questions in %.1f s (Step A %.1f s)",
        comparative.numel(),
        len(questions),
        time.perf_counter() - started,
        t_a,
    )
    return Ranking(comparative, delta_con, delta_base)
