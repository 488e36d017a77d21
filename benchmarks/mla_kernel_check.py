"""DeepSeek-V3's multi-head latent attention on the device this runs on: the SDPA kernel PyTorch picks for MLA's
shapes (queries and keys 192 wide per head, values 128) against the planner's choice (plan/deepseek.py
`mla_kernel`), and a small DeepSeek-V3's peak of live tensors (MemTracker) against the plan for this device.

    python benchmarks/mla_kernel_check.py [--json out.json]

Runs on the CPU too (the CPU row of the kernel table and the CPU peaks). Expected on CUDA (from PyTorch's
sdp_utils.cpp, not yet run on a GPU): flash refuses a value head size different from the query's, so the
memory-efficient kernel runs; cuDNN is planned like flash. The exit code is 1 if a choice differs from the plan.
With --json, the rows are written after the kernel table and after each model case (a run stopped at its time
limit keeps what finished). About 30 s on two CPU cores; on an H200 about 20-40 s, most of it imports
(benchmarks/device_check.sh gives it 60 s).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from rich.console import Console
from rich.table import Table
from tests.plan.test_deepseek import TINY

from treino.plan import TrainSetup, estimate_training_memory, model_from_config
from treino.plan.kernels import Device, sdpa_kernel
from treino.plan.memory import planned_attention_kernel

CHOICE = {"FLASH_ATTENTION": "flash", "EFFICIENT_ATTENTION": "efficient", "MATH": "math", "CUDNN_ATTENTION": "cudnn"}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
DEEPSEEK_V3 = {"model_type": "deepseek_v3"}  # transformers' defaults are DeepSeek-V3's: 128 heads, 192 / 128


def write(path: Path | None, result: dict[str, Any]) -> None:
    if path is not None:
        path.write_text(json.dumps(result, indent=2) + "\n")


def kernel_table(console: Console, device: Device, where: str) -> list[dict[str, Any]]:
    from torch.nn.attention import SDPBackend

    spec = model_from_config(DEEPSEEK_V3)
    table = Table(title=f"SDPA kernel for MLA training on {where} ({device})")
    for col in ("dtype", "torch", "planner", ""):
        table.add_column(col)
    rows: list[dict[str, Any]] = []
    for dtype, torch_dtype in DTYPES.items():
        if device.kind == "cpu" and dtype == "fp16":
            continue
        shape = (1, 16, 512)
        q = torch.randn(*shape, 192, device=where, dtype=torch_dtype, requires_grad=True)
        v = torch.randn(*shape, 128, device=where, dtype=torch_dtype, requires_grad=True)
        backend = SDPBackend(torch._fused_sdp_choice(q, q, v, dropout_p=0.0, is_causal=True))
        chosen = CHOICE.get(backend.name, backend.name)
        if device.kind == "cpu" and chosen == "flash":
            chosen = "flash-cpu"
        setup = TrainSetup(precision="fp32" if dtype == "fp32" else f"{dtype}-mixed", device=device.kind, sm=device.sm)
        planned = planned_attention_kernel(spec, setup)
        generic = sdpa_kernel(device, dtype, 0.0, False, 192)
        rows.append(
            {"dtype": dtype, "torch": chosen, "planner": planned, "equal_heads": generic, "same": chosen == planned}
        )
        table.add_row(dtype, chosen, f"{planned} (equal heads: {generic})", "" if chosen == planned else "DIFFERS")
    console.print(table)
    return rows


def model_peaks(
    console: Console,
    device: Device,
    where: str,
    done: list[dict[str, Any]],
    save: Callable[[], None] = lambda: None,
) -> None:
    """Appends each case's row to `done` and calls `save()` after each."""
    from treino.trace import engine

    table = Table(title=f"Small DeepSeek-V3 (tests/plan/test_deepseek.py), micro-batch 2 x 128, on {where}")
    for col in ("precision", "attention", "checkpointing", "MemTracker", "planned", "error"):
        table.add_column(col, justify="right")
    for precision in ("fp32", "bf16-mixed", "bf16-true"):
        for attention in ("sdpa", "eager"):
            for checkpointing in ("none", "full"):
                row: dict[str, Any] = {"precision": precision, "attention": attention, "checkpointing": checkpointing}
                try:
                    torch.manual_seed(0)
                    model = engine.build_hf_model(TINY, precision=precision, attention=attention).to(where)
                    batch = {k: t.to(where) for k, t in engine.lm_batch(TINY, 2, 128).items()}
                    measured = engine.measure_training_step(
                        model, batch, precision=precision, checkpointing=checkpointing, device_type=device.kind
                    )
                except Exception as exc:  # one failing case must not lose the others' rows
                    console.print(f"{precision} {attention} {checkpointing}: failed: {type(exc).__name__}: {exc}")
                    done.append(row | {"error": f"{type(exc).__name__}: {exc}"})
                    save()
                    continue
                setup = TrainSetup(
                    micro_batch=2,
                    seq_len=128,
                    precision=precision,
                    attention=attention,
                    checkpointing=checkpointing,
                    device=device.kind,
                    sm=device.sm,
                )
                planned = estimate_training_memory(model_from_config(TINY), setup).peak_tensor_bytes
                error = planned / measured.peak_bytes - 1
                done.append(row | {"measured_bytes": measured.peak_bytes, "planned_bytes": planned, "error": error})
                save()
                table.add_row(
                    precision, attention, checkpointing, f"{measured.peak_bytes:,}", f"{planned:,}", f"{error:+.1%}"
                )
    console.print(table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="Also write the rows as JSON here (after each part).")
    args = parser.parse_args()
    console = Console(width=120)
    console.print(f"torch {torch.__version__}")
    if torch.cuda.is_available():
        major, minor = torch.cuda.get_device_capability()
        device, where = Device("cuda", 10 * major + minor), "cuda"
        console.print(f"{torch.cuda.get_device_name()}, cuDNN {torch.backends.cudnn.version()}")
    else:
        device, where = Device("cpu", 0), "cpu"
        console.print("No CUDA device: the CPU rows only.")
    result: dict[str, Any] = {"device": where, "sm": device.sm, "torch": torch.__version__}
    if where == "cuda":
        result |= {"device_name": torch.cuda.get_device_name(), "cudnn": torch.backends.cudnn.version()}
    result["kernel_table"] = kernel_table(console, device, where)
    wrong = sum(not r["same"] for r in result["kernel_table"])
    result["kernel_choices_differing"] = wrong
    write(args.json, result)
    result["model_peaks"] = []
    model_peaks(console, device, where, result["model_peaks"], lambda: write(args.json, result))
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
