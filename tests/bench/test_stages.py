"""The storage and data-loader stages on real files."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from treino.bench import storage
from treino.bench.dataloader import TokenShards, samples_per_s, write_shards


def test_storage_reads_the_whole_file_and_deletes_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(storage, "FILE_BYTES_QUICK", 16 * 1024**2)
    result = storage.measure_storage(tmp_path, quick=True)
    assert result.read_gb_s > 0
    assert result.method in ("O_DIRECT", "posix_fadvise(DONTNEED)", "larger than RAM", "buffered (cached)")
    assert result.path == str(tmp_path)
    assert list(tmp_path.iterdir()) == []


def test_token_shards_give_inputs_and_shifted_targets(tmp_path: Path) -> None:
    paths = write_shards(tmp_path, shards=2, tokens_per_shard=10_000)
    data = TokenShards(paths, seq_len=99)
    assert len(data) == 2 * 100  # 10_000 tokens / (99 + 1) per sample, per shard
    x, y = data[150]  # a sample of the second shard
    assert x.dtype == torch.int64 and x.shape == (99,)
    assert torch.equal(x[1:], y[:-1])
    assert samples_per_s(data, workers=0, batches=5) > 0
