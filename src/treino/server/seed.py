"""A continued job's first checkpoint: the old job's, placed in the new job's checkpoint folder before its first
attempt, so that `run.restore()` finds it as if the job had saved it itself (treino.server.resubmission makes such
jobs; the engine seeds them in Service._prepare, and the lineage records the seeded checkpoint as the new job's).

The checkpoint is hard-linked file by file; a sharded checkpoint is a folder (`step-{step:09d}/`): its folders are
made again and each file linked. So seeding costs no copy however large the checkpoint. Where the filesystem refuses
a link (another filesystem, a file at its link limit) the file is copied instead, which costs its size in time and
disk. Sharing the files is safe: the SDK never writes a checkpoint in place (a temp file is renamed over the name)
and rotates old ones by unlinking, so the new job's saves and rotation never change the old job's files.

The server may be root, and the old checkpoint folder is the job user's (its jobs could have put anything there):
- the new folder is built in a fresh folder of the server's own (mkdtemp, 0700) inside the new job's folder (the
  server's, 0711), then renamed into place as `checkpoints/` whole: no job process sees it half made, and a seeding
  cut short by a crash leaves no `checkpoints/`, so the next tick seeds again (removing the staging folder left);
- only regular files of the job user (of the server's user when jobs run as it) are taken. Each link is checked
  once made, where no job can swap it: a symlink, or a hard link to another user's file planted in the old folder
  (say to /etc/shadow), is removed, skipped with a warning, and never handed to the job. A file copied instead is
  opened without following a symlink or waiting (a FIFO at its link limit would block the open) and checked first;
- treino.server.isolation.prepare_job_folder then gives the folder to the job user (what the server made in it).
"""

from __future__ import annotations

import errno
import logging
import os
import shutil
import stat
import tempfile
from pathlib import Path

from treino.errors import TreinoError
from treino.i18n import Msg
from treino.server.isolation import JobUser
from treino.server.lineage import checkpoints_on_disk
from treino.server.settings import JOB_CHECKPOINTS_DIR

log = logging.getLogger("treino.server")

# Why a link may fail where a copy works: another filesystem, a file at its link limit, a filesystem without links.
COPY_INSTEAD_ERRNOS = frozenset({errno.EXDEV, errno.EMLINK, errno.EPERM, errno.ENOTSUP})
SEED_PREFIX = ".seed-"  # the private folder a seeding is built in, inside the new job's folder


class CheckpointGone(TreinoError):
    """The checkpoint a continued job starts from is no longer on disk: the job cannot start as asked."""


class ContinuationErased(TreinoError):
    """Data the checkpoint a continued job starts from was trained on was erased since the resubmit: the job may not
    start from it (its models would carry the erased subject)."""


def find_checkpoint(folder: Path, step: int) -> tuple[Path, int] | None:
    """(path, bytes) of the complete checkpoint of `step` in `folder` (a `step-*.pt` file or a sharded folder with
    its completion marker), or None."""
    for found_step, path, size in checkpoints_on_disk(folder):
        if found_step == step:
            return path, size
    return None


def newest_checkpoint(folder: Path) -> tuple[int, Path] | None:
    """(step, path) of the newest complete checkpoint in `folder`, or None."""
    found = checkpoints_on_disk(folder)
    return (found[-1][0], found[-1][1]) if found else None


def seed_checkpoint(source_dir: Path, step: int, job_dir: Path, user: JobUser | None) -> tuple[Path, int]:
    """The checkpoint of `step` in `source_dir`, placed in `job_dir`/checkpoints (made here: it must not exist yet,
    or it is taken as seeded by an earlier tick); its path there and its bytes. CheckpointGone when the source is no
    longer on disk; OSError when the disk refuses (the job stays queued and is tried again)."""
    dest_dir = job_dir / JOB_CHECKPOINTS_DIR
    if dest_dir.exists():  # an earlier tick seeded it, and its attempt was not recorded: the seed stands
        seeded = find_checkpoint(dest_dir, step)
        if seeded is not None:
            return seeded
        raise CheckpointGone(Msg("{folder} exists but holds no checkpoint of step {step}.", folder=dest_dir, step=step))
    source = find_checkpoint(source_dir, step)
    if source is None:
        raise CheckpointGone(
            Msg(
                "the checkpoint of step {step} in {folder} is no longer on disk (deleted, or erased with its data). "
                "To fix: resubmit the old job with --from-scratch.",
                step=step,
                folder=source_dir,
            )
        )
    owner = user.uid if user is not None else os.geteuid()
    job_dir.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(job_dir)
    staging = Path(tempfile.mkdtemp(prefix=SEED_PREFIX, dir=job_dir))
    try:
        target = staging / source[0].name
        if source[0].is_dir():
            _link_tree(source[0], target, owner)
        else:
            _link_file(source[0], target, owner)
        if find_checkpoint(staging, step) is None:  # what made it one (the file, the folder's marker) was skipped
            raise CheckpointGone(
                Msg(
                    "the checkpoint of step {step} in {folder} is not the job's own files (see the server's log). To "
                    "fix: resubmit the old job with --from-scratch.",
                    step=step,
                    folder=source_dir,
                )
            )
        os.rename(staging, dest_dir)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    seeded = find_checkpoint(dest_dir, step)
    assert seeded is not None  # checked in the staging folder, which no job can reach
    return seeded


def _remove_stale_staging(job_dir: Path) -> None:
    """The staging folders a seeding cut short (the server killed mid-seed) left in `job_dir`: the server's own
    (only it writes in the job's folder), never renamed into place, so nobody else's."""
    for entry in os.scandir(job_dir):
        if entry.name.startswith(SEED_PREFIX) and entry.is_dir(follow_symlinks=False):
            log.info("removing %s, left by a seeding cut short", entry.path)
            shutil.rmtree(entry.path)


def _link_tree(source: Path, target: Path, owner: int) -> None:
    """`target` made as a tree of folders (the server's, 0700) holding links to `source`'s files."""
    target.mkdir(mode=0o700)
    for folder, dirs, files in os.walk(source):  # symlinked folders are not followed
        here = target / Path(folder).relative_to(source)
        for name in dirs:
            if not os.path.islink(os.path.join(folder, name)):
                (here / name).mkdir(mode=0o700)
        for name in files:
            _link_file(Path(folder) / name, here / name, owner)


def _link_file(source: Path, target: Path, owner: int) -> None:
    """`target`, a hard link to (or a copy of) `source` when that is a regular file of `owner`; else nothing."""
    try:
        os.link(source, target, follow_symlinks=False)
    except OSError as exc:
        if exc.errno not in COPY_INSTEAD_ERRNOS:
            raise
        _copy_file(source, target, owner)
        return
    st = os.lstat(target)  # the link, in the server's private folder: what it is cannot change under us
    if not stat.S_ISREG(st.st_mode) or st.st_uid != owner:
        target.unlink()
        log.warning("not seeding %s: not a regular file of uid %s", source, owner)


def _copy_file(source: Path, target: Path, owner: int) -> None:
    """`target`, a copy of `source` when that is a regular file of `owner`; else nothing. Opened without following
    a symbolic link and without waiting: a FIFO (whose open would block until a writer came, say one at its link
    limit, which is what sends it here) is refused by the check that follows, before any read."""
    try:
        fd = os.open(source, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ELOOP:  # a symlink
            log.warning("not seeding %s: a symbolic link", source)
            return
        raise
    with os.fdopen(fd, "rb") as src:
        st = os.fstat(src.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_uid != owner:
            log.warning("not seeding %s: not a regular file of uid %s", source, owner)
            return
        with open(os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as out:
            shutil.copyfileobj(src, out)
