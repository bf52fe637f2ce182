"""Checks of the machine a config runs on, before anything heavy: the devices, W&B's login, the hub, a Slurm launcher.

:mod:`contamlab.validation` checks a config's values against rules; this module checks what those values ask of the
machine: ``trainer=gpu`` needs a GPU, ``WANDB_MODE=online`` a W&B key, a hub id the hub (or a cached copy), a Slurm
launcher ``sbatch``. Each failure is one :class:`ContamlabError` line, raised before any model loads or any training
starts; advice that does not stop the job (``m=1``) is logged as a warning.
"""

from __future__ import annotations

import logging
import netrc
import os
import shutil
import socket
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from hydra.experimental.callback import Callback
from omegaconf import DictConfig

from contamlab.errors import ContamlabError
from contamlab.io import looks_like_path
from contamlab.models.reference import ModelRef

log = logging.getLogger("contamlab")

#: Seconds to wait for the hub's TCP handshake before calling it unreachable (transformers would retry for ~1 min).
HUB_TIMEOUT_S = 3.0


def _flag(name: str) -> bool:
    return os.environ.get(name, "0").strip().lower() not in ("0", "", "false", "no", "off")


def _gpu_count() -> int:
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def check_trainer(cfg: DictConfig) -> None:
    """``trainer=gpu`` / ``ddp`` / ``fsdp`` on a machine without the GPUs they ask for."""
    trainer = cfg.get("trainer")
    if not isinstance(trainer, DictConfig):
        return
    accelerator = str(trainer.get("accelerator", "auto"))
    if accelerator not in ("gpu", "cuda"):
        return
    devices = trainer.get("devices", "auto")
    wanted = int(devices) if isinstance(devices, int) or str(devices).isdigit() else 1
    if isinstance(devices, (list, tuple)) or str(devices).startswith("["):
        wanted = len(list(devices))
    have = _gpu_count()
    if have == 0:
        raise ContamlabError(
            f"trainer.accelerator={accelerator}: no CUDA GPU here (torch sees none); train on the CPU with the default "
            "trainer, or `trainer=ddp trainer.accelerator=cpu trainer.devices=2` for several CPU processes"
        )
    if wanted > have:
        raise ContamlabError(f"trainer.devices={devices}: asks for {wanted} GPUs, this machine has {have}")


def _wandb_key_present() -> bool:
    if os.environ.get("WANDB_API_KEY"):
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL") or "https://api.wandb.ai").hostname or ""
    try:
        return netrc.netrc().authenticators(host) is not None  # where `wandb login` writes the key
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False


def check_wandb(cfg: DictConfig) -> None:
    """``WANDB_MODE=online`` (or ``logger.wandb.mode=online``) without an API key: say so now, not after the job."""
    logger = cfg.get("logger")
    wandb = logger.get("wandb") if isinstance(logger, DictConfig) else None
    if not isinstance(wandb, DictConfig):
        return
    try:
        mode = str(wandb.get("mode", "offline"))
    except Exception:  # an interpolation that does not resolve: validation reports it
        return
    if mode == "online" and not _wandb_key_present():
        raise ContamlabError(
            "W&B mode is online but no API key is set: run `wandb login` or export WANDB_API_KEY, or log offline "
            "with WANDB_MODE=offline and upload later with `make sync`"
        )


def _hub_sources(cfg: DictConfig) -> Iterator[str]:
    model = cfg.get("model")
    if not isinstance(model, DictConfig):
        return
    keys = ["clean", "contaminated"] + (["source"] if cfg.get("task") == "train" else [])
    values = [model.get(key) for key in keys]
    audit = cfg.get("audit")
    if isinstance(audit, DictConfig):  # the audited and reference models, less the simulated ones (clean@1 …)
        refs = [ModelRef.parse(v) for v in [audit.get("target"), *audit.get("references", [])]]
        values += [r.text for r in refs if not r.simulated]
    for value in values:
        if isinstance(value, str) and value.strip() and not looks_like_path(value) and not os.path.isdir(value):
            yield value


def _reachable(url: str, timeout: float = HUB_TIMEOUT_S) -> bool:
    parsed = urlparse(url)
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    try:
        with socket.create_connection((parsed.hostname or "", port), timeout=timeout):
            return True
    except OSError:
        return False


def _cached(repo_id: str, revision: str | None) -> bool:
    from huggingface_hub import try_to_load_from_cache

    return any(  # a full model or a peft adapter
        isinstance(try_to_load_from_cache(repo_id, name, revision=revision), str)
        for name in ("config.json", "adapter_config.json")
    )


_PROXIES = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def go_offline() -> None:
    """Set HF_HUB_OFFLINE for this process, also where huggingface_hub read it at import time."""
    os.environ["HF_HUB_OFFLINE"] = "1"
    from huggingface_hub import constants

    constants.HF_HUB_OFFLINE = True


def check_hub(cfg: DictConfig) -> None:
    """Hub ids while the hub cannot be reached: use a cached copy offline, or stop in seconds with what to do.

    With ``HF_HUB_OFFLINE`` unset and no network, transformers retries for about a minute before it fails. One TCP
    handshake with the hub's endpoint (``HF_ENDPOINT``) decides instead: unreachable and cached, the job goes on with
    ``HF_HUB_OFFLINE=1``; unreachable and not cached, it stops here.
    """
    if _flag("HF_HUB_OFFLINE"):
        return
    sources = sorted(set(_hub_sources(cfg)))
    if not sources:
        return
    from huggingface_hub import constants

    if any(os.environ.get(k) for k in _PROXIES):
        return  # the hub is reached through a proxy: a direct handshake says nothing, the client's own retries decide
    if _reachable(constants.ENDPOINT):
        return
    revision = cfg.model.get("revision")
    missing = [s for s in sources if not _cached(s, revision)]
    if missing:
        raise ContamlabError(
            f"cannot reach the hub ({constants.ENDPOINT}) for {', '.join(missing)}: check the network (or "
            "HF_ENDPOINT), or download the model elsewhere and pass its local directory"
        )
    go_offline()
    log.warning("the hub (%s) is unreachable: using the cached copies of %s offline", constants.ENDPOINT, sources)


def _unwritable(path: Path) -> str | None:
    """Why no file can be written under ``path`` (None when one can): a probe file in its nearest existing folder.

    A real write, not ``os.access``: root passes every permission check but not a read-only file system.
    """
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return f"{existing} is not a directory"
    try:
        handle, probe = tempfile.mkstemp(prefix=".contamlab-write-probe-", dir=existing)
    except OSError as err:
        return f"{existing}: {err.strerror or err}"
    os.close(handle)
    os.unlink(probe)
    return None


def written_dirs(cfg: DictConfig, output_dir: str | None = None) -> dict[str, str]:
    """The directories a job writes, by the config key that sets each: its outputs, and its models or caches.

    ``train.py`` writes models (and, for a packaged or hub model, its converted copy in the cache); ``evaluate.py``
    and ``audit.py`` write samples and scores to the cache and only read models, which may sit on a read-only share.
    """
    paths = cfg.get("paths")
    dirs = {"hydra output directory": output_dir} if output_dir else {}
    if not isinstance(paths, DictConfig):
        return dirs
    model = cfg.get("model")
    pretrain = bool(model.get("pretrain")) if isinstance(model, DictConfig) else False
    if cfg.get("task") == "train":
        dirs["paths.models_dir"] = paths.get("models_dir")
        if not pretrain:
            dirs["paths.cache_dir"] = paths.get("cache_dir")
    else:
        dirs["paths.cache_dir"] = paths.get("cache_dir")
    return {key: str(value) for key, value in dirs.items() if value}


def check_writable(cfg: DictConfig, output_dir: str | None = None) -> None:
    """Every directory the job writes can be written, checked before any model loads (one line otherwise)."""
    env = {"paths.models_dir": "CONTAMLAB_MODELS_DIR", "paths.cache_dir": "CONTAMLAB_CACHE_DIR"}
    for key, value in written_dirs(cfg, output_dir).items():
        why = _unwritable(Path(value))
        if why is not None:
            fix = f"{key}=DIR or {env[key]}" if key in env else "hydra.run.dir=DIR (hydra.sweep.dir=DIR with -m)"
            raise ContamlabError(
                f"{key} {value} cannot be written ({why}); point it at a writable directory: {fix}, or "
                "CONTAMLAB_ROOT for all of them"
            )


def advise(cfg: DictConfig) -> None:
    """Settings that run but say less than a user may expect: logged as warnings, the job goes on."""
    if cfg.get("task") == "evaluate" and cfg.get("m") == 1 and cfg.get("strategy", {}).get("_target_"):
        log.warning(
            "m=1: one sample per question makes every solve probability 0 or 1; only G-AP (the greedy-based gap) "
            "keeps its meaning, A-PPG and SA-PPG need m >= 2 (the paper uses 50)"
        )


def preflight(cfg: DictConfig) -> None:
    """Every machine check of a composed train or evaluate config (see the module docstring)."""
    if cfg.get("task") == "train":
        check_trainer(cfg)
    check_writable(cfg)
    check_wandb(cfg)
    check_hub(cfg)
    advise(cfg)


def check_launcher(launcher_target: str) -> None:
    """A Slurm launcher (``hydra/launcher=submitit_slurm``) on a machine without Slurm's ``sbatch``."""
    if "Slurm" in launcher_target and not (shutil.which("sbatch") and shutil.which("srun")):
        raise ContamlabError(
            "hydra/launcher=submitit_slurm: Slurm (sbatch, srun) is not on this machine's PATH; run on a Slurm "
            "login node, or use hydra/launcher=submitit_local (or no launcher) here"
        )


class PreflightCallback(Callback):
    """Hydra callback: a multirun's machine checks once, before its launcher submits any job.

    A Slurm launcher fails inside Hydra's launch (a traceback) before any job's own checks run, so the launcher is
    checked here; W&B's login and the trainer's devices too, so a grid that would fail in every job stops once.
    """

    def on_run_start(self, config: DictConfig, **kwargs: Any) -> None:
        """A single run's output directory, models and cache can be written (Hydra creates the first one next)."""
        self._check(lambda: check_writable(config, str(config.hydra.run.dir)))

    def on_multirun_start(self, config: DictConfig, **kwargs: Any) -> None:
        """Run the checks; a failure is one line on stderr and exit status 2."""

        def checks() -> None:
            check_launcher(str(config.hydra.launcher.get("_target_", "")))
            if config.get("task") == "train":
                check_trainer(config)
            check_writable(config, str(config.hydra.sweep.dir))
            check_wandb(config)

        self._check(checks)

    @staticmethod
    def _check(checks: Callable[[], None]) -> None:
        try:
            checks()
        except ContamlabError as err:
            print(f"contamlab: error: {err}", file=sys.stderr)
            sys.exit(2)
