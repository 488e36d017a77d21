"""Launchers behind one small interface, so the scheduler and the API never assume one machine.

`LocalBackend` starts each attempt under a detached supervisor (treino.server.supervisor) on this machine. A Slurm
backend (multi-node torchrun through `srun`) is planned next: it will implement the same five methods, with
`handle` holding the Slurm job id instead of pids.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from treino.server.supervisor import kill_key, pids_with_key, write_json_atomic

LOG_TAIL_BYTES = 64 * 1024  # what the failure classifier reads of an attempt's output


@dataclass(frozen=True)
class LaunchRequest:
    job_id: int
    attempt: int
    argv: list[str]
    cwd: str
    env: dict[str, str]
    grace_s: float
    attempt_dir: Path
    key: str  # marks every process of the attempt (TREINO_ATTEMPT_KEY); chosen by the caller, recorded first


@dataclass(frozen=True)
class ExitInfo:
    returncode: int | None  # None: the attempt's supervisor vanished without a word (crash, reboot)
    log_tail: str
    leftovers_killed: int = 0


class Backend(Protocol):
    def launch(self, request: LaunchRequest) -> dict[str, Any]: ...
    def poll(self, handle: dict[str, Any]) -> ExitInfo | None: ...
    def stop(self, handle: dict[str, Any]) -> None: ...
    def kill(self, handle: dict[str, Any]) -> None: ...
    def pids(self, handle: dict[str, Any]) -> list[int]: ...


def read_tail(path: Path, nbytes: int = LOG_TAIL_BYTES) -> str:
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - nbytes))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


class LocalBackend:
    """Attempts as detached local processes: supervisor -> command (torchrun or python) -> workers."""

    def __init__(self) -> None:
        self._children: dict[int, subprocess.Popen[bytes]] = {}  # supervisors this server started, to reap

    def launch(self, request: LaunchRequest) -> dict[str, Any]:
        key = request.key
        request.attempt_dir.mkdir(parents=True, exist_ok=True)
        write_json_atomic(
            request.attempt_dir / "launch.json",
            {"argv": request.argv, "cwd": request.cwd, "env": request.env, "key": key, "grace_s": request.grace_s},
        )
        env = {k: v for k, v in os.environ.items() if k != "TREINO_ATTEMPT_KEY"}
        with (request.attempt_dir / "supervisor.log").open("ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "treino.server.supervisor", str(request.attempt_dir)],
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # outlives the server; a server crash does not take the job down
            )
        self._children[proc.pid] = proc
        # Written before the caller records the handle: a server that dies in between still finds its supervisor.
        (request.attempt_dir / "supervisor.pid").write_text(str(proc.pid))
        return {"node": "local", "supervisor_pid": proc.pid, "key": key, "dir": str(request.attempt_dir)}

    @staticmethod
    def _supervisor_pid(handle: dict[str, Any]) -> int | None:
        if handle.get("supervisor_pid"):
            return int(handle["supervisor_pid"])
        try:
            return int((Path(handle["dir"]) / "supervisor.pid").read_text())
        except (OSError, ValueError):
            return None  # never launched (the server stopped between recording the attempt and starting it)

    def _supervisor_alive(self, handle: dict[str, Any]) -> bool:
        pid = self._supervisor_pid(handle)
        if pid is None:
            return False
        child = self._children.get(pid)
        if child is not None:
            return child.poll() is None  # also reaps it
        try:  # adopted after a server restart: check the pid is still that supervisor, not a reused pid
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            return False
        return stat != "Z" and handle["dir"].encode() in cmdline

    def poll(self, handle: dict[str, Any]) -> ExitInfo | None:
        attempt_dir = Path(handle["dir"])
        exit_file = attempt_dir / "exit.json"
        if exit_file.exists():
            self._children.pop(self._supervisor_pid(handle) or -1, None)
            data = json.loads(exit_file.read_text())
            return ExitInfo(data["returncode"], read_tail(attempt_dir / "output.log"), data.get("leftovers_killed", 0))
        if self._supervisor_alive(handle):
            return None
        if exit_file.exists():  # it finished between the two checks
            return self.poll(handle)
        self._children.pop(self._supervisor_pid(handle) or -1, None)
        return ExitInfo(None, read_tail(attempt_dir / "output.log"))

    def stop(self, handle: dict[str, Any]) -> None:
        """SIGTERM: the supervisor forwards it to every process of the attempt, SIGKILLs after the grace period."""
        if self._supervisor_alive(handle):
            with contextlib.suppress(ProcessLookupError, TypeError):  # it may exit between check and signal
                os.kill(self._supervisor_pid(handle), signal.SIGTERM)  # type: ignore[arg-type]
        else:  # no supervisor to do it (it crashed): signal the processes directly
            for pid in pids_with_key(handle["key"]):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)

    def kill(self, handle: dict[str, Any]) -> None:
        """SIGKILL the attempt's supervisor and every process of it, now."""
        pid = self._supervisor_pid(handle)
        if pid is not None and self._supervisor_alive(handle):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        kill_key(handle["key"], grace_s=0.0)

    def pids(self, handle: dict[str, Any]) -> list[int]:
        return pids_with_key(handle["key"])
