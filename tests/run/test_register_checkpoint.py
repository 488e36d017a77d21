"""run.register_checkpoint: a checkpoint a framework wrote (a file or a folder), reported like save()'s; a folder
gets the marker by which the server's disk scan finds it. Reporting to a real server: tests/integrations."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from treino import job
from treino.errors import JobError
from treino.server import lineage


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[job.Run]:
    for name in (job.ENV_URL, job.ENV_JOB_ID, job.ENV_JOB_TOKEN, job.ENV_CHECKPOINT_DIR, job.ENV_ATTEMPT, "RANK"):
        monkeypatch.delenv(name, raising=False)
    r = job.init(checkpoint_dir=tmp_path / "ckpt")
    yield r
    r.finish()


def test_a_registered_folder_is_marked_for_the_server_s_disk_scan_and_keeps_its_time(run: job.Run) -> None:
    assert job.FOLDER_MARKER_NAME == lineage.FOLDER_CHECKPOINT_MARKER  # the SDK and the server agree
    folder = run.checkpoint_dir / "checkpoint-20"
    (folder / "sub").mkdir(parents=True)
    (folder / "model.safetensors").write_bytes(b"m" * 100)
    (folder / "sub" / "optimizer.pt").write_bytes(b"o" * 50)
    os.utime(folder, ns=(1_000_000_000, 2_000_000_000))
    (run.checkpoint_dir / "checkpoint-30").mkdir()  # written but not registered: the scan does not count it

    assert run.register_checkpoint(folder, step=20) == folder
    assert json.loads((folder / job.FOLDER_MARKER_NAME).read_text()) == {"step": 20}
    assert folder.stat().st_mtime_ns == 2_000_000_000  # frameworks rotate their folders by this time
    assert not [p.name for p in folder.iterdir() if ".tmp-" in p.name]
    marker_bytes = (folder / job.FOLDER_MARKER_NAME).stat().st_size
    assert lineage.checkpoints_on_disk(run.checkpoint_dir) == [(20, folder, 150 + marker_bytes)]

    # A file: nothing is written beside it.
    ckpt = run.checkpoint_dir / "last.ckpt"
    ckpt.write_bytes(b"c")
    assert run.register_checkpoint(str(ckpt), step=21) == ckpt
    assert sorted(p.name for p in run.checkpoint_dir.iterdir()) == ["checkpoint-20", "checkpoint-30", "last.ckpt"]


def test_a_checkpoint_outside_the_folder_missing_or_of_a_negative_step_is_refused(run: job.Run, tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(JobError, match=r"not inside the checkpoint dir.*To fix: have the framework write"):
        run.register_checkpoint(tmp_path / "elsewhere", step=1)
    run.checkpoint_dir.mkdir()
    (run.checkpoint_dir / "escape").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(JobError, match="not inside the checkpoint dir"):
        run.register_checkpoint(run.checkpoint_dir / "escape", step=1)
    with pytest.raises(JobError, match=r"cannot be read .*To fix: register it after the framework has written it"):
        run.register_checkpoint(run.checkpoint_dir / "checkpoint-9", step=9)
    with pytest.raises(JobError, match="step=-1"):
        run.register_checkpoint(run.checkpoint_dir, step=-1)
