"""Samples/s of a PyTorch DataLoader over tokenised shards, per worker count.

The shards are what a pre-tokenised LLM dataset looks like on disk (nanoGPT's train.bin): flat arrays of
uint32 token ids, memory-mapped; a sample is seq_len + 1 consecutive tokens (inputs and shifted targets).
Workers needed to feed the GPUs follows ../shared/reference/hardware-and-prices.md §5.3.
"""

from __future__ import annotations

import math
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

if TYPE_CHECKING:  # torch is imported where it is used: `treino bench` must start on a machine without it
    from torch import Tensor
    from torch.utils.data import Dataset

SHARDS = 4
TOKENS_PER_SHARD = 2 * 1024**2  # uint32: 8 MiB a shard
SEQ_LEN_TOKENS = 2048
BATCH_SAMPLES = 8
VOCAB = 128_256  # Llama-3's vocabulary, so ids need more than 16 bits
WORKERS_QUICK = (0, 2)
WORKERS_FULL = (0, 1, 2, 4, 8)
BATCHES_QUICK = 40
BATCHES_FULL = 200


def write_shards(directory: Path, shards: int = SHARDS, tokens_per_shard: int = TOKENS_PER_SHARD) -> list[Path]:
    import numpy as np

    rng = np.random.default_rng(0)
    paths = []
    for i in range(shards):
        path = directory / f"shard-{i:03d}.bin"
        rng.integers(0, VOCAB, tokens_per_shard, dtype=np.uint32).tofile(path)
        paths.append(path)
    return paths


class TokenShards:
    """Map-style dataset: sample i = tokens [s, s + seq_len + 1) of one shard, as int64 (inputs, targets)."""

    def __init__(self, paths: list[Path], seq_len: int) -> None:
        self.paths = paths
        self.seq_len = seq_len
        self.samples_per_shard = [p.stat().st_size // 4 // (seq_len + 1) for p in paths]  # uint32 = 4 B
        self._maps: dict[int, Any] = {}  # opened lazily, in each worker

    def __len__(self) -> int:
        return sum(self.samples_per_shard)

    def __getitem__(self, index: int) -> tuple[Tensor, Tensor]:
        import numpy as np
        import torch

        shard = 0
        while index >= self.samples_per_shard[shard]:
            index -= self.samples_per_shard[shard]
            shard += 1
        if shard not in self._maps:
            self._maps[shard] = np.memmap(self.paths[shard], dtype=np.uint32, mode="r")
        start = index * (self.seq_len + 1)
        chunk = torch.from_numpy(self._maps[shard][start : start + self.seq_len + 1].astype(np.int64))
        return chunk[:-1], chunk[1:]


def samples_per_s(dataset: TokenShards, workers: int, batches: int) -> float:
    """Samples/s over `batches` batches after the first (worker start-up is not counted)."""
    from torch.utils.data import DataLoader

    # TokenShards is a map-style dataset by duck typing (__len__, __getitem__), which is all DataLoader uses; it does
    # not subclass torch's Dataset so that this module imports without torch.
    samples = cast("Dataset[tuple[Tensor, Tensor]]", dataset)
    loader = DataLoader(samples, batch_size=BATCH_SAMPLES, shuffle=True, num_workers=workers, drop_last=True)
    it = iter(loader)
    next(it)  # warm-up: starts the workers
    t0 = time.perf_counter()
    done = 0
    for _ in range(batches):
        x, _ = next(it)
        done += x.shape[0]
    seconds = time.perf_counter() - t0
    del it
    return done / seconds


def workers_needed(per_worker_samples_per_s: float, target_samples_per_s: float) -> int:
    """Workers that together reach `target_samples_per_s`, if each adds `per_worker_samples_per_s`."""
    if target_samples_per_s <= 0:
        return 0
    return math.ceil(target_samples_per_s / per_worker_samples_per_s)


@dataclass(frozen=True)
class DataloaderResult:
    samples_per_s: float  # the best rate over the worker counts tried
    workers: int  # the worker count that gave it
    by_workers: dict[int, float] = field(default_factory=dict)
    seq_len: int = SEQ_LEN_TOKENS

    def to_json(self) -> dict[str, Any]:
        return {"samples_per_s": self.samples_per_s, "workers": self.workers}

    @property
    def per_worker_samples_per_s(self) -> float:
        """What one worker process adds; 0 workers means loading in the main process, which counts as one."""
        return self.by_workers.get(1) or self.by_workers.get(0) or self.samples_per_s / max(1, self.workers)


def measure_dataloader(quick: bool) -> DataloaderResult:
    with tempfile.TemporaryDirectory(prefix="treino-bench-shards-") as tmp:
        dataset = TokenShards(write_shards(Path(tmp)), SEQ_LEN_TOKENS)
        rates = {
            w: samples_per_s(dataset, w, BATCHES_QUICK if quick else BATCHES_FULL)
            for w in (WORKERS_QUICK if quick else WORKERS_FULL)
        }
    best = max(rates, key=lambda w: rates[w])
    return DataloaderResult(samples_per_s=rates[best], workers=best, by_workers=rates)
