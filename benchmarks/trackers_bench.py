"""The SDK's per-step overhead of `run.log` with its tracker bridges on, against a 50 ms training step (issue 14's
target: <= 1 % with TensorBoard, the default tracker).

    python benchmarks/trackers_bench.py

For each set of trackers, a local run (treino.job) takes STEPS steps of STEP_S of pure-Python work each (a fixed
amount of work, calibrated alone: it holds the GIL, the worst case for a background thread) and logs METRICS
values per step. Three figures per row:
- log() on the loop: the median (and mean) time of the `run.log` call itself, timed around each call (the mean
  also holds the times the machine's other load took the core away mid-call);
- thread CPU per step: the CPU time of every thread but the loop's (the bridge's writer and TensorBoard's own)
  over the run, per step: what the trackers may take from the step when cores are scarce;
- step wall time against the same steps without trackers (noisy on a shared machine: informational).
The overhead is (median log() + thread CPU) / STEP_S, the figure the target is about.
"""

from __future__ import annotations

import logging
import os
import statistics
import tempfile
import time
from pathlib import Path

from rich.console import Console
from rich.table import Table

from treino import job, trackers

STEP_S = 0.050  # the training step the overhead is measured against
STEPS = 200  # steps per row (10 s at 50 ms)
METRICS = 4  # values per run.log call: loss, lr, grad_norm, tokens_per_s
MICRO_CALLS = 5_000  # run.log calls back to back (fewer than the bridge's queue holds), the call's cost alone
TARGET_FRACTION = 0.01
ROWS: list[tuple[str, list[str]]] = [
    ("no trackers", []),
    ("tensorboard (the default)", ["tensorboard"]),
    ("tensorboard + mlflow", ["tensorboard", "mlflow"]),
]


def calibrate(seconds: float) -> int:
    """Iterations of `work` that take `seconds` on this machine, alone."""
    n = 100_000
    while True:
        t0 = time.perf_counter()
        work(n)
        took = time.perf_counter() - t0
        if took > 0.2:
            return int(n * seconds / took)
        n *= 2


def work(iterations: int) -> float:
    acc = 0.0
    for i in range(iterations):
        acc += i * 1e-9
    return acc


def measure(names: list[str], folder: Path, iterations: int) -> dict[str, float]:
    run = job.init(checkpoint_dir=folder / "ckpt", trackers=names, trackers_dir=folder / "trackers")
    run.config(lr=3e-4, batch=32, model={"layers": 12})
    time.sleep(3.0 if names else 0.0)  # let the trackers open first (MLflow's import takes seconds)
    cpu0, thread0, wall0 = time.process_time(), time.thread_time(), time.perf_counter()
    logs = []
    for step in range(1, STEPS + 1):
        work(iterations)
        t0 = time.perf_counter()
        run.log(step=step, loss=1.0 / step, lr=3e-4, grad_norm=0.5, tokens_per_s=12_345.0)
        logs.append(time.perf_counter() - t0)
    wall_s = time.perf_counter() - wall0
    run.finish()  # the last writes, counted as the others' CPU
    others_cpu_s = (time.process_time() - cpu0) - (time.thread_time() - thread0)
    micro = job.init(checkpoint_dir=folder / "ckpt2", trackers=names, trackers_dir=folder / "trackers2")
    time.sleep(3.0 if names else 0.0)
    calls = []
    for step in range(1, MICRO_CALLS + 1):
        t0 = time.perf_counter()
        micro.log(step=step, loss=1.0 / step, lr=3e-4, grad_norm=0.5, tokens_per_s=12_345.0)
        calls.append(time.perf_counter() - t0)
    micro.finish()
    return {
        "log_median_s": statistics.median(logs),
        "log_mean_s": statistics.fmean(logs),
        "others_cpu_s": max(0.0, others_cpu_s) / STEPS,
        "step_s": wall_s / STEPS,
        "micro_mean_s": statistics.fmean(calls),
        "micro_p99_s": sorted(calls)[int(0.99 * len(calls))],
    }


def main() -> int:
    logging.basicConfig(level=logging.WARNING)
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    for name in (job.ENV_JOB_ID, job.ENV_CHECKPOINT_DIR, trackers.ENV_TRACKERS, trackers.ENV_TRACKERS_DIR):
        os.environ.pop(name, None)
    console = Console(width=max(Console().width, 140))
    iterations = calibrate(STEP_S)
    table = Table(
        title=f"run.log per-step overhead: {STEPS} steps of {STEP_S * 1000:.0f} ms of work, {METRICS} values each, "
        f"a local run on {os.cpu_count()} cores"
    )
    for col in (
        "trackers",
        "log() in loop: median / mean",
        f"log() x{MICRO_CALLS:,}: mean / p99",
        "thread CPU / step",
        "overhead",
        "target",
        "step (vs none)",
    ):
        table.add_column(col, justify="left" if col == "trackers" else "right")
    baseline_step_s = None
    with tempfile.TemporaryDirectory() as tmp:
        for label, names in ROWS:
            r = measure(names, Path(tmp) / label.split()[0], iterations)
            if baseline_step_s is None:
                baseline_step_s = r["step_s"]
            overhead = (r["log_median_s"] + r["others_cpu_s"]) / STEP_S
            table.add_row(
                label,
                f"{r['log_median_s'] * 1e6:.1f} / {r['log_mean_s'] * 1e6:.1f} µs",
                f"{r['micro_mean_s'] * 1e6:.1f} / {r['micro_p99_s'] * 1e6:.1f} µs",
                f"{r['others_cpu_s'] * 1e6:.0f} µs",
                f"{overhead:.3%}",
                f"<= {TARGET_FRACTION:.0%}" if names == ["tensorboard"] else "-",
                f"{r['step_s'] * 1000:.2f} ms ({r['step_s'] / baseline_step_s - 1:+.1%})",
            )
    console.print(table)
    console.print(
        "overhead = (median log() in the loop + the other threads' CPU per step) / step; the step time's change is "
        "against 'no trackers' and moves by a few % with the machine's other load."
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
