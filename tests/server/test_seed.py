"""Seeding a continued job's checkpoint folder (treino.server.seed) on a real filesystem: a file and a sharded
folder are linked, never copied or followed; what the old job's user could have planted is not handed on."""

from __future__ import annotations

import errno
import os
import pwd
from pathlib import Path

import pytest

from tests.server.fifos import returns_despite_fifo
from treino.server.seed import CheckpointGone, newest_checkpoint, seed_checkpoint

LINKS_TRIED_MAX = 70_000  # ext4 refuses the 65,000th link to a file; a filesystem that takes this many is skipped


def old_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "jobs" / "1" / "checkpoints"
    folder.mkdir(parents=True)
    (folder / "step-000000005.pt").write_bytes(b"five")
    (folder / ".treino-reports.jsonl").write_text("{}\n")  # the old job's report journal: never seeded
    return folder


def test_a_file_checkpoint_is_linked_and_the_rest_left_behind(tmp_path: Path) -> None:
    source = old_folder(tmp_path)
    (source / "step-000000010.pt").write_bytes(b"ten!!")
    job_dir = tmp_path / "jobs" / "2"
    path, size = seed_checkpoint(source, 10, job_dir, None)
    assert (path, size) == (job_dir / "checkpoints" / "step-000000010.pt", 5)
    assert os.listdir(job_dir / "checkpoints") == ["step-000000010.pt"]
    assert path.stat().st_ino == (source / "step-000000010.pt").stat().st_ino  # a link: no bytes copied
    assert [p.name for p in job_dir.iterdir()] == ["checkpoints"]  # the private staging folder was renamed
    # Seeded once: a second call (a tick whose attempt was not recorded) finds it there.
    assert seed_checkpoint(source, 10, job_dir, None) == (path, size)
    assert newest_checkpoint(job_dir / "checkpoints") == (10, path)


def test_a_sharded_checkpoint_folder_is_linked_as_a_tree(tmp_path: Path) -> None:
    source = old_folder(tmp_path)
    shard = source / "step-000000007"
    (shard / "extra").mkdir(parents=True)
    for name, data in ((".metadata", b"m"), ("__0_0.distcp", b"rank0"), ("__1_0.distcp", b"rank1")):
        (shard / name).write_bytes(data)
    (shard / "extra" / "optim.distcp").write_bytes(b"o")
    assert newest_checkpoint(source) == (7, shard)
    path, size = seed_checkpoint(source, 7, tmp_path / "jobs" / "3", None)
    assert path.name == "step-000000007" and size == 1 + 5 + 5 + 1
    assert sorted(str(p.relative_to(path)) for p in path.rglob("*")) == [
        ".metadata",
        "__0_0.distcp",
        "__1_0.distcp",
        "extra",
        "extra/optim.distcp",
    ]
    assert (path / "extra" / "optim.distcp").stat().st_ino == (shard / "extra" / "optim.distcp").stat().st_ino


def test_what_the_job_user_could_plant_is_never_handed_on(tmp_path: Path) -> None:
    source = old_folder(tmp_path)
    secret = tmp_path / "secret"
    secret.write_text("the server's")
    (source / "step-000000009.pt").symlink_to(secret)  # looks like the newest checkpoint
    with pytest.raises(CheckpointGone):
        seed_checkpoint(source, 9, tmp_path / "jobs" / "4", None)
    assert not (tmp_path / "jobs" / "4" / "checkpoints").exists()
    if os.geteuid() == 0:  # a file of another user (a hard link to it, say) is not the job's to read
        (source / "step-000000008.pt").write_bytes(b"eight")
        nobody = pwd.getpwnam("nobody")
        os.chown(source / "step-000000008.pt", nobody.pw_uid, nobody.pw_gid)
        with pytest.raises(CheckpointGone):
            seed_checkpoint(source, 8, tmp_path / "jobs" / "5", None)
    with pytest.raises(CheckpointGone, match="--from-scratch"):
        seed_checkpoint(source, 6, tmp_path / "jobs" / "6", None)  # no such step (deleted, erased)


def test_a_fifo_at_its_link_limit_is_skipped_not_opened(tmp_path: Path) -> None:
    # A FIFO hard-linked until the filesystem refuses another link: seeding then copies instead of linking, and
    # the copy must not open it (an open blocks until a writer comes: the engine's tick would hang).
    source = old_folder(tmp_path)
    shard = source / "step-000000007"
    shard.mkdir()
    (shard / ".metadata").write_bytes(b"m")
    fifo = shard / "__0_0.distcp"
    os.mkfifo(fifo)
    links = tmp_path / "links"
    links.mkdir()
    for n in range(LINKS_TRIED_MAX):
        try:
            os.link(fifo, links / str(n))
        except OSError as exc:
            assert exc.errno == errno.EMLINK
            break
    else:
        pytest.skip(f"{tmp_path}'s filesystem takes {LINKS_TRIED_MAX} links to a file")
    job_dir = tmp_path / "jobs" / "2"
    (job_dir / ".seed-left").mkdir(parents=True)  # a seeding cut short by a crash left its staging folder
    (job_dir / ".seed-left" / "step-000000007").mkdir()
    path, size = returns_despite_fifo(lambda: seed_checkpoint(source, 7, job_dir, None), fifo)
    assert (path, size) == (job_dir / "checkpoints" / "step-000000007", 1)
    assert sorted(os.listdir(path)) == [".metadata"]  # the FIFO was not handed on
    assert os.listdir(job_dir) == ["checkpoints"]  # nor the staging folder left before
