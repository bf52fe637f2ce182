"""A detector's output on one model, cached: the scoring service of the detection job, the audit and its error rates.

:func:`score_model` runs a detector on one model's view of a domain's test items and caches the output per (model,
dtype, domain items, detector parameters; for detectors that read samples, the samples' settings) under
``paths.cache_dir/detect/scores`` (JSON, atomic), so re-running a grid or an audit costs nothing and an interrupted one
resumes. :class:`LoadedModel` loads a model once for all the scores a caller asks of it.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

from omegaconf import DictConfig, OmegaConf

from contamlab import stopping
from contamlab.config import model_store, sampling_setup
from contamlab.data.domain import Domain
from contamlab.decoding.pipeline import sample_model
from contamlab.decoding.strategy import Strategy
from contamlab.decoding.streams import CLEAN, strategy_role
from contamlab.detectors.base import DetectionContext, Detector, DetectorOutput
from contamlab.errors import ContamlabError
from contamlab.io import atomic_write_json, content_hash
from contamlab.models.store import TRAINING_TEXTS, ModelStore, read_training_texts

log = logging.getLogger("contamlab")
DETECT_VERSION = 2  # 2: the items alone key a score (Detector.split_summary reads the split after the cache)


def _cache_key(cfg: DictConfig, store: ModelStore, domain: Domain, detector: Detector, source: str, role: str) -> dict:
    key = {
        "v": DETECT_VERSION,
        "detector": type(detector).__name__,
        "detector_v": detector.version,
        "params": detector.params(),
        "model": store.identity(source),
        "dtype": str(store.dtype),
        "domain": domain.eval_fingerprint(),
    }
    if detector.needs_samples:  # the samples' settings decide its scores
        sampler = OmegaConf.to_container(cfg.sampler, resolve=True) if cfg.get("sampler") else None
        fields = ("m", "temperature", "max_new_tokens", "seed", "chunk_questions")
        key["samples"] = {**{k: cfg.get(k) for k in fields}, "sampler": sampler, "role": role}
    return key


def stage_role(stage: str) -> str:
    """The sampling stream of a stage's samples: the clean batch, or the contaminated model's identity batch."""
    return CLEAN if stage == "clean" else strategy_role("identity")


def _lineage(store: ModelStore, domain: Domain, source: str, stage: str) -> dict[str, list[str]] | None:
    """The recorded training texts of the simulated ``stage`` model at ``source`` and its parents.

    None when ``source`` is not that simulated model (the user's own model, a further ConStat reference).
    """
    stages = store.lineage(domain, stage)
    if not stages or str(stages[-1][1]) != source:
        return None
    out = {}
    for name, path in stages:
        texts = read_training_texts(path)
        if texts is None:
            raise ContamlabError(
                f"{path} has no record of its training texts ({TRAINING_TEXTS}); re-run the train.py command "
                "that trained it (it writes the record of a finished stage without retraining)"
            )
        out[name] = texts
    return out


class LoadedModel:
    """A model and its tokenizer, loaded on first use and kept until :meth:`release`.

    A job that scores one model with several detectors, or on several item sets (an audit's benchmark and its
    non-member items), holds one of these per model and so loads it once; a model whose every score is cached is
    never loaded.
    """

    def __init__(self, store: ModelStore, source: str) -> None:
        self.store, self.source = store, source
        self._pair: tuple[Any, Any] | None = None

    def __call__(self) -> tuple[Any, Any]:
        """``(model, tokenizer)``, loaded now if not yet."""
        if self._pair is None:
            self._pair = (self.store.load(self.source), self.store.load_tokenizer(self.source))
        return self._pair

    def release(self) -> None:
        """Drop the model (the next call loads it again)."""
        self._pair = None


def _context(
    cfg: DictConfig,
    store: ModelStore,
    domain: Domain,
    source: str,
    stage: str,
    progress: bool,
    loaded: LoadedModel,
    moments: bool,
    home: Domain,
) -> DetectionContext:
    role = stage_role(stage)
    return DetectionContext(
        domain=domain,
        questions=domain.test,
        source=source,
        load=loaded,
        cache_dir=str(Path(cfg.paths.cache_dir) / "detect") if cfg.paths.get("cache_dir") else None,
        model_key=store.identity(source),
        samples=lambda: sample_model(
            sampling_setup(cfg, store), store, domain, source, Strategy(), role, progress, label=stage
        ),
        lineage=lambda: _lineage(store, home, source, stage),
        progress=progress,
        moments=moments,
    )


def score_model(
    cfg: DictConfig,
    domain: Domain,
    detector: Detector,
    source: str,
    stage: str,
    progress: bool = True,
    store: ModelStore | None = None,
    loaded: LoadedModel | None = None,
    moments: bool = True,
    home: Domain | None = None,
) -> tuple[DetectorOutput, float, bool]:
    """The detector's output on one model (cached); returns (output, wall seconds, whether it came from cache).

    ``stage`` (``clean`` or ``contaminated``) picks the random stream of the samples a detector may need (CDD).
    ``store`` is ``model_store(cfg)``, built here when not given: a caller scoring many detectors passes its own,
    since building it (the model config's instantiation) costs more than reading a cached score. ``loaded`` is the
    caller's :class:`LoadedModel` of ``source`` when it scores the model more than once (loaded here when needed
    otherwise). ``moments``: whether a shared token pass computed here also computes the vocabulary moments (True: a
    grid's Min-K%++ job may read the pass later; an audit that runs no Min-K%++ says False). ``home``: the domain a
    simulated ``source`` was trained on, where it is not ``domain`` (another seed's model: its recorded training
    texts are found through it). The wall seconds are those of the first computation, also when read from the cache.
    """
    role = stage_role(stage)
    store = store or model_store(cfg)
    key = _cache_key(cfg, store, domain, detector, source, role)
    root = cfg.paths.get("cache_dir")  # null: no caching
    path = Path(root) / "detect" / "scores" / f"{detector.name}-{content_hash(key)}.json" if root else None
    if path is not None and path.is_file():
        try:
            data = json.loads(path.read_text())
            if data.get("key") == json.loads(json.dumps(key, default=str)):
                return DetectorOutput.from_dict(data["output"]), float(data.get("wall_s", 0.0)), True
        except (OSError, ValueError, KeyError):
            log.warning("detection cache %s unreadable; recomputing", path)
    started = time.perf_counter()
    # a stop here loses only this detector on this model: every score written before it is kept
    with stopping.activity(f"scoring {detector.name} on the {stage} model (the scores before it are cached)"):
        loaded = loaded or LoadedModel(store, source)
        context = _context(cfg, store, domain, source, stage, progress, loaded, moments, home or domain)
        output = detector.score(context)
    wall = time.perf_counter() - started
    if len(output.scores) != len(domain.test):
        raise ContamlabError(
            f"detector={detector.name} returned {len(output.scores)} scores for {len(domain.test)} questions"
        )
    if path is not None:
        atomic_write_json(path, {"key": key, "output": output.to_dict(), "wall_s": wall})
    return output, wall, False
