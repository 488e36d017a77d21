"""Collective bandwidth across local ranks: NCCL across GPUs, gloo across CPU processes.

algbw and busbw follow nccl-tests exactly (doc/PERFORMANCE.md; src/all_reduce.cu L59-65;
../shared/reference/hardware-and-prices.md §3.1):
    algbw = S / t              S = the op's full buffer in bytes (all-reduce buffer, all-gather output,
                                   reduce-scatter input), t = seconds per op; GB/s = 1e9 B/s
    busbw = algbw * factor     all_reduce 2(n-1)/n; all_gather, reduce_scatter (n-1)/n
Each rank runs in its own process (torch.multiprocessing, spawn), joined by a tcp:// rendezvous on a free
loopback port; rank 0 reports. Every op's all-reduce result is checked against the sum computed locally.
"""

from __future__ import annotations

import functools
import socket
import statistics
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

from treino.bench.gpu import cuda_timing_events
from treino.errors import TreinoError
from treino.i18n import Msg

OPS = ("all_reduce", "all_gather", "reduce_scatter")
BUSBW_FACTOR_NAME = {"all_reduce": "2(n-1)/n", "all_gather": "(n-1)/n", "reduce_scatter": "(n-1)/n"}
QUICK_SIZES_BYTES = (8 * 1024, 1024**2, 16 * 1024**2, 64 * 1024**2)
FULL_SIZES_BYTES = (*(8 * 4**k for k in range(14)), 1024**3)  # 8 B ... 512 MiB step x4, then 1 GiB
LATENCY_MAX_BYTES = 64 * 1024  # "latency" is reported for sizes up to here (the latency floor, §3.4)
WARMUP_ITERS = 2  # nccl-tests: -w 1
TIMED_ITERS_QUICK = 5
TIMED_ITERS_FULL = 20  # nccl-tests: -n 20
CHECK_ELEMENTS = 1 << 16  # the correctness check's all-reduce, fp32 elements of random data
JOIN_TIMEOUT_S = 300.0


def busbw_factor(op: str, ranks: int) -> float:
    """nccl-tests' bus-bandwidth factor for `op` on `ranks` ranks."""
    if op == "all_reduce":
        return 2 * (ranks - 1) / ranks
    if op in ("all_gather", "reduce_scatter", "alltoall"):
        return (ranks - 1) / ranks
    if op in ("broadcast", "reduce", "sendrecv"):
        return 1.0
    raise ValueError(f"unknown collective {op!r}")


def algbw_gb_s(nbytes: int, seconds: float) -> float:
    """nccl-tests' algorithm bandwidth: the buffer's bytes over the time of one op, in GB/s (1e9 B/s)."""
    return nbytes / seconds / 1e9


def busbw_gb_s(op: str, ranks: int, nbytes: int, seconds: float) -> float:
    return algbw_gb_s(nbytes, seconds) * busbw_factor(op, ranks)


@dataclass(frozen=True)
class CollectiveResult:
    op: str
    backend: str
    ranks: int
    bytes: int
    algbw_gb_s: float
    busbw_gb_s: float
    latency_us: float | None  # seconds per op in µs, for small messages only

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def free_port() -> int:
    """A free TCP port on the loopback interface for the rendezvous (bound, then released)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _expected_sum(ranks: int, elements: int) -> Any:
    """What the check all-reduce must return: the sum of every rank's seeded random tensor."""
    import torch

    total = torch.zeros(elements, dtype=torch.float64)
    for r in range(ranks):
        total += torch.randn(elements, generator=torch.Generator().manual_seed(1000 + r), dtype=torch.float32)
    return total


def _worker(
    rank: int, ranks: int, backend: str, port: int, sizes: tuple[int, ...], iters: int, out: Any
) -> None:  # pragma: no cover - runs in a child process
    import torch
    import torch.distributed as dist

    cuda = backend == "nccl"
    if cuda:
        torch.cuda.set_device(rank)
    device = torch.device("cuda", rank) if cuda else torch.device("cpu")
    # torch 2.13 renamed the tensor forms *_single; older releases only have *_tensor.
    _all_gather = getattr(dist, "all_gather_single", None) or dist.all_gather_into_tensor
    _reduce_scatter = getattr(dist, "reduce_scatter_single", None) or dist.reduce_scatter_tensor
    bound = device if cuda else None  # NCCL: bind the rank to its GPU (barriers, eager init)
    dist.init_process_group(
        backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=ranks, device_id=bound
    )
    try:
        # Correctness: random data (never zeros) summed across ranks, compared with the sum computed here.
        mine = torch.randn(CHECK_ELEMENTS, generator=torch.Generator().manual_seed(1000 + rank))
        got = mine.to(device)
        dist.all_reduce(got)
        want = _expected_sum(ranks, CHECK_ELEMENTS)
        max_err = float((got.cpu().double() - want).abs().max())
        correct = max_err <= 1e-4 * max(1.0, float(want.abs().max()))

        rows: list[tuple[str, int, float]] = []
        run: Callable[[], object]  # one op on this size's tensors, bound now (the loop rebinds full and shard)
        for op in OPS:
            for nbytes in sizes:
                elements = max(ranks, nbytes // 4 // ranks * ranks)  # fp32, divisible by the rank count
                full = torch.rand(elements, device=device)
                shard = torch.rand(elements // ranks, device=device)
                if op == "all_reduce":
                    run = functools.partial(dist.all_reduce, full)
                elif op == "all_gather":
                    run = functools.partial(_all_gather, full, shard)
                else:
                    run = functools.partial(_reduce_scatter, shard, full)

                for _ in range(WARMUP_ITERS):
                    run()
                times: list[float] = []
                for _ in range(iters):
                    dist.barrier()
                    if cuda:
                        torch.cuda.synchronize()
                        start, end = cuda_timing_events()
                        start.record()
                        run()
                        end.record()
                        end.synchronize()
                        times.append(start.elapsed_time(end) / 1e3)
                    else:
                        t0 = time.perf_counter()
                        run()
                        times.append(time.perf_counter() - t0)
                # The slowest rank finishes the op: take the max of the ranks' medians.
                t = torch.tensor([statistics.median(times)], dtype=torch.float64, device=device)
                dist.all_reduce(t, op=dist.ReduceOp.MAX)
                rows.append((op, elements * 4, float(t.item())))
        if rank == 0:
            out.put({"correct": correct, "max_abs_error": max_err, "rows": rows})
    finally:
        dist.destroy_process_group()


@dataclass(frozen=True)
class CollectiveRun:
    backend: str
    ranks: int
    correct: bool  # the all-reduce of random data equals the locally computed sum
    max_abs_error: float
    results: tuple[CollectiveResult, ...]


def run_collectives(backend: str, ranks: int, sizes: tuple[int, ...], iters: int) -> CollectiveRun:
    """Spawn `ranks` processes on this machine, run every op over `sizes` and return rank 0's figures."""
    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    out = ctx.Queue()
    port = free_port()
    procs = [ctx.Process(target=_worker, args=(r, ranks, backend, port, sizes, iters, out)) for r in range(ranks)]
    for p in procs:
        p.start()
    try:
        report = out.get(timeout=JOIN_TIMEOUT_S)
    except Exception as exc:
        raise TreinoError(
            Msg(
                "The {backend} collectives did not finish within {timeout_s:.0f} s (exit codes {codes}). To fix: rerun "
                "with --only to skip collectives.",
                backend=backend,
                timeout_s=JOIN_TIMEOUT_S,
                codes=str([p.exitcode for p in procs]),
            )
        ) from exc
    finally:
        for p in procs:
            p.join(timeout=30)
            if p.is_alive():
                p.kill()
                p.join()
    results = tuple(
        CollectiveResult(
            op=op,
            backend=backend,
            ranks=ranks,
            bytes=nbytes,
            algbw_gb_s=algbw_gb_s(nbytes, t),
            busbw_gb_s=busbw_gb_s(op, ranks, nbytes, t),
            latency_us=t * 1e6 if nbytes <= LATENCY_MAX_BYTES else None,
        )
        for op, nbytes, t in report["rows"]
    )
    return CollectiveRun(backend, ranks, report["correct"], report["max_abs_error"], results)
