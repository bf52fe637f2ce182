#!/usr/bin/env bash
# GPU check of sampler=vllm: the tests_vllm suite (vLLM = HF backend on tiny models made on the fly, no downloads)
# on Model Runner V2 (the GPU default since vLLM 0.32) and then on V1 (VLLM_USE_V2_MODEL_RUNNER=0).
#
#   scripts/gpu_check.sh            # from the repository root, on a machine with a CUDA GPU
#
# Needs two Pythons (they cannot share one environment: vLLM pins transformers < 5.20, contamlab 5.24):
#   VLLM_PYTHON         a Python with vllm==0.32.0, peft, pytest, hydra-core, rapidfuzz and contamlab (`pip install
#                       --no-deps -e .`). Default: .venv-vllm-gpu/bin/python; when it is missing and PyPI is reachable,
#                       this script creates it. Offline: preinstall it and point VLLM_PYTHON at it.
#   CONTAMLAB_HF_PYTHON the main environment (`make install`; a CPU torch is enough), for the HF references.
#                       Default: .venv/bin/python.
# Takes about 2 minutes after the environments exist (each engine start ~20-40 s on a GPU).
set -euo pipefail
cd "$(dirname "$0")/.."
export HF_HUB_OFFLINE=1 WANDB_MODE=disabled TOKENIZERS_PARALLELISM=false
VLLM_PYTHON=${VLLM_PYTHON:-.venv-vllm-gpu/bin/python}
export CONTAMLAB_HF_PYTHON=${CONTAMLAB_HF_PYTHON:-$PWD/.venv/bin/python}

if ! "$VLLM_PYTHON" -c "import vllm" 2>/dev/null; then
    if [[ "$VLLM_PYTHON" != .venv-vllm-gpu/bin/python ]]; then
        echo "gpu_check: $VLLM_PYTHON cannot import vllm" >&2
        exit 2
    fi
    echo "gpu_check: creating .venv-vllm-gpu (vllm==0.32.0 from PyPI, several GB)"
    python3 -m venv .venv-vllm-gpu
    .venv-vllm-gpu/bin/pip install --quiet vllm==0.32.0 peft==0.21.2 pytest==9.2.0 hydra-core==1.3.8 \
        omegaconf==2.3.1 rapidfuzz==3.14.6 || {
        echo "gpu_check: cannot install vllm (offline?): preinstall it and set VLLM_PYTHON" >&2
        exit 2
    }
    .venv-vllm-gpu/bin/pip install --quiet --no-deps -e .
fi
if [[ ! -x "$CONTAMLAB_HF_PYTHON" ]]; then
    echo "gpu_check: no main environment at $CONTAMLAB_HF_PYTHON: run \`make install\` or set CONTAMLAB_HF_PYTHON" >&2
    exit 2
fi
"$VLLM_PYTHON" -c "import torch, vllm; assert torch.cuda.is_available(), 'no CUDA GPU'; print('vllm', vllm.__version__, torch.cuda.get_device_name(0))"

status=0
for runner in 1 0; do
    echo "== Model Runner V$((2 - runner)) (VLLM_USE_V2_MODEL_RUNNER=$runner)"
    VLLM_USE_V2_MODEL_RUNNER=$runner "$VLLM_PYTHON" -m pytest -q -p no:cacheprovider tests_vllm || status=1
done
exit $status
