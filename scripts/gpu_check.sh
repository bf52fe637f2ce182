#!/usr/bin/env bash
# GPU check of sampler=vllm: the tests_vllm suite (vLLM = HF backend on tiny models made on the fly, no downloads)
# on a CUDA machine, in contamlab's one environment with the vllm extra (vLLM 0.30, Model Runner V1).
#
#   scripts/gpu_check.sh            # from the repository root, on a machine with a CUDA GPU
#
#   PYTHON   a Python with contamlab and its vllm extra (`pip install -e ".[dev,vllm]"` over the CUDA build of
#            torch 2.13.0). Default: .venv/bin/python. Nothing is installed here: the check must run offline.
# Takes about 2 minutes (each engine start ~20-40 s on a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 WANDB_MODE=disabled TOKENIZERS_PARALLELISM=false
PYTHON=${PYTHON:-.venv/bin/python}
export CONTAMLAB_HF_PYTHON=${CONTAMLAB_HF_PYTHON:-$PYTHON}

if ! "$PYTHON" -c "import vllm" 2>/dev/null; then
    echo "gpu_check: $PYTHON cannot import vllm: pip install -e \".[dev,vllm]\" first" >&2
    exit 2
fi
"$PYTHON" -c "import torch, vllm; assert torch.cuda.is_available(), 'no CUDA GPU'; print('vllm', vllm.__version__, torch.cuda.get_device_name(0))"
"$PYTHON" -m pytest -q -p no:cacheprovider tests_vllm
