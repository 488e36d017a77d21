"""Launchers behind one interface, so the service, the scheduler and the API never assume one machine.

    Backend                 what the service may ask, and all it may know of where jobs run
    ├── LocalBackend        this machine: each attempt under a detached supervisor (treino.server.supervisor)
    └── SlurmBackend        an existing Slurm cluster: each attempt is one `sbatch` job (treino.server.slurm)

The service records `handle_for(request)` with the attempt *before* calling `launch`, then the handle `launch`
returns: a server killed in between still finds what it started (a supervisor's pid file, a Slurm job's name).
Everything a handle holds is the backend's business; the service stores it and hands it back.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from treino.errors import TreinoError
from treino.server import cgroups
from treino.server import inventory as nvml
from treino.server.cgroups import Cgroup
from treino.server.inventory import Inventory
from treino.server.isolation import JobUser
from treino.server.settings import DATASET_COPIES_DIR
from treino.server.supervisor import KEY_VAR, LAUNCH_FAILED_EXIT, kill_key, pids_with_key, write_json_atomic

LOG_TAIL_BYTES = 64 * 1024  # what the failure classifier reads of an attempt's output


class BackendUnavailable(TreinoError):
    """The backend cannot be reached now (e.g. slurmctld down): nothing was started, try again later."""


@dataclass(frozen=True)
class LaunchRequest:
    job_id: int
    attempt: int
    argv: list[str]  # the command on one node: plain Python, `torchrun --standalone`, or the spec's command
    cwd: str
    env: dict[str, str]
    grace_s: float
    attempt_dir: Path
    key: str  # marks every process of the attempt (TREINO_ATTEMPT_KEY); chosen by the caller, recorded first
    devices: tuple[int, ...] = ()  # the inventory's devices the scheduler gave the attempt (all nodes)
    nodes: tuple[str, ...] = ("local",)  # the machines those devices are on, one entry per machine
    gpus_per_node: int = 1
    script: list[str] | None = None  # `script` + `args` of a script job, for a multi-node torchrun to wrap
    python: str = sys.executable
    timeout_s: float | None = None  # the spec's wall-clock limit (Slurm enforces it too, with --time)
    partitions: tuple[str, ...] | None = None  # Slurm partitions its data may be processed in (None: any)
    memory_bytes: int | None = None  # the spec's memory_gb: the attempt's cgroup limit (local backend)
    home: Path | None = None  # the job's own folder (HOME of a job that runs as the job user)


@dataclass(frozen=True)
class ExitInfo:
    returncode: int | None  # None: the attempt vanished without an exit status (crash, reboot, node failure)
    log_tail: str
    leftovers_killed: int = 0
    reason: str | None = None  # a failure class the backend knows for sure (Slurm's TIMEOUT, OUT_OF_MEMORY, ...)
    detail: str = ""


@dataclass(frozen=True)
class Placement:
    """Where a live attempt is, for the job's page and the audit chain."""

    nodes: tuple[str, ...]
    state: str  # "running", or "pending" while the backend (Slurm) has not started it yet
    reason: str = ""  # why it is pending (Slurm's Reason=)
    extra: dict[str, Any] = field(default_factory=dict)  # e.g. {"slurm_job_id": 42, "partition": "gpu-sp1"}


class Backend(Protocol):
    name: str  # "local" or "slurm"
    multi_node: bool  # may a job span several machines

    def inventory(self) -> Inventory:
        """The devices jobs may be given now (a Slurm backend refreshes it: nodes drain and return)."""
        ...

    def handle_for(self, request: LaunchRequest) -> dict[str, Any]: ...
    def launch(self, request: LaunchRequest) -> dict[str, Any]: ...
    def poll(self, handle: dict[str, Any]) -> ExitInfo | None: ...
    def placement(self, handle: dict[str, Any]) -> Placement | None: ...
    def stop(self, handle: dict[str, Any], grace_s: float) -> None: ...
    def kill(self, handle: dict[str, Any]) -> None: ...
    def sweep(self, active: Iterable[dict[str, Any]]) -> None:
        """Periodic hygiene with the handles of the live attempts (the local backend's GPU orphan hunt)."""
        ...

    def telemetry(self) -> list[dict[str, Any]]:
        """Per-GPU utilisation, memory and temperature now, for /metrics and the dashboard ([] when unknown)."""
        ...

    def metrics(self) -> dict[str, Any]:
        """Backend-specific counters for /metrics (foreign GPU processes, orphans killed, nodes by state)."""
        ...


def read_tail(path: Path, nbytes: int = LOG_TAIL_BYTES) -> str:
    try:
        with path.open("rb") as f:
            f.seek(max(0, path.stat().st_size - nbytes))
            return f.read().decode(errors="replace")
    except OSError:
        return ""


def launch_failed(handle: dict[str, Any], attempt_dir: Path) -> ExitInfo:
    """The attempt never started: the backend refused it; the reason is in its log and the failure detail."""
    message = str(handle["launch_error"])
    return ExitInfo(LAUNCH_FAILED_EXIT, read_tail(attempt_dir / "output.log") or message, detail=message)


class LocalBackend:
    """Attempts as detached local processes: supervisor -> command (torchrun or python) -> workers."""

    name = "local"
    multi_node = False

    def __init__(self, inventory: Inventory, job_user: JobUser | None = None) -> None:
        self._inventory = inventory
        self.job_user = job_user  # jobs run as this user (treino.server.isolation); None: as the server's
        self._children: dict[int, subprocess.Popen[bytes]] = {}  # supervisors this server started, to reap
        self.foreign_gpu_pids: dict[int, list[int]] = {}  # GPU index -> pids no job of this server owns
        self.orphans_killed = 0  # processes of finished attempts found on a GPU and killed

    def inventory(self) -> Inventory:
        return self._inventory

    def handle_for(self, request: LaunchRequest) -> dict[str, Any]:
        return {"node": "local", "key": request.key, "dir": str(request.attempt_dir), "supervisor_pid": None}

    @staticmethod
    def cgroup_name(request: LaunchRequest) -> str:
        """Unique on the machine (several servers may each run their job 1): the key's first 8 hex digits."""
        return f"job-{request.job_id}-attempt-{request.attempt}-{request.key[:8]}"

    def launch(self, request: LaunchRequest) -> dict[str, Any]:
        key = request.key
        request.attempt_dir.mkdir(parents=True, exist_ok=True)
        # GPUs: the job sees only its own. CPU slots: no GPU at all, so torch picks gloo.
        gpu = self._inventory.kind == "gpu"
        env = {**request.env, "CUDA_VISIBLE_DEVICES": ",".join(map(str, request.devices)) if gpu else ""}
        user = self.job_user
        # The /dev/nvidiaN minors the attempt may open (CPU slots: none); None (NVML could not say): not limited.
        allowed: list[int] | None = []
        if gpu:
            minors = nvml.gpu_minor_numbers()
            allowed = [minors[i] for i in request.devices] if all(i in minors for i in request.devices) else None
        cgroup = {"name": self.cgroup_name(request), "memory_bytes": request.memory_bytes, "gpus": allowed}
        launch = {"argv": request.argv, "cwd": request.cwd, "env": env, "key": key, "grace_s": request.grace_s}
        launch |= {"user": user.to_record(request.home or request.attempt_dir) if user else None, "cgroup": cgroup}
        # The job's dataset copies (treino.server.isolation.give_dataset) go when the attempt ends.
        launch["scratch"] = [str(request.attempt_dir.parent / DATASET_COPIES_DIR)] if user else []
        write_json_atomic(request.attempt_dir / "launch.json", launch)
        server_env = {k: v for k, v in os.environ.items() if k != KEY_VAR}
        with (request.attempt_dir / "supervisor.log").open("ab") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "treino.server.supervisor", str(request.attempt_dir)],
                env=server_env,
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,  # outlives the server; a server crash does not take the job down
            )
        self._children[proc.pid] = proc
        # Written before the caller records the handle: a server that dies in between still finds its supervisor.
        (request.attempt_dir / "supervisor.pid").write_text(str(proc.pid))
        return {**self.handle_for(request), "supervisor_pid": proc.pid}

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
        if handle.get("launch_error"):
            return launch_failed(handle, attempt_dir)
        exit_file = attempt_dir / "exit.json"
        if exit_file.exists():
            self._children.pop(self._supervisor_pid(handle) or -1, None)
            data = json.loads(exit_file.read_text())
            tail, leftovers = read_tail(attempt_dir / "output.log"), data.get("leftovers_killed", 0)
            if data.get("disk_full"):  # the supervisor saw the disk full (treino.server.supervisor.record_exit)
                return ExitInfo(data["returncode"], tail, leftovers, reason="disk_full", detail=data["disk_full"])
            return ExitInfo(data["returncode"], tail, leftovers)
        if self._supervisor_alive(handle):
            return None
        if exit_file.exists():  # it finished between the two checks
            return self.poll(handle)
        self._children.pop(self._supervisor_pid(handle) or -1, None)
        return ExitInfo(None, read_tail(attempt_dir / "output.log"))

    def placement(self, handle: dict[str, Any]) -> Placement | None:
        return Placement(("local",), "running") if self._supervisor_pid(handle) else None

    def stop(self, handle: dict[str, Any], grace_s: float) -> None:
        """SIGTERM: the supervisor forwards it to every process of the attempt, SIGKILLs after the grace period
        (its own copy of `grace_s`, from launch.json)."""
        if self._supervisor_alive(handle):
            with contextlib.suppress(ProcessLookupError, TypeError):  # it may exit between check and signal
                os.kill(self._supervisor_pid(handle), signal.SIGTERM)  # type: ignore[arg-type]
        else:  # no supervisor to do it (it crashed): signal the processes directly
            if (cgroup := _cgroup_of(handle)) is not None:
                cgroups.signal_all(cgroup, signal.SIGTERM)
            for pid in pids_with_key(handle["key"]):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGTERM)

    def kill(self, handle: dict[str, Any]) -> None:
        """SIGKILL the attempt's supervisor and every process of it, now."""
        pid = self._supervisor_pid(handle)
        if pid is not None and self._supervisor_alive(handle):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if (cgroup := _cgroup_of(handle)) is not None:
            cgroups.kill(cgroup)
            with contextlib.suppress(OSError):
                cgroups.remove(cgroup)
        kill_key(handle["key"], grace_s=0.0)

    def sweep(self, active: Iterable[dict[str, Any]]) -> None:
        """NVML's compute processes against the live attempts: a process of a finished attempt (it carries a
        treino attempt key no live attempt has) is killed; a process with no key is someone else's and is
        reported (/metrics treino_gpu_foreign_processes), since it takes memory a job was promised."""
        if self._inventory.kind != "gpu":
            return
        active_keys = {h.get("key") for h in active}
        foreign: dict[int, list[int]] = {}
        for gpu, pids in nvml.gpu_process_pids().items():
            for pid in pids:
                key = _env_of(pid).get(KEY_VAR)
                if key is None:
                    foreign.setdefault(gpu, []).append(pid)
                elif key not in active_keys:
                    _kill_orphan(gpu, pid)
                    self.orphans_killed += 1
        self.foreign_gpu_pids = foreign

    def telemetry(self) -> list[dict[str, Any]]:
        return nvml.gpu_telemetry() if self._inventory.kind == "gpu" else []

    def metrics(self) -> dict[str, Any]:
        return {"foreign_gpu_pids": self.foreign_gpu_pids, "orphans_killed": self.orphans_killed}


def _cgroup_of(handle: dict[str, Any]) -> Cgroup | None:
    """The attempt's cgroup, as its supervisor recorded it in state.json (None: none, or never started)."""
    try:
        record = json.loads((Path(handle["dir"]) / "state.json").read_text()).get("cgroup")
    except (OSError, ValueError):
        return None
    return Cgroup.from_record(record) if record else None


def _env_of(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:  # gone, or another user's (then it is not ours either)
        return {}
    return dict(item.split("=", 1) for item in raw.decode(errors="replace").split("\0") if "=" in item)


def _kill_orphan(gpu: int, pid: int) -> None:
    import logging

    log = logging.getLogger("treino.server")
    log.warning("GPU %s: pid %s of a finished attempt still holds memory; killing it", gpu, pid)
    try:
        os.kill(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        log.warning("could not kill pid %s", pid)
