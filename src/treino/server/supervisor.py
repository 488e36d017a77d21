"""One attempt's supervisor: `python -m treino.server.supervisor ATTEMPT_DIR`, started detached by the local backend.

It outlives the server (its own session), so a server killed with SIGKILL leaves jobs running and adoptable.
    ATTEMPT_DIR/launch.json   in:  {"argv": [...], "cwd": "...", "env": {...}, "key": "...", "grace_s": 30,
                                    "user": {"name", "uid", "gid", "home"} | null,
                                    "cgroup": {"name", "memory_bytes", "gpus"} | null,
                                    "scratch": [folders deleted when the attempt ends]}
    ATTEMPT_DIR/output.log    the command's stdout and stderr (torchrun prefixes each line with its rank)
    ATTEMPT_DIR/state.json    {"supervisor_pid", "child_pid", "started_at", "cgroup"}, once the command runs
    ATTEMPT_DIR/exit.reserve  EXIT_RESERVE_BYTES held while the command runs, freed to record its exit
    ATTEMPT_DIR/exit.json     {"returncode", "ended_at", "leftovers_killed"}, written atomically at the end, with
                              "disk_full": "what was seen" when the command failed on a full disk
The supervisor runs as the server's user; with "user" it starts the command as that unprivileged user (uid, gid,
no supplementary groups, HOME its folder), so the job cannot read the server's data dir. Output.log stays the
supervisor's: the job writes to the file descriptor it was given.
With "cgroup" (and cgroups available, treino.server.cgroups), the command is born in the attempt's own cgroup:
its memory limit, its GPUs, and the stop: every process in it is killed, whatever its environment or session.
A command that fills the disk leaves no room to record its end, nor for its traceback in output.log: the reserve
makes room for exit.json (and for the server's database to record it, when it shares the disk), and the supervisor
says the disk was full itself, from the free space it saw when the command exited or from a write that failed.
Every process of the attempt also carries TREINO_ATTEMPT_KEY in its environment, even ones that start their own
session (torchrun's workers do): where there is no cgroup, the supervisor finds and kills them by that key, so no
process of a finished attempt is left holding a GPU.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from treino.server import cgroups
from treino.server.cgroups import Cgroup
from treino.server.settings import EXIT_RESERVE_BYTES

KEY_VAR = "TREINO_ATTEMPT_KEY"
LEFTOVER_WAIT_S = 5.0  # after the command exits: SIGTERM its leftover processes, SIGKILL them after this
POLL_S = 0.1
LAUNCH_FAILED_EXIT = 127  # the shell's "command not found"
DISK_FULL_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT})  # no space left; the user's disk quota exceeded
RESERVE_FILE = "exit.reserve"


def write_json_atomic(path: Path, data: dict[str, object]) -> None:
    tmp = path.with_suffix(".tmp")
    # 0600: launch.json holds the job's token and its env (which may hold the owner's secrets)
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


def reserve_space(attempt_dir: Path) -> str | None:
    """Hold EXIT_RESERVE_BYTES in `attempt_dir` (random bytes: a compressing filesystem must store them); None when
    held, else what the full disk said."""
    try:
        with (attempt_dir / RESERVE_FILE).open("wb") as f:
            f.write(os.urandom(EXIT_RESERVE_BYTES))
    except OSError as exc:
        if exc.errno not in DISK_FULL_ERRNOS:
            raise
        (attempt_dir / RESERVE_FILE).unlink(missing_ok=True)
        return f"no room for the attempt's {EXIT_RESERVE_BYTES:,}-byte exit reserve in {attempt_dir}: {exc.strerror}"
    return None


def free_bytes(path: Path) -> int:
    """Bytes an unprivileged process may still write on `path`'s filesystem."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def record_exit(attempt_dir: Path, returncode: int, leftovers_killed: int, disk_full: str | None = None) -> None:
    """exit.json, whatever the disk: a command that failed with less than EXIT_RESERVE_BYTES free on its folder's
    filesystem (the reserve still held) failed on a full disk; the reserve is freed before the record is written
    then, or when writing it fails for want of space."""
    reserve = attempt_dir / RESERVE_FILE
    if disk_full is None and returncode != 0 and (free := free_bytes(attempt_dir)) < EXIT_RESERVE_BYTES:
        disk_full = f"the command exited with code {returncode} while {attempt_dir} had {free:,} bytes free"
    if disk_full is not None:
        reserve.unlink(missing_ok=True)
    record: dict[str, object] = {
        "returncode": returncode,
        "ended_at": time.time(),
        "leftovers_killed": leftovers_killed,
    }

    def write(marker: str | None) -> None:
        write_json_atomic(attempt_dir / "exit.json", {**record, **({"disk_full": marker} if marker else {})})

    try:
        write(disk_full)
    except OSError as exc:
        if exc.errno not in DISK_FULL_ERRNOS:
            raise
        reserve.unlink(missing_ok=True)
        if returncode != 0 and disk_full is None:
            disk_full = f"the command exited with code {returncode}; writing its exit status failed: {exc.strerror}"
        write(disk_full)
    reserve.unlink(missing_ok=True)


def pids_with_key(key: str) -> list[int]:
    """Processes whose environment holds TREINO_ATTEMPT_KEY=key (this user's; /proc/PID/environ)."""
    needle = f"{KEY_VAR}={key}".encode()
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/environ", "rb") as f:
                if needle in f.read().split(b"\0"):
                    found.append(int(entry))
        except OSError:
            continue
    return found


def _alive_not_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


def kill_key(key: str, grace_s: float) -> int:
    """SIGTERM every process of `key`, SIGKILL those still alive after `grace_s`; the number that needed SIGKILL."""
    for pid in pids_with_key(key):
        _signal(pid, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive_not_zombie(p) for p in pids_with_key(key)):
        time.sleep(POLL_S)
    stubborn = [p for p in pids_with_key(key) if _alive_not_zombie(p)]
    for pid in stubborn:
        _signal(pid, signal.SIGKILL)
    return len(stubborn)


def _signal(pid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.kill(pid, sig)


def stop_all(key: str, cgroup: Cgroup | None, sig: int) -> None:
    """`sig` to every process of the attempt: those in its cgroup and those carrying its key."""
    if cgroup is not None:
        cgroups.signal_all(cgroup, sig)
    for pid in pids_with_key(key):
        _signal(pid, sig)


def kill_leftovers(key: str, cgroup: Cgroup | None, grace_s: float) -> int:
    """After the command exited: SIGTERM what is left of the attempt, SIGKILL what is still there after `grace_s`
    (the whole cgroup, frozen first); the number that needed SIGKILL."""
    if cgroup is None:
        return kill_key(key, grace_s)
    stop_all(key, cgroup, signal.SIGTERM)
    deadline = time.monotonic() + grace_s
    while time.monotonic() < deadline and any(_alive_not_zombie(p) for p in cgroups.procs(cgroup)):
        time.sleep(POLL_S)
    stubborn = cgroups.kill(cgroup) if any(_alive_not_zombie(p) for p in cgroups.procs(cgroup)) else 0
    return stubborn + kill_key(key, 0.0)


def _user_kwargs(user: dict[str, Any] | None, env: dict[str, str]) -> dict[str, Any]:
    """Popen's arguments that drop to the job's user: its uid and gid, no supplementary groups, its HOME."""
    if not user:
        return {}
    env.update({"HOME": str(user["home"]), "USER": str(user["name"]), "LOGNAME": str(user["name"])})
    return {"user": int(user["uid"]), "group": int(user["gid"]), "extra_groups": []}


def _make_cgroup(spec: dict[str, Any] | None, log: Any) -> Cgroup | None:
    if not spec:
        return None
    gpus = spec.get("gpus")
    try:
        return cgroups.create(str(spec["name"]), spec.get("memory_bytes"), None if gpus is None else tuple(gpus))
    except OSError as exc:  # the attempt still runs, stopped by its key; said in its log
        log.write(f"treino: no cgroup for this attempt ({exc}); its limits do not apply\n".encode())
        log.flush()
        return None


def _join(cgroup: Cgroup | None, log: Any) -> Cgroup | None:
    """The supervisor in the attempt's cgroup, so that the command is born there (it leaves once the command runs);
    None, said in the log, when the kernel refuses: the attempt runs without its limits rather than fail."""
    if cgroup is None:
        return None
    try:
        cgroups.join(cgroup)
    except OSError as exc:
        log.write(f"treino: could not enter this attempt's cgroup ({exc}); its limits do not apply\n".encode())
        log.flush()
        with contextlib.suppress(OSError):
            cgroups.remove(cgroup)
        return None
    return cgroup


def main(attempt_dir: Path) -> int:
    launch = json.loads((attempt_dir / "launch.json").read_text())
    key, grace_s = launch["key"], float(launch["grace_s"])
    env = {**launch["env"], KEY_VAR: key}
    user_kwargs = _user_kwargs(launch.get("user"), env)
    stopping = {"at": 0.0}
    cgroup: Cgroup | None = None

    def on_term(_sig: int, _frame: object) -> None:
        # Preemption, cancel or timeout: every process of the attempt gets SIGTERM now (torchrun forwards it
        # to its workers, which run in their own sessions, so they get it directly as well).
        if not stopping["at"]:
            stopping["at"] = time.monotonic()
            stop_all(key, cgroup, signal.SIGTERM)

    signal.signal(signal.SIGTERM, on_term)
    no_room = reserve_space(attempt_dir)
    if no_room is not None:  # the disk is full already: the command would fail on it, unrecorded
        record_exit(attempt_dir, LAUNCH_FAILED_EXIT, 0, disk_full=no_room)
        return 0
    with (attempt_dir / "output.log").open("ab") as log:
        cgroup = _join(_make_cgroup(launch.get("cgroup"), log), log)
        try:
            child = subprocess.Popen(
                launch["argv"],
                cwd=launch["cwd"],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                **user_kwargs,
            )
        except OSError as exc:  # no such program or working directory: the job's error, said in its log
            with contextlib.suppress(OSError):  # a full disk: the record below says so
                log.write(f"treino: cannot start {launch['argv'][0]!r} in {launch['cwd']!r}: {exc}\n".encode())
                log.flush()
            if cgroup is not None:
                cgroups.leave(cgroup)
                cgroups.remove(cgroup)
            record_exit(attempt_dir, LAUNCH_FAILED_EXIT, 0)
            return 0
        finally:
            if cgroup is not None and cgroup.main.exists() and os.getpid() in cgroups.procs(cgroup):
                cgroups.leave(cgroup)
    _record_state(attempt_dir, child.pid, cgroup)
    while child.poll() is None:
        if stopping["at"] and time.monotonic() - stopping["at"] > grace_s:
            if cgroup is not None:
                cgroups.kill(cgroup)
            for pid in pids_with_key(key):
                _signal(pid, signal.SIGKILL)
        time.sleep(POLL_S)
    leftovers = kill_leftovers(key, cgroup, LEFTOVER_WAIT_S)
    _clean_up(attempt_dir, launch, cgroup, child.returncode)
    record_exit(attempt_dir, child.returncode, leftovers)
    return 0


def _record_state(attempt_dir: Path, child_pid: int, cgroup: Cgroup | None) -> None:
    try:
        write_json_atomic(
            attempt_dir / "state.json",
            {
                "supervisor_pid": os.getpid(),
                "child_pid": child_pid,
                "started_at": time.time(),
                "cgroup": cgroup.to_record() if cgroup is not None else None,
            },
        )
    except OSError as exc:  # the command runs: supervising it matters more than this record (no one waits for it)
        if exc.errno not in DISK_FULL_ERRNOS:
            raise


def _clean_up(attempt_dir: Path, launch: dict[str, Any], cgroup: Cgroup | None, returncode: int) -> None:
    """After the command and its leftovers are gone: an OOM kill said in the log, the cgroup and the scratch
    folders (dataset copies) removed."""
    if cgroup is not None and returncode != 0 and cgroups.oom_kills(cgroup):
        # the failure classifier reads it as an OOM; a full disk may refuse the line (exit.json says so then)
        with contextlib.suppress(OSError), (attempt_dir / "output.log").open("ab") as log:
            limit = launch["cgroup"].get("memory_bytes")
            log.write(
                f"treino: OutOfMemoryError: the attempt went over its memory limit ({limit} bytes, the "
                "spec's memory_gb) and the kernel's OOM killer ended it\n".encode()
            )
    if cgroup is not None:
        with contextlib.suppress(OSError):  # a process stuck in the kernel (D state) keeps it
            cgroups.remove(cgroup)
    for folder in launch.get("scratch", []):
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
