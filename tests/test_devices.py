"""One device setting reaches every model the HF path loads, and the decode loop and detectors create no stray tensor.

A GPU is not needed to check either: the loads are recorded, and tensors created without a device are found in the
source. Host-side bookkeeping (tables filled once, then moved) names ``device="cpu"`` so that it reads as a choice.
"""

import ast
import json
from pathlib import Path

import pytest
import torch
from tinylm import tiny_model, tiny_tokenizer

from contamlab.config import compose, model_store
from contamlab.errors import ContamlabError
from contamlab.models import placement
from contamlab.models.loading import load_causal_lm
from contamlab.models.placement import Placement, resolve_device, resolve_dtype

SRC = Path(__file__).resolve().parents[1] / "src" / "contamlab"
CONSTRUCTORS = {
    "tensor",
    "as_tensor",
    "zeros",
    "ones",
    "full",
    "empty",
    "arange",
    "rand",
    "randn",
    "randint",
    "eye",
    "linspace",
    "Generator",
}
# Where tensors meet a model on its device: the decode loop, the strategies' hooks, the detectors, the padding that
# feeds them and the world's diagnostics (calibration).
SCANNED = [
    *sorted((SRC / "decoding").glob("*.py")),
    *sorted((SRC / "detectors").glob("*.py")),
    SRC / "models" / "padding.py",
    SRC / "analysis" / "diagnostics.py",
    SRC / "analysis" / "world.py",
]


def _constructors_without_device(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        base = node.func.value
        named = isinstance(base, ast.Name) and base.id == "torch" and node.func.attr in CONSTRUCTORS
        if named and not any(k.arg == "device" for k in node.keywords):
            found.append(f"{path.name}:{node.lineno} torch.{node.func.attr}")
    return found


def test_no_tensor_constructor_without_a_device():
    stray = [hit for path in SCANNED for hit in _constructors_without_device(path)]
    assert not stray, "tensors created without a device:\n" + "\n".join(stray)


def test_the_scan_finds_a_constructor_without_a_device(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import torch\nx = torch.zeros(3)\ny = torch.ones(2, device=z)\nw = torch.full_like(x, 1)\n")
    found = [hit.split(" ")[1] for hit in _constructors_without_device(bad)]
    assert found == ["torch.zeros"]


def test_models_load_only_through_the_store():
    """Inference loads go through ModelStore.load (it applies model.device); training leaves placement to Lightning."""
    allowed = {"models/loading.py", "models/store.py", "models/smollm2.py", "stages.py"}
    offenders = []
    for path in SRC.rglob("*.py"):
        rel = str(path.relative_to(SRC))
        text = path.read_text()
        if rel not in allowed and ("load_causal_lm(" in text or "ForCausalLM.from_pretrained(" in text):
            offenders.append(rel)
    assert not offenders, offenders


# -- the setting itself ---------------------------------------------------------------------------------------
def test_auto_resolves_by_the_machine(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("cpu")
    assert resolve_dtype("auto", "cpu") is torch.float32
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    assert resolve_device("auto") == torch.device("cuda")
    assert resolve_device("cuda:1") == torch.device("cuda:1")
    assert resolve_dtype("auto", torch.device("cuda:1")) is torch.bfloat16
    assert resolve_dtype("float32", "cuda") is torch.float32  # the model config's own dtype wins
    with pytest.raises(ContamlabError, match="model.device=cuda:2: this machine has 2 CUDA device"):
        resolve_device("cuda:2")


def test_cuda_without_a_gpu_and_bad_names(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(ContamlabError, match="model.device=cuda: no CUDA device here"):
        placement.check_device("cuda")
    with pytest.raises(ContamlabError, match="use auto, cpu, cuda or cuda:N"):
        placement.check_device("gpu0")


def test_load_causal_lm_puts_the_weights_on_the_device(tmp_path):
    model = tiny_model(tiny_tokenizer())
    model.save_pretrained(tmp_path / "m")
    loaded = load_causal_lm(tmp_path / "m", dtype="auto", device="meta")  # a second device every machine has
    assert {p.device.type for p in loaded.parameters()} == {"meta"}
    assert {p.dtype for p in loaded.parameters()} == {torch.float32}  # auto on a non-CUDA device
    half = load_causal_lm(tmp_path / "m", dtype="bfloat16", device="cpu")
    assert {p.dtype for p in half.parameters()} == {torch.bfloat16}


@pytest.mark.parametrize(
    ("overrides", "device", "dtype"),
    [
        (["model=tiny"], "cpu", "float32"),
        (["model=smollm2"], "cpu", "float32"),  # dtype auto on a CPU
        (["model=pythia", "model.dtype=bfloat16"], "cpu", "bfloat16"),
        (["model=llama2", "model.device=cpu"], "cpu", "float32"),
    ],
)
def test_the_store_loads_with_the_configured_placement(monkeypatch, overrides, device, dtype):
    import contamlab.models.store as store_module

    calls = []
    monkeypatch.setattr(store_module, "load_causal_lm", lambda *a, **k: calls.append((a, k)))
    store = model_store(compose("evaluate", overrides))
    store.load("some/model")
    ((args, kwargs),) = calls
    assert args[1] == dtype and kwargs["device"] == torch.device(device) and kwargs["device_map"] is None
    assert store.dtype == dtype  # what the caches' keys record


def test_device_map_and_cuda_placement(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    place = model_store(compose("evaluate", ["model=llama2", "model.device_map=auto"])).placement
    assert place == Placement(torch.device("cuda"), torch.bfloat16, "auto")
    assert place.to_dict() == {"device": "cuda", "dtype": "bfloat16", "device_map": "auto"}


def test_results_record_the_placement(trained):
    from jobs import run_evaluate

    tmp, _, _ = trained
    run_evaluate(tmp, tmp / "runs" / "placement", "strategy=identity", "analysis.floor=false", "model.device=cpu")
    results = json.loads((tmp / "runs" / "placement" / "results.json").read_text())
    assert results["placement"] == {"device": "cpu", "dtype": "float32", "device_map": None, "sampler": "hf"}
