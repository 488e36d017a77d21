"""Parity table: trace mode's peak against an ordinary training step of the same model on real CPU tensors.

Same reference as tests/trace/test_parity.py (which fails beyond 1 %), over every family of
tests/plan/families.py, tied and untied embeddings, a 32k vocabulary in fp32 and a 256k one under bf16
autocast. Measured on CPU (two shared cores: 10-60 s a case). Prints the table for the record:
    python benchmarks/trace_parity.py [family ...]

With --cuda the real run is on the GPU (CUDA's autocast lists, fused SDPA kernels, foreach AdamW) and trace
mode plans for a GPU, on CPU fake tensors as always; without a CUDA device it says so and exits 0:
    python benchmarks/trace_parity.py --cuda [family ...]
"""

from __future__ import annotations

import dataclasses
import json
import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from rich.console import Console
from rich.table import Table
from tests.plan.families import SMALL
from tests.trace import real_run

from treino import catalog
from treino.plan import TrainSetup
from treino.plan.hardware import GpuSpec
from treino.trace.plan import plan_by_trace

# (vocabulary, precision): Llama 2's 32k in fp32, Gemma's 256k under bf16 autocast.
CASES = ((32_000, "fp32"), (256_000, "bf16-mixed"))
MIB = 2**20


def cpu_host() -> GpuSpec:
    """The plan's device for `--gpu cpu`: a CPU host (only its name tells trace mode the device)."""
    return dataclasses.replace(catalog.gpu("l4"), name="cpu", display_name="CPU host")


def trace_peak(config: dict[str, object], precision: str, folder: Path, gpu: GpuSpec) -> int:
    path = folder / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    setup = TrainSetup(
        micro_batch=real_run.MICRO_BATCH,
        seq_len=real_run.SEQ_LEN,
        precision=precision,
        attention=real_run.attention(str(config["model_type"])),
    )
    return plan_by_trace(str(path), gpu, setup).memory.peak_tensor_bytes


def main(families: list[str], device: str) -> None:
    warnings.simplefilter("ignore")
    gpu = cpu_host() if device == "cpu" else catalog.gpu("h200-sxm")
    where = "real CPU tensors" if device == "cpu" else "a CUDA device"
    table = Table(title=f"Trace vs an ordinary training step on {where} (1 x {real_run.SEQ_LEN} tokens)")
    for col in ("family", "embeddings", "vocab", "precision", "trace MiB", "real MiB", "error", "logits MiB"):
        table.add_column(col, justify="left" if col in ("family", "embeddings", "precision") else "right")
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        cases = [(f, tied, v, p) for f in families for tied in (True, False) for v, p in CASES]
        for family, tied, vocab, precision in cases:
            config = real_run.tiny_config(family, vocab=vocab, tied=tied)
            traced = trace_peak(config, precision, Path(tmp), gpu)
            real = real_run.peak_bytes(config, precision=precision, device=device)
            error = traced / real - 1
            worst = max(worst, abs(error))
            logits = real_run.MICRO_BATCH * real_run.SEQ_LEN * vocab * 4
            row = (family, "tied" if tied else "untied", f"{vocab:,}", precision)
            table.add_row(*row, f"{traced / MIB:.2f}", f"{real / MIB:.2f}", f"{error:+.2%}", f"{logits / MIB:.1f}")
            print(*row, traced, real, f"{error:+.3%}", flush=True)
    Console(width=140).print(table)
    print(f"worst |error|: {worst:.2%} (target 1 %)")


if __name__ == "__main__":
    args = sys.argv[1:]
    on_cuda = "--cuda" in args
    families = [a for a in args if a != "--cuda"] or list(SMALL)
    if on_cuda:
        import torch

        if not torch.cuda.is_available():
            print("No CUDA device: the --cuda parity table needs a GPU; skipped.")
            sys.exit(0)
    main(families, "cuda" if on_cuda else "cpu")
