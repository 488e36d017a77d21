"""Per-GPU figures: device copy bandwidth, dense matmul TFLOP/s per dtype, host<->device bandwidth, memory.

Method (../shared/reference/hardware-and-prices.md §4.4-4.5): warm-up, then the median of repeats, timed with
CUDA events; random data, never zeros (zeros let the tensor cores' power drop and flatter the figure); sizes that
fill the chip, far beyond its L2.
    copy      bytes moved = read + write = 2 x buffer (BabelStream / nvbandwidth convention)
    matmul    TFLOP/s = 2 M N K / t (mamf-finder)
Matmuls are reported twice, because a GPU under continuous load lowers its clocks to stay within its power limit.
Measured on an H200 SXM here (2026-11-29, benchmarks/results/): bf16 8192³ ran at 789 TFLOP/s for the first ten
products at 1980 MHz, then settled at 674 TFLOP/s within about 0.1 s as the SM clock fell to about 1515 MHz.
    burst      the mean of the first ten products after three warm-ups (the method of KINDS.md's reference
               790 TFLOP/s and, with its short run, of mamf-finder's published MAMF table)
    sustained  the median of the repeats in the second half of a run of at least SUSTAIN_S seconds: what a
               training step, which keeps the GPU busy for hours, can use
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from treino.bench.host import copy_bytes_moved

if TYPE_CHECKING:  # torch is imported where it is used: `treino bench` must start on a machine without it
    import torch

COPY_BUFFER_BYTES_MAX = 8 * 1024**3  # each of source and destination; capped by a quarter of free memory
COPY_BUFFER_BYTES_QUICK = 1024**3
MATMUL_DIM = 8192  # M = N = K: large enough to saturate an H100/H200 (mamf-finder's sweet spot)
MATMUL_DIM_QUICK = 4096
HOST_BUFFER_BYTES = 1024**3
HOST_BUFFER_BYTES_QUICK = 256 * 1024**2
WARMUP_ITERS = 5
REPEATS = 20
REPEATS_QUICK = 5
INNER_ITERS = 10  # ops per timed repeat, so each repeat lasts well above the events' ~µs resolution
BURST_WARMUP_ITERS = 3
SUSTAIN_S = 2.0  # seconds of back-to-back matmuls per dtype; the H200 settled within 0.1 s
SUSTAIN_S_QUICK = 0.5
COOL_DOWN_S = 1.0  # idle before each dtype's burst: the H200's clock was back at 1980 MHz within 2 s
DTYPES = ("fp32", "tf32", "bf16", "fp16", "fp8")
FP8_MIN_CAPABILITY = (8, 9)  # Ada and Hopper have fp8 tensor cores


@dataclass(frozen=True)
class GpuResult:
    index: int
    name: str
    total_memory_bytes: int
    free_memory_bytes: int
    copy_gb_s: float  # device-to-device, reads + writes
    tflops: dict[str, float] = field(default_factory=dict)  # dense matmul per dtype, sustained
    tflops_burst: dict[str, float] = field(default_factory=dict)  # the first ten products, clocks still high
    sm_clock_mhz: dict[str, int] = field(default_factory=dict)  # SM clock at the end of each sustained run (NVML)
    h2d_pinned_gb_s: float = 0.0
    h2d_pageable_gb_s: float = 0.0
    d2h_pinned_gb_s: float = 0.0
    d2h_pageable_gb_s: float = 0.0
    p2p_gb_s: dict[int, float] = field(default_factory=dict)  # to each other GPU, unidirectional

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def cuda_timing_events() -> tuple[torch.cuda.Event, torch.cuda.Event]:
    """A start and an end CUDA event that record time: `start.elapsed_time(end)` is in milliseconds."""
    import torch

    # torch.cuda.Event.__new__ carries no annotations (torch 2.13), so mypy sees an untyped call.
    start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    end = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
    return start, end


def _time_s(fn: Callable[[], object], repeats: int, inner: int = INNER_ITERS) -> float:
    """Median seconds of one call of `fn`, from CUDA events around `inner` calls, after a warm-up."""
    import torch

    for _ in range(WARMUP_ITERS):
        fn()
    torch.cuda.synchronize()
    times: list[float] = []
    for _ in range(repeats):
        start, end = cuda_timing_events()
        start.record()
        for _ in range(inner):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / inner)  # ms -> s
    return statistics.median(times)


def copy_gb_s(device: int, buffer_bytes: int, repeats: int) -> float:
    import torch

    src = torch.rand(buffer_bytes // 4, device=device)
    dst = torch.empty_like(src)
    seconds = _time_s(lambda: dst.copy_(src), repeats)
    assert torch.equal(dst[:1024], src[:1024])
    nbytes = src.numel() * 4
    return copy_bytes_moved(nbytes) / seconds / 1e9


@dataclass(frozen=True)
class MatmulRate:
    burst_tflops: float
    sustained_tflops: float
    sm_clock_mhz: int | None  # at the end of the sustained run; None without NVML


def _burst_and_sustained(fn: Callable[[], None], sustain_s: float) -> tuple[float, float]:
    """Seconds per call of `fn`: the first timed repeat after a short warm-up, and the median of the second half
    of repeats run back to back for at least `sustain_s` seconds."""
    import torch

    for _ in range(BURST_WARMUP_ITERS):
        fn()
    torch.cuda.synchronize()
    times: list[float] = []
    while sum(times) * INNER_ITERS < sustain_s or len(times) < 4:
        start, end = cuda_timing_events()
        start.record()
        for _ in range(INNER_ITERS):
            fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3 / INNER_ITERS)
    return times[0], statistics.median(times[len(times) // 2 :])


def sm_clock_mhz(device: int) -> int | None:
    """The SM clock now, from NVML (nvidia-ml-py); None where NVML is missing."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            handle = pynvml.nvmlDeviceGetHandleByIndex(device)
            return int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # no NVML library, no permission, a non-NVIDIA device: the clock is optional
        return None


def matmul_tflops(device: int, dtype: str, dim: int, sustain_s: float = SUSTAIN_S) -> MatmulRate:
    import torch

    torch.backends.cuda.matmul.allow_tf32 = dtype == "tf32"
    gen = torch.Generator(device=f"cuda:{device}").manual_seed(0)
    if dtype == "fp8":
        a = torch.randn(dim, dim, device=device, generator=gen).to(torch.float8_e4m3fn)
        b = torch.randn(dim, dim, device=device, generator=gen).to(torch.float8_e4m3fn).t()  # column-major
        one = torch.ones((), device=device)

        def run() -> None:
            torch._scaled_mm(a, b, scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
    else:
        torch_dtype = {"fp32": torch.float32, "tf32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
        a = torch.randn(dim, dim, device=device, generator=gen, dtype=torch_dtype[dtype])
        b = torch.randn(dim, dim, device=device, generator=gen, dtype=torch_dtype[dtype])
        out = torch.empty(dim, dim, device=device, dtype=torch_dtype[dtype])

        def run() -> None:
            torch.matmul(a, b, out=out)

    torch.cuda.synchronize()
    time.sleep(COOL_DOWN_S if sustain_s >= SUSTAIN_S else COOL_DOWN_S / 4)
    try:
        burst, sustained = _burst_and_sustained(run, sustain_s)
        clock = sm_clock_mhz(device)
    finally:
        torch.backends.cuda.matmul.allow_tf32 = False
    flops = 2 * dim**3 / 1e12
    return MatmulRate(flops / burst, flops / sustained, clock)


def host_gb_s(device: int, nbytes: int, pinned: bool, to_device: bool, repeats: int) -> float:
    """Host<->device copy bandwidth, GB/s, one direction; pinned or pageable host memory."""
    import torch

    host = torch.rand(nbytes // 4, pin_memory=pinned)
    dev = torch.empty(nbytes // 4, device=device)
    if to_device:
        seconds = _time_s(lambda: dev.copy_(host, non_blocking=pinned), repeats, inner=1)
    else:
        seconds = _time_s(lambda: host.copy_(dev, non_blocking=pinned), repeats, inner=1)
    return host.numel() * 4 / seconds / 1e9


def p2p_gb_s(src: int, dst: int, nbytes: int, repeats: int) -> float:
    """GPU `src` -> GPU `dst` copy bandwidth, GB/s, one direction (each byte crosses the link once)."""
    import torch

    a = torch.rand(nbytes // 4, device=src)
    b = torch.empty(nbytes // 4, device=dst)
    with torch.cuda.device(src):
        seconds = _time_s(lambda: b.copy_(a), repeats, inner=1)
    return a.numel() * 4 / seconds / 1e9


def cuda_available() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return bool(torch.cuda.is_available())


def measure_gpus(quick: bool) -> list[GpuResult]:
    """Every local GPU's figures; an empty list without CUDA."""
    if not cuda_available():
        return []
    import torch

    repeats = REPEATS_QUICK if quick else REPEATS
    count = torch.cuda.device_count()
    results = []
    for i in range(count):
        torch.cuda.set_device(i)
        free, total = torch.cuda.mem_get_info(i)
        buffer = min(free // 4, COPY_BUFFER_BYTES_QUICK if quick else COPY_BUFFER_BYTES_MAX)
        dim = MATMUL_DIM_QUICK if quick else MATMUL_DIM
        dtypes = [d for d in DTYPES if d != "fp8" or torch.cuda.get_device_capability(i) >= FP8_MIN_CAPABILITY]
        host_bytes = HOST_BUFFER_BYTES_QUICK if quick else HOST_BUFFER_BYTES
        rates = {d: matmul_tflops(i, d, dim, SUSTAIN_S_QUICK if quick else SUSTAIN_S) for d in dtypes}
        results.append(
            GpuResult(
                index=i,
                name=torch.cuda.get_device_name(i),
                total_memory_bytes=int(total),
                free_memory_bytes=int(free),
                copy_gb_s=copy_gb_s(i, buffer, repeats),
                tflops={d: r.sustained_tflops for d, r in rates.items()},
                tflops_burst={d: r.burst_tflops for d, r in rates.items()},
                sm_clock_mhz={d: r.sm_clock_mhz for d, r in rates.items() if r.sm_clock_mhz is not None},
                h2d_pinned_gb_s=host_gb_s(i, host_bytes, True, True, repeats),
                h2d_pageable_gb_s=host_gb_s(i, host_bytes, False, True, repeats),
                d2h_pinned_gb_s=host_gb_s(i, host_bytes, True, False, repeats),
                d2h_pageable_gb_s=host_gb_s(i, host_bytes, False, False, repeats),
                p2p_gb_s={j: p2p_gb_s(i, j, host_bytes, repeats) for j in range(count) if j != i},
            )
        )
        torch.cuda.empty_cache()
    return results
