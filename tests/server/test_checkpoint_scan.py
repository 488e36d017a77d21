"""The server's scan of a job's checkpoint folder (treino.server.lineage.checkpoints_on_disk) on real files, FIFOs and
symbolic links: the folder is the job's, so nothing in it may block the scan, make it follow a link out of the
folder, or make it read or walk without bound."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.server.fifos import returns_despite_fifo
from treino.server import lineage
from treino.server.lineage import checkpoints_on_disk, marked_step, tree_bytes


def checkpoint_file(folder: Path, step: int, data: bytes = b"weights") -> Path:
    path = folder / f"step-{step:09d}.pt"
    path.write_bytes(data)
    return path


def test_a_fifo_as_a_folders_marker_neither_blocks_nor_counts(tmp_path: Path) -> None:
    # What a job can do: mkdir $TREINO_CHECKPOINT_DIR/x && mkfifo $TREINO_CHECKPOINT_DIR/x/.treino-checkpoint
    folder = tmp_path / "checkpoints"
    (folder / "x").mkdir(parents=True)
    fifo = folder / "x" / ".treino-checkpoint"
    os.mkfifo(fifo)
    real = checkpoint_file(folder, 3)
    assert returns_despite_fifo(lambda: checkpoints_on_disk(folder), fifo) == [(3, real, len(b"weights"))]
    assert returns_despite_fifo(lambda: marked_step(folder / "x"), fifo) is None


def test_symbolic_links_out_of_the_folder_are_no_checkpoints(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    elsewhere = tmp_path / "elsewhere"  # another user's files, say: never counted, sized or read as the job's
    (elsewhere / "sharded").mkdir(parents=True)
    (elsewhere / "sharded" / ".metadata").write_bytes(b"m")
    (elsewhere / "framework").mkdir()
    (elsewhere / "framework" / ".treino-checkpoint").write_text(json.dumps({"step": 7}))
    (elsewhere / "marker").write_text(json.dumps({"step": 8}))
    (elsewhere / "big.pt").write_bytes(b"x" * 1000)
    (folder / "step-000000005.pt").symlink_to(elsewhere / "big.pt")
    (folder / "step-000000006").symlink_to(elsewhere / "sharded")
    (folder / "linked").symlink_to(elsewhere / "framework")
    (folder / "y").mkdir()
    (folder / "y" / ".treino-checkpoint").symlink_to(elsewhere / "marker")
    (folder / "step-000000009").mkdir()
    (folder / "step-000000009" / ".metadata").symlink_to(elsewhere / "sharded" / ".metadata")
    real = folder / "step-000000004"  # a real sharded folder: its symbolic links are not followed when sized
    real.mkdir()
    (real / ".metadata").write_bytes(b"meta")
    (real / "__0_0.distcp").write_bytes(b"shard0")
    (real / "link.distcp").symlink_to(elsewhere / "big.pt")
    (real / "linked-folder").symlink_to(elsewhere)
    assert checkpoints_on_disk(folder) == [(4, real, len(b"meta") + len(b"shard0"))]


def test_a_marker_is_read_only_up_to_its_limit(tmp_path: Path) -> None:
    folder = tmp_path / "checkpoint-500"
    folder.mkdir()
    marker = folder / ".treino-checkpoint"
    marker.write_text(json.dumps({"step": 500}))
    assert marked_step(folder) == 500
    marker.write_text(json.dumps({"step": 500}).ljust(lineage.FOLDER_MARKER_BYTES_MAX + 1))  # no marker of the SDK's
    assert marked_step(folder) is None


def test_folders_are_sized_within_a_bound_newest_first(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "checkpoints"
    for step in (1, 2):
        shard = folder / f"step-{step:09d}"
        shard.mkdir(parents=True)
        for name in (".metadata", "a", "b", "c", "d", "e"):
            (shard / name).write_bytes(b"1")
    assert tree_bytes(folder / "step-000000001") == 6
    assert tree_bytes(folder / "step-000000001", entries_max=4) == 4
    assert [size for _, _, size in checkpoints_on_disk(folder)] == [6, 6]
    # A job's folder of millions of files costs one scan no more than the bound: the newest is sized first.
    monkeypatch.setattr(lineage, "CHECKPOINT_SIZE_ENTRIES_MAX", 8)
    assert [(step, size) for step, _, size in checkpoints_on_disk(folder)] == [(1, 2), (2, 6)]
