"""What the server may hand out: NVIDIA GPUs read through NVML, or N declared CPU slots (`--devices cpu:N`).

Each device belongs to a `domain`: the GPUs joined by NVLink to each other (connected components of NVML's
NVLink P2P status), so the scheduler can keep a job's GPUs inside one NVLink domain. GPUs without NVLink each form
their own domain; CPU slots share one.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field
from typing import Any

from treino.errors import TreinoError
from treino.i18n import Msg

CPU_SPEC = re.compile(r"^cpu:(\d+)$")


@dataclass(frozen=True)
class Device:
    index: int  # CUDA index for GPUs (what CUDA_VISIBLE_DEVICES takes); slot number for CPU slots
    kind: str  # "gpu" or "cpu"
    name: str
    memory_bytes: int
    domain: int
    node: str = "local"  # the machine; the local backend has one, a Slurm backend several
    uuid: str = ""


@dataclass(frozen=True)
class Node:
    """A machine of a cluster as its scheduler reports it (Slurm: `scontrol show node`)."""

    name: str
    addr: str
    state: str  # Slurm's State=, lower case: idle, mixed, allocated, down, drained, ...
    gpus: int
    partitions: tuple[str, ...]
    usable: bool  # may jobs be given its GPUs now (up and not draining)
    gpu_type: str = ""  # the GRES type (gpu:h100:8 -> "h100"), when slurm.conf names one


@dataclass(frozen=True)
class Inventory:
    kind: str  # "gpu" or "cpu"
    devices: tuple[Device, ...]
    notes: tuple[str, ...] = field(default_factory=tuple)
    nodes: tuple[Node, ...] = ()  # a cluster's machines (Slurm backend); () on one machine

    def describe(self) -> str:
        if self.nodes:
            usable = [n for n in self.nodes if n.usable]
            names = sorted({d.name for d in self.devices}) or ["GPU"]
            return Msg(  # a Msg: the dashboard shows it in the visitor's language
                "{devices} x {names} on {usable} of {nodes} Slurm node(s) (partitions {partitions})",
                devices=len(self.devices),
                names=", ".join(names),
                usable=len(usable),
                nodes=len(self.nodes),
                partitions=", ".join(sorted({p for n in self.nodes for p in n.partitions})),
            )
        if self.kind == "cpu":
            return Msg("{devices} CPU slots (no GPUs: jobs run on CPU with gloo)", devices=len(self.devices))
        names = sorted({d.name for d in self.devices})
        domains = len({d.domain for d in self.devices})
        return Msg(
            "{devices} x {names} GPU(s) in {domains} NVLink domain(s)",
            devices=len(self.devices),
            names=", ".join(names),
            domains=domains,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "description": self.describe(),
            "devices": [asdict(d) for d in self.devices],
            "nodes": [asdict(n) for n in self.nodes],
        }

    def node_count(self) -> int:
        return len({d.node for d in self.devices})

    def max_devices_per_node(self) -> int:
        per_node: dict[str, int] = {}
        for d in self.devices:
            per_node[d.node] = per_node.get(d.node, 0) + 1
        return max(per_node.values(), default=0)


def cpu_inventory(slots: int) -> Inventory:
    return Inventory("cpu", tuple(Device(i, "cpu", "CPU slot", 0, 0) for i in range(slots)))


def _nvlink_domains(pynvml: Any, handles: list[Any]) -> list[int]:
    """Connected components of the NVLink P2P graph; a GPU without NVLink peers is its own component."""
    n = len(handles)
    parent = list(range(n))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        for j in range(i + 1, n):
            try:
                status = pynvml.nvmlDeviceGetP2PStatus(handles[i], handles[j], pynvml.NVML_P2P_CAPS_INDEX_NVLINK)
            except pynvml.NVMLError:
                continue
            if status == pynvml.NVML_P2P_STATUS_OK:
                parent[find(i)] = find(j)
    roots = sorted({find(i) for i in range(n)})
    return [roots.index(find(i)) for i in range(n)]


def gpu_inventory() -> Inventory:
    """Every NVIDIA GPU NVML sees; TreinoError when NVML is missing or sees none."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception as exc:
        raise TreinoError(
            f"No NVIDIA GPUs found (NVML: {exc}). To fix: check the driver with nvidia-smi, or start the server "
            "with --devices cpu:N to run jobs on N CPU slots."
        ) from exc
    try:
        count = pynvml.nvmlDeviceGetCount()
        if count == 0:
            raise TreinoError("NVML sees no GPUs. To fix: start the server with --devices cpu:N.")
        handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
        domains = _nvlink_domains(pynvml, handles)
        devices = []
        for i, h in enumerate(handles):
            name = pynvml.nvmlDeviceGetName(h)
            uuid = pynvml.nvmlDeviceGetUUID(h)
            devices.append(
                Device(
                    index=i,
                    kind="gpu",
                    name=name.decode() if isinstance(name, bytes) else str(name),
                    memory_bytes=int(pynvml.nvmlDeviceGetMemoryInfo(h).total),
                    domain=domains[i],
                    uuid=uuid.decode() if isinstance(uuid, bytes) else str(uuid),
                )
            )
        return Inventory("gpu", tuple(devices))
    finally:
        pynvml.nvmlShutdown()


def discover(devices: str) -> Inventory:
    """`--devices auto` (NVML GPUs) or `--devices cpu:N`."""
    text = devices.strip().lower()
    if text == "auto":
        return gpu_inventory()
    match = CPU_SPEC.match(text)
    if match and int(match.group(1)) > 0:
        return cpu_inventory(int(match.group(1)))
    raise TreinoError(f"Unknown --devices {devices!r}. To fix: use 'auto' (NVIDIA GPUs) or 'cpu:N' with N >= 1.")


def gpu_telemetry() -> list[dict[str, Any]]:
    """Per-GPU utilisation %, memory used and temperature now (for /metrics); [] without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return []
    try:
        out = []
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            util = pynvml.nvmlDeviceGetUtilizationRates(h)
            mem = pynvml.nvmlDeviceGetMemoryInfo(h)
            temp = pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU)
            out.append({"index": i, "util_percent": util.gpu, "memory_used_bytes": mem.used, "temperature_c": temp})
        return out
    finally:
        pynvml.nvmlShutdown()


def gpu_process_pids() -> dict[int, set[int]]:
    """{GPU index: pids of compute processes on it}, from NVML; {} without NVML (the zombie check)."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return {}
    try:
        out: dict[int, set[int]] = {}
        for i in range(pynvml.nvmlDeviceGetCount()):
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
            out[i] = {p.pid for p in pynvml.nvmlDeviceGetComputeRunningProcesses(h)}
        return out
    finally:
        pynvml.nvmlShutdown()


def gpu_minor_numbers() -> dict[int, int]:
    """{GPU index: minor number of its /dev/nvidiaN} from NVML, for the devices cgroup (an index need not be its
    minor); {} without NVML."""
    try:
        import pynvml

        pynvml.nvmlInit()
    except Exception:
        return {}
    try:
        count = pynvml.nvmlDeviceGetCount()
        return {i: int(pynvml.nvmlDeviceGetMinorNumber(pynvml.nvmlDeviceGetHandleByIndex(i))) for i in range(count)}
    except pynvml.NVMLError:
        return {}
    finally:
        pynvml.nvmlShutdown()
