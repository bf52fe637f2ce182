"""evaluate.py's job: one (model, domain, strategy, detector) → samples, metrics, detector scores."""

from __future__ import annotations

from omegaconf import DictConfig

from contamlab.config import build
from contamlab.data.domain import build_domain


def run(cfg: DictConfig) -> None:
    """Run one evaluation job.

    Builds every configured component first, so a component that is not implemented yet fails before any work.
    """
    domain = build_domain(cfg.domain)
    components = {
        "sampler": cfg.sampler,
        "metric": cfg.metric,
        "strategy": cfg.strategy,
        "detector": cfg.detector,
    }
    for key, node in components.items():
        if node.get("_target_"):
            build(node, key)
    del domain
