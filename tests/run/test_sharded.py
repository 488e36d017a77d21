"""Sharded checkpoints (treino.sharded) on real files and real torchrun processes: atomic folders, keep-last-K,
torn folders never restored, async saves, and resharding (saved by 2 FSDP2 ranks, restored by 1 and by 4)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import torch

from treino import job
from treino.errors import JobError
from treino.server.lineage import checkpoints_on_disk

ROOT = Path(__file__).resolve().parents[2]
WORKER = Path(__file__).with_name("sharded_worker.py")
WORKER_TIMEOUT_S = 120.0


@pytest.fixture
def local_run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[job.Run]:
    for name in (job.ENV_URL, job.ENV_JOB_ID, job.ENV_JOB_TOKEN, job.ENV_CHECKPOINT_DIR, job.ENV_ATTEMPT, "RANK"):
        monkeypatch.delenv(name, raising=False)
    run = job.init(checkpoint_dir=tmp_path / "ckpt", keep=2)
    yield run
    run.finish()


def _state(value: float) -> dict[str, Any]:
    return {"w": torch.full((64,), value), "b": torch.full((3, 3), -value), "step": int(value)}


def test_sharded_folders_are_atomic_pruned_and_restored_newest_first(local_run: job.Run) -> None:
    folder = local_run.checkpoint_dir
    for step in range(1, 5):
        path = local_run.save_sharded(_state(float(step)), step=step, async_save=step % 2 == 0)
    local_run.finish()  # waits for the async save of step 4
    assert path == folder / "step-000000004"
    assert [s for s, _ in local_run._sharded().list()] == [3, 4]  # keep=2, folders removed whole
    assert sorted(p.name for p in folder.iterdir()) == ["step-000000003", "step-000000004"]  # no temp left
    # The server sees the same: complete folders, their bytes all their files.
    assert [(s, p.name, b) for s, p, b in checkpoints_on_disk(folder)] == [
        (3, "step-000000003", job._size_bytes(folder / "step-000000003")),
        (4, "step-000000004", job._size_bytes(folder / "step-000000004")),
    ]

    # What a killed writer leaves is never restored: a hidden temp folder and a step folder without .metadata.
    torn = folder / ".step-000000009.tmp-1"
    torn.mkdir()
    (torn / "__0_0.distcp").write_bytes(b"partial")
    (folder / "step-000000008").mkdir()
    (folder / "step-000000008" / "__0_0.distcp").write_bytes(b"partial")
    into = _state(0.0)
    assert local_run.restore_sharded(into) == 4 and local_run.checkpoint_step == 4
    assert torch.equal(into["w"], torch.full((64,), 4.0)) and torch.equal(into["b"], torch.full((3, 3), -4.0))
    assert into["step"] == 4
    assert [s for s, _, _ in checkpoints_on_disk(folder)] == [3, 4]

    # A shard cut short (a disk that lied): skipped with a warning for the one before it.
    shard = next((folder / "step-000000004").glob("*.distcp"))
    shard.write_bytes(shard.read_bytes()[:100])
    into = _state(0.0)
    assert local_run.restore_sharded(into) == 3 and torch.equal(into["w"], torch.full((64,), 3.0))

    # The next save removes the temp folder a killed writer left.
    local_run.save_sharded(_state(5.0), step=5)
    assert not torn.exists()


def test_a_step_saved_again_keeps_its_complete_folder(local_run: job.Run) -> None:
    # A resumed loop saves the step it restored from again (on SIGTERM, say): the complete folder stands, so no kill
    # can fall between two renames and leave no folder of that step.
    folder = local_run.checkpoint_dir
    local_run.save_sharded(_state(2.0), step=2)
    first = {p.name: p.stat().st_ino for p in (folder / "step-000000002").iterdir()}
    local_run.save_sharded(_state(5.0), step=2)
    assert sorted(p.name for p in folder.iterdir()) == ["step-000000002"]  # the new one discarded, no leftover
    assert {p.name: p.stat().st_ino for p in (folder / "step-000000002").iterdir()} == first
    into = _state(0.0)
    assert local_run.restore_sharded(into) == 2 and torch.equal(into["w"], torch.full((64,), 2.0))


def test_a_complete_folder_a_killed_writer_set_aside_is_put_back_never_pruned(local_run: job.Run) -> None:
    # What an earlier version's writer left when killed between `step-N -> .step-N.old-A` and `temp -> step-N`:
    # the step's only complete copy, under a leftover's name.
    run = local_run
    run.keep = 1
    folder = run.checkpoint_dir
    run.save_sharded(_state(5.0), step=5)
    aside = folder / ".step-000000005.old-1"
    (folder / "step-000000005").rename(aside)
    run.save_sharded(_state(1.0), step=1)  # a loop that did not restore: keep=1 prunes, but not the only copy
    assert sorted(p.name for p in folder.iterdir()) == ["step-000000001", "step-000000005"]
    assert [s for s, _, _ in checkpoints_on_disk(folder)] == [1, 5]
    (folder / "step-000000005").rename(aside)
    into = _state(0.0)
    assert run.restore_sharded(into) == 5 and torch.equal(into["w"], torch.full((64,), 5.0))
    assert not aside.exists()


def test_a_state_that_matches_no_checkpoint_is_an_error_not_a_fresh_start(local_run: job.Run) -> None:
    local_run.save_sharded(_state(1.0), step=1)
    with pytest.raises(JobError, match=r"No sharded checkpoint .* loads"):
        local_run.restore_sharded({"w": torch.zeros(7)})  # saved with 64 elements


def test_async_saves_stage_a_state_that_changed_shape_as_it_is_now(local_run: job.Run) -> None:
    local_run.save_sharded({"w": torch.ones(64)}, step=1, async_save=True)
    local_run.save_sharded({"w": torch.full((1,), 2.0)}, step=2, async_save=True)  # would broadcast into the old copy
    local_run.finish()
    into = {"w": torch.zeros(1)}
    assert local_run.restore_sharded(into) == 2 and torch.equal(into["w"], torch.full((1,), 2.0))


def test_restore_without_checkpoints_returns_none(local_run: job.Run) -> None:
    into = _state(2.0)
    assert local_run.restore_sharded(into) is None and local_run.checkpoint_step is None
    assert torch.equal(into["w"], torch.full((64,), 2.0))  # untouched


def test_a_registered_folder_carries_the_marker_the_server_reads(local_run: job.Run, tmp_path: Path) -> None:
    framework = local_run.checkpoint_dir / "checkpoint-500"
    framework.mkdir(parents=True)
    (framework / "model.safetensors").write_bytes(b"x" * 50)
    assert local_run.register_checkpoint(framework, step=500) == framework
    assert [(s, p.name) for s, p, _ in checkpoints_on_disk(local_run.checkpoint_dir)] == [(500, "checkpoint-500")]
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    with pytest.raises(JobError, match="inside the checkpoint dir"):
        local_run.register_checkpoint(outside, step=1)


class _Gate(str):
    """A string (staged as is) that DCP pickles when it writes, in the background thread: this one holds the write
    until `opened` is set, so that the test acts while a save is in flight."""

    opened = threading.Event()

    def __reduce_ex__(self, protocol: Any) -> Any:
        assert self.opened.wait(timeout=WORKER_TIMEOUT_S)
        return (str, (str(self),))


def test_a_second_async_save_reuses_the_cpu_copy_and_each_holds_the_state_of_its_call(local_run: job.Run) -> None:
    state = _state(1.0)
    _Gate.opened.clear()
    local_run.save_sharded({**state, "gate": _Gate("1")}, step=1, async_save=True)  # its write held by the gate
    sharded = local_run._sharded()
    assert set(sharded.blocked_s) == {"wait", "folder", "group", "stage", "dcp"}
    assert all(part_s >= 0.0 for part_s in sharded.blocked_s.values())
    copy = sharded._stager.state_dict_cache
    addresses = {key: copy[key].data_ptr() for key in ("w", "b")}
    state["w"].fill_(2.0)  # the loop goes on while step 1 is written: not in step 1
    state["b"].fill_(-2.0)
    _Gate.opened.set()
    local_run.save_sharded({**state, "gate": _Gate("2")}, step=2, async_save=True)  # waits for step 1, then stages
    assert sharded._stager.state_dict_cache is copy  # the same CPU copy, its tensors the same memory
    assert {key: copy[key].data_ptr() for key in ("w", "b")} == addresses
    state["w"].fill_(3.0)
    local_run.finish()
    for step, value in ((2, 2.0), (1, 1.0)):  # the newest first; then step 2 set aside: step 1
        into = {**_state(0.0), "gate": ""}
        assert local_run.restore_sharded(into) == step
        assert torch.equal(into["w"], torch.full((64,), value)) and torch.equal(into["b"], torch.full((3, 3), -value))
        assert into["gate"] == str(step)
        (local_run.checkpoint_dir / f"step-{step:09d}").rename(local_run.checkpoint_dir / f"set-aside-{step}")
    local_run.save_sharded(_state(4.0), step=4)
    assert set(local_run._sharded().blocked_s) == {"wait", "folder", "write", "complete"}


# Each line in one os.write: print's text and newline, written apart, interleave between the two threads.
KILLED_MID_WRITE = """
import os, threading, torch
from treino import job
class Stuck(str):  # DCP pickles it in its background thread, while writing: the write never ends
    def __reduce_ex__(self, protocol):
        os.write(1, b"writing\\n")
        threading.Event().wait()
run = job.init(trackers=[])
run.save_sharded({"w": torch.full((64,), 1.0)}, step=1)
run.save_sharded({"w": torch.full((64,), 2.0), "note": Stuck("x")}, step=2, async_save=True)
os.write(1, b"returned\\n")
threading.Event().wait()
"""


def test_an_async_save_killed_before_it_completes_is_neither_in_place_nor_reported(tmp_path: Path) -> None:
    folder = tmp_path / "ckpt"
    folder.mkdir()  # made by the server before the job starts; the journal is in it
    env = {k: v for k, v in os.environ.items() if not k.startswith("TREINO_")}
    env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    # A managed run whose server is not there: its reports stay in the journal, which is what the server is sent.
    env.update({job.ENV_URL: "http://127.0.0.1:9", job.ENV_JOB_ID: "7", job.ENV_JOB_TOKEN: "t"})
    env.update({job.ENV_CHECKPOINT_DIR: str(folder), job.ENV_ATTEMPT: "1"})
    child = subprocess.Popen(
        [sys.executable, "-c", KILLED_MID_WRITE], env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
    )
    try:
        assert child.stdout is not None
        said = {child.stdout.readline().strip() for _ in range(2)}  # the call returned; the write is under way
        assert said == {"returned", "writing"}
    finally:
        child.kill()
        child.wait(timeout=WORKER_TIMEOUT_S)
    reported = [e.body["step"] for e in job.parse_journal((folder / job.JOURNAL_NAME).read_text())]
    assert reported == [1]
    assert [s for s, _, _ in checkpoints_on_disk(folder)] == [1]
    assert (folder / ".step-000000002.tmp-1").is_dir() and not (folder / "step-000000002").exists()


def test_a_failed_async_save_is_raised_at_the_next_wait(local_run: job.Run, caplog: pytest.LogCaptureFixture) -> None:
    local_run.save_sharded(_state(1.0), step=1)
    local_run.save_sharded({"w": torch.ones(2), "f": _Unpicklable("x")}, step=2, async_save=True)  # returns at once
    with pytest.raises(JobError, match=r"asynchronous sharded save .* failed: .*cannot be pickled"):
        local_run.save_sharded(_state(3.0), step=3)
    assert [s for s, _ in local_run._sharded().list()] == [1]  # step 2 never appeared, step 3 was not saved
    local_run.save_sharded(_state(3.0), step=3)  # the error was handed over once: saving goes on
    local_run.save_sharded({"w": torch.ones(2), "f": _Unpicklable("x")}, step=4, async_save=True)
    with caplog.at_level(logging.ERROR, logger="treino.job"):
        local_run.finish()  # at exit: logged, not raised
    assert "cannot be pickled" in caplog.text
    assert [s for s, _ in local_run._sharded().list()] == [1, 3]


class _Unpicklable(str):
    """A string (staged as is) that DCP pickles when it writes, in the background thread: this one refuses."""

    def __reduce_ex__(self, protocol: Any) -> Any:
        raise TypeError("cannot be pickled")


def _flatten(tree: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(tree, dict):
        return {k: v for key, sub in tree.items() for k, v in _flatten(sub, f"{prefix}/{key}").items()}
    if isinstance(tree, list):
        return {k: v for i, sub in enumerate(tree) for k, v in _flatten(sub, f"{prefix}/{i}").items()}
    return {prefix: tree}


def _same(a: Any, b: Any) -> bool:
    return torch.equal(a, b) if isinstance(a, torch.Tensor) else bool(a == b)


def test_saved_by_two_fsdp_ranks_restored_by_one_and_by_four(tmp_path: Path) -> None:
    folder, out = tmp_path / "ckpt", tmp_path / "out"
    out.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith("TREINO_")}
    env.update(CUDA_VISIBLE_DEVICES="", OMP_NUM_THREADS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT / "src"), env.get("PYTHONPATH", "")])
    argv = [sys.executable, str(WORKER), str(folder), str(out)]
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=WORKER_TIMEOUT_S, check=False)
    assert done.returncode == 0, done.stderr[-4000:]

    # Saved by 2 ranks: one shard file each, .metadata, the newest 2 kept (step 1 pruned).
    assert sorted(p.name for p in folder.iterdir()) == ["step-000000002", "step-000000003"]
    assert sorted(p.name for p in (folder / "step-000000003").iterdir()) == [
        ".metadata",
        "__0_0.distcp",
        "__1_0.distcp",
    ]
    saved = torch.load(out / "save.pt", weights_only=False)
    expected = _flatten(saved["state"])
    assert any(isinstance(v, torch.Tensor) and v.numel() > 1 for k, v in expected.items() if "/optim/" in k)
    for phase in ("load-1", "load-4"):  # restored by 1 rank, by 4: the same model and optimizer state, bit for bit
        restored = torch.load(out / f"{phase}.pt", weights_only=False)
        assert restored["step"] == 3
        got = _flatten(restored["state"])
        assert got.keys() == expected.keys()
        assert [k for k in expected if not _same(got[k], expected[k])] == [], phase
