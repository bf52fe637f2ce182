"""Step C of shortcut patching (Zhu et al. 2025): ``final = S_cmp + delta_con - delta_base`` and its cache.

The three scores are summed unweighted and unnormalised; the shortcut set is the top K. Rankings are cached as
safetensors under a content hash of the three models and the locate configuration, so a sweep over K or over the
patch reference locates once.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import save as safetensors_bytes
from torch import Tensor

from contamlab.decoding.shortcut.hooks import Channels
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_bytes

log = logging.getLogger("contamlab")


# -- Step C: ranking and its cache -------------------------------------------------------------------------------
@dataclass
class Ranking:
    """The scores of Steps A–B per neuron and their unweighted sum (Step C).

    Attributes:
        comparative: ``[L', d]`` S_cmp.
        delta_con: ``[L', d]`` Step B accuracy drop of M_con (rewarded).
        delta_base: ``[L', d]`` Step B accuracy drop of M_base (penalised).
    """

    comparative: Tensor
    delta_con: Tensor
    delta_base: Tensor

    def __post_init__(self) -> None:
        shapes = {tuple(t.shape) for t in (self.comparative, self.delta_con, self.delta_base)}
        if len(shapes) != 1 or self.comparative.ndim != 2:
            raise ValueError(f"ranking scores must share one [layers, channels] shape, got {sorted(shapes)}")

    @property
    def final(self) -> Tensor:
        """``[L', d]`` final score: S_cmp + delta_con - delta_base (no weights, no normalisation)."""
        return self.comparative + self.delta_con - self.delta_base

    @property
    def n_neurons(self) -> int:
        """Number of ranked neurons, L' * d."""
        return self.comparative.numel()

    def order(self) -> Tensor:
        """``[L' * d]`` flat neuron indices ``l * d + j`` by descending final score (ties: lower index first)."""
        return torch.sort(self.final.flatten(), descending=True, stable=True).indices

    def top(self, k: int) -> Channels:
        """The shortcut set: the top ``k`` neurons as sorted channel indices per layer."""
        if not 0 <= k <= self.n_neurons:
            raise ContamlabError(
                f"strategy.top_k={k}: must be in [0, {self.n_neurons}] (the model's {self.comparative.shape[0]} "
                f"neuron layers x {self.comparative.shape[1]} channels)"
            )
        chosen = self.order()[:k]  # [k]
        layers, cols = chosen // self.comparative.shape[1], chosen % self.comparative.shape[1]  # [k], [k]
        return {int(layer): cols[layers == layer].sort().values for layer in layers.unique()}

    def save(self, path: str | Path, key: dict) -> None:
        """Write the scores and their key as safetensors, atomically (temp file + rename)."""
        tensors = {"comparative": self.comparative, "delta_con": self.delta_con, "delta_base": self.delta_base}
        blob = safetensors_bytes({k: v.float().contiguous() for k, v in tensors.items()}, {"key": json.dumps(key)})
        atomic_write_bytes(path, blob)

    @classmethod
    def load(cls, path: str | Path, key: dict) -> Ranking | None:
        """The ranking stored at ``path`` for ``key``; None when missing, unreadable, corrupt or of another key."""
        path = Path(path)
        if not path.is_file():
            return None
        try:
            with safe_open(str(path), framework="pt") as handle:
                stored_key = json.loads((handle.metadata() or {}).get("key", "null"))
                tensors = {name: handle.get_tensor(name) for name in ("comparative", "delta_con", "delta_base")}
            ranking = cls(**tensors)
        except (OSError, ValueError, SafetensorError) as err:
            log.warning("shortcut: ranking cache %s is unreadable (%s); locating again", path, err)
            return None
        if stored_key != json.loads(json.dumps(key)):
            log.warning("shortcut: ranking cache %s belongs to another configuration; locating again", path)
            return None
        if not all(torch.isfinite(t).all() for t in tensors.values()):
            log.warning("shortcut: ranking cache %s holds non-finite scores; locating again", path)
            return None
        return ranking


def cached_ranking(path: str | Path, key: dict, compute: Callable[[], Ranking]) -> Ranking:
    """The ranking cached at ``path`` under ``key``, or ``compute()`` written there (a corrupt file is recomputed)."""
    ranking = Ranking.load(path, key)
    if ranking is None:
        ranking = compute()
        ranking.save(path, key)
    return ranking
