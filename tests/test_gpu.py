"""The GPU tier: what scripts/gpu_check.sh checks on a CUDA machine, as tests (marked ``gpu``; skipped on a CPU).

scripts/gpu_check.sh runs this file with ``CONTAMLAB_REQUIRE_GPU=1``, so that there a missing GPU or vLLM fails
instead of skipping (tests/helpers/run_if.py). Its checks, one test each:

1. vLLM imports in contamlab's environment (the ``vllm`` extra over the CUDA build of torch);
2. torch sees a CUDA GPU, and computes on it what the CPU computes;
3. the ``tests_vllm`` suite (vLLM backend = HF backend on tiny models made on the fly, offline) passes on it, under
   each of vLLM's model runners (V2 is a GPU's default, V1 the CPU's).
"""

import os
import subprocess
import sys

import pytest
from e2e import REPO
from helpers.run_if import run_if

pytestmark = [pytest.mark.gpu, run_if(min_gpus=1)]


@run_if(min_gpus=1, vllm=True)
def test_vllm_imports_over_the_cuda_build_of_torch():
    import torch

    try:
        import vllm
    except ImportError as err:  # gpu_check.sh's first check: the environment lacks the vllm extra
        pytest.fail(f'{sys.executable} cannot import vllm ({err}): pip install -e ".[dev,vllm]" first')
    assert vllm.__version__, "vllm has no version: a broken install"
    assert torch.version.cuda is not None, f"torch {torch.__version__} is a CPU build: vLLM needs the CUDA one"


def test_torch_computes_on_the_cuda_gpu():
    import torch

    assert torch.cuda.is_available(), "no CUDA GPU"
    name = torch.cuda.get_device_name(0)
    assert name, "CUDA device 0 has no name"
    print(f"torch {torch.__version__} (CUDA {torch.version.cuda}) on {name}")  # gpu_check.sh's first line
    a = torch.randn(256, 256, generator=torch.Generator().manual_seed(0), dtype=torch.float64)
    on_gpu = (a.cuda() @ a.cuda()).cpu()
    assert on_gpu.device.type == "cpu" and torch.allclose(on_gpu, a @ a, rtol=1e-10, atol=1e-10)


@run_if(min_gpus=1, vllm=True)
@pytest.mark.parametrize("runner", ["1", "0"], ids=["model-runner-v2", "model-runner-v1"])
def test_vllm_backend_matches_hf_on_the_gpu(runner, tmp_path):
    """tests_vllm (as ``make test-vllm`` runs it on a CPU) on the GPU, in a process of its own: it imports vLLM,
    which this process must not (the HF reference it compares with is made in a process without it)."""
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "WANDB_MODE": "disabled",
        "TOKENIZERS_PARALLELISM": "false",
        "CONTAMLAB_HF_PYTHON": os.environ.get("CONTAMLAB_HF_PYTHON", sys.executable),
        "VLLM_USE_V2_MODEL_RUNNER": runner,
    }
    args = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--basetemp={tmp_path}", "tests_vllm"]
    done = subprocess.run(args, cwd=REPO, env=env, capture_output=True, text=True, timeout=1800)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    assert " passed" in out and " skipped" not in out, out[-3000:]
