"""LightningDataModules for causal-LM training: prompt/response documents and packed pre-training rows."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import lightning as L
import torch
from torch.utils.data import DataLoader, Dataset, Sampler
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

    def lengths(self) -> list[int]:
        """Tokens of each document (length-grouped batching)."""
        return [len(ids) for ids, _ in self.items]

    def n_tokens(self) -> int:
        """Total number of tokens (for throughput figures)."""
        return sum(self.lengths())


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

    def n_tokens(self) -> int:
        """Total number of tokens (for throughput figures)."""
        return self.rows.numel()

    def __getitem__(self, index: int) -> dict[str, torch.Tensor]:
        row = self.rows[index]
        return {"input_ids": row, "attention_mask": torch.ones_like(row), "labels": row}


class LengthGroupedBatches(Sampler[list[int]]):
    """Micro-batches that group each optimiser step's documents by length, to cut the padding.

    The permutation is the one ``shuffle=True`` would draw (``randperm`` from the same generator), so every optimiser
    step trains on the same documents as without grouping; only which documents share a micro-batch changes: each
    step's ``group`` documents are sorted by length before they are cut into micro-batches. On the real-LM world's
    mixes (OpenOrca rows up to 256 tokens beside ~130-token problems), micro-batches as drawn hold 1.4-1.55x as many
    positions as real tokens.

    Args:
        lengths: Tokens of each document.
        micro_batch: Documents per micro-batch.
        group: Documents per optimiser step (``finetune.global_batch``).
        generator: The seeded generator of the shuffle (the loader's, so that a resumed epoch replays it).
    """

    def __init__(self, lengths: Sequence[int], micro_batch: int, group: int, generator: torch.Generator) -> None:
        self.lengths = list(lengths)
        self.micro_batch = micro_batch
        self.group = group
        self.generator = generator

    def __iter__(self) -> Iterator[list[int]]:
        order = torch.randperm(len(self.lengths), generator=self.generator).tolist()
        for start in range(0, len(order), self.group):
            step = sorted(order[start : start + self.group], key=lambda i: self.lengths[i], reverse=True)
            for b in range(0, len(step), self.micro_batch):
                yield step[b : b + self.micro_batch]

    def __len__(self) -> int:
        n = len(self.lengths)
        return sum(-(-min(self.group, n - start) // self.micro_batch) for start in range(0, n, self.group))


class ResumableLoader(DataLoader):
    """A seeded, shuffled DataLoader whose position in the epoch is part of Lightning's checkpoint.

    Lightning saves the ``state_dict()`` of a loader that has one with the fit loop, and hands it to
    ``load_state_dict`` before a resumed run calls ``iter()``. The state is the shuffle generator's state at the
    start of the current epoch and the batches served since, so the resumed epoch replays the same permutation and
    skips what was trained on: the run sees exactly the batches of an uninterrupted one. A plain DataLoader would
    start a fresh permutation from the seed (Lightning warns "dataloader is not resumable").

    Batches are counted as served when the iterator hands them out: exact for Lightning's sized loaders, which it
    does not prefetch from, and for checkpoints written at a batch end (``ModelCheckpoint``).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.generator is None:
            raise ValueError("ResumableLoader needs a seeded generator")
        self._epoch_start: torch.Tensor | None = None
        self._served = 0
        self._pending: dict[str, Any] | None = None

    def __iter__(self) -> Iterator:
        skip = 0
        if self._pending is not None:
            self.generator.set_state(self._pending["generator"])
            skip, self._pending = int(self._pending["batches"]), None
        # Before DataLoader's iterator draws its base seed and the sampler its permutation from the generator.
        self._epoch_start = self.generator.get_state()
        self._served = 0
        iterator = super().__iter__()
        for _ in range(skip):
            next(iterator)
        self._served = skip
        return _Served(iterator, self)

    def state_dict(self) -> dict[str, Any]:
        """Where the epoch stands: the generator state it started from and the batches served since."""
        if self._epoch_start is None or self._served >= len(self):
            # Nothing served yet, or the epoch is over: the next one starts from the generator as it is now.
            return {"generator": self.generator.get_state(), "batches": 0}
        return {"generator": self._epoch_start.clone(), "batches": self._served}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Resume at ``state`` with the next ``iter()``."""
        self._pending = dict(state)


class _Served:
    """The loader's iterator, counting the batches it hands out."""

    def __init__(self, iterator: Iterator, loader: ResumableLoader) -> None:
        self.iterator = iterator
        self.loader = loader

    def __iter__(self) -> _Served:
        return self

    def __next__(self) -> Any:
        batch = next(self.iterator)
        self.loader._served += 1
        return batch


class CausalLMDataModule(L.LightningDataModule):
    """Serves one stage's dataset with a seeded shuffle, so a re-run sees the same order."""

    def __init__(
        self,
        dataset: Dataset,
        batch_size: int,
        pad_id: int,
        seed: int,
        packed: bool = False,
        group_by_length: int | None = None,
    ) -> None:
        super().__init__()
        self.dataset = dataset
        self.batch_size = batch_size
        self.pad_id = pad_id
        self.seed = seed
        self.packed = packed
        self.group_by_length = group_by_length  # documents per optimiser step to sort by length (None: no grouping)

    def train_dataloader(self) -> DataLoader:
        """A shuffled, resumable loader; packed rows need no collation beyond stacking."""
        generator = torch.Generator().manual_seed(self.seed)
        collate = None if self.packed else pad_collate(self.pad_id)
        if self.group_by_length and not self.packed:
            batches = LengthGroupedBatches(self.dataset.lengths(), self.batch_size, self.group_by_length, generator)
            return ResumableLoader(
                self.dataset, batch_sampler=batches, generator=generator, collate_fn=collate, num_workers=0
            )
        return ResumableLoader(
            self.dataset,
            batch_size=self.batch_size,
            shuffle=True,
            generator=generator,
            collate_fn=collate,
            num_workers=0,
        )
