"""One attempt's supervisor: `python -m treino.server.supervisor ATTEMPT_DIR`, started detached by the local backend.

It outlives the server (its own session), so a server killed with SIGKILL leaves jobs running and adoptable.
    ATTEMPT_DIR/launch.json   in:  {"argv": [...], "cwd": "...", "env": {...}, "key": "...", "grace_s": 30,
                                    "user": {"name", "uid", "gid", "home"} | null,
                                    "cgroup": {"name", "memory_bytes", "gpus"} | null,
                                    "scratch": [folders deleted when the attempt ends]}
    ATTEMPT_DIR/output.log    the command's stdout and stderr (torchrun prefixes each line with its rank)
    ATTEMPT_DIR/state.json    {"supervisor_pid", "child_pid", "started_at", "cgroup"}, once the command runs
    ATTEMPT_DIR/exit.json     {"returncode", "ended_at", "leftovers_killed"}, written atomically at the end
The supervisor runs as the server's user; with "user" it starts the command as that unprivileged user (uid, gid,
no supplementary groups, HOME its folder), so the job cannot read the server's data dir. Output.log stays the
supervisor's: the job writes to the file descriptor it was given.
With "cgroup" (and cgroups available, treino.server.cgroups), the command is born in the attempt's own cgroup:
its memory limit, its GPUs, and the stop: every process in it is killed, whatever its environment or session.
Every process of the attempt also carries TREINO_ATTEMPT_KEY in its environment, even ones that start their own
session (torchrun's workers do): where there is no cgroup, the supervisor finds and kills them by that key, so no
process of a finished attempt is left holding a GPU.
"""

from __future__ import annotations

import contextlib
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

KEY_VAR = "TREINO_ATTEMPT_KEY"
LEFTOVER_WAIT_S = 5.0  # after the command exits: SIGTERM its leftover processes, SIGKILL them after this
POLL_S = 0.1
LAUNCH_FAILED_EXIT = 127  # the shell's "command not found"


def write_json_atomic(path: Path, data: dict[str, object]) -> None:
    tmp = path.with_suffix(".tmp")
    # 0600: launch.json holds the job's token and its env (which may hold the owner's secrets)
    with os.fdopen(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "w") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)


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
    with (attempt_dir / "output.log").open("ab") as log:
        cgroup = _make_cgroup(launch.get("cgroup"), log)
        try:
            if cgroup is not None:
                cgroups.join(cgroup)  # the command is born in the attempt's cgroup, then the supervisor leaves
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
            log.write(f"treino: cannot start {launch['argv'][0]!r} in {launch['cwd']!r}: {exc}\n".encode())
            log.flush()
            if cgroup is not None:
                cgroups.leave(cgroup)
                cgroups.remove(cgroup)
            write_json_atomic(
                attempt_dir / "exit.json",
                {"returncode": LAUNCH_FAILED_EXIT, "ended_at": time.time(), "leftovers_killed": 0},
            )
            return 0
        finally:
            if cgroup is not None and cgroup.main.exists() and os.getpid() in cgroups.procs(cgroup):
                cgroups.leave(cgroup)
    write_json_atomic(
        attempt_dir / "state.json",
        {
            "supervisor_pid": os.getpid(),
            "child_pid": child.pid,
            "started_at": time.time(),
            "cgroup": cgroup.to_record() if cgroup is not None else None,
        },
    )
    while child.poll() is None:
        if stopping["at"] and time.monotonic() - stopping["at"] > grace_s:
            if cgroup is not None:
                cgroups.kill(cgroup)
            for pid in pids_with_key(key):
                _signal(pid, signal.SIGKILL)
        time.sleep(POLL_S)
    leftovers = kill_leftovers(key, cgroup, LEFTOVER_WAIT_S)
    if cgroup is not None and child.returncode != 0 and cgroups.oom_kills(cgroup):
        with (attempt_dir / "output.log").open("ab") as log:  # the failure classifier reads it as an OOM
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
    write_json_atomic(
        attempt_dir / "exit.json",
        {"returncode": child.returncode, "ended_at": time.time(), "leftovers_killed": leftovers},
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(Path(sys.argv[1])))
