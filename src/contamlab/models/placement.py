"""Where a model runs and in which precision: the ``model.device``, ``model.device_map`` and ``model.dtype`` settings.

One setting for every model the HF path loads (evaluation, detection, shortcut locating, calibration): ``auto`` takes
the first CUDA device when there is one, else the CPU. ``dtype: auto`` is bf16 on CUDA (what the paper's models are
trained and served in) and fp32 on a CPU, where bf16 matmuls are slower than fp32 ones. ``device_map: auto`` spreads
a model too large for one GPU over all of them (accelerate's big-model loading) instead of moving it to ``device``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import torch

from contamlab.errors import ContamlabError

__all__ = ["DEVICE_PATTERN", "DTYPES", "Placement", "check_device", "resolve_device", "resolve_dtype"]

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
#: What ``model.device`` accepts (the up-front validation calls check_device for any name but auto and cpu).
DEVICE_PATTERN = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")


def check_device(name: str) -> None:
    """Raise a one-line :class:`ContamlabError` unless ``name`` is a device this machine has.

    Called by the up-front validation, so ``model.device=cuda`` on a machine without a GPU stops before any model loads.
    """
    if not isinstance(name, str) or not DEVICE_PATTERN.match(name):
        raise ContamlabError(f"model.device={name!r}: use auto, cpu, cuda or cuda:N")
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            build = "a CPU build" if torch.version.cuda is None else f"CUDA {torch.version.cuda}"
            raise ContamlabError(
                f"model.device={name}: no CUDA device here (torch {torch.__version__}, {build}); use "
                "model.device=auto or cpu, or install the CUDA build of torch (README, Install)"
            )
        index = int(name.split(":")[1]) if ":" in name else 0
        if index >= torch.cuda.device_count():
            raise ContamlabError(f"model.device={name}: this machine has {torch.cuda.device_count()} CUDA device(s)")


def resolve_device(name: str = "auto") -> torch.device:
    """The torch device of a ``model.device`` setting (``auto``: ``cuda`` when available, else ``cpu``)."""
    check_device(name)
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)


def resolve_dtype(name: str, device: torch.device | str = "cpu") -> torch.dtype:
    """The torch dtype of a ``model.dtype`` setting on ``device`` (``auto``: bf16 on CUDA, fp32 elsewhere)."""
    if name == "auto":
        return torch.bfloat16 if torch.device(device).type == "cuda" else torch.float32
    if name not in DTYPES:
        raise ContamlabError(f"model.dtype={name!r}: choose one of auto, {', '.join(DTYPES)}")
    return DTYPES[name]


@dataclass(frozen=True)
class Placement:
    """A model's resolved device and dtype, and whether accelerate spreads it over several devices.

    Attributes:
        device: The device the model's inputs go to (its first device under a device map).
        dtype: The dtype its weights are loaded in.
        device_map: accelerate's device map (``auto``, ``balanced`` …) or None to move the model to ``device``.
    """

    device: torch.device
    dtype: torch.dtype
    device_map: str | None = None

    @classmethod
    def of(cls, device: str = "auto", dtype: str = "auto", device_map: str | None = None) -> Placement:
        """Resolve the three settings of a model config."""
        resolved = resolve_device(device)
        return cls(resolved, resolve_dtype(dtype, resolved), device_map or None)

    @property
    def dtype_name(self) -> str:
        """``float32``, ``bfloat16`` or ``float16`` (what the caches' keys record)."""
        return str(self.dtype).removeprefix("torch.")

    def to_dict(self) -> dict[str, str | None]:
        """What results.json records."""
        return {"device": str(self.device), "dtype": self.dtype_name, "device_map": self.device_map}
