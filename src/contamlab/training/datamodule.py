"""LightningDataModules for causal-LM training: prompt/response documents and packed pre-training rows."""

from __future__ import annotations

from collections.abc import Sequence

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset
from transformers import PreTrainedTokenizerBase

from contamlab.data.general import Example
from contamlab.models.padding import pad_batch

IGNORE = -100


class ExampleDataset(Dataset):
    """Tokenised prompt + response documents with labels masked outside the loss region."""

    def __init__(
        self, examples: Sequence[Example], tokenizer: PreTrainedTokenizerBase, max_length: int, loss_on: str
    ) -> None:
        if loss_on not in ("response", "all"):
            raise ValueError(f"finetune.loss_on={loss_on!r}: use 'response' or 'all'")
        self.items = []
        eos = tokenizer.eos_token_id
        for ex in examples:
            # Tokenise the two parts separately so the boundary is exact whatever the tokenizer merges.
            prompt_ids = tokenizer(ex.prompt, add_special_tokens=True)["input_ids"]
            response_ids = tokenizer(ex.response, add_special_tokens=False)["input_ids"] + [eos]
            ids = (prompt_ids + response_ids)[-max_length:]  # keep the response when truncating
            labels = list(ids)
            if loss_on == "response":
                n_prompt = max(0, len(ids) - len(response_ids))
                labels[:n_prompt] = [IGNORE] * n_prompt
            self.items.append((torch.tensor(ids), torch.tensor(labels)))

    def __len__(self) -> int:
        return len(self.items)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        return self.items[index]

    def n_tokens(self) -> int:
        """Total number of tokens (for throughput figures)."""
        return sum(len(ids) for ids, _ in self.items)


def pad_collate(pad_id: int):
    """A collate function that right-pads to the longest document in the batch and masks the padding."""

    def collate(batch: list[tuple[torch.Tensor, torch.Tensor]]) -> dict[str, torch.Tensor]:
        input_ids, mask = pad_batch([ids for ids, _ in batch], pad_id)  # [B, T] each
        labels, _ = pad_batch([lab for _, lab in batch], IGNORE)  # [B, T]
        return {"input_ids": input_ids, "attention_mask": mask, "labels": labels}

    return collate


class PackedDataset(Dataset):
    """Documents joined by EOS and cut into rows of ``seq_len`` tokens (pre-training, loss on every token)."""

    def __init__(self, documents: Sequence[str], tokenizer: PreTrainedTokenizerBase, seq_len: int) -> None:
        eos = tokenizer.eos_token_id
        stream: list[int] = []
        for ids in tokenizer(list(documents), add_special_tokens=False)["input_ids"]:
            stream.extend(ids)
            stream.append(eos)
        n_rows = len(stream) // seq_len
        if n_rows == 0:
            raise ValueError(f"pre-training corpus has {len(stream)} tokens, fewer than one row of {seq_len}")
        self.rows = torch.tensor(stream[: n_rows * seq_len]).view(n_rows, seq_len)  # [N, seq_len]

    def __len__(self) -> int:
        return self.rows.shape[0]

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        row = self.rows[index]
        return {"input_ids": row, "attention_mask": torch.ones_like(row), "labels": row}


class CausalLMDataModule(L.LightningDataModule):
    """Serves one stage's dataset with a seeded shuffle, so a re-run sees the same order."""

    def __init__(self, dataset: Dataset, batch_size: int, pad_id: int, seed: int, packed: bool = False) -> None:
        super().__init__()
        self.dataset = dataset
        self.batch_size = batch_size
        self.pad_id = pad_id
        self.seed = seed
        self.packed = packed

    def train_dataloader(self) -> DataLoader:
        """A shuffled loader; packed rows need no collation beyond stacking."""
        generator = torch.Generator().manual_seed(self.seed)
        return DataLoader(
            self.dataset,
            batch_size=self.batch_size,
            shuffle=True,
            generator=generator,
            collate_fn=None if self.packed else pad_collate(self.pad_id),
            num_workers=0,
        )
