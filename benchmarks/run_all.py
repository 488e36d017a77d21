"""Speed benchmarks of the planner, printed as Rich tables with each target and the ratio to it.

    python benchmarks/run_all.py            (make bench)
    python benchmarks/run_all.py --skip-trace

1. The analytic planner in-process: one plan, its advice, and a sweep of 10,000 configurations.
2. `treino plan train ... --json` as a user runs it: cold-start wall time, and that no torch is imported; the
   wall time of `treino bench --quick --json` (every CPU stage).
3. Trace mode on Llama-3-8B (fake tensors): wall time and peak resident memory of the process.

Targets are the issue's. A target missed is reported, not raised; the exit code is 1 only when a
measurement itself failed. Timing is noisy on shared machines: medians throughout.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import signal
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from treino import catalog
from treino.errors import PlanError
from treino.plan import TrainSetup, plan_training

PRESET = "llama-3-8b"
GPU = "h200-sxm"
PLAN_RUNS = 2000  # single plans timed one by one; the median is reported
ADVICE_RUNS = 20
SWEEP_CONFIGURATIONS = 10_000
SWEEP_SEED = 0
COLD_START_RUNS = 5
COLD_START_TIMEOUT_S = 60
TRACE_TIMEOUT_S = 600
KILL_GRACE_S = 5

TARGET_PLAN_S = 1e-3
TARGET_SWEEP_S = 1.0
TARGET_COLD_START_S = 0.5
TARGET_TRACE_S = 60.0
TARGET_TRACE_RSS_MIB = 2048.0
TARGET_BENCH_QUICK_S = 60.0  # `treino bench --quick` on a 2-core machine (the bench issue's bound)
BENCH_QUICK_TIMEOUT_S = 300

# Wide enough for the detail column when piped (make bench | tee), the terminal's width otherwise.
WIDTH_WHEN_PIPED = 150
console = Console() if Console().is_terminal else Console(width=WIDTH_WHEN_PIPED)


@dataclass
class Row:
    measure: str
    value: float | None = None  # in `unit`; None when the measurement failed
    unit: str = ""
    target: float | None = None  # upper bound, same unit
    detail: str = ""
    error: str = ""


def _fmt(value: float | None, unit: str) -> str:
    if value is None:
        return "-"
    if unit == "µs":
        return f"{value:,.1f} µs"
    if unit == "ms":
        return f"{value:,.1f} ms"
    if unit == "s":
        return f"{value:,.3f} s"
    if unit == "MiB":
        return f"{value:,.0f} MiB"
    return f"{value:g} {unit}".strip()


def _table(title: str, rows: list[Row]) -> Table:
    table = Table(title=title, title_justify="left")
    for column in ("measure", "value", "target", "ratio", "verdict", "detail"):
        table.add_column(column, justify="right" if column in ("value", "target", "ratio") else "left")
    for row in rows:
        if row.error:
            table.add_row(
                row.measure, "-", _fmt(row.target, row.unit), "-", "[bold red]ERROR[/]", row.error, style="red"
            )
            continue
        if row.target is None or row.value is None:
            table.add_row(row.measure, _fmt(row.value, row.unit), "-", "-", "", row.detail)
            continue
        ratio = row.value / row.target
        verdict = "[green]ok[/]" if ratio <= 1 else "[bold red]over[/]"
        table.add_row(
            row.measure,
            _fmt(row.value, row.unit),
            f"≤ {_fmt(row.target, row.unit)}",
            f"{ratio:.3f}",
            verdict,
            row.detail,
        )
    return table


def _guarded(measure: str, unit: str, target: float | None, body: Callable[[], Row]) -> Row:
    """One row; a failure becomes an ERROR row instead of ending the run."""
    try:
        return body()
    except Exception as exc:  # a benchmark reports every failure and goes on to the next row
        return Row(measure, unit=unit, target=target, error=f"{type(exc).__name__}: {exc}"[:300])


# 1. The analytic planner ------------------------------------------------------------------------------


def _median_s(func: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        func()
        times.append(time.perf_counter_ns() - start)
    return statistics.median(times) / 1e9


def sweep_configurations(count: int, seed: int = SWEEP_SEED) -> list[tuple[str, TrainSetup]]:
    """`count` distinct (preset, setup) pairs drawn from the grid below, the same ones every run."""
    grid = [
        (preset, TrainSetup(micro_batch=b, seq_len=s, precision=p, zero=z, gpus=g, checkpointing=c))
        for preset in catalog.model_names()
        for b in (1, 2, 4, 8)
        for s in (512, 1024, 2048, 4096, 8192)
        for p in ("fp32", "bf16-mixed", "fp16-mixed", "bf16-master", "bf16-true")
        for z in (0, 1, 2, 3)
        for g in (1, 2, 8)
        for c in ("none", "selective", "full")
    ]
    return random.Random(seed).sample(grid, min(count, len(grid)))


def analytic_rows() -> list[Row]:
    model = catalog.model(PRESET)
    gpu = catalog.gpu(GPU)
    setup = TrainSetup()
    rows = []

    def one_plan() -> Row:
        seconds = _median_s(lambda: plan_training(model, gpu, setup), PLAN_RUNS)
        return Row(
            "plan_training, one configuration",
            seconds * 1e6,
            "µs",
            TARGET_PLAN_S * 1e6,
            f"{PRESET} on {GPU}, median of {PLAN_RUNS:,}",
        )

    rows.append(_guarded("plan_training, one configuration", "µs", TARGET_PLAN_S * 1e6, one_plan))

    def advice() -> Row:
        from treino.plan.advice import CHANGES

        plan = plan_training(model, gpu, setup)
        seconds = _median_s(plan.advice, ADVICE_RUNS)
        return Row(
            "advice() for a plan that does not fit",
            seconds * 1e3,
            "ms",
            None,
            f"{len(plan.advice())} options from 2^{len(CHANGES)} re-plans, median of {ADVICE_RUNS}; no target",
        )

    rows.append(_guarded("advice() for a plan that does not fit", "ms", None, advice))

    def sweep() -> Row:
        configurations = sweep_configurations(SWEEP_CONFIGURATIONS)
        specs = {name: catalog.model(name) for name in {name for name, _ in configurations}}
        gpu_list = list(catalog.gpus().values())
        jobs = [(specs[name], gpu_list[i % len(gpu_list)], s) for i, (name, s) in enumerate(configurations)]
        refused = 0
        start = time.perf_counter()
        for spec, g, s in jobs:
            try:
                plan_training(spec, g, s)
            except PlanError:  # e.g. GPT-2 at 4,096 tokens: the planner refuses, which is timed too
                refused += 1
        seconds = time.perf_counter() - start
        return Row(
            f"sweep of {len(jobs):,} configurations",
            seconds,
            "s",
            TARGET_SWEEP_S,
            f"{len(specs)} presets x micro-batch x seq-len x precision x ZeRO x GPUs x checkpointing; "
            f"{refused:,} refused; without advice",
        )

    rows.append(_guarded(f"sweep of {SWEEP_CONFIGURATIONS:,} configurations", "s", TARGET_SWEEP_S, sweep))
    return rows


# 2. The command, cold ------------------------------------------------------------------------------------


def _run(argv: list[str], timeout_s: float) -> tuple[subprocess.CompletedProcess[str], float]:
    """Run `argv` in its own process group; on timeout SIGTERM the group, then SIGKILL after a grace."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            out, err = proc.communicate(timeout=KILL_GRACE_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        raise TimeoutError(f"{' '.join(argv[:4])} ... ran over {timeout_s:g} s and was killed") from None
    seconds = time.perf_counter() - start
    return subprocess.CompletedProcess(argv, proc.returncode, out, err), seconds


def _treino_argv() -> list[str]:
    """The `treino` console script next to this interpreter, as a user runs it; else `python -m treino`."""
    script = Path(sys.executable).with_name("treino")
    return [str(script)] if script.exists() else [sys.executable, "-m", "treino"]


_NO_TORCH_CHECK = """
import contextlib, io, sys
import treino.cli.app as app
with contextlib.redirect_stdout(io.StringIO()) as out:
    app.app(["plan", "train", "--model", "llama-3-8b", "--gpu", "h200-sxm", "--json"], standalone_mode=False)
assert '"method": "analytic"' in out.getvalue()
print("torch" in sys.modules, "transformers" in sys.modules)
"""


def cli_rows() -> list[Row]:
    argv = [*_treino_argv(), "plan", "train", "--model", PRESET, "--gpu", GPU, "--json"]

    def cold_start() -> Row:
        times = []
        for _ in range(COLD_START_RUNS):
            result, seconds = _run(argv, COLD_START_TIMEOUT_S)
            if result.returncode != 0:
                raise RuntimeError(f"exit {result.returncode}: {result.stderr.strip()[-200:]}")
            json.loads(result.stdout)
            times.append(seconds)
        return Row(
            "treino plan train --json, cold start",
            statistics.median(times),
            "s",
            TARGET_COLD_START_S,
            f"median of {COLD_START_RUNS} processes ({min(times):.3f}-{max(times):.3f} s)",
        )

    def import_time() -> Row:
        code = "import time; t = time.perf_counter(); import treino.cli.app; print(time.perf_counter() - t)"
        times = []
        for _ in range(COLD_START_RUNS):
            result, _ = _run([sys.executable, "-c", code], COLD_START_TIMEOUT_S)
            if result.returncode != 0:
                raise RuntimeError(result.stderr.strip()[-300:])
            times.append(float(result.stdout))
        return Row(
            "of which: import treino.cli.app",
            statistics.median(times),
            "s",
            None,
            f"median of {COLD_START_RUNS}; typer, rich, pydantic and the catalog models; no target",
        )

    def no_torch() -> Row:
        result, _ = _run([sys.executable, "-c", _NO_TORCH_CHECK], COLD_START_TIMEOUT_S)
        if result.returncode != 0:
            raise RuntimeError(result.stderr.strip()[-300:])
        torch_loaded, transformers_loaded = result.stdout.split()
        if torch_loaded != "False" or transformers_loaded != "False":
            return Row(
                "no torch after an analytic plan",
                None,
                error=f"torch imported: {torch_loaded}, transformers imported: {transformers_loaded}",
            )
        return Row(
            "no torch after an analytic plan",
            None,
            detail="'torch' and 'transformers' not in sys.modules after `plan train --json` in-process: ok",
        )

    def bench_quick() -> Row:
        result, seconds = _run([*_treino_argv(), "bench", "--quick", "--json"], BENCH_QUICK_TIMEOUT_S)
        if result.returncode != 0:
            raise RuntimeError(f"exit {result.returncode}: {result.stderr.strip()[-200:]}")
        json.loads(result.stdout)
        return Row("treino bench --quick --json, wall time", seconds, "s", TARGET_BENCH_QUICK_S, "every CPU stage")

    return [
        _guarded("treino plan train --json, cold start", "s", TARGET_COLD_START_S, cold_start),
        _guarded("of which: import treino.cli.app", "s", None, import_time),
        _guarded("no torch after an analytic plan", "", None, no_torch),
        _guarded("treino bench --quick --json, wall time", "s", TARGET_BENCH_QUICK_S, bench_quick),
    ]


# 3. Trace mode on Llama-3-8B ----------------------------------------------------------------------------

_TRACE = """
import json, resource, time
start = time.perf_counter()
from treino import catalog
from treino.plan import TrainSetup
from treino.trace.plan import plan_by_trace
imported = time.perf_counter()
plan = plan_by_trace("llama-3-8b", catalog.gpu("h200-sxm"),
                     TrainSetup(micro_batch=1, seq_len=2048, precision="bf16-mixed"))
done = time.perf_counter()
print(json.dumps({"import_s": imported - start, "trace_s": done - imported,
                  "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "peak_tensor_bytes": plan.memory.peak_tensor_bytes, "params": plan.memory.params}))
"""


def trace_rows() -> list[Row]:
    measured: dict[str, float] = {}

    def wall() -> Row:
        result, seconds = _run([sys.executable, "-c", _TRACE], TRACE_TIMEOUT_S)
        if result.returncode != 0:
            raise RuntimeError(f"exit {result.returncode}: {result.stderr.strip()[-300:]}")
        measured.update(json.loads(result.stdout.strip().splitlines()[-1]))
        return Row(
            "trace llama-3-8b, b=1 x 2048, bf16-mixed: wall",
            seconds,
            "s",
            TARGET_TRACE_S,
            f"whole process; imports {measured['import_s']:.1f} s, trace {measured['trace_s']:.1f} s; "
            f"peak of live tensors {measured['peak_tensor_bytes'] / 2**30:,.1f} GiB",
        )

    def rss() -> Row:
        if "maxrss_mib" not in measured:
            raise RuntimeError("the trace above did not finish")
        return Row(
            "trace llama-3-8b: peak RSS",
            measured["maxrss_mib"],
            "MiB",
            TARGET_TRACE_RSS_MIB,
            f"ru_maxrss of the process; {measured['params'] / 1e9:.2f} B parameters, all fake",
        )

    return [
        _guarded("trace llama-3-8b, b=1 x 2048, bf16-mixed: wall", "s", TARGET_TRACE_S, wall),
        _guarded("trace llama-3-8b: peak RSS", "MiB", TARGET_TRACE_RSS_MIB, rss),
    ]


@contextlib.contextmanager
def _section(title: str) -> Iterator[list[Row]]:
    rows: list[Row] = []
    with console.status(title):
        yield rows
    console.print(_table(title, rows))
    console.print()


# 4. treino recommend ----------------------------------------------------------------------------------

TARGET_RECOMMEND_S = 1.0  # the issue: every offer, 1-64 GPUs, every strategy, <= 1 s


def recommend_rows() -> list[Row]:
    from treino.catalog import offers as offer_catalog
    from treino.plan.recommend import STRATEGIES, recommend

    def search() -> Row:
        cands = offer_catalog.candidates()
        fx, model = offer_catalog.fx_rate(), catalog.model("llama-3-8b")
        seconds = _median_s(lambda: recommend(model, cands, fx, tokens=2e9, seq_len=4096, max_gpus=64), 5)
        return Row(
            "recommend over the whole catalog",
            seconds,
            "s",
            TARGET_RECOMMEND_S,
            f"{len(cands)} offers x 1-64 GPUs x {len(STRATEGIES)} strategies; llama-3-8b, 2e9 tokens; median of 5",
        )

    return [_guarded("recommend over the whole catalog", "s", TARGET_RECOMMEND_S, search)]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--skip-trace", action="store_true", help="skip the Llama-3-8B trace (about 20 s)")
    args = parser.parse_args(argv)
    all_rows: list[Row] = []
    sections: list[tuple[str, Callable[[], list[Row]]]] = [
        ("1. Analytic planner (in-process)", analytic_rows),
        ("2. treino plan train, as a user runs it", cli_rows),
        ("4. treino recommend", recommend_rows),
    ]
    if not args.skip_trace:
        sections.append(("3. Trace mode, Llama-3-8B on fake tensors", trace_rows))
    for title, rows_of in sections:
        with _section(title) as rows:
            rows.extend(rows_of())
        all_rows.extend(rows)
    errors = [r for r in all_rows if r.error]
    over = [r for r in all_rows if not r.error and r.target is not None and r.value is not None and r.value > r.target]
    console.print(f"{len(all_rows)} measures: {len(over)} over target, {len(errors)} failed.")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
