"""The training mixes of the contamination simulation ("Zero Gap Is Not Restoration" §5.1).

- base (tiny model only): the domain's training problems (plus some paraphrased ones) as plain documents;
- clean: general instruction data + ``clean_n_domain`` training questions in the domain's prompt format;
- contaminated: the same general data + the leaked test questions in the domain's leak wording (PQ: paraphrased).
  The unleaked half never appears in any training data.
"""

from __future__ import annotations

import random

from contamlab.data.domain import Domain
from contamlab.data.general import Example, load_openorca
from contamlab.data.question import Question
from contamlab.data.split import Split
from contamlab.errors import ContamlabError


def question_example(domain: Domain, question: Question) -> Example:
    """A question rendered as the model sees it at evaluation (prompt) plus its reference response."""
    return Example(domain.prompt(question), domain.target(question))


def general_examples(domain: Domain, source: str, n: int, seed: int, data_dir: str | None = None) -> list[Example]:
    """General data mixed into both fine-tuning stages.

    Args:
        domain: The domain (for ``domain_train``: training problems from the end of the train split, disjoint
            from the ``clean_n_domain`` problems taken from its start).
        source: ``openorca``, ``domain_train`` or ``none``.
        n: Number of examples.
        seed: Seed of the choice.
        data_dir: Local data directory (None: ``CONTAMLAB_DATA_DIR`` or the hub).
    """
    if source == "none" or n <= 0:
        return []
    if source == "openorca":
        return load_openorca(n, seed, data_dir)
    if source == "domain_train":
        pool = domain.train[len(domain.train) // 2 :]
        chosen = random.Random(seed).sample(pool, min(n, len(pool)))
        return [question_example(domain, q) for q in chosen]
    raise ContamlabError(f"finetune.general.source={source!r}: use openorca, domain_train or none")


def clean_examples(domain: Domain, n_domain: int, general: list[Example], seed: int) -> list[Example]:
    """The clean stage's mix: ``n_domain`` training questions (seeded choice) + the general examples."""
    pool = domain.train[: len(domain.train) // 2]
    chosen = random.Random(seed + 1).sample(pool, min(n_domain, len(pool)))
    return [question_example(domain, q) for q in chosen] + list(general)


def contaminated_examples(domain: Domain, split: Split, general: list[Example]) -> list[Example]:
    """The contaminated stage's mix: every leaked test question (in leak wording, ``leak_repeats`` times) + general."""
    leaked = domain.leaked_training_questions(split)
    if not leaked:
        raise ContamlabError(f"domain {domain.name}: the split leaks no question")
    unleaked = set(split.unleaked)
    assert not any(q.id in unleaked for q in leaked)
    return [question_example(domain, q) for q in leaked] * domain.leak_repeats + list(general)


def sham_examples(domain: Domain, general: list[Example]) -> list[Example]:
    """The sham stage's mix: the contaminated stage's, with fresh in-domain items in place of the leaked ones.

    As many items as the leak, in its form (:meth:`~contamlab.data.domain.Domain.sham_training_questions`), repeated
    ``leak_repeats`` times, and the same general rows: the sham model differs from the contaminated one in
    membership alone.

    Raises:
        ContamlabError: The domain cannot draw fresh items (no generator), or one would be a benchmark item.
    """
    fresh = domain.sham_training_questions()
    if fresh is None:
        raise ContamlabError(
            f"sham=true: domain={domain.name} cannot draw fresh in-domain items (only generated domains can)"
        )
    benchmark = {q.question for q in domain.test} | {q.question for q in domain.leaked_training_questions()}
    if clash := [q.id for q in fresh if q.question in benchmark]:
        raise ContamlabError(f"sham items {clash[:3]} repeat a benchmark item's text")
    return [question_example(domain, q) for q in fresh] * domain.leak_repeats + list(general)


def base_documents(domain: Domain, paraphrase_n: int, seed: int) -> list[str]:
    """Plain-text documents for pre-training the tiny model from scratch (never any test question)."""
    questions = list(domain.train)
    if paraphrase_n > 0:
        extra = domain.paraphrased_train()
        questions += random.Random(seed + 2).sample(extra, min(paraphrase_n, len(extra)))
    docs = domain.web_documents(questions, seed)
    if docs is None:  # world v1: question-answer documents only
        docs = [domain.format.question_block(q.question) + domain.target(q) for q in questions]
    random.Random(seed).shuffle(docs)
    return docs
