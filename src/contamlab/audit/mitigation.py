"""The audit's mitigated score: the mean solve probability under identity and under each decoding strategy.

What a contaminated model's score would be without its shortcut (RailCap, TED, LNE-blocking), as the paper's
strategies estimate it at decoding time; its verdict is the share of identity's excess over the strategy that the
strategy removes (:func:`~contamlab.metrics.verdicts.mitigation_share`). The solve probabilities are cached
(:func:`solve_probabilities`), so that a rerun loads no model at all.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from contamlab.audit.models import AuditedModel
from contamlab.config import build, sampling_setup
from contamlab.data.domain import Domain
from contamlab.data.prompts import PROMPT_VERSION
from contamlab.decoding.pipeline import sample_model
from contamlab.decoding.strategy import Strategy
from contamlab.decoding.streams import strategy_role
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_json, content_hash
from contamlab.metrics import verdicts as V
from contamlab.models.store import ModelStore

log = logging.getLogger("contamlab")
#: Bump when the cached solve probabilities of the mitigated score change meaning (:func:`solve_probabilities`).
MITIGATION_CACHE_VERSION = 1


def mitigation_strategies(cfg: DictConfig) -> dict[str, Strategy]:
    """Identity and each strategy of ``audit.mitigate`` (its names checked by validation.py), built now."""
    names = list(cfg.audit.mitigate)
    if not names:
        return {}
    strategies = {}
    for name in ["identity", *[n for n in names if n != "identity"]]:
        strategy = build(cfg.strategies[name], f"strategies.{name}")
        if strategy.patches_model:
            raise ContamlabError(f"audit.mitigate: strategy={name} needs a clean twin (it patches the model pair)")
        strategies[name] = strategy
    return strategies


def solve_key(cfg: DictConfig, store: ModelStore, domain: Domain, source: str, name: str, strategy: Strategy) -> dict:
    """What decides one strategy's sample set of one model, read from the config.

    The sample cache's key, less the fields only a loaded sampler knows; those come from the ``sampler`` and
    ``model`` nodes that the sampler is built from.
    """
    plain = {k: OmegaConf.to_container(cfg[k], resolve=True) for k in ("sampler", "model")}
    return {
        "v": MITIGATION_CACHE_VERSION,
        "model": store.identity(source),
        "config": plain,  # batch rows, draw, shared KV, backend: they change the samples
        "domain": domain.eval_fingerprint(),
        "ids": content_hash([q.id for q in domain.test]),
        "prompt": PROMPT_VERSION,
        "strategy": strategy.params(),
        "role": strategy_role(name),
        **{k: cfg.get(k) for k in ("m", "temperature", "max_new_tokens", "seed", "chunk_questions")},
    }


def solve_probabilities(
    target: AuditedModel, store: ModelStore, domain: Domain, name: str, strategy: Strategy, progress: bool
) -> tuple[list[float], float]:
    """Per-item solve probability of the target under one strategy, and the wall seconds of computing it.

    Read from ``<cache_dir>/audit/solve`` when an earlier audit computed it: the sample cache holds the samples, but
    reading them back needs the model loaded (the sampler keys them by its own settings), which is most of a cached
    rerun's time. The first computation's wall time is kept, as the detection cache keeps its scores'.
    """
    root = target.cfg.paths.get("cache_dir")
    key = solve_key(target.cfg, store, domain, target.source, name, strategy)
    path = Path(root) / "audit" / "solve" / f"{name}-{content_hash(key)}.json" if root else None
    if path is not None and path.is_file():
        try:
            data = json.loads(path.read_text())
            if data.get("key") == json.loads(json.dumps(key, default=str)) and len(data["solve"]) == len(domain.test):
                return [float(v) for v in data["solve"]], float(data.get("wall_s", 0.0))
        except (OSError, ValueError, KeyError, TypeError):
            log.warning("audit: solve-probability cache %s unreadable; reading the samples", path)
    started = time.perf_counter()
    setup = sampling_setup(target.cfg, store)
    role = strategy_role(name)
    _, samples, _ = sample_model(setup, store, domain, target.source, strategy, role, progress, label=target.spec)
    solve, wall = [s.solve_probability() for s in samples], time.perf_counter() - started
    if path is not None:
        atomic_write_json(path, {"key": key, "solve": solve, "wall_s": wall})
    return solve, wall


def mitigated_score(
    strategies: dict[str, Strategy], target: AuditedModel, domain: Domain, settings: V.Settings, progress: bool
):
    """Mean solve probability under identity and each other strategy (cached sample sets and solve probabilities).

    Returns:
        ``(verdicts, record)``: one share-of-excess verdict per strategy, and the mean solve probabilities and wall
        seconds for results.json (or why it did not run).
    """
    if not strategies:
        return [], {}
    if not domain.generates_answers:
        why = f"domain={domain.name}: its items are not answered by generation, so there is no solve probability"
        log.warning("audit: the mitigated score is not run: %s", why)
        return [], {"not_run": why}
    store = target.store
    solve: dict[str, list[float]] = {}
    walls: dict[str, float] = {}
    m = int(target.cfg.m)
    for name, strategy in strategies.items():
        log.info("audit: mitigated score: %s, %d questions x %d samples on %s", name, len(domain.test), m, target.spec)
        started = time.perf_counter()
        solve[name], wall = solve_probabilities(target, store, domain, name, strategy, progress)
        walls[name] = round(wall, 3)
        log.info(
            "audit: mitigated score: %s: mean solve probability %.3f (%.1f s)",
            name, sum(solve[name]) / len(solve[name]), time.perf_counter() - started,
        )  # fmt: skip
    found = [V.mitigation_share(solve["identity"], solve[n], n, settings) for n in strategies if n != "identity"]
    return found, {"solve_probability": {n: sum(v) / len(v) for n, v in solve.items()}, "wall_s": walls}
