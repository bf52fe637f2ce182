"""Hydra glue: composing config groups outside an app, and the error boundary of the entry points."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from contamlab.errors import ContamlabError

if TYPE_CHECKING:
    from contamlab.data.domain import Domain
    from contamlab.decoding.pipeline import SamplingSetup
    from contamlab.models.store import ModelStore

log = logging.getLogger("contamlab")


def config_dir() -> Path:
    """The repository's ``configs/`` directory (override with ``CONTAMLAB_CONFIG_DIR``)."""
    import os

    override = os.environ.get("CONTAMLAB_CONFIG_DIR")
    path = Path(override) if override else Path(__file__).resolve().parents[2] / "configs"
    if not path.is_dir():
        raise ContamlabError(f"config directory {path} not found; set CONTAMLAB_CONFIG_DIR to the repo's configs/")
    return path


def busy_cores(window_s: float = 0.5) -> float:
    """Cores in use by other work now: the non-idle share of CPU time over ``window_s``, times the core count.

    Read from ``/proc/stat`` where there is one (Linux), else the 1-minute load average. The load average lags by a
    minute: right after another job ends it still counts that job, and ``auto`` would take one thread of two.
    """
    import os
    import time

    cores = os.cpu_count() or 1

    def times() -> tuple[int, int]:
        with open("/proc/stat") as stat:
            fields = [int(x) for x in stat.readline().split()[1:]]
        return sum(fields), fields[3] + fields[4]  # total, idle + iowait

    try:
        total0, idle0 = times()
        time.sleep(window_s)
        total1, idle1 = times()
    except (OSError, ValueError, IndexError):
        try:
            return float(os.getloadavg()[0])
        except OSError:  # no load average on this platform
            return 0.0
    elapsed = max(1, total1 - total0)
    return cores * (1 - (idle1 - idle0) / elapsed)


def auto_threads() -> int:
    """The cores not already busy: all of them minus the cores in use now (:func:`busy_cores`, rounded), at least one.

    Oversubscribed threads run several times slower than fewer ones on idle cores (docs/performance.md#pre-training),
    so ``auto`` takes only the idle cores.
    """
    import os

    cores = os.cpu_count() or 1
    return max(1, min(cores, cores - round(busy_cores())))


def spin_less_when_busy() -> bool:
    """Let OpenMP's waiting threads sleep instead of spin when the machine is busy at the start of a job.

    torch's CPU threads (libgomp) spin for a while at the end of every parallel region. On a machine whose cores
    have other work, a spinning thread holds a core that a descheduled teammate needs, and every region waits: the
    tiny world's base stage ran 2.5-7x faster on two threads with ``OMP_WAIT_POLICY=PASSIVE`` when both cores were
    busy (docs/performance.md). On an idle machine sleeping costs a third of the speed, so the policy is set only
    when the machine is busy. It changes no number: the wait policy does not change how the work is split.

    libgomp reads the variable once, when torch loads, so this must run before anything imports torch; a user's own
    ``OMP_WAIT_POLICY`` is kept.

    Returns:
        Whether the policy was set.
    """
    import os

    if "torch" in sys.modules or "OMP_WAIT_POLICY" in os.environ:
        return False
    if busy_cores(0.1) < 0.5:
        return False
    os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    return True


def set_threads(threads: int | str | None) -> int | None:
    """Torch CPU threads for this process, capped at the machine's cores (None: torch's default).

    Oversubscribed threads slow CPU training and sampling several-fold, so a config written for a bigger machine
    never asks for more threads than there are cores; ``auto`` takes the idle cores (:func:`auto_threads`).

    Returns:
        The thread count set (None when left to torch).
    """
    import os

    import torch

    if threads == "auto":
        threads = auto_threads()
    if threads:
        count = min(int(threads), os.cpu_count() or 1)
        torch.set_num_threads(count)
        return count
    return None


def compose(
    config_name: str = "evaluate", overrides: Sequence[str] = (), return_hydra_config: bool = False
) -> DictConfig:
    """Compose a primary config (``train`` or ``evaluate``) with command-line style overrides, outside an app.

    Example:
        >>> cfg = compose("train", ["model=tiny", "domain=arith_pq"])
    """
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir
    from hydra.core.global_hydra import GlobalHydra
    from hydra.errors import HydraException

    if GlobalHydra.instance().is_initialized():
        GlobalHydra.instance().clear()
    try:
        with initialize_config_dir(config_dir=str(config_dir()), version_base="1.3"):
            return hydra_compose(
                config_name=config_name, overrides=list(overrides), return_hydra_config=return_hydra_config
            )
    except HydraException as err:
        raise ContamlabError(f"config error: {str(err).splitlines()[0]}") from None


def group_choice(cfg: DictConfig, group: str) -> str | None:
    """The option a config group was composed from (``model=pythia`` → ``pythia``), as typed on the command line.

    ``model.name`` may differ (``pythia-12b``), and only the option is a valid ``model=`` value. None outside a
    Hydra app (a config built by :func:`compose` without its Hydra node).
    """
    from hydra.core.hydra_config import HydraConfig

    if HydraConfig.initialized():
        choice = HydraConfig.get().runtime.choices.get(group)
        return str(choice) if choice is not None else None
    hydra = cfg.get("hydra") if "hydra" in cfg else None
    choices = hydra.get("runtime", {}).get("choices", {}) if hydra is not None else {}
    return str(choices[group]) if group in choices else None


def run_safely(fn: Callable[[DictConfig], Any] | str, cfg: DictConfig) -> Any:
    """Validate the config and check the machine, then run an entry point's ``run(cfg)``.

    A bad value (:func:`contamlab.validation.validate`), a machine that lacks what the config asks for
    (:func:`contamlab.preflight.preflight`; both before any data or model loads) or any other
    :class:`ContamlabError` becomes one line on stderr and exit status 2. SIGINT or SIGTERM becomes one line that
    says where the job stopped and how to resume it, and exit status 130 or 143 (:mod:`contamlab.stopping`).

    Args:
        fn: The job, or its ``"module:function"`` path: imported only once the config is valid, so that a bad value
            is reported before torch and transformers load (a second rather than five).
        cfg: The composed config.
    """
    from contamlab import stopping
    from contamlab.preflight import preflight
    from contamlab.validation import validate

    try:
        with stopping.sigterm_raises():
            spin_less_when_busy()  # first: validation's imports load torch
            validate(cfg)
            preflight(cfg)
            if isinstance(fn, str):
                import importlib

                module, _, name = fn.partition(":")
                fn = getattr(importlib.import_module(module), name)
            return fn(cfg)
    except ContamlabError as err:
        print(f"contamlab: error: {err}", file=sys.stderr)
        sys.exit(2)
    except (KeyboardInterrupt, stopping.Stopped) as stop:
        signum = stopping.signal_number(stop)
        print(f"\ncontamlab: {stopping.stop_message(signum)}", file=sys.stderr)
        sys.exit(stopping.exit_code(signum))


def build(node: Any, what: str, **kwargs: Any) -> Any:
    """``hydra.utils.instantiate`` a config node; config mistakes and our own errors become a ContamlabError.

    Args:
        node: The config node holding ``_target_``.
        what: The config key it came from (``strategy``, ``domain`` …), named in error messages.
        **kwargs: Extra arguments passed to the target.
    """
    from hydra.errors import InstantiationException
    from hydra.utils import instantiate

    try:
        return instantiate(node, _convert_="all", **kwargs)
    except InstantiationException as err:
        cause = err.__cause__
        while cause is not None and not isinstance(cause, ContamlabError):
            cause = cause.__cause__
        if isinstance(cause, ContamlabError):
            raise cause from None
        # Hydra's message spans lines ("Error in call to target X:" then the cause); keep it on one line.
        detail = " ".join(line.strip() for line in str(err).splitlines() if line.strip())
        raise ContamlabError(f"{what} config: {detail}") from None


def load_domain(name: str, **overrides: Any) -> Domain:
    """Build a domain from ``configs/domain/<name>.yaml`` with optional field overrides.

    Example:
        >>> domain = load_domain("arith", max_test=20)
        >>> prompt = domain.prompt(domain.test[0])
    """
    from omegaconf import OmegaConf

    known = sorted(p.stem for p in (config_dir() / "domain").glob("*.yaml"))
    if name not in known:
        raise ContamlabError(f"unknown domain {name!r}; choose one of {', '.join(known)}")
    cfg = compose("evaluate", [f"domain={name}"]).domain
    cfg = OmegaConf.merge(cfg, OmegaConf.create(overrides))
    return build_domain(cfg)


def build_domain(cfg: Any) -> Domain:
    """Instantiate a domain from its (composed) config node, turning config mistakes into clear errors."""
    return build(cfg, "domain")


# -- what every job reads from the config, as typed objects ---------------------------------------------------------
def _plain(node: Any) -> Any:
    return OmegaConf.to_container(node, resolve=True) if isinstance(node, DictConfig) else node


def model_store(cfg: DictConfig) -> ModelStore:
    """The model store of a train, evaluate or audit config (``model``, ``finetune``, ``base``, ``seed``, ``paths``).

    Build it once per job and pass it along: building it instantiates the model config.
    """
    from contamlab.models.store import ModelStore

    return ModelStore(
        models_dir=str(cfg.paths.models_dir),
        model=build(cfg.model, "model"),
        seed=int(cfg.seed),
        finetune=_plain(cfg.get("finetune")),
        base=_plain(cfg.get("base")),
        cache_dir=cfg.paths.get("cache_dir"),
        option=group_choice(cfg, "model"),
    )


def sampling_setup(cfg: DictConfig, store: ModelStore | None = None) -> SamplingSetup:
    """How an evaluate config samples: the built ``sampler`` backend and the run's m, τ, budget, seed, cache.

    ``store``: the job's model store (built here when not given and the sampler's dtype is ``auto``).
    """
    from contamlab.decoding.pipeline import SamplingSetup

    node = OmegaConf.create({k: v for k, v in cfg.sampler.items() if k != "common_noise"})
    if node.get("dtype") == "auto":
        # vLLM's own auto is the checkpoint's dtype; the sample cache and results.json record contamlab's
        # (bf16 on CUDA, fp32 on a CPU), so the engine gets that one
        node.dtype = (store or model_store(cfg)).dtype
    return SamplingSetup(
        factory=build(node, "sampler"),
        backend=str(cfg.sampler.get("name", "hf")),
        m=int(cfg.m),
        temperature=float(cfg.temperature),
        max_new_tokens=int(cfg.max_new_tokens),
        seed=int(cfg.seed),
        chunk_questions=int(cfg.chunk_questions),
        common_noise=common_noise(cfg),
        cache_dir=str(cfg.paths.cache_dir),
    )


def common_noise(cfg: DictConfig) -> bool:
    """Whether the run shares one random stream between the clean and the strategy batches (opt-in)."""
    return bool(cfg.sampler.get("common_noise", False))
