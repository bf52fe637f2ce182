"""The real-LM world's training economies: length-grouped micro-batches and adapter-only LoRA checkpoints."""

import torch
from peft import LoraConfig, get_peft_model
from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

from contamlab.training.datamodule import LengthGroupedBatches, ResumableLoader
from contamlab.training.module import CausalLMModule


def test_grouped_batches_keep_each_steps_documents_and_sort_them_by_length():
    lengths = [5, 1, 9, 3, 7, 2, 8, 4, 6, 10]
    batches = list(LengthGroupedBatches(lengths, micro_batch=2, group=4, generator=torch.Generator().manual_seed(3)))
    order = torch.randperm(10, generator=torch.Generator().manual_seed(3)).tolist()  # what shuffle=True draws
    # Each optimiser step (4 documents; the last has 2) trains on the same documents as the plain shuffle ...
    steps = [sorted(batches[0] + batches[1]), sorted(batches[2] + batches[3]), sorted(batches[4])]
    assert steps == [sorted(order[0:4]), sorted(order[4:8]), sorted(order[8:10])]
    # ... longest first, so that documents of like length share a micro-batch.
    flat = [lengths[i] for b in batches for i in b]
    assert flat[0:4] == sorted(flat[0:4], reverse=True) and flat[4:8] == sorted(flat[4:8], reverse=True)
    assert len(LengthGroupedBatches(lengths, 2, 4, torch.Generator())) == len(batches) == 5
    assert len(LengthGroupedBatches(list(range(11)), 4, 8, torch.Generator())) == 3  # 8 -> 2 micro-batches, 3 -> 1


def test_grouped_batches_resume_mid_epoch():
    lengths = list(range(1, 13))

    def loader():
        generator = torch.Generator().manual_seed(7)
        batches = LengthGroupedBatches(lengths, 2, 4, generator)
        return ResumableLoader(lengths, batch_sampler=batches, generator=generator, collate_fn=list)

    reference = loader()
    expected = [b for _ in range(2) for b in reference]
    first = loader()
    seen = list(first)
    it = iter(first)
    seen += [next(it), next(it)]
    second = loader()
    second.load_state_dict(first.state_dict())
    seen += list(second)
    assert seen == expected


def _lora_module() -> CausalLMModule:
    torch.manual_seed(0)
    config = GPTNeoXConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    model = get_peft_model(
        GPTNeoXForCausalLM(config), LoraConfig(r=2, lora_alpha=4, target_modules=["query_key_value"])
    )
    return CausalLMModule(model, lr=1e-3, total_steps=2)


def test_lora_checkpoints_hold_the_adapter_alone_and_restore_it():
    module = _lora_module()
    for p in module.parameters():
        if p.requires_grad:
            torch.nn.init.normal_(p)  # LoRA's B starts at zero: give the adapter values to restore
    checkpoint = {"state_dict": module.state_dict()}
    module.on_save_checkpoint(checkpoint)
    kept = set(checkpoint["state_dict"])
    trainable = {n for n, p in module.named_parameters() if p.requires_grad}
    assert trainable and trainable <= kept
    assert not kept & {n for n, p in module.named_parameters() if not p.requires_grad}  # no frozen base weight
    assert module.strict_loading is False

    fresh = _lora_module()  # the same frozen base (seed 0), the adapter as initialised
    assert not all(torch.equal(fresh.state_dict()[n], module.state_dict()[n]) for n in trainable)
    fresh.load_state_dict(checkpoint["state_dict"], strict=fresh.strict_loading)
    assert all(torch.equal(fresh.state_dict()[n], module.state_dict()[n]) for n in module.state_dict())


def test_full_fine_tune_checkpoints_keep_every_weight():
    torch.manual_seed(0)
    config = GPTNeoXConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32
    )
    module = CausalLMModule(GPTNeoXForCausalLM(config), lr=1e-3, total_steps=2)
    checkpoint = {"state_dict": module.state_dict()}
    module.on_save_checkpoint(checkpoint)
    assert set(checkpoint["state_dict"]) == set(module.state_dict()) and module.strict_loading
