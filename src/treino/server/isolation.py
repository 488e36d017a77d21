"""Jobs as an unprivileged Unix user, kept out of the server's data dir (docs/govern.md, "Trust model").

A server that runs as root starts every job as the job user (`--job-user`, default DEFAULT_JOB_USER, created with
`useradd --system` when missing). The data dir then reads:

    DATA_DIR/                 0711 server   others may pass through to a path they know, never list it
      treino.db, server-key,  0600 server   the job user cannot open them (the server runs with umask 077)
      admin-token
      store/                  0700 server   dataset versions: a job gets a copy of its pinned one (give_dataset)
      jobs/ID/                0711 server
        attempt-N/            0700 server   launch.json (the job's token), output.log, exit.json: the supervisor's
        checkpoints/          0700 job      TREINO_CHECKPOINT_DIR
        work/                 0700 job      HOME, and the working directory of a spec without `workdir`
        datasets/             0711 server   copies of the job's pinned dataset versions, each 0400 job

A server that is not root cannot switch users: its jobs run as itself and can read everything above (it says so at
start). Jobs of different treino users share the one job user, so they can read each other's folders.
"""

from __future__ import annotations

import os
import pwd
import shutil
import stat
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from treino.errors import TreinoError
from treino.server.settings import (
    ADMIN_TOKEN_FILE,
    DATASET_COPIES_DIR,
    DEFAULT_JOB_USER,
    JOB_CHECKPOINTS_DIR,
    JOB_TRACKERS_DIR,
    JOB_WORK_DIR,
    KEY_FILE,
    SQLITE_FILE,
    USERADD_TIMEOUT_S,
)

PRIVATE_DIR_MODE = 0o700
PASS_THROUGH_MODE = 0o711  # others may enter (to their own job folder) but not list


@dataclass(frozen=True)
class JobUser:
    name: str
    uid: int
    gid: int

    def to_record(self, home: Path) -> dict[str, object]:
        """What launch.json holds for the supervisor."""
        return {"name": self.name, "uid": self.uid, "gid": self.gid, "home": str(home)}


def server_user() -> str:
    try:
        return pwd.getpwuid(os.geteuid()).pw_name
    except KeyError:
        return str(os.geteuid())


def resolve_job_user(name: str | None) -> JobUser | None:
    """The user jobs run as; None when they run as the server's own user (not root, or `--job-user` names it).
    As root with no `--job-user`, DEFAULT_JOB_USER, created when missing."""
    if name is None:
        if os.geteuid() != 0:
            return None
        name = DEFAULT_JOB_USER
    try:
        entry = pwd.getpwnam(name)
    except KeyError:
        if name != DEFAULT_JOB_USER or os.geteuid() != 0:
            raise TreinoError(
                f"--job-user {name!r}: no such Unix user. To fix: create it (useradd --system --user-group "
                f"--no-create-home --shell /usr/sbin/nologin {name}), or leave --job-user out to use "
                f"{DEFAULT_JOB_USER}, which the server creates."
            ) from None
        entry = _create_user(name)
    if entry.pw_uid == os.geteuid():
        return None
    if os.geteuid() != 0:
        raise TreinoError(
            f"--job-user {name!r} needs the server to run as root (it is {server_user()}): only root can start "
            "a process as another user. To fix: start the server as root, or leave --job-user out (jobs then run "
            "as the server's user and can read its data dir)."
        )
    if entry.pw_uid == 0:
        raise TreinoError(
            f"--job-user {name!r} is root: jobs could read everything. To fix: name an unprivileged user."
        )
    return JobUser(entry.pw_name, entry.pw_uid, entry.pw_gid)


def _create_user(name: str) -> pwd.struct_passwd:
    argv = ["useradd", "--system", "--user-group", "--no-create-home", "--shell", "/usr/sbin/nologin", name]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=USERADD_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TreinoError(
            f"Cannot create the job user {name!r} ({exc}). To fix: create it yourself ({' '.join(argv)}), or "
            "name an existing unprivileged user with --job-user."
        ) from exc
    if done.returncode != 0:
        raise TreinoError(
            f"Cannot create the job user {name!r}: useradd said {done.stderr.strip()!r}. To fix: create it "
            f"yourself ({' '.join(argv)}), or name an existing unprivileged user with --job-user."
        )
    return pwd.getpwnam(name)


def _may_enter(path: Path, user: JobUser) -> bool:
    st = path.stat()
    if st.st_uid == user.uid:
        return bool(st.st_mode & stat.S_IXUSR)
    if st.st_gid == user.gid:
        return bool(st.st_mode & stat.S_IXGRP)
    return bool(st.st_mode & stat.S_IXOTH)


def blocked_at(path: Path, user: JobUser) -> Path | None:
    """The first folder above `path` that `user` may not pass through (None: it reaches `path`)."""
    for parent in reversed(path.parents):
        if parent.exists() and not _may_enter(parent, user):
            return parent
    return None


def check_reachable(top: Path, user: JobUser) -> None:
    """Refuse to start when the job user could not pass through a parent of the folder that holds the job
    folders (`top`: the data dir or the shared dir; e.g. under /root, 0700): every job would fail to start, far
    from the cause. `top` itself is made passable by `secure_data_dir`."""
    parent = blocked_at(top, user)
    if parent is not None:
        raise TreinoError(
            f"The job user {user.name} cannot enter {parent} (mode {parent.stat().st_mode & 0o777:04o}), so "
            f"its jobs could not reach their folders under {top}. To fix: use a --data-dir (or --shared-dir) "
            f"under a folder others may enter (e.g. /var/lib/treino), or 'chmod o+x {parent}'."
        )


def python_warning(python: str, user: JobUser) -> str | None:
    """Why the job user cannot run the server's Python (what `script:` jobs run with), or None if it can."""
    real = Path(python).resolve()
    parent = blocked_at(real, user)
    if parent is None:
        return None
    return (
        f"the job user {user.name} cannot run {python} ({real} is under {parent}, mode "
        f"{parent.stat().st_mode & 0o777:04o}): jobs with a `script` will fail to start. To fix: install Python "
        f"and the venv where others may read them (e.g. /opt or /usr/local), or 'chmod o+x {parent}'."
    )


def secure_data_dir(data_dir: Path, shared_dir: Path | None) -> None:
    """Make the data dir the layout above: everything the server keeps private, the job folders reachable. New
    files are private from now on (umask 077); files made before this version are tightened here."""
    os.umask(0o077)
    for top in {data_dir, shared_dir or data_dir}:
        top.chmod(PASS_THROUGH_MODE)
        (top / "jobs").mkdir(exist_ok=True)
        (top / "jobs").chmod(PASS_THROUGH_MODE)
        (top / "store").mkdir(exist_ok=True)
        (top / "store").chmod(PRIVATE_DIR_MODE)
    for name in (SQLITE_FILE, f"{SQLITE_FILE}-wal", f"{SQLITE_FILE}-shm", f"{SQLITE_FILE}-journal", KEY_FILE):
        path = data_dir / name
        if path.exists():
            path.chmod(0o600)
    if (data_dir / ADMIN_TOKEN_FILE).exists():
        (data_dir / ADMIN_TOKEN_FILE).chmod(0o600)


def _owned_dir(path: Path, user: JobUser) -> Path:
    """`path`, the job user's and 0700; what it already holds (e.g. checkpoints an attempt wrote before the server
    ran jobs as the job user) is handed over too, so a restarted job can restore and rotate them."""
    path.mkdir(parents=True, exist_ok=True)
    if path.stat().st_uid != user.uid:
        for folder, _, files in os.walk(path):
            for name in [folder, *(os.path.join(folder, f) for f in files)]:
                os.chown(name, user.uid, user.gid, follow_symlinks=False)
    path.chmod(PRIVATE_DIR_MODE)
    return path


def prepare_job_folder(job_dir: Path, user: JobUser | None) -> tuple[Path, Path]:
    """(checkpoints, work) of a job, made before each attempt: the job user's own, 0700, when there is one."""
    checkpoints, work = job_dir / JOB_CHECKPOINTS_DIR, job_dir / JOB_WORK_DIR
    if user is None:
        checkpoints.mkdir(parents=True, exist_ok=True)
        return checkpoints, job_dir  # as before: the job folder itself is the default working directory
    job_dir.mkdir(parents=True, exist_ok=True)
    job_dir.chmod(PASS_THROUGH_MODE)
    return _owned_dir(checkpoints, user), _owned_dir(work, user)


def prepare_trackers_dir(job_dir: Path, user: JobUser | None) -> Path:
    """The job's trackers folder (TREINO_TRACKERS_DIR: TensorBoard, MLflow, W&B), made before each attempt: the job
    user's own, 0700, when there is one."""
    trackers = job_dir / JOB_TRACKERS_DIR
    if user is None:
        trackers.mkdir(parents=True, exist_ok=True)
        return trackers
    return _owned_dir(trackers, user)


def give_dataset(stored: Path, job_dir: Path, user: JobUser | None) -> Path:
    """The path a job reads a pinned dataset version at: the store's own file when the job runs as the server's
    user; otherwise a copy in the job's folder, owned by the job user, mode 0400 (the store stays closed to it).
    Erasure deletes the copies with the version (`drop_dataset_copies`).

    The copies' folder is the server's (0711), not the job user's: a job that could write there could put a
    symlink where the server (root) writes, and have any file of the machine overwritten and handed to it. Each
    copy is written under a fresh name (O_EXCL), owned and moded through its descriptor, then renamed into place, so
    ranks asking at the same time never see a partial file."""
    if user is None:
        return stored
    copies = job_dir / DATASET_COPIES_DIR
    copies.mkdir(exist_ok=True)
    copies.chmod(PASS_THROUGH_MODE)
    copy = copies / stored.name
    if copy.exists() and copy.stat().st_size == stored.stat().st_size:
        return copy
    fd, tmp = tempfile.mkstemp(dir=copies, prefix=f".{stored.name}.")
    try:
        with os.fdopen(fd, "wb") as out, stored.open("rb") as source:
            shutil.copyfileobj(source, out)
            os.fchown(out.fileno(), user.uid, user.gid)
            os.fchmod(out.fileno(), 0o400)
        os.replace(tmp, copy)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return copy


def drop_dataset_copies(jobs_dir: Path, stored_names: set[str]) -> list[Path]:
    """Delete every job's copy of the given store files (an erasure purged their versions); the paths removed."""
    removed = []
    for name in stored_names:
        for copy in jobs_dir.glob(f"*/{DATASET_COPIES_DIR}/{name}"):
            copy.unlink(missing_ok=True)
            removed.append(copy)
    return removed
