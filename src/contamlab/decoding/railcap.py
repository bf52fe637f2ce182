"""RailCap: step-wise capping of the greedy trajectory during sampling.

Implements "Zero Gap Is Not Restoration", §4, Eq. 14–15 and Algorithm 1 (docs/methods/strategies.md). For
each question the greedy trajectory g = (g_1..g_T) of the contaminated model is indexed as
H = {(g_k..g_{k+n-1}) -> g_{k+n} : 1 <= k <= T - n} (Eq. 14). While sampling, at step t (1-based, tokens
o_1..o_{t-1} generated so far), if t > n and (o_{t-n}..o_{t-1}) is in H, every successor x gets
l[x] <- min(l[x], v2) with v2 the second-largest logit of the step before any cap (Eq. 15), or l[x] <- -inf in
the ``ban`` variant (Table 4). Other rows are left unchanged.

The per-question index is stored as padded tensors (:class:`RailCapTable`) so that :func:`railcap_step` handles
all rows of a batch (questions x samples) at once with gathers and one scatter; :func:`railcap_reference_step`
follows Algorithm 1 literally for one row and serves as the test oracle.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from contamlab.decoding.strategy import StepHook, Strategy
from contamlab.errors import ContamlabError

MODES = ("cap", "ban")
DUPLICATES = ("all", "first", "last")
# The vLLM request key of RailCap's per-question index (read by :mod:`~contamlab.decoding.vllm_processors`).
RAILCAP_KEY = "contamlab_railcap"

# Padding value of unused window slots: never equal to a generated token id (ids are >= 0).
_PAD = -1


def _check_n(n: int) -> None:
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ValueError(f"strategy.n must be a positive integer (the n-gram length), got {n!r}")


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"strategy.mode must be one of {', '.join(MODES)}, got {mode!r}")


def _check_duplicates(duplicates: str) -> None:
    if duplicates not in DUPLICATES:
        raise ValueError(f"strategy.duplicates must be one of {', '.join(DUPLICATES)}, got {duplicates!r}")


@dataclass(frozen=True)
class RailCapTable:
    """The index H of every question, padded to K windows (Eq. 14).

    Attributes:
        n: The n-gram length.
        duplicates: How repeated n-grams were resolved (``all``, ``first`` or ``last``).
        grams: ``[Q, K, n]`` int64 window n-grams; unused slots hold -1.
        succ: ``[Q, K]`` int64 successor token of each window; 0 in unused slots.
        valid: ``[Q, K]`` bool, True for the real windows of each question.
    """

    n: int
    duplicates: str
    grams: Tensor
    succ: Tensor
    valid: Tensor

    @property
    def num_questions(self) -> int:
        """Number of questions Q (rows of the table)."""
        return self.grams.shape[0]

    @property
    def num_windows(self) -> int:
        """Padded window count K (the largest number of windows of any question)."""
        return self.grams.shape[1]

    def to(self, device: torch.device | str) -> RailCapTable:
        """Return a copy on ``device``; move the table once, before decoding, to the device of the logits.

        Args:
            device: Target device.

        Returns:
            The table with its tensors on ``device``.
        """
        return RailCapTable(self.n, self.duplicates, self.grams.to(device), self.succ.to(device), self.valid.to(device))


def _windows(trajectory: Sequence[int], n: int, duplicates: str) -> Tensor:
    """All (n-gram, successor) windows of one trajectory as ``[W, n + 1]`` rows, duplicates resolved."""
    # Tables are built once per chunk on the host and moved to the model's device before decoding (RailCapHook.to).
    traj = torch.as_tensor([int(tok) for tok in trajectory], dtype=torch.long, device="cpu")  # [T]
    if traj.numel() <= n:
        return torch.empty((0, n + 1), dtype=torch.long, device="cpu")
    windows = traj.unfold(0, n + 1, 1)  # [T - n, n + 1]: row k = (g_k..g_{k+n-1}, g_{k+n})
    if duplicates == "all":
        # Capping a token twice is a no-op, so identical (n-gram, successor) pairs are stored once.
        return torch.unique(windows, dim=0)
    _, inverse = torch.unique(windows[:, :n], dim=0, return_inverse=True)  # [T - n]
    n_unique = int(inverse.max()) + 1
    position = torch.arange(windows.shape[0], device="cpu")  # [T - n]
    reduce = "amin" if duplicates == "first" else "amax"
    keep = torch.zeros(n_unique, dtype=torch.long, device="cpu").scatter_reduce(
        0, inverse, position, reduce=reduce, include_self=False
    )  # [U]: the first / last occurrence of each distinct n-gram
    return windows[keep.sort().values]


def build_table(greedy: Sequence[Sequence[int]], n: int, duplicates: str = "all") -> RailCapTable:
    """Index the greedy trajectory of every question (Eq. 14, Algorithm 1 line 4).

    Args:
        greedy: One greedy trajectory per question, generated token ids only (prompt excluded).
        n: The n-gram length (paper default 4).
        duplicates: When an n-gram occurs more than once with different successors: ``all`` caps every
            successor, ``first`` / ``last`` keep the successor of the first / last occurrence only.

    Returns:
        The padded table; a question whose trajectory has T <= n tokens has no windows.

    Raises:
        ValueError: If ``n`` or ``duplicates`` is invalid.
    """
    _check_n(n)
    _check_duplicates(duplicates)
    per_question = [_windows(g, n, duplicates) for g in greedy]
    n_questions = len(per_question)
    k_max = max((w.shape[0] for w in per_question), default=0)
    grams = torch.full((n_questions, k_max, n), _PAD, dtype=torch.long, device="cpu")  # [Q, K, n]
    succ = torch.zeros((n_questions, k_max), dtype=torch.long, device="cpu")  # [Q, K]
    valid = torch.zeros((n_questions, k_max), dtype=torch.bool, device="cpu")  # [Q, K]
    # One pass over questions at build time; the per-step function never loops.
    for q, w in enumerate(per_question):
        count = w.shape[0]
        grams[q, :count] = w[:, :n]
        succ[q, :count] = w[:, n]
        valid[q, :count] = True
    return RailCapTable(n=n, duplicates=duplicates, grams=grams, succ=succ, valid=valid)


def railcap_step(logits: Tensor, generated: Tensor, owner: Tensor, table: RailCapTable, mode: str = "cap") -> Tensor:
    """Apply one RailCap decoding step to every row of a batch (Eq. 15, Algorithm 1 lines 9–12).

    Args:
        logits: ``[R, V]`` raw logits of this step (before temperature); modified in place.
        generated: ``[R, t]`` int64 tokens generated so far by each row (prompt excluded).
        owner: ``[R]`` int64 question index of each row into ``table``.
        table: The per-question index from :func:`build_table`; put it on the logits' device once beforehand.
        mode: ``cap`` (cap the successor at the runner-up logit) or ``ban`` (set it to -inf).

    Returns:
        ``logits``, with the successors of every row whose last n tokens match a window of its question capped.

    Raises:
        ValueError: If ``mode`` is invalid or the shapes disagree.
    """
    _check_mode(mode)
    if logits.ndim != 2 or generated.ndim != 2 or owner.ndim != 1:
        raise ValueError("railcap_step expects logits [R, V], generated [R, t] and owner [R]")
    n_rows, vocab = logits.shape
    if generated.shape[0] != n_rows or owner.shape[0] != n_rows:
        raise ValueError(
            f"railcap_step: {n_rows} logit rows but generated has {generated.shape[0]} and owner {owner.shape[0]}"
        )
    n = table.n
    # Algorithm 1 line 9, "t > n" with 1-based t: at least n tokens generated so far.
    if generated.shape[1] < n or table.num_windows == 0 or n_rows == 0:
        return logits
    if mode == "cap" and vocab < 2:
        raise ValueError("railcap_step: mode 'cap' needs a vocabulary of at least 2 tokens (a runner-up)")
    device = logits.device
    owner = owner.to(device)
    tail = generated[:, -n:].to(device)  # [R, n]
    # No-ops when the table already lives on the logits' device.
    grams, succ, valid = table.grams.to(device), table.succ.to(device), table.valid.to(device)
    # Compare position by position (n <= a handful) rather than materialising grams[owner] as [R, K, n].
    match = valid.index_select(0, owner)  # [R, K]
    for j in range(n):
        match &= grams[:, :, j].index_select(0, owner) == tail[:, j : j + 1]  # [R, K]
    inf = torch.tensor(float("inf"), dtype=logits.dtype, device=device)
    if mode == "ban":
        bound = -inf  # []
    else:
        # Only rows on the rail need the top-2 search; most rows of most steps are off it.
        hit = match.any(dim=1).nonzero().squeeze(1)  # [M]
        if hit.numel() == 0:
            return logits
        if 2 * hit.numel() > n_rows:
            v2 = logits.topk(2, dim=-1).values[:, 1:]  # [R, 1]; cheaper than copying most rows out
        else:
            v2 = torch.full((n_rows, 1), float("inf"), dtype=logits.dtype, device=device)  # [R, 1]
            v2[hit] = logits.index_select(0, hit).topk(2, dim=-1).values[:, 1:]  # [M, 1]
        # topk keeps ties, so when two tokens tie for the max, v2 equals the max (the cap is then a no-op).
        bound = v2  # [R, 1]; computed from the logits before any cap
    # +inf at unmatched and padded windows leaves their successor untouched under the min.
    src = torch.where(match, bound, inf)  # [R, K]
    logits.scatter_reduce_(1, succ.index_select(0, owner), src, reduce="amin")  # [R, V]
    return logits


def railcap_reference_step(
    logits_row: Tensor,
    generated_row: list[int],
    greedy: list[int],
    n: int,
    mode: str = "cap",
    duplicates: str = "all",
) -> Tensor:
    """Algorithm 1 for one row, literally, with a Python dict for H (the test oracle of :func:`railcap_step`).

    Args:
        logits_row: ``[V]`` raw logits of this step.
        generated_row: Tokens o_1..o_{t-1} generated so far by this row.
        greedy: The greedy trajectory g_1..g_T of the row's question.
        n: The n-gram length.
        mode: ``cap`` or ``ban``.
        duplicates: ``all``, ``first`` or ``last`` (see :func:`build_table`).

    Returns:
        A new ``[V]`` tensor with the step's cap applied.

    Raises:
        ValueError: If an argument is invalid.
    """
    _check_n(n)
    _check_mode(mode)
    _check_duplicates(duplicates)
    index: dict[tuple[int, ...], list[int]] = {}
    big_t = len(greedy)
    for k in range(1, big_t - n + 1):  # Eq. 14, 1-based k
        gram = tuple(greedy[k - 1 : k - 1 + n])
        successor = greedy[k - 1 + n]
        if duplicates == "all":
            if successor not in index.setdefault(gram, []):
                index[gram].append(successor)
        elif duplicates == "first":
            index.setdefault(gram, [successor])
        else:
            index[gram] = [successor]
    out = logits_row.clone()
    t = len(generated_row) + 1  # 1-based index of the token about to be sampled
    if t > n:
        gram = tuple(generated_row[t - 1 - n : t - 1])  # (o_{t-n}..o_{t-1})
        if gram in index:
            values = sorted(logits_row.tolist(), reverse=True)
            v2 = values[1]
            for x in index[gram]:
                out[x] = min(float(out[x]), v2) if mode == "cap" else float("-inf")
    return out


def railcap_args(table: RailCapTable, question: int, mode: str) -> dict[str, Any]:
    """The ``extra_args`` entry of one question's RailCap index (a row of :func:`build_table`'s table).

    Args:
        table: Index of all questions, duplicates already resolved.
        question: Row of ``table``.
        mode: ``cap`` or ``ban``.

    Returns:
        ``{RAILCAP_KEY: {"n", "mode", "windows"}}`` with plain ints (JSON / msgpack serialisable).
    """
    windows = torch.cat([table.grams[question], table.succ[question, :, None]], dim=1)  # [K, n + 1]
    return {RAILCAP_KEY: {"n": table.n, "mode": mode, "windows": windows[table.valid[question]].tolist()}}


@dataclass(frozen=True)
class RailCap(Strategy):
    """RailCap (paper §4, Algorithm 1).

    Caps the greedy-trajectory successor of a matching trailing n-gram to the runner-up logit (``ban``: to −∞).
    """

    name: str = "railcap"
    n: int = 4
    mode: str = "cap"
    duplicates: str = "all"

    def __post_init__(self) -> None:
        if self.n < 1:
            raise ContamlabError(f"strategy.n={self.n}: must be >= 1")
        if self.mode not in ("cap", "ban"):
            raise ContamlabError(f"strategy.mode={self.mode!r}: use cap or ban")
        if self.duplicates not in ("all", "first", "last"):
            raise ContamlabError(f"strategy.duplicates={self.duplicates!r}: use all, first or last")

    def step_fn(self, greedy_ids, greedy_entropy):
        """Cap on every row whose last n tokens match its own question's greedy trajectory."""
        table = build_table(greedy_ids, self.n, self.duplicates)
        return RailCapHook(table, self.mode)


@dataclass(frozen=True)
class RailCapHook(StepHook):
    """RailCap's per-step hook: the questions' n-gram table and the suppression mode (backends read both)."""

    table: RailCapTable
    mode: str = "cap"

    def __call__(self, logits, generated, owner):
        """Cap (or ban) the rail successors on every matching row (see :func:`railcap_step`)."""
        return railcap_step(logits, generated, owner, self.table, mode=self.mode)

    def to(self, device: torch.device | str) -> RailCapHook:
        """The hook with its table on ``device`` (the sampler calls it once per decode, not once per step)."""
        return RailCapHook(self.table.to(device), self.mode)

    def vllm_args(self, n_questions: int) -> list[dict[str, Any]]:
        """Each question's RailCap index as vLLM ``extra_args`` (:func:`railcap_args`)."""
        if self.table.num_questions != n_questions:
            raise ValueError(f"RailCap table has {self.table.num_questions} questions, the call {n_questions}")
        return [railcap_args(self.table, q, self.mode) for q in range(n_questions)]
