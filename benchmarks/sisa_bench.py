"""SISA on the churn example (treino.sisa, examples/churn_train.py): what an erasure's retraining costs against a
full retrain, and what K shards cost in accuracy against one model. Target (issue 16): an erasure retrains in at
most 1/K of a full retrain plus overhead.

    python benchmarks/sisa_bench.py        (part of make bench)

Runs in process, as local runs of the SDK (no server), on examples/data/clientes.csv (2,000 customers), with the
example's own model and training (full-batch AdamW on a logistic regression, STEPS steps per model; a SISA shard
spreads them over its slices). The held-out customers (treino.sisa's hash buckets, ~10 %) are never trained on.

- full retrain: one model on every training row, STEPS steps; the baseline an erasure costs without SISA.
- SISA, first training: K shards x R slices, every slice checkpointed.
- SISA, erasure: one customer's rows removed, the plan reopened on the folder the first training left: only the
  customer's shard retrains, from the slice before the customer's. Mean over ERASURES customers, each on a fresh
  copy of the folder. Times are CPU seconds of this process (time.process_time, one torch thread), so that other
  work on a shared machine does not count. "train" counts the AdamW steps only; "total" adds the plan (slice
  digests of every row, the same on every retraining), loading and writing the slice checkpoints.
- both on the data as is and on COPIES copies of it (each copy's customers distinct subjects): at 2,000 rows a
  step of this model costs about the same whatever its rows (fixed per-step overhead), so there only the slices
  skipped save time; with more rows a step costs in proportion to them, and a shard's retraining approaches 1/K.
- accuracy: of the single model and of the K-shard ensemble (mean probability), on the held-out customers.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.csv as pacsv  # type: ignore[import-untyped]
import torch
from rich.console import Console
from rich.table import Table

from treino import job, sisa

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "clientes.csv"
STEPS = 300
SLICES = 4
SHARD_COUNTS = (1, 2, 3, 5)
ERASURES = 5
SEED = 3
REPEATS = 3
COPIES = (1, 25)  # the churn data as is (2,000 rows), and 25 copies of it (50,000 rows)


def churn_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("churn_train", ROOT / "examples" / "churn_train.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Timed:
    """The training callback, timing its own calls (the AdamW steps only)."""

    def __init__(self, churn: ModuleType) -> None:
        self.churn = churn
        self.seconds = 0.0

    def fit(self, state: Any, x: torch.Tensor, y: torch.Tensor, steps: int) -> Any:
        start = time.process_time()
        out = self.churn.fit(state, x, y, steps)
        self.seconds += time.process_time() - start
        return out


def train_sisa(churn: ModuleType, folder: Path, table: pa.Table, shards: int) -> tuple[float, float, list[Any], Any]:
    """(total s, training s, the shards' final states, the plan) of one SISA training in `folder`."""
    os.environ[job.ENV_CHECKPOINT_DIR] = str(folder)
    run = job.init()
    start = time.process_time()
    plan = sisa.SisaPlan.open(run, table, subject_column="cpf", shards=shards, slices=SLICES)
    assert plan is not None
    timed = Timed(churn)
    mean, std = torch.tensor(churn.FEATURE_MEAN), torch.tensor(churn.FEATURE_STD)
    for shard in plan.shards:
        state = plan.restore(shard)
        for j in range(shard.start_slice, plan.slices):
            x, y = churn.features(table.take(shard.rows_through(j)), mean, std)
            state = timed.fit(state, x, y, max(1, STEPS // plan.slices))
            plan.save(shard, j, state)
    plan.finish()
    finals = [plan.final_state(s) for s in plan.shards]
    total = time.process_time() - start
    run.finish()
    return total, timed.seconds, finals, plan


def accuracy(churn: ModuleType, states: list[Any], rows: pa.Table) -> float:
    x, y = churn.features(rows, torch.tensor(churn.FEATURE_MEAN), torch.tensor(churn.FEATURE_STD))
    return float(((churn.ensemble_probs(states, x) > 0.5).float() == y).float().mean())


def scaled(table: pa.Table, copies: int) -> pa.Table:
    """`copies` copies of the customers, each copy's CPFs made distinct subjects (a suffix): the same data, more
    rows, so that a step costs in proportion to the rows it sees."""
    if copies == 1:
        return table
    parts = []
    for c in range(copies):
        cpf = pc.binary_join_element_wise(table.column("cpf"), pa.scalar(f"{c:03d}"), "-")
        parts.append(table.set_column(table.schema.get_field_index("cpf"), "cpf", cpf))
    return pa.concat_tables(parts)


def main() -> int:
    console = Console(width=max(Console().width, 120))
    for copies in COPIES:
        bench(console, scaled(pacsv.read_csv(DATA), copies))
    console.print(
        f"Erasure: mean of {ERASURES} customers, each removed from a fresh copy of the first training's folder. "
        "CPU seconds of this process. 'train' = AdamW steps only; 'total' adds slice digests, checkpoint reads and "
        "writes. Python "
        f"{sys.version.split()[0]}, torch {torch.__version__}, 1 thread."
    )
    return 0


def bench(console: Console, table: pa.Table) -> None:
    churn = churn_example()
    keys = [sisa.subject_key(v) for v in table.column("cpf").to_pylist()]
    holdout_idx = [i for i, k in enumerate(keys) if sisa.held_out(k)]
    train_idx = [i for i, k in enumerate(keys) if not sisa.held_out(k)]
    holdout = table.take(holdout_idx)
    mean, std = torch.tensor(churn.FEATURE_MEAN), torch.tensor(churn.FEATURE_STD)
    torch.set_num_threads(1)

    # One model on every training row: the full retrain an erasure costs without SISA (after a warm-up: the first
    # AdamW step pays torch's one-time set-up), the median of REPEATS.
    x, y = churn.features(table.take(train_idx), mean, std)
    churn.fit(None, x, y, 5)
    totals, trains = [], []
    for _ in range(REPEATS):
        timed = Timed(churn)
        start = time.process_time()
        x, y = churn.features(table.take(train_idx), mean, std)
        single = timed.fit(None, x, y, STEPS)
        totals.append(time.process_time() - start)
        trains.append(timed.seconds)
    full_total, full_train = statistics.median(totals), statistics.median(trains)
    single_accuracy = accuracy(churn, [single], holdout)

    rng = __import__("random").Random(SEED)
    erased_customers = rng.sample([str(table.column("cpf")[i]) for i in train_idx], ERASURES)
    results = Table(title=f"SISA on the churn example: {table.num_rows} rows, {STEPS} steps a model, R={SLICES}, CPU")
    for name in (
        "shards K",
        "first training s",
        "erasure retrain s (train / total)",
        "vs full retrain",
        "target 1/K",
        "shards retrained",
        "holdout accuracy",
    ):
        results.add_column(name, justify="right")
    results.add_row(
        "1 (no SISA)",
        f"{full_total:.3f}",
        f"{full_train:.3f} / {full_total:.3f}",
        "1.00",
        "1.00",
        "1 of 1",
        f"{single_accuracy:.3f}",
    )
    with tempfile.TemporaryDirectory() as tmp:
        for shards in SHARD_COUNTS[1:]:
            base = Path(tmp) / f"k{shards}"
            first_total, _, finals, _ = train_sisa(churn, base, table, shards)
            ensemble_accuracy = accuracy(churn, finals, holdout)
            trains, totals, retrained = [], [], []
            for customer in erased_customers:
                folder = Path(tmp) / f"k{shards}-erased"
                shutil.rmtree(folder, ignore_errors=True)
                shutil.copytree(base, folder)
                kept = table.filter(pc.invert(pc.equal(table.column("cpf"), customer)))
                total, train, _, plan = train_sisa(churn, folder, kept, shards)
                trains.append(train)
                totals.append(total)
                retrained.append(len(plan.reused_from["retrained_shards"]))
            train_s, total_s = statistics.mean(trains), statistics.mean(totals)
            results.add_row(
                str(shards),
                f"{first_total:.3f}",
                f"{train_s:.3f} / {total_s:.3f}",
                f"{train_s / full_train:.2f} / {total_s / full_total:.2f}",
                f"{1 / shards:.2f}",
                f"{statistics.mean(retrained):.1f} of {shards}",
                f"{ensemble_accuracy:.3f}",
            )
    console.print(results)


if __name__ == "__main__":
    raise SystemExit(main())
