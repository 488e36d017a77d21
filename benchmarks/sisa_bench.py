"""SISA on the churn example (treino.sisa, examples/churn_train.py): what an erasure's retraining costs against a
full retrain, and what K shards cost in accuracy against one model. Target (issue 16): an erasure retrains in at
most 1/K of a full retrain plus overhead.

    python benchmarks/sisa_bench.py          (part of make bench)
    python benchmarks/sisa_bench.py --jobs   (the example as whole job processes)
    python benchmarks/sisa_bench.py --mlp-only   (the MLP's runs only, below)

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
- on the data as is and on COPIES copies of it (each copy's customers distinct subjects): at 2,000 rows a
  step of this model costs about the same whatever its rows (fixed per-step overhead), so there only the slices
  skipped save time; with more rows a step costs in proportion to them, and a shard's retraining approaches 1/K.
- accuracy: of the single model and of the K-shard ensemble (mean probability), on the held-out customers.
- the same runs with a second model whose step costs follow its rows (MLP_COPIES copies of the data, MLP_STEPS steps
  a model): an MLP 3 -> MLP_HIDDEN -> MLP_HIDDEN -> 1 (ReLU) on the example's features, full-batch AdamW, seeded;
  whether an erasure's total, treino's plan and checkpoints included, is within 1/K plus overhead, and what K
  shards cost it in accuracy.
- where an erasure's time goes (K = PHASES_K), phase by phase: treino's plan (canonical subject keys, the shard and
  slice of every row, the slice digests), reading and writing the slice checkpoints, registering the folder, the
  example's tensors and its AdamW steps.
- one step of the model by its rows: the fixed part of a step's cost against the part that follows its rows.
- a whole job, as a process (`--jobs`, not in `make bench`: a few minutes): CPU seconds of the example run as a script
  (start, imports, data, training, checkpoints), a full retrain against a SISA erasure's, and what a process pays
  before its first step (Python, torch, pyarrow, treino's SDK, torch._dynamo at the first optimizer).
"""

from __future__ import annotations

import importlib.util
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import ModuleType
from typing import Any, Protocol

import pyarrow as pa  # type: ignore[import-untyped]
import pyarrow.compute as pc  # type: ignore[import-untyped]
import pyarrow.csv as pacsv  # type: ignore[import-untyped]
import pyarrow.parquet as pq  # type: ignore[import-untyped]
import torch
from rich.console import Console
from rich.table import Table
from torch import nn

from treino import job, sisa

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "examples" / "data" / "clientes.csv"
STEPS = 300
SLICES = 4
SHARD_COUNTS = (1, 2, 3, 5)
ERASURES = 5
SEED = 3
REPEATS = 3
# The churn data as is (2,000 rows), 25 copies (50,000) and 250 (500,000): where a step's cost follows its rows
COPIES = (1, 25, 250)
# The MLP: 3 -> 64 -> 64 -> 1 costs ~2 ms a step on 2,000 rows and ~75 on 50,000 (one CPU thread), ~1.5 µs a row;
# 256 wide costs 9 times as much, which would leave ~25 steps a model in the MLP part's two minutes
MLP_HIDDEN = 64
MLP_STEPS = 100
MLP_LR = 0.01
MLP_COPIES = (1, 25)
PHASES_K = 3  # the K whose erasure is broken down phase by phase
STEP_COST_ROWS = (500, 2_000, 15_000, 50_000, 150_000, 500_000)  # rows a step of the model sees
STEP_COST_STEPS = 100
# The phases of an erasure's retraining: treino's (SisaPlan.open and its parts, checkpoint I/O), the example's own
OPEN, KEYS, ASSIGN, DIGESTS = "SisaPlan.open", "  subject keys", "  shard and slice of each row", "  slice digests"
CKPT_IO, TENSORS, ADAMW = (
    "slice checkpoints: read, write, register",
    "the example's tensors",
    "the example's AdamW steps",
)


class Model(Protocol):
    """What the benchmark trains: the churn example's module, or Mlp."""

    FEATURE_MEAN: tuple[float, ...]
    FEATURE_STD: tuple[float, ...]

    def features(self, table: pa.Table, mean: torch.Tensor, std: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]: ...

    def fit(self, state: Any, x: torch.Tensor, y: torch.Tensor, steps: int) -> Any: ...

    def ensemble_probs(self, states: list[Any], x: torch.Tensor) -> torch.Tensor: ...


class Mlp:
    """An MLP 3 -> MLP_HIDDEN -> MLP_HIDDEN -> 1 (ReLU) on the churn example's features and standardisation,
    trained like the example's model (full-batch AdamW from a seeded start): a step's cost follows its rows."""

    def __init__(self, churn: ModuleType) -> None:
        self.features = churn.features
        self.FEATURE_MEAN: tuple[float, ...] = churn.FEATURE_MEAN
        self.FEATURE_STD: tuple[float, ...] = churn.FEATURE_STD

    @staticmethod
    def net() -> nn.Sequential:
        h = MLP_HIDDEN
        return nn.Sequential(nn.Linear(3, h), nn.ReLU(), nn.Linear(h, h), nn.ReLU(), nn.Linear(h, 1))

    def fit(self, state: dict[str, Any] | None, x: torch.Tensor, y: torch.Tensor, steps: int) -> dict[str, Any]:
        torch.manual_seed(0)
        model = self.net()
        opt = torch.optim.AdamW(model.parameters(), lr=MLP_LR)
        if state is not None:
            model.load_state_dict(state["model"])
            opt.load_state_dict(state["optimizer"])
        for _ in range(steps):
            loss = nn.functional.binary_cross_entropy_with_logits(model(x).squeeze(1), y)
            opt.zero_grad()
            loss.backward()  # type: ignore[no-untyped-call]  # unannotated (torch 2.13)
            opt.step()
        return {"model": model.state_dict(), "optimizer": opt.state_dict()}

    def ensemble_probs(self, states: list[dict[str, Any]], x: torch.Tensor) -> torch.Tensor:
        probs = []
        for state in states:
            model = self.net()
            model.load_state_dict(state["model"])
            with torch.no_grad():
                probs.append(torch.sigmoid(model(x).squeeze(1)))
        return sisa.aggregate(probs)


def churn_example() -> ModuleType:
    spec = importlib.util.spec_from_file_location("churn_train", ROOT / "examples" / "churn_train.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Timed:
    """The training callback, timing its own calls (the AdamW steps only)."""

    def __init__(self, model: Model) -> None:
        self.model = model
        self.seconds = 0.0

    def fit(self, state: Any, x: torch.Tensor, y: torch.Tensor, steps: int) -> Any:
        start = time.process_time()
        out = self.model.fit(state, x, y, steps)
        self.seconds += time.process_time() - start
        return out


class Phases:
    """CPU seconds by phase of SISA trainings (the `with phases(NAME):` blocks), summed."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self._name, self._start = "", 0.0

    def __call__(self, name: str) -> Phases:
        self._name = name
        return self

    def __enter__(self) -> None:
        self._start = time.process_time()

    def __exit__(self, *exc: object) -> None:
        self.seconds[self._name] = self.seconds.get(self._name, 0.0) + time.process_time() - self._start


def train_sisa(
    model: Model, steps: int, folder: Path, table: pa.Table, shards: int, phases: Phases | None = None
) -> tuple[float, float, list[Any], Any]:
    """(total s, training s, the shards' final states, the plan) of one SISA training in `folder`; each phase's CPU
    seconds added to `phases`."""
    phases = phases or Phases()
    os.environ[job.ENV_CHECKPOINT_DIR] = str(folder)
    run = job.init()
    start = time.process_time()
    with phases(OPEN):
        plan = sisa.SisaPlan.open(run, table, subject_column="cpf", shards=shards, slices=SLICES)
    assert plan is not None
    timed = Timed(model)
    mean, std = torch.tensor(model.FEATURE_MEAN), torch.tensor(model.FEATURE_STD)
    for shard in plan.shards:
        with phases(CKPT_IO):
            state = plan.restore(shard)
        for j in range(shard.start_slice, plan.slices):
            with phases(TENSORS):
                x, y = model.features(table.take(shard.rows_through(j)), mean, std)
            with phases(ADAMW):
                state = timed.fit(state, x, y, max(1, steps // plan.slices))
            with phases(CKPT_IO):
                plan.save(shard, j, state)
    with phases(CKPT_IO):
        plan.finish()
        finals = [plan.final_state(s) for s in plan.shards]
    total = time.process_time() - start
    run.finish()
    return total, timed.seconds, finals, plan


def open_parts(table: pa.Table, shards: int) -> dict[str, float]:
    """CPU seconds of the parts of SisaPlan.open, called as it calls them: the canonical keys of every row, their
    shards and slices, and the digest of every slice's rows (the rest of open: checking the seeded folder)."""
    parts: dict[str, float] = {}
    start = time.process_time()
    keys = sisa.subject_key_array(table.column("cpf"))
    parts[KEYS] = time.process_time() - start
    start = time.process_time()
    assignment = sisa.assign(keys, shards, SLICES)
    parts[ASSIGN] = time.process_time() - start
    start = time.process_time()
    sisa.slice_digests(table, assignment)
    parts[DIGESTS] = time.process_time() - start
    return parts


def accuracy(model: Model, states: list[Any], rows: pa.Table) -> float:
    x, y = model.features(rows, torch.tensor(model.FEATURE_MEAN), torch.tensor(model.FEATURE_STD))
    return float(((model.ensemble_probs(states, x) > 0.5).float() == y).float().mean())


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


def child_cpu(argv: list[str], env: dict[str, str]) -> float:
    """CPU seconds (user + system) of one child process, run to its end, as a local run (no server)."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("TREINO_")}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, env={**clean, "OMP_NUM_THREADS": "1", **env}, stdout=subprocess.DEVNULL)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime


def jobs(console: Console) -> None:
    """The example as whole processes: what a job pays before its first step, and a full retrain's job against a
    SISA erasure's (K = PHASES_K), on the churn data as is. Medians of REPEATS (erasures: a mean over customers)."""
    py = sys.executable
    start = Table(title=f"What a job process pays before its first step, CPU s (median of {REPEATS})")
    for name in ("process", "CPU s"):
        start.add_column(name, justify="left" if name == "process" else "right")
    steps = (
        ("Python start", "pass"),
        ("+ import torch", "import torch"),
        ("+ pyarrow.parquet, treino.job, treino.sisa", "import torch, pyarrow.parquet; from treino import job, sisa"),
        (
            "+ the first torch.optim optimizer (it imports torch._dynamo)",
            "import torch, pyarrow.parquet; from treino import job, sisa; "
            "torch.optim.AdamW(torch.nn.Linear(3, 1).parameters())",
        ),
    )
    for name, code in steps:
        start.add_row(name, f"{statistics.median(child_cpu([py, '-c', code], {}) for _ in range(REPEATS)):.3f}")
    console.print(start)
    table = pacsv.read_csv(DATA)
    keys = sisa.subject_keys(table.column("cpf"))
    rng = __import__("random").Random(SEED)
    customers = rng.sample([str(table.column("cpf")[i]) for i, k in enumerate(keys) if not sisa.held_out(k)], REPEATS)
    script = [py, str(ROOT / "examples" / "churn_train.py"), "--steps", str(STEPS), "--save-every", str(STEPS)]
    sisa_env = {sisa.ENV_SISA: f"{PHASES_K}:{SLICES}"}
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        data = tmp / "clientes.parquet"
        pq.write_table(table, data)

        def fresh(name: str, seed: Path | None = None) -> dict[str, str]:
            folder = tmp / name
            shutil.rmtree(folder, ignore_errors=True)
            if seed is not None:
                shutil.copytree(seed, folder)
            return {job.ENV_CHECKPOINT_DIR: str(folder)}

        full = statistics.median(child_cpu([*script, "--data", str(data)], fresh("full")) for _ in range(REPEATS))
        first = child_cpu([*script, "--data", str(data)], {**fresh("base"), **sisa_env})
        erasures = []
        for customer in customers:
            kept = tmp / "kept.parquet"
            pq.write_table(table.filter(pc.invert(pc.equal(table.column("cpf"), customer))), kept)
            erasures.append(child_cpu([*script, "--data", str(kept)], {**fresh("erased", tmp / "base"), **sisa_env}))
    erasure = statistics.mean(erasures)
    whole = Table(title=f"The example as a job: {table.num_rows} rows, {STEPS} steps, CPU s of the process")
    for name in ("job", "CPU s", "vs full retrain"):
        whole.add_column(name, justify="left" if name == "job" else "right")
    whole.add_row("full retrain (no SISA)", f"{full:.3f}", "1.00")
    whole.add_row(f"SISA K={PHASES_K}, first training", f"{first:.3f}", f"{first / full:.2f}")
    whole.add_row(f"SISA K={PHASES_K}, erasure (mean of {len(erasures)})", f"{erasure:.3f}", f"{erasure / full:.2f}")
    console.print(whole)


def step_costs(console: Console) -> None:
    """CPU seconds of one AdamW step of the example's model by the rows it sees: a fixed part (autograd, the
    optimizer's dispatch) and a part that follows the rows. Where the fixed part dominates, a shard's step costs
    what the full model's does, and an erasure saves only the slices it skips."""
    churn = churn_example()
    torch.set_num_threads(1)
    x0, y0 = churn.features(pacsv.read_csv(DATA), torch.tensor(churn.FEATURE_MEAN), torch.tensor(churn.FEATURE_STD))
    churn.fit(None, x0, y0, 5)
    costs = Table(title=f"One step of the churn model by its rows: CPU ms (mean of {STEP_COST_STEPS})", min_width=90)
    for name in ("rows a step", "ms a step"):
        costs.add_column(name, justify="right")
    for rows in STEP_COST_ROWS:
        copies = -(-rows // x0.shape[0])
        x, y = x0.repeat(copies, 1)[:rows], y0.repeat(copies)[:rows]
        start = time.process_time()
        churn.fit(None, x, y, STEP_COST_STEPS)
        costs.add_row(f"{rows:,}", f"{(time.process_time() - start) / STEP_COST_STEPS * 1e3:.3f}")
    console.print(costs)


def main() -> int:
    console = Console(width=max(Console().width, 120))
    if "--jobs" in sys.argv[1:]:
        jobs(console)
        return 0
    mlp_only = "--mlp-only" in sys.argv[1:]
    if not mlp_only:
        for copies in COPIES:
            bench(console, scaled(pacsv.read_csv(DATA), copies))
        step_costs(console)
    start = time.process_time()
    mlp = Mlp(churn_example())
    for copies in MLP_COPIES:
        bench(
            console, scaled(pacsv.read_csv(DATA), copies), mlp, MLP_STEPS, f" with an MLP 3-{MLP_HIDDEN}-{MLP_HIDDEN}-1"
        )
    console.print(
        f"The MLP: 3-{MLP_HIDDEN}-{MLP_HIDDEN}-1, ReLU, on the example's features, full-batch AdamW (lr {MLP_LR}), "
        f"seeded; its runs took {time.process_time() - start:.1f} s CPU."
    )
    console.print(
        f"Erasure: mean of {ERASURES} customers, each removed from a fresh copy of the first training's folder. "
        "CPU seconds of this process. 'train' = the example's AdamW steps only; 'total' adds treino's plan (subject "
        "keys, shards and slices, slice digests), the slice checkpoints' reads and writes and the example's tensors. "
        f"Python {sys.version.split()[0]}, torch {torch.__version__}, 1 thread."
    )
    return 0


def bench(console: Console, table: pa.Table, model: Model | None = None, steps: int = STEPS, label: str = "") -> None:
    """The SISA table of `model` (None: the churn example's own) on `table`; the breakdown of a K=PHASES_K erasure's
    phases for the example's own model only."""
    own = model is None
    model = model or churn_example()
    keys = sisa.subject_keys(table.column("cpf"))
    holdout_idx = [i for i, k in enumerate(keys) if sisa.held_out(k)]
    train_idx = [i for i, k in enumerate(keys) if not sisa.held_out(k)]
    holdout = table.take(holdout_idx)
    mean, std = torch.tensor(model.FEATURE_MEAN), torch.tensor(model.FEATURE_STD)
    torch.set_num_threads(1)

    # One model on every training row: the full retrain an erasure costs without SISA (after a warm-up: the first
    # AdamW step pays torch's one-time set-up), the median of REPEATS.
    x, y = model.features(table.take(train_idx), mean, std)
    model.fit(None, x, y, 5)
    totals, trains = [], []
    for _ in range(REPEATS):
        timed = Timed(model)
        start = time.process_time()
        x, y = model.features(table.take(train_idx), mean, std)
        single = timed.fit(None, x, y, steps)
        totals.append(time.process_time() - start)
        trains.append(timed.seconds)
    full_total, full_train = statistics.median(totals), statistics.median(trains)
    single_accuracy = accuracy(model, [single], holdout)

    rng = __import__("random").Random(SEED)
    erased_customers = rng.sample([str(table.column("cpf")[i]) for i in train_idx], ERASURES)
    results = Table(
        title=f"SISA on the churn example{label}: {table.num_rows} rows, {steps} steps a model, R={SLICES}, CPU"
    )
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
            first_total, _, finals, _ = train_sisa(model, steps, base, table, shards)
            ensemble_accuracy = accuracy(model, finals, holdout)
            trains, totals, retrained = [], [], []
            phases = Phases()
            for customer in erased_customers:
                folder = Path(tmp) / f"k{shards}-erased"
                shutil.rmtree(folder, ignore_errors=True)
                shutil.copytree(base, folder)
                kept = table.filter(pc.invert(pc.equal(table.column("cpf"), customer)))
                total, train, _, plan = train_sisa(model, steps, folder, kept, shards, phases)
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
            if shards == PHASES_K:
                parts = open_parts(kept, shards)
                where = {k: v / len(erased_customers) for k, v in phases.seconds.items()}
    console.print(results)
    if not own:
        return
    breakdown = Table(
        title=f"Where a K={PHASES_K} erasure's retraining goes: {table.num_rows} rows, CPU s (mean of {ERASURES})"
    )
    for name in ("phase", "erasure s", "vs full retrain's total", "full retrain s"):
        breakdown.add_column(name, justify="left" if name == "phase" else "right")
    full_tensors = full_total - full_train
    for name in (OPEN, KEYS, ASSIGN, DIGESTS, CKPT_IO, TENSORS, ADAMW):
        seconds = where.get(name, parts.get(name, 0.0))
        full = {TENSORS: f"{full_tensors:.3f}", ADAMW: f"{full_train:.3f}"}.get(name, "-")
        breakdown.add_row(name, f"{seconds:.3f}", f"{seconds / full_total:.2f}", full)
    console.print(breakdown)


if __name__ == "__main__":
    raise SystemExit(main())
