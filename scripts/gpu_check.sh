#!/usr/bin/env bash
# GPU check of sampler=vllm: the GPU tier of the test suite (tests/test_gpu.py, marked `gpu`) on a CUDA machine, in
# contamlab's one environment with the vllm extra (vLLM 0.30). Its tests: vLLM imports over the CUDA build of torch;
# torch sees a CUDA GPU and computes on it; the tests_vllm suite (vLLM = HF backend on tiny models made on the fly,
# no downloads) passes on it under Model Runner V2 and V1.
#
#   scripts/gpu_check.sh            # from the repository root, on a machine with a CUDA GPU
#
#   PYTHON   a Python with contamlab and its vllm extra (`pip install -e ".[dev,vllm]"` over the CUDA build of
#            torch 2.13.0). Default: .venv/bin/python. Nothing is installed here: the check must run offline.
# Takes about 4 minutes (tests_vllm twice, each engine start ~20-40 s on a GPU). Elsewhere `make test` collects the
# same file and skips it (no CUDA GPU); here CONTAMLAB_REQUIRE_GPU=1 makes a missing GPU or vLLM fail, not skip.
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 WANDB_MODE=disabled TOKENIZERS_PARALLELISM=false
PYTHON=${PYTHON:-.venv/bin/python}
export CONTAMLAB_HF_PYTHON=${CONTAMLAB_HF_PYTHON:-$PYTHON}

if ! "$PYTHON" -c "import vllm" 2>/dev/null; then
    echo "gpu_check: $PYTHON cannot import vllm: pip install -e \".[dev,vllm]\" first" >&2
    exit 2
fi
CONTAMLAB_REQUIRE_GPU=1 "$PYTHON" -m pytest -q -s -p no:cacheprovider -m gpu tests/test_gpu.py
