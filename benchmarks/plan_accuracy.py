"""Accuracy table: the analytic planner's peak of live tensors against MemTracker on real CPU tensors.

Same cases as tests/plan/test_accuracy.py (which fails beyond 10 %); this prints the table for the record:
    python benchmarks/plan_accuracy.py [family ...]
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from rich.console import Console
from rich.table import Table
from tests.plan.families import SMALL, without_dropout

from treino.plan import TrainSetup, estimate_training_memory, model_from_config
from treino.trace import engine

MICRO_BATCH, SEQ_LEN = 2, 256
MIB = 2**20


def main(families: list[str]) -> None:
    table = Table(title=f"Analytic peak vs MemTracker (real CPU tensors, micro-batch {MICRO_BATCH} x {SEQ_LEN})")
    for col in ("family", "precision", "attention", "checkpointing", "predicted MiB", "measured MiB", "error"):
        table.add_column(col, justify="right" if "MiB" in col or col == "error" else "left")
    worst = 0.0
    for family in families:
        for precision in ("fp32", "bf16-mixed"):
            for attention in ("eager", "sdpa"):
                if family == "gemma2" and attention == "sdpa":
                    continue
                cfg = without_dropout(SMALL[family]) if attention == "sdpa" else SMALL[family]
                for checkpointing in ("none", "full"):
                    torch.manual_seed(0)
                    model = engine.build_hf_model(cfg, precision=precision, attention=attention)
                    measured = engine.measure_training_step(
                        model,
                        engine.lm_batch(cfg, MICRO_BATCH, SEQ_LEN),
                        precision=precision,
                        checkpointing=checkpointing,
                    ).peak_bytes
                    setup = TrainSetup(
                        micro_batch=MICRO_BATCH,
                        seq_len=SEQ_LEN,
                        precision=precision,
                        attention=attention,
                        checkpointing=checkpointing,
                    )
                    predicted = estimate_training_memory(model_from_config(cfg), setup).peak_tensor_bytes
                    error = predicted / measured - 1
                    worst = max(worst, abs(error))
                    table.add_row(
                        family,
                        precision,
                        attention,
                        checkpointing,
                        f"{predicted / MIB:,.1f}",
                        f"{measured / MIB:,.1f}",
                        f"{error:+.1%}",
                    )
    Console().print(table)
    Console().print(f"worst |error|: {worst:.1%} (bound 10 %)")


if __name__ == "__main__":
    main(sys.argv[1:] or sorted(SMALL))
