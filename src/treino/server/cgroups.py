"""One cgroup per attempt, so an attempt is limited and stopped as a whole, whatever its processes do.

The supervisor (treino.server.supervisor, running as root) creates `treino/job-ID-attempt-N-KEY8`, joins it, starts
the command (which is born inside it, so no process of the attempt escapes it: not `setsid`, not `env -i`), and
moves itself back out. Both kernels' interfaces are supported; `detect()` picks the one whose controllers are there:

    cgroup v2   /sys/fs/cgroup/treino/NAME          memory.max; stop: cgroup.kill (Linux >= 5.14), else freeze
                                                     + SIGKILL each pid in cgroup.procs; devices: not limited (v2
                                                     needs an eBPF program for that; treino has none)
    cgroup v1   /sys/fs/cgroup/CTRL/<own>/treino/NAME  memory.limit_in_bytes; devices.deny/allow (the nvidia
                                                     GPUs not given to the attempt are denied); stop: freezer
                                                     FROZEN + SIGKILL each pid + THAWED

A v1 cgroup nests under the supervisor's own cgroup in each hierarchy, so limits above the server still apply; a v2
one is made under the root (a v2 cgroup that holds processes cannot have children with controllers).
Everything here needs root; without it, or without cgroups, `create` returns None and the attempt key scan
(treino.server.supervisor.kill_key) is all there is. The standard library and settings only: the supervisor
imports it.
"""

from __future__ import annotations

import contextlib
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from treino.server.settings import CGROUP_EMPTY_WAIT_S, CGROUP_FREEZE_WAIT_S, CGROUP_PARENT

V1_CONTROLLERS = ("memory", "devices", "freezer", "pids")  # the hierarchies an attempt joins (those mounted)
# Linux's Documentation/admin-guide/devices.txt: "195 char Nvidia graphics devices": /dev/nvidiaN is minor N,
# /dev/nvidiactl 255, /dev/nvidia-modeset 254 (every CUDA process opens the last two).
NVIDIA_GPU_MAJOR = 195
NVIDIA_SHARED_MINORS = (254, 255)
POLL_S = 0.05


@dataclass(frozen=True)
class Cgroup:
    """An attempt's cgroup: one directory (v2) or one per mounted v1 controller."""

    version: int  # 1 or 2
    dirs: tuple[tuple[str, str], ...]  # (controller, directory); v2: (("unified", dir),)

    def to_record(self) -> dict[str, object]:
        return {"version": self.version, "dirs": [list(d) for d in self.dirs]}

    @classmethod
    def from_record(cls, record: dict[str, object]) -> Cgroup:
        dirs = record["dirs"]
        assert isinstance(dirs, list)
        return cls(int(str(record["version"])), tuple((str(c), str(d)) for c, d in dirs))

    def dir(self, controller: str) -> Path | None:
        for name, path in self.dirs:
            if name == controller:
                return Path(path)
        return None

    @property
    def main(self) -> Path:
        """The directory whose cgroup.procs lists the attempt (v1: freezer's, else the first)."""
        return self.dir("freezer") or Path(self.dirs[0][1])


def _mounts() -> list[tuple[str, str, set[str]]]:
    """(fstype, mount point, options) of every cgroup mount."""
    found = []
    with contextlib.suppress(OSError), open("/proc/self/mounts") as f:
        for line in f:
            parts = line.split()
            if len(parts) >= 4 and parts[2] in ("cgroup", "cgroup2"):
                found.append((parts[2], parts[1], set(parts[3].split(","))))
    return found


def _own_path(controller: str) -> str:
    """This process's cgroup in a v1 hierarchy ("/process_api/x"), or in the v2 one (controller "")."""
    with contextlib.suppress(OSError), open("/proc/self/cgroup") as f:
        for line in f:
            _, names, path = line.rstrip("\n").split(":", 2)
            if controller in names.split(",") or (not controller and not names):
                return path
    return "/"


def detect() -> tuple[int, dict[str, Path]] | None:
    """(version, {controller: where this process's attempts go}); None without usable cgroups or without root.
    v1 wins where its memory or freezer hierarchy is mounted (hybrid hosts mount an empty cgroup2 beside it)."""
    if os.geteuid() != 0:
        return None
    mounts = _mounts()
    v1 = {c: Path(m) for kind, m, opts in mounts if kind == "cgroup" for c in V1_CONTROLLERS if c in opts}
    if "memory" in v1 or "freezer" in v1:
        return 1, {c: m / _own_path(c).lstrip("/") / CGROUP_PARENT for c, m in v1.items()}
    for kind, mount, _ in mounts:
        controllers = Path(mount) / "cgroup.controllers"
        if kind == "cgroup2" and controllers.exists() and controllers.read_text().split():
            return 2, {"unified": Path(mount) / CGROUP_PARENT}
    return None


def _write(path: Path, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def nvidia_device_rules(gpus: tuple[int, ...], proc_devices: str) -> list[str]:
    """v1 devices.allow lines after `a` was denied: every device but the nvidia GPUs not given to the attempt.
    `proc_devices` is /proc/devices: each character major is allowed whole, except nvidia-frontend's (195), of
    which only the attempt's GPUs (`gpus`: their minor numbers, from NVML) and the shared control nodes are."""
    rules = ["b *:* rwm"]
    in_char = False
    for line in proc_devices.splitlines():
        if line.strip() == "Character devices:":
            in_char = True
        elif line.strip() == "Block devices:":
            in_char = False
        elif in_char and line.split() and line.split()[0].isdigit():
            major = int(line.split()[0])
            if major != NVIDIA_GPU_MAJOR:
                rules.append(f"c {major}:* rwm")
    rules += [f"c {NVIDIA_GPU_MAJOR}:{minor} rwm" for minor in (*gpus, *NVIDIA_SHARED_MINORS)]
    return sorted(set(rules), key=rules.index)


def create(name: str, memory_bytes: int | None, gpus: tuple[int, ...] | None) -> Cgroup | None:
    """The attempt's cgroup with its limits, or None where cgroups are unavailable (or not ours to write).
    `gpus`: the minor numbers of the nvidia GPUs the attempt may open (v1 only); None leaves devices alone."""
    found = detect()
    if found is None:
        return None
    version, bases = found
    dirs = []
    try:
        for controller, base in bases.items():
            if version == 2:  # treino/ hands its children the controllers it has (idempotent: attempts race here)
                base.mkdir(exist_ok=True)
                available = set((base / "cgroup.controllers").read_text().split())
                enabled = set((base / "cgroup.subtree_control").read_text().split())
                for c in sorted(available - enabled):
                    _write(base / "cgroup.subtree_control", f"+{c}")
            path = base / name
            path.mkdir(parents=True, exist_ok=True)
            dirs.append((controller, str(path)))
        cgroup = Cgroup(version, tuple(dirs))
        memory = cgroup.dir("memory" if version == 1 else "unified")
        if memory_bytes is not None and memory is not None:
            # RAM and swap together: a job over its limit is ended, not slowed to a crawl by swapping
            if version == 1:
                _write(memory / "memory.limit_in_bytes", str(memory_bytes))
                if (memory / "memory.memsw.limit_in_bytes").exists():  # swap accounting is on
                    _write(memory / "memory.memsw.limit_in_bytes", str(memory_bytes))
            else:
                _write(memory / "memory.max", str(memory_bytes))
                if (memory / "memory.swap.max").exists():
                    _write(memory / "memory.swap.max", "0")
        devices = cgroup.dir("devices")
        if version == 1 and devices is not None and gpus is not None:
            _write(devices / "devices.deny", "a")
            for rule in nvidia_device_rules(gpus, Path("/proc/devices").read_text()):
                _write(devices / "devices.allow", rule)
    except OSError:
        remove(Cgroup(version, tuple(dirs)))
        raise
    return cgroup


def oom_kills(cgroup: Cgroup) -> int:
    """How many of the cgroup's processes the kernel's OOM killer ended (its memory limit); 0 when unknown."""
    memory = cgroup.dir("memory" if cgroup.version == 1 else "unified")
    if memory is None:
        return 0
    try:
        text = (memory / ("memory.oom_control" if cgroup.version == 1 else "memory.events")).read_text()
    except OSError:
        return 0
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if name == "oom_kill":
            return int(value)
    return 0


def join(cgroup: Cgroup) -> None:
    """Move this process into the attempt's cgroup, in every hierarchy: what it starts next is born there."""
    if cgroup.version == 2:
        _ORIGIN_V2["path"] = _own_path("")
    for _, path in cgroup.dirs:
        _write(Path(path) / "cgroup.procs", str(os.getpid()))


def add(cgroup: Cgroup, pid: int) -> None:
    """Move process `pid` (all its threads) into the cgroup, in every hierarchy."""
    for _, path in cgroup.dirs:
        _write(Path(path) / "cgroup.procs", str(pid))


def leave(cgroup: Cgroup) -> None:
    """Move this process back to where it was before `join` (v1: the cgroup treino/ was made under; v2: this
    process's own cgroup, read from /proc/self/cgroup, which `join` does not change for v1)."""
    for _, path in cgroup.dirs:
        origin = Path(path).parent.parent
        if cgroup.version == 2:
            origin = origin / _ORIGIN_V2.get("path", "/").lstrip("/")
        _write(origin / "cgroup.procs", str(os.getpid()))


_ORIGIN_V2: dict[str, str] = {}  # this process's v2 cgroup before it joined an attempt's


def procs(cgroup: Cgroup) -> list[int]:
    """The processes in the attempt's cgroup now ([] once it is gone)."""
    try:
        return [int(p) for p in (cgroup.main / "cgroup.procs").read_text().split()]
    except (OSError, ValueError):
        return []


def signal_all(cgroup: Cgroup, sig: int) -> int:
    """Send `sig` to every process in the cgroup; how many there were."""
    pids = procs(cgroup)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, sig)
    return len(pids)


def _freeze(cgroup: Cgroup, frozen: bool) -> None:
    with contextlib.suppress(OSError):
        if cgroup.version == 2:
            _write(cgroup.main / "cgroup.freeze", "1" if frozen else "0")
        elif (freezer := cgroup.dir("freezer")) is not None:
            _write(freezer / "freezer.state", "FROZEN" if frozen else "THAWED")


def _is_frozen(cgroup: Cgroup) -> bool:
    try:
        if cgroup.version == 2:
            return "frozen 1" in (cgroup.main / "cgroup.events").read_text()
        freezer = cgroup.dir("freezer")
        return freezer is None or (freezer / "freezer.state").read_text().strip() == "FROZEN"
    except OSError:
        return True


def kill(cgroup: Cgroup) -> int:
    """SIGKILL every process of the cgroup, forks in flight included; how many were killed. v2 with cgroup.kill
    does it in one write; otherwise the cgroup is frozen first, so nothing can fork between listing and killing."""
    pids = procs(cgroup)
    if not pids:
        return 0
    kill_file = cgroup.main / "cgroup.kill"
    if cgroup.version == 2 and kill_file.exists():
        _write(kill_file, "1")
    else:
        _freeze(cgroup, True)
        deadline = time.monotonic() + CGROUP_FREEZE_WAIT_S
        while not _is_frozen(cgroup) and time.monotonic() < deadline:
            time.sleep(POLL_S)
        signal_all(cgroup, signal.SIGKILL)
        _freeze(cgroup, False)  # a frozen process cannot act on SIGKILL
    deadline = time.monotonic() + CGROUP_EMPTY_WAIT_S
    while procs(cgroup) and time.monotonic() < deadline:
        time.sleep(POLL_S)
    return len(pids)


def remove(cgroup: Cgroup) -> None:
    """Delete the attempt's directories (once empty; a cgroup that still holds a process stays)."""
    for _, path in cgroup.dirs:
        deadline = time.monotonic() + CGROUP_EMPTY_WAIT_S
        while True:
            try:
                os.rmdir(path)
                break
            except FileNotFoundError:  # removed already (by the supervisor, or the server's kill)
                break
            except OSError:  # EBUSY: a killed process not yet gone
                if time.monotonic() > deadline:
                    raise
                time.sleep(POLL_S)
