"""Selective checkpointing's recompute, measured: the live tensors while backward rebuilds the top block's attention
core, against the plan's "backward, recompute" phase.

The step's global peak (benchmarks/kernel_accuracy.py) shows this phase only where it is the largest one (BERT in
bf16-true at 2 x 256 tokens; long sequences). This script finds the phase itself: MemTracker's running total after
every operator of the measured step (treino.trace.engine's tracker, with each total logged), and the largest total
in a window of operators around the first softmax of backward, i.e. the top block's core being rebuilt and
differentiated. Each case is a small model of tests/plan/families.py with 10 % dropout (GPT-2, BERT: their default),
micro-batch 2 x 256, planned for the CPU it runs on.

    python benchmarks/recompute_window.py [family ...] [--precisions fp32,bf16-mixed,bf16-true]

Prints the measured window, the planned phase, their error, and the global peaks beside them. No target of its own:
tests/plan/test_selective.py holds the plan's phase to figures this script printed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table
from tests.plan.families import SMALL, cpu_setup, dropout_on, step_totals

MICRO_BATCH, SEQ_LEN = 2, 256
MIB = 2**20
# Operators before and after backward's first softmax (its recompute's forward, then its gradient) that the window
# spans: the core's whole recompute and backward in every family measured, and no other block's.
WINDOW_BEFORE, WINDOW_AFTER = 15, 25


def measure_window(
    cfg: dict[str, Any], precision: str, attention: str, micro_batch: int = MICRO_BATCH, seq_len: int = SEQ_LEN
) -> tuple[int, int]:
    """(the largest total of live tensors in the recompute's window, the step's peak), in bytes."""
    totals, peak = step_totals(cfg, precision, attention, "selective", micro_batch, seq_len)
    first = next(i for i, m in enumerate(totals) if m.backward and "softmax" in m.op and "log_softmax" not in m.op)
    window = max(m.total for m in totals[first - WINDOW_BEFORE : first + WINDOW_AFTER])
    return window, peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="*", metavar="family", help="default: every family of SMALL")
    parser.add_argument("--precisions", default="fp32,bf16-mixed,bf16-true")
    parser.add_argument("--micro-batch", type=int, default=MICRO_BATCH)
    parser.add_argument("--seq-len", type=int, default=SEQ_LEN, help="longer: the s x s tensors weigh more")
    args = parser.parse_args()
    import torch

    from treino.plan import estimate_training_memory, model_from_config

    torch.set_num_threads(2)
    table = Table(title="selective checkpointing: the top block's core recomputed, measured on CPU (MiB)")
    for column in ("family", "precision", "attention", "kernel"):
        table.add_column(column)
    for column in ("window", "planned", "error", "peak", "planned"):
        table.add_column(column, justify="right")
    for family in args.families or list(SMALL):
        cfg = dropout_on(family)
        for precision in args.precisions.split(","):
            for attention in ("eager",) if family == "gemma2" else ("eager", "sdpa"):  # gemma2: no SDPA path
                window, peak = measure_window(cfg, precision, attention, args.micro_batch, args.seq_len)
                setup = cpu_setup(precision, attention, "selective", args.micro_batch, args.seq_len)
                plan = estimate_training_memory(model_from_config(cfg), setup)
                phase = dict(plan.phase_peaks_bytes)["backward, recompute"]
                table.add_row(
                    family,
                    precision,
                    attention,
                    plan.attention_kernel,
                    f"{window / MIB:.2f}",
                    f"{phase / MIB:.2f}",
                    f"{phase / window - 1:+.1%}",
                    f"{peak / MIB:.2f}",
                    f"{plan.peak_tensor_bytes / MIB:.2f}",
                )
    Console(width=120).print(table)


if __name__ == "__main__":
    main()
