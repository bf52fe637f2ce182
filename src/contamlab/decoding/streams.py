"""Independent random streams for the sample sets of one run (docs/methods/metrics.md).

The paper samples every model independently. A run therefore draws the clean batch, the second clean batch (the
noise floor and Figure 2) and each strategy's batch of the contaminated model from separate streams, each seeded
from the run seed and the batch's *role*. With ``common_noise`` (**[ours]**, opt-in variance reduction) the clean
batch and every strategy batch share the run seed's stream, so matching rows share their noise; the second clean
batch stays independent (else it would repeat the first).
"""

from __future__ import annotations

import hashlib

CLEAN = "clean"
CLEAN_2 = "clean-2"


def strategy_role(strategy_name: str) -> str:
    """The role of the contaminated model's batch under a strategy (variants of one strategy share it)."""
    return f"contaminated/{strategy_name}"


def stream_seed(seed: int, role: str, common_noise: bool = False) -> int:
    """The base seed of one role's stream: a hash of (run seed, role), or the run seed itself under common noise.

    Args:
        seed: The run seed.
        role: :data:`CLEAN`, :data:`CLEAN_2` or :func:`strategy_role` (any string names its own stream).
        common_noise: Share the run seed's stream between the clean batch and the strategy batches.

    Returns:
        A seed below 2**30, so that chunk offsets (seed + chunk index) stay valid 31-bit seeds on every backend.
    """
    if common_noise and role != CLEAN_2:
        return int(seed)
    digest = hashlib.sha256(f"contamlab-stream/{int(seed)}/{role}".encode()).digest()
    return int.from_bytes(digest[:4], "big") >> 2


def readout_seed(seed: int, role: str) -> int:
    """The seed of a role's readout r⁰¹ (which surviving sample it reads), apart from its samples' stream."""
    return stream_seed(seed, role + "/readout")
