"""Sharded checkpoints (treino.sharded) against a plain torch.save of the same 1 GiB state, and the training loop's
stall with an asynchronous sharded save, against the issue's target: blocked <= 10 % of the synchronous save.

    python benchmarks/sharded_bench.py [--runs N] [--threads-per-rank T]       (part of make bench)

The state is 1 GiB of float32 (8 tensors of 128 MiB). Plain: one process, `run.save` (rank 0 writes one file,
fsynced, renamed into place). Sharded: 2 ranks (gloo, CPU; spawned by this process, each with T intra-op threads,
1 by default as torchrun sets OMP_NUM_THREADS=1 when it starts several processes per node), each holding half of
every tensor as a DTensor sharded on dim 0, `run.save_sharded` (each rank writes its 512 MiB, fsynced; rank 0
renames the folder into place). Async: `run.save_sharded(..., async_save=True)`; "blocked" is the time the call
takes, "on disk" the time until the background write is complete. Each save is timed on every rank between
barriers and counted at its slowest rank (the next collective of the loop waits for it).

The blocked time is split into its parts (treino.sharded's `blocked_s`, the rank's own figures): waiting for the
previous async save, rank 0 removing a killed writer's leftover folder, the async process group (made by the first
async save only), the staging copy of the state to CPU memory, and the rest of DCP's async_save (handing the
write to its thread). Planning, its collectives, the writes, fsyncs, rename and the report to the server run in
the background and are not part of it.

Figures are medians over REPEATS saves in each of N runs (fresh ranks each run), with their spread (min-max): the
machine may be shared. The first async save of a run, which also makes the reused CPU copy (its pages are faulted
in by the copy), is shown on its own row. Files go under $TMPDIR and are removed.
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import tempfile
import time
from pathlib import Path

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from rich.console import Console
from rich.table import Table
from torch.distributed.device_mesh import init_device_mesh
from torch.distributed.tensor import DTensor, Shard

from treino import job

STATE_BYTES = 2**30  # 1 GiB
TENSORS = 8
RANKS = 2
REPEATS = 4  # saves of each kind per run
RUNS = 1  # --runs
THREADS_PER_RANK = 1  # --threads-per-rank; torchrun's OMP_NUM_THREADS for several processes per node
TARGET_BLOCKED_FRACTION = 0.10  # of the synchronous sharded save's wall time (issue 14)
BLOCKED_PARTS = {  # treino.sharded's blocked_s keys of an async save, in the order they happen
    "wait": "waiting for the previous async save",
    "folder": "rank 0 removing a leftover folder",
    "group": "async process group (made once)",
    "stage": "staging: copy of the state to CPU memory",
    "dcp": "rest of DCP's async_save (starting its thread)",
}


def full_state() -> dict[str, torch.Tensor]:
    numel = STATE_BYTES // 4 // TENSORS
    return {f"layer{i}.weight": torch.full((numel // 1024, 1024), float(i)) for i in range(TENSORS)}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def plain_saves(folder: Path) -> list[float]:
    state = full_state()
    run = job.Run(checkpoint_dir=folder, keep=1)
    times = []
    for step in range(1, REPEATS + 1):
        began = time.perf_counter()
        run.save(state, step=step)
        times.append(time.perf_counter() - began)
    run.finish()
    return times


def slowest(mine: dict[str, float]) -> dict[str, float]:
    """The figures of the rank whose "total" is the largest (every rank calls this)."""
    every: list[dict[str, float]] = [{} for _ in range(RANKS)]
    dist.all_gather_object(every, mine)
    return max(every, key=lambda figures: figures["total"])


def sharded_saves(rank: int, port: int, folder: str, results: str, threads: int) -> None:
    torch.set_num_threads(threads)
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK=str(rank), WORLD_SIZE=str(RANKS))
    os.environ["LOCAL_RANK"] = str(rank)
    dist.init_process_group("gloo", rank=rank, world_size=RANKS)
    mesh = init_device_mesh("cpu", (RANKS,))
    state = {
        name: DTensor.from_local(tensor.chunk(RANKS)[rank].clone(), mesh, [Shard(0)])
        for name, tensor in full_state().items()
    }
    run = job.Run(checkpoint_dir=folder, keep=1)
    sync: list[dict[str, float]] = []
    blocked: list[dict[str, float]] = []  # the first: the save that makes the CPU copy
    on_disk_s: list[float] = []
    for step in range(1, REPEATS + 1):
        dist.barrier()
        began = time.perf_counter()
        run.save_sharded(state, step=step)
        sync.append(slowest({"total": time.perf_counter() - began}))
    for step in range(REPEATS + 1, 2 * REPEATS + 2):
        dist.barrier()
        began = time.perf_counter()
        run.save_sharded(state, step=step, async_save=True)
        blocked.append(slowest({"total": time.perf_counter() - began, **run._sharded().blocked_s}))
        run._sharded().wait()
        dist.barrier()
        on_disk_s.append(time.perf_counter() - began)
    run.finish()
    if rank == 0:
        torch.save({"sync": sync, "blocked": blocked, "on_disk": on_disk_s}, results)
    dist.destroy_process_group()


def spread(values: list[float], scale: float = 1.0, fmt: str = ".2f") -> str:
    """median (min-max), each multiplied by `scale`."""
    m, lo, hi = (scale * statistics.median(values), scale * min(values), scale * max(values))
    return f"{m:{fmt}} ({lo:{fmt}}-{hi:{fmt}})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS, help="runs, each with fresh ranks")
    parser.add_argument("--threads-per-rank", type=int, default=THREADS_PER_RANK, help="intra-op threads per rank")
    args = parser.parse_args()
    console = Console()
    plain_s: list[float] = []
    sync: list[dict[str, float]] = []
    blocked: list[dict[str, float]] = []
    first: list[dict[str, float]] = []
    on_disk_s: list[float] = []
    with tempfile.TemporaryDirectory(prefix="treino-sharded-bench-") as tmp:
        for run in range(args.runs):
            plain_s += plain_saves(Path(tmp) / "plain")
            results = Path(tmp) / "results.pt"
            spawn = (free_port(), str(Path(tmp) / f"sharded-{run}"), str(results), args.threads_per_rank)
            mp.start_processes(sharded_saves, args=spawn, nprocs=RANKS, start_method="spawn")
            figures = torch.load(results)
            sync += figures["sync"]
            first.append(figures["blocked"][0])  # also makes the CPU copy that later async saves reuse
            blocked += figures["blocked"][1:]
            on_disk_s += figures["on_disk"][1:]
    sync_s = statistics.median(f["total"] for f in sync)
    blocked_s = [f["total"] for f in blocked]
    fractions = [b / sync_s for b in blocked_s]
    blocked_fraction = statistics.median(fractions)

    gib = STATE_BYTES / 2**30
    table = Table(
        title=f"checkpoint of a {gib:.0f} GiB state: plain torch.save vs sharded ({RANKS} ranks, "
        f"{args.threads_per_rank} thread(s) each, CPU)"
    )
    for col in ("benchmark", "median (min-max)", "target", "ratio"):
        table.add_column(col, justify="left" if col == "benchmark" else "right")
    plain_median_s = statistics.median(plain_s)
    table.add_row("plain run.save (1 process, 1 file)", spread(plain_s) + " s", "-", "1.00")
    table.add_row(
        f"sharded run.save_sharded ({RANKS} ranks, sync)",
        spread([f["total"] for f in sync]) + " s",
        "-",
        f"{sync_s / plain_median_s:.2f}",
    )
    table.add_row(
        "async save: training loop blocked",
        spread(blocked_s, fmt=".3f") + " s",
        "-",
        "-",
    )
    table.add_row(
        "  the same, as a share of the sync save (median)",
        spread(fractions, scale=100, fmt=".1f") + " %",
        f"<= {TARGET_BLOCKED_FRACTION:.0%}",
        f"{blocked_fraction / TARGET_BLOCKED_FRACTION:.2f}",
    )
    table.add_row(
        "async save: blocked, first save of a run (makes the CPU copy)",
        spread([f["total"] for f in first], fmt=".3f") + " s",
        "-",
        "-",
    )
    table.add_row("async save: until complete on disk", spread(on_disk_s) + " s", "-", "-")
    console.print(table)

    parts = Table(title="async save: where the blocked time goes (the slowest rank's parts, ms)")
    for col in ("part", "median (min-max)", "share of blocked", "first save"):
        parts.add_column(col, justify="left" if col == "part" else "right")
    median_blocked_s = statistics.median(blocked_s)
    for key, label in BLOCKED_PARTS.items():
        values = [f[key] for f in blocked]
        parts.add_row(
            label,
            spread(values, scale=1000, fmt=".1f"),
            f"{statistics.median(values) / median_blocked_s:.1%}",
            spread([f[key] for f in first], scale=1000, fmt=".1f"),
        )
    rest = [f["total"] - sum(f[key] for key in BLOCKED_PARTS) for f in blocked]
    parts.add_row(
        "rest (Run.save_sharded's own code, unmeasured)",
        spread(rest, scale=1000, fmt=".1f"),
        f"{statistics.median(rest) / median_blocked_s:.1%}",
        spread([f["total"] - sum(f[key] for key in BLOCKED_PARTS) for f in first], scale=1000, fmt=".1f"),
    )
    console.print(parts)
    console.print(
        f"{args.runs} run(s) of {REPEATS} saves of each kind (async: after the first), each fsynced; measured on "
        "CPU. Ratio: to plain torch.save for the save time; to the target for the blocked share (<= 1 meets it). On "
        "CPU the staging copy is a copy of each rank's state in memory (memory bandwidth, shared by the ranks); on "
        "GPUs it is a copy to pinned host memory."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
