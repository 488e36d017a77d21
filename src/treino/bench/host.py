"""The host: CPU model and cores, RAM, and a STREAM-like memory copy bandwidth.

STREAM (McCalpin, https://www.cs.virginia.edu/stream/ref.html) counts a copy a[i] = b[i] as 2 x 8 bytes per
element: one read and one write (write-allocate traffic is not counted). We do the same.
"""

from __future__ import annotations

import os
import statistics
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

STREAM_ARRAY_BYTES_QUICK = 128 * 1024**2  # each of the two arrays; far above any CPU cache
STREAM_ARRAY_BYTES_FULL = 1024**3
STREAM_WARMUP = 1
STREAM_REPEATS_QUICK = 5
STREAM_REPEATS_FULL = 20


def copy_bytes_moved(nbytes: int) -> int:
    """Bytes a copy of `nbytes` moves: read the source once and write the destination once."""
    return 2 * nbytes


def bandwidth_gb_s(nbytes_copied: int, seconds: float) -> float:
    """STREAM-style copy bandwidth in GB/s (1e9 B/s), counting reads plus writes."""
    return copy_bytes_moved(nbytes_copied) / seconds / 1e9


def cpu_model(cpuinfo: Path = Path("/proc/cpuinfo")) -> str:
    try:
        for line in cpuinfo.read_text().splitlines():
            if line.startswith(("model name", "Model", "cpu model")):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def usable_cores() -> int:
    """Cores this process may run on (the affinity mask, as in a container), logical."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:
        return os.cpu_count() or 1


def ram_bytes(meminfo: Path = Path("/proc/meminfo")) -> int:
    try:
        for line in meminfo.read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024  # kB
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def stream_copy_gb_s(array_bytes: int, repeats: int) -> float:
    """Median STREAM-like copy bandwidth of two `array_bytes` arrays of random data, GB/s."""
    import numpy as np

    src = np.random.default_rng(0).random(array_bytes // 8)  # float64, random, never zeros
    dst = np.empty_like(src)
    for _ in range(STREAM_WARMUP):
        np.copyto(dst, src)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        np.copyto(dst, src)
        times.append(time.perf_counter() - t0)
    assert np.array_equal(dst[:1024], src[:1024])
    return bandwidth_gb_s(src.nbytes, statistics.median(times))


@dataclass(frozen=True)
class HostResult:
    cpu: str
    cores: int
    ram_bytes: int
    memory_bandwidth_gb_s: float

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def measure_host(quick: bool) -> HostResult:
    return HostResult(
        cpu=cpu_model(),
        cores=usable_cores(),
        ram_bytes=ram_bytes(),
        memory_bandwidth_gb_s=stream_copy_gb_s(
            STREAM_ARRAY_BYTES_QUICK if quick else STREAM_ARRAY_BYTES_FULL,
            STREAM_REPEATS_QUICK if quick else STREAM_REPEATS_FULL,
        ),
    )
