"""``@run_if(min_gpus=1)``: a test that needs a machine this one may not be (lightning-hydra-template's ``RunIf``).

The condition is a ``pytest.mark.skipif`` whose reason names what is missing, so ``pytest -rs`` on a CPU-only machine
says why each test of the GPU tier (``tests/test_gpu.py``, marked ``gpu``) did not run::

    pytestmark = [pytest.mark.gpu, run_if(min_gpus=1)]

    @run_if(min_gpus=1, vllm=True)
    def test_on_a_gpu_with_vllm(): ...

``CONTAMLAB_REQUIRE_GPU=1`` (set by ``scripts/gpu_check.sh``) turns every such skip off: the tests run and their own
assertions fail where the GPU or vLLM is missing, so a check meant for a CUDA machine cannot pass by skipping.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

#: Set (to anything but "" or "0") where the GPU tier must run: a missing GPU or package fails instead of skipping.
REQUIRE_ENV = "CONTAMLAB_REQUIRE_GPU"


def required() -> bool:
    """Whether ``CONTAMLAB_REQUIRE_GPU`` asks the GPU tier to run whatever the machine has."""
    return os.environ.get(REQUIRE_ENV, "") not in ("", "0")


def gpu_count() -> int:
    """CUDA devices torch sees (0 on a CPU-only build or machine)."""
    import torch

    return torch.cuda.device_count() if torch.cuda.is_available() else 0


def run_if(min_gpus: int = 0, vllm: bool = False, **kwargs) -> pytest.MarkDecorator:
    """A ``skipif`` mark: skip unless the machine has ``min_gpus`` CUDA devices (and vLLM, with ``vllm=True``).

    Args:
        min_gpus: CUDA devices the test needs.
        vllm: The test imports vLLM (the ``vllm`` extra: ``pip install -e ".[dev,vllm]"``).
        kwargs: Passed on to ``pytest.mark.skipif``.
    """
    missing = []
    if min_gpus and gpu_count() < min_gpus:
        missing.append(f"{min_gpus} CUDA GPU{'s' if min_gpus > 1 else ''} (this machine has {gpu_count()})")
    if vllm and importlib.util.find_spec("vllm") is None:
        missing.append('vLLM (pip install -e ".[dev,vllm]")')
    reason = f"needs {' and '.join(missing)}; GPU tier: scripts/gpu_check.sh" if missing else "has what it needs"
    return pytest.mark.skipif(bool(missing) and not required(), reason=reason, **kwargs)
