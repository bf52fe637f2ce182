import json

import pytest
import torch

from contamlab.errors import ContamlabError
from contamlab.models import HubModel, TinyModel
from contamlab.models.loading import load_causal_lm, load_tokenizer, read_adapter, resolve_dtype
from contamlab.models.tiny import build_tiny_model, train_tokenizer

TEXTS = [
    "Question: Mia has 12 stickers. She buys 7 more.\nAnswer: 12 + 7 = <<12+7=19>>19 stickers.\n#### 19",
    "Question: Leo had 305 apples and gave away 40.\nAnswer: 305 - 40 = <<305-40=265>>265 apples.\n#### 265",
] * 20


def test_tokenizer_is_deterministic_and_splits_digits():
    a, b = train_tokenizer(TEXTS, 300), train_tokenizer(TEXTS, 300)
    assert a.get_vocab() == b.get_vocab()
    tokens = a.convert_ids_to_tokens(a(" 305 apples")["input_ids"])
    assert tokens[:3] == ["Ġ3", "0", "5"]
    assert all(not any(c.isdigit() for c in t) or len(t.strip("Ġ")) == 1 for t in a.get_vocab())
    assert (a.eos_token_id, a.pad_token_id) == (0, 1)


def test_tokenizer_roundtrip():
    tok = train_tokenizer(TEXTS, 300)
    for text in TEXTS[:2] + ["Unseen wörds & symbols: 4,5 $9"]:
        assert tok.decode(tok(text)["input_ids"]) == text


def test_tiny_model_save_load(tmp_path):
    tok = train_tokenizer(TEXTS, 300)
    model = build_tiny_model(len(tok), hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, seed=3)
    again = build_tiny_model(len(tok), hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, seed=3)
    assert all(torch.equal(p, q) for p, q in zip(model.parameters(), again.parameters()))
    model.save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    assert (tmp_path / "model.safetensors").is_file()
    loaded, loaded_tok = load_causal_lm(tmp_path), load_tokenizer(tmp_path)
    ids = torch.tensor([loaded_tok(TEXTS[0])["input_ids"]])
    assert torch.allclose(loaded(ids).logits, model.eval()(ids).logits, atol=1e-6)
    assert loaded_tok.pad_token_id == 1


def test_an_adapter_merged_for_inference_gives_the_adapters_logits(tmp_path):
    from peft import LoraConfig, PeftModel, get_peft_model

    tok = train_tokenizer(TEXTS, 300)
    base = build_tiny_model(len(tok), hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, seed=3)
    base.save_pretrained(tmp_path / "base")
    tok.save_pretrained(tmp_path / "base")
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["query_key_value", "dense_4h_to_h"], task_type="CAUSAL_LM")
    adapted = get_peft_model(base, lora)
    torch.manual_seed(0)
    for name, p in adapted.named_parameters():
        if "lora_B" in name:  # B starts at zero; a trained adapter's is not
            torch.nn.init.normal_(p, std=0.5)
    adapted.save_pretrained(tmp_path / "adapter")
    ids = torch.tensor([tok(TEXTS[0])["input_ids"]])
    with torch.no_grad():
        want = adapted.eval()(ids).logits
        kept = load_causal_lm(tmp_path / "adapter", base=tmp_path / "base")
        merged = load_causal_lm(tmp_path / "adapter", base=tmp_path / "base", merge=True)
        assert isinstance(kept, PeftModel) and not isinstance(merged, PeftModel)
        plain = load_causal_lm(tmp_path / "base")  # get_peft_model wrapped ``base`` itself
        assert not torch.allclose(want, plain(ids).logits, atol=1e-3)  # the adapter changes the model
        assert torch.allclose(kept(ids).logits, want, atol=1e-5)
        assert torch.allclose(merged(ids).logits, want, atol=1e-5)
    bf16 = load_causal_lm(tmp_path / "adapter", dtype="bfloat16", base=tmp_path / "base", merge=True)
    assert isinstance(bf16, PeftModel)  # a low-precision weight keeps its adapter separate


def test_missing_directory_and_unknown_hub_id_offline(tmp_path):
    with pytest.raises(ContamlabError, match="not found"):
        load_causal_lm(str(tmp_path / "nope" / "model"))
    with pytest.raises(ContamlabError, match="HF_HUB_OFFLINE"):
        load_causal_lm("no-such-owner/no-such-model")
    with pytest.raises(ContamlabError, match="HF_HUB_OFFLINE"):
        load_tokenizer("no-such-owner/no-such-model")


def test_bad_dtype_and_base_sources():
    with pytest.raises(ContamlabError, match="model.dtype"):
        resolve_dtype("float8")
    with pytest.raises(ContamlabError, match="model.source"):
        HubModel(name="x").base_source("/tmp")
    with pytest.raises(ContamlabError, match="base stage"):
        TinyModel(name="tiny").base_source("/tmp")
    assert HubModel(name="p", source="EleutherAI/pythia-1.4b").base_source("/tmp") == "EleutherAI/pythia-1.4b"


def test_model_key_leaves_out_sampling_and_own_pair():
    a = TinyModel(name="tiny", arch={"hidden_size": 8})
    b = TinyModel(name="tiny", arch={"hidden_size": 8}, clean="/m/c", contaminated="/m/x", batch_rows=4, draw="x")
    assert a.key() == b.key() and a.key()["kind"] == "tiny" and a.key()["pretrain"] is True
    assert a.key() != TinyModel(name="tiny", arch={"hidden_size": 16}).key()


def test_pad_batch_right_and_left():
    from contamlab.models.padding import pad_batch

    ids, mask = pad_batch([[5, 6, 7], [8]], pad_id=1)
    assert ids.tolist() == [[5, 6, 7], [8, 1, 1]] and mask.tolist() == [[1, 1, 1], [1, 0, 0]]
    ids, mask = pad_batch([(5, 6, 7), torch.tensor([8])], pad_id=0, left=True)
    assert ids.tolist() == [[5, 6, 7], [0, 0, 8]] and mask.tolist() == [[1, 1, 1], [0, 0, 1]]
    assert ids.dtype == mask.dtype == torch.long


def test_offline_hub_id_message_reads_cleanly(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(ContamlabError) as err:
        load_tokenizer("EleutherAI/pythia-12b")
    message = str(err.value)
    assert ".." not in message and "HF_HUB_OFFLINE=1" in message and "'EleutherAI/pythia-12b'" in message


def test_an_adapter_finds_a_relative_base_from_its_own_checkout(tmp_path, monkeypatch):
    # A checkout whose training recorded its base relative to the checkout's root, read from another directory
    checkout, elsewhere = tmp_path / "checkout", tmp_path / "elsewhere"
    (checkout / "outputs/cache/kind/base").mkdir(parents=True)
    adapter = checkout / "outputs/models/kind/clean-abc"
    adapter.mkdir(parents=True)
    record = {"base_model_name_or_path": "outputs/cache/kind/base", "r": 4}
    (adapter / "adapter_config.json").write_text(json.dumps(record))
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert read_adapter(adapter).base == str(checkout.resolve() / "outputs/cache/kind/base")
    assert read_adapter(adapter).rank == 4
    monkeypatch.chdir(checkout)  # found from here: kept as recorded
    assert read_adapter(adapter).base == "outputs/cache/kind/base"
    record["base_model_name_or_path"] = "org/name"  # a hub id is never a directory to look for
    (adapter / "adapter_config.json").write_text(json.dumps(record))
    assert read_adapter(adapter).base == "org/name"


def test_an_adapter_whose_base_is_gone_names_both(tmp_path, monkeypatch):
    adapter = tmp_path / "models/clean-abc"
    adapter.mkdir(parents=True)
    (adapter / "adapter_config.json").write_text(json.dumps({"base_model_name_or_path": "outputs/cache/kind/gone"}))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ContamlabError, match=r"clean-abc: its base outputs/cache/kind/gone is not found"):
        load_causal_lm(adapter)
