"""Deterministic generator of synthetic grade-school arithmetic word problems in GSM8K format.

The data of the offline "default world": a tiny GPT-NeoX trained from scratch on CPU learns these problems
well enough that its solve probabilities spread over [0, 1] (docs/world.md, with why the recipe is what it is).

Four problem families, each with ``k`` in 1..4 operations and a difficulty level in 1..3:

* ``chain``: a person starts with some objects and ``k`` events change the count (+, -, x, exact /; no
  division at level 1).
* ``shop``: items bought at a unit price (x); ``k=2`` pays with a bill and asks for the change (-); ``k=3``
  buys a second item and asks for the total (x, +); ``k=4`` does both.
* ``groups``: containers holding equal numbers of objects (x), some added (+) and some removed (-) in either
  order, then shared equally among friends (exact /).
* ``compare``: B has more/fewer than A (+/-), C has m times as many as B (x), then totals (+).

Every problem renders in two styles with the same numbers and answer (:mod:`~contamlab.data.arith.render`). All
values (question numbers, operands, intermediate results) lie in 0..999, divisions are exact and nothing is negative.

Generation draws everything, template choices included, from ``random.Random`` streams seeded from the
config, so :func:`generate` is deterministic; the renderings are pure functions of the problem (the template
choices are stored in ``ArithProblem.slots``).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from contamlab.data.arith.problem import FAMILIES, N_VARIANTS, STYLES, ArithProblem, Step
from contamlab.data.arith.render import render
from contamlab.data.arith.words import CONTAINERS, ITEMS, NAMES, OBJECTS

MAX_VALUE = 999
_BILLS: tuple[int, ...] = (5, 10, 20, 50, 100, 200, 500)


@dataclass(frozen=True)
class ArithConfig:
    """Settings of the generator.

    The defaults are the full three-level mix; the calibrated default world (``configs/domain/arith.yaml``) drops
    level 3, which the tiny model almost never solves.

    Attributes:
        n_train: Number of training problems.
        n_test: Number of test problems.
        seed: Seed of the generator; the same config always gives the same problems.
        level_weights: Relative weight of each difficulty level (level ``i + 1`` has ``level_weights[i]``).
        k_weights: Relative weight of each number of operations (``k = i + 1``; at most 4 entries).
        num_max: Largest operand (start values, added/removed amounts, prices) per level.
        mul_max: Largest multiplier/divisor (factors, item counts, containers, piles, friends) per level.
    """

    n_train: int = 6000
    n_test: int = 200
    seed: int = 0
    level_weights: tuple[float, ...] = (3, 2, 1)
    k_weights: tuple[float, ...] = (1, 1, 1, 1)
    num_max: tuple[int, ...] = (9, 15, 30)
    mul_max: tuple[int, ...] = (3, 5, 9)

    def __post_init__(self) -> None:
        if self.n_train < 0 or self.n_test < 0:
            raise ValueError(f"n_train and n_test must be >= 0, got {self.n_train}, {self.n_test}")
        if not 1 <= len(self.k_weights) <= 4:
            raise ValueError(f"k_weights needs 1 to 4 entries (k = 1..4), got {len(self.k_weights)}")
        if not len(self.level_weights) == len(self.num_max) == len(self.mul_max) >= 1:
            raise ValueError("level_weights, num_max and mul_max need the same number (>= 1) of entries")
        for name in ("level_weights", "k_weights"):
            weights = getattr(self, name)
            if any(w < 0 for w in weights) or sum(weights) <= 0:
                raise ValueError(f"{name} must be non-negative with a positive sum, got {weights}")
        if any(not 2 <= n <= 100 for n in self.num_max):
            raise ValueError(f"num_max entries must be in 2..100, got {self.num_max}")
        if any(not 2 <= m <= 20 for m in self.mul_max):
            raise ValueError(f"mul_max entries must be in 2..20, got {self.mul_max}")


# ----------------------------------------------------------------------------------------------------------
# Builders: draw the numbers of one problem; return (slots without "var", steps) or None when the draw
# breaks a constraint (the caller draws again).
# ----------------------------------------------------------------------------------------------------------

_Built = tuple[tuple[tuple[str, Any], ...], tuple[Step, ...]] | None


def _others(rng: random.Random, exclude: str, n: int) -> tuple[str, ...]:
    """Draw ``n`` names (with repetition) different from ``exclude``."""
    pool = [name for name in NAMES if name != exclude]
    return tuple(rng.choice(pool) for _ in range(n))


def _build_chain(rng: random.Random, k: int, level: int, nmax: int, mmax: int) -> _Built:
    name = rng.choice(list(NAMES))
    cur = rng.randint(2, nmax)
    steps: list[Step] = []
    for _ in range(k):
        options = ["+"] if cur + 2 <= MAX_VALUE else []
        if cur >= 4:
            options.append("-")
        if cur * 2 <= MAX_VALUE:
            options.append("*")
        divisors = [d for d in range(2, mmax + 1) if cur % d == 0 and cur // d >= 2]
        if level > 1 and divisors:
            options.append("/")
        op = rng.choice(options)
        if op == "+":
            n = rng.randint(2, min(nmax, MAX_VALUE - cur))
            nxt = cur + n
        elif op == "-":
            n = rng.randint(2, min(nmax, cur - 2))
            nxt = cur - n
        elif op == "*":
            n = rng.randint(2, min(mmax, MAX_VALUE // cur))
            nxt = cur * n
        else:
            n = rng.choice(divisors)
            nxt = cur // n
        steps.append(Step(cur, op, n, nxt))
        cur = nxt
    slots = (("name", name), ("obj", rng.choice(OBJECTS)), ("friends", _others(rng, name, k)))
    return slots, tuple(steps)


def _build_shop(rng: random.Random, k: int, level: int, nmax: int, mmax: int) -> _Built:
    name = rng.choice(list(NAMES))
    item, item2 = rng.sample(range(len(ITEMS)), 2)
    a, p = rng.randint(2, mmax), rng.randint(1, nmax)
    steps = [Step(a, "*", p, a * p)]
    total = a * p
    if k >= 3:
        b, q = rng.randint(2, mmax), rng.randint(1, nmax)
        steps += [Step(b, "*", q, b * q), Step(total, "+", b * q, total + b * q)]
        total += b * q
    if k in (2, 4):
        bills = [bill for bill in _BILLS if bill > total]
        if not bills:
            return None
        bill = rng.choice(bills[:2])
        steps.append(Step(bill, "-", total, bill - total))
    if len(steps) != k or total > MAX_VALUE:
        return None
    return (("name", name), ("items", (item, item2))), tuple(steps)


def _build_groups(rng: random.Random, k: int, level: int, nmax: int, mmax: int) -> _Built:
    name = rng.choice(list(NAMES))
    a, b = rng.randint(2, mmax), rng.randint(2, nmax)
    cur = a * b
    steps = [Step(a, "*", b, cur)]
    # k=2: one of +/-; k>=3: both, in random order; k=4 then shares among friends.
    ops = [] if k == 1 else [rng.choice(["+", "-"])] if k == 2 else rng.sample(["+", "-"], 2)
    friends = rng.randint(2, mmax) if k == 4 else 0
    if ops:
        # Draw the amounts; at k=4 keep only draws where the last value splits exactly among the friends.
        candidates = []
        for _ in range(40):
            value, draft = cur, []
            for op in ops:
                if op == "+":
                    c = rng.randint(2, nmax)
                    if value + c > MAX_VALUE:
                        break
                    draft.append(Step(value, "+", c, value + c))
                else:
                    if value < 4:
                        break
                    c = rng.randint(2, min(nmax, value - 2))
                    draft.append(Step(value, "-", c, value - c))
                value = draft[-1].result
            else:
                if k < 4 or (value % friends == 0 and value // friends >= 2):
                    candidates.append(draft)
                    break
        if not candidates:
            return None
        steps += candidates[0]
        cur = steps[-1].result
    if k == 4:
        steps.append(Step(cur, "/", friends, cur // friends))
    slots = (
        ("name", name),
        ("obj", rng.choice(OBJECTS)),
        ("container", rng.randrange(len(CONTAINERS))),
        ("friends", _others(rng, name, k - 1)),
    )
    return slots, tuple(steps)


def _build_compare(rng: random.Random, k: int, level: int, nmax: int, mmax: int) -> _Built:
    names = tuple(rng.sample(list(NAMES), 3))
    a = rng.randint(2, nmax)
    if a >= 4 and rng.random() < 0.5:
        d = rng.randint(2, min(nmax, a - 2))
        steps = [Step(a, "-", d, a - d)]
    else:
        d = rng.randint(2, nmax)
        steps = [Step(a, "+", d, a + d)]
    b_count = steps[0].result
    if k >= 2:
        if MAX_VALUE // b_count < 2:
            return None
        m = rng.randint(2, min(mmax, MAX_VALUE // b_count))
        steps.append(Step(b_count, "*", m, b_count * m))
    c_count = steps[-1].result
    if k == 3:
        steps.append(Step(b_count, "+", c_count, b_count + c_count))
    elif k == 4:
        steps.append(Step(a, "+", b_count, a + b_count))
        steps.append(Step(a + b_count, "+", c_count, a + b_count + c_count))
    if steps[-1].result > MAX_VALUE:
        return None
    return (("names", names), ("obj", rng.choice(OBJECTS))), tuple(steps)


_BUILDERS: dict[str, Callable[[random.Random, int, int, int, int], _Built]] = {
    "chain": _build_chain,
    "shop": _build_shop,
    "groups": _build_groups,
    "compare": _build_compare,
}


# ----------------------------------------------------------------------------------------------------------
# Generation
# ----------------------------------------------------------------------------------------------------------


def _draw_problem(rng: random.Random, cfg: ArithConfig, family: str, k: int, level: int, uid: str) -> ArithProblem:
    """Draw one problem of the given family/k/level (retrying draws that break a constraint)."""
    nmax, mmax = cfg.num_max[level - 1], cfg.mul_max[level - 1]
    for _ in range(1000):
        built = _BUILDERS[family](rng, k, level, nmax, mmax)
        if built is None:
            continue
        slots, steps = built
        if len(steps) != k or any(not 0 <= v <= MAX_VALUE for s in steps for v in (s.a, s.b, s.result)):
            continue  # pragma: no cover - builders already respect the bounds
        var = tuple(rng.randrange(1 << 16) for _ in range(N_VARIANTS * len(STYLES)))
        return ArithProblem(uid, family, k, level, (*slots, ("var", var)), steps, steps[-1].result)
    raise RuntimeError(f"cannot draw a {family} problem with k={k} at level {level} (nmax={nmax}, mmax={mmax})")


def _generate_split(
    cfg: ArithConfig, split: str, n: int, seen_texts: set[str], seen_keys: set[tuple[Any, ...]]
) -> list[ArithProblem]:
    """Generate ``n`` problems whose content and texts (both styles) are not yet seen; update the sets."""
    rng = random.Random(f"contamlab-arith-{cfg.seed}-{split}")
    levels = range(1, len(cfg.level_weights) + 1)
    ks = range(1, len(cfg.k_weights) + 1)
    problems: list[ArithProblem] = []
    attempts = 0
    while len(problems) < n:
        family = rng.choice(FAMILIES)
        k = rng.choices(ks, weights=cfg.k_weights)[0]
        level = rng.choices(levels, weights=cfg.level_weights)[0]
        uid = f"arith-{split}-{len(problems):04d}"
        # Retry the same (family, k, level) on duplicates so that rejection does not skew the distribution.
        for _ in range(50):
            attempts += 1
            if attempts > 100 * n + 10_000:
                raise RuntimeError(f"could not generate {n} unique {split} problems; the configured world is too small")
            problem = _draw_problem(rng, cfg, family, k, level, uid)
            # Content key: problems differing only in wording (templates, incidental second names) are equal.
            key = (
                problem.family,
                problem.steps,
                tuple(s for s in problem.slots if s[0] not in ("var", "friends")),
            )
            texts = [render(problem, style)[0] for style in STYLES]
            if key in seen_keys or any(t in seen_texts for t in texts) or len(set(texts)) < len(texts):
                continue
            seen_keys.add(key)
            seen_texts.update(texts)
            problems.append(problem)
            break
    return problems


def generate(cfg: ArithConfig) -> tuple[list[ArithProblem], list[ArithProblem]]:
    """Generate the train and test problems.

    Deterministic given ``cfg``: draws come from ``random.Random`` streams seeded with ``cfg.seed`` (one per
    split, so the test set does not depend on ``n_train``), never from global random state. Question texts are
    unique over both splits and both styles, and no test problem appears in train, neither as text (in either
    rendering) nor as the same content in other wording.

    Args:
        cfg: Generator settings.

    Returns:
        ``(train, test)`` lists of problems, with ids ``arith-train-0000``... and ``arith-test-0000``...

    Raises:
        RuntimeError: If the settings allow too few distinct problems for the requested sizes.
    """
    seen_texts: set[str] = set()
    seen_keys: set[tuple[Any, ...]] = set()
    test = _generate_split(cfg, "test", cfg.n_test, seen_texts, seen_keys)
    train = _generate_split(cfg, "train", cfg.n_train, seen_texts, seen_keys)
    return train, test
