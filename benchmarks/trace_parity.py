"""Parity table: trace mode's peak against an ordinary training step of the same model on real CPU tensors.

Same reference as tests/trace/test_parity.py (which fails beyond 1 %), over every family of
tests/plan/families.py, tied and untied embeddings, a 32k vocabulary in fp32 and a 256k one under bf16
autocast. Measured on CPU (two shared cores: 10-60 s a case). Prints the table for the record:
    python benchmarks/trace_parity.py [family ...]

With --cuda the real run is on the GPU (CUDA's autocast lists, fused SDPA kernels, foreach AdamW) and trace
mode plans for a GPU, on CPU fake tensors as always; without a CUDA device it says so and exits 0:
    python benchmarks/trace_parity.py --cuda [--json out.json] [family ...]

With --json the rows are written after each case (a run stopped at its time limit keeps them). --cuda over every
family (11 x tied/untied x 2 vocabularies = 44 cases): traces take about a second each on the host's CPU, the real
steps of these tiny models well under one on the GPU; expected about 60-90 s in all on an H200 machine
(benchmarks/device_check.sh gives it 150 s). On CUDA a failing case is reported and the others still run.
"""

from __future__ import annotations

import argparse
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


def main(families: list[str], device: str, json_path: Path | None = None) -> None:
    warnings.simplefilter("ignore")
    gpu = cpu_host() if device == "cpu" else catalog.gpu("h200-sxm")
    where = "real CPU tensors" if device == "cpu" else "a CUDA device"
    table = Table(title=f"Trace vs an ordinary training step on {where} (1 x {real_run.SEQ_LEN} tokens)")
    for col in ("family", "embeddings", "vocab", "precision", "trace MiB", "real MiB", "error", "logits MiB"):
        table.add_column(col, justify="left" if col in ("family", "embeddings", "precision") else "right")
    worst = 0.0
    result: dict[str, object] = {"device": device, "plan_gpu": gpu.name, "seq_len": real_run.SEQ_LEN, "rows": []}
    if device == "cuda":
        import torch

        result |= {"device_name": torch.cuda.get_device_name(), "torch": torch.__version__}
    rows: list[dict[str, object]] = result["rows"]  # type: ignore[assignment]
    with tempfile.TemporaryDirectory() as tmp:
        cases = [(f, tied, v, p) for f in families for tied in (True, False) for v, p in CASES]
        for family, tied, vocab, precision in cases:
            row = (family, "tied" if tied else "untied", f"{vocab:,}", precision)
            case = {"family": family, "tied": tied, "vocab": vocab, "precision": precision}
            try:
                config = real_run.tiny_config(family, vocab=vocab, tied=tied)
                traced = trace_peak(config, precision, Path(tmp), gpu)
                real = real_run.peak_bytes(config, precision=precision, device=device)
            except Exception as exc:
                if device == "cpu":
                    raise
                print(*row, f"failed: {type(exc).__name__}: {exc}", flush=True)
                rows.append(case | {"error": f"{type(exc).__name__}: {exc}"})
                continue
            error = traced / real - 1
            worst = max(worst, abs(error))
            logits = real_run.MICRO_BATCH * real_run.SEQ_LEN * vocab * 4
            table.add_row(*row, f"{traced / MIB:.2f}", f"{real / MIB:.2f}", f"{error:+.2%}", f"{logits / MIB:.1f}")
            print(*row, traced, real, f"{error:+.3%}", flush=True)
            rows.append(case | {"trace_bytes": traced, "real_bytes": real, "error": error, "logits_bytes": logits})
            if json_path is not None:
                json_path.write_text(json.dumps(result, indent=2) + "\n")
    Console(width=140).print(table)
    print(f"worst |error|: {worst:.2%} (target 1 %)")
    if json_path is not None:
        json_path.write_text(json.dumps(result | {"worst_abs_error": worst}, indent=2) + "\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("families", nargs="*", metavar="family", help=f"any of {', '.join(SMALL)} (default: all)")
    parser.add_argument("--cuda", action="store_true", help="The real run on the GPU, trace mode planning for one.")
    parser.add_argument("--json", type=Path, help="Also write the rows as JSON here (after each case).")
    args = parser.parse_args()
    if unknown := sorted(set(args.families) - set(SMALL)):
        parser.error(f"unknown famil{'y' if len(unknown) == 1 else 'ies'}: {', '.join(unknown)}")
    if args.cuda:
        import torch

        if not torch.cuda.is_available():
            print("No CUDA device: the --cuda parity table needs a GPU; skipped.")
            sys.exit(0)
    main(args.families or list(SMALL), "cuda" if args.cuda else "cpu", args.json)
