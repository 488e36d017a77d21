"""The CUDA attention-kernel table (docs/attention-kernels.md, plan/kernels.py) checked on the GPU this runs on.

    python benchmarks/attention_kernels.py [--json out.json]

For every dtype x dropout x mask x head_dim, the kernel `torch._fused_sdp_choice` picks for training inputs is
printed beside the planner's `sdpa_kernel` for this GPU's compute capability; then a bare dropout's saved mask,
and the peak of live tensors of small models with dropout (MemTracker on the GPU) against the plan for this device.
Exits 0 with one line when no CUDA device is present. Prints tables; the exit code is 1 if any choice differs.
With --json, the rows are written after each part (kernel table, dropout mask, model peaks), so a run stopped at
its time limit keeps the parts that finished. On an H200 the whole script takes about 30-60 s (54 kernel choices,
one dropout, 16 small models' steps under MemTracker; benchmarks/device_check.sh gives it 90 s).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import torch
from rich.console import Console
from rich.table import Table

from treino.plan import TrainSetup, estimate_training_memory, model_from_config
from treino.plan.kernels import Device, dropout_mask_bytes, sdpa_kernel

CHOICE = {"FLASH_ATTENTION": "flash", "EFFICIENT_ATTENTION": "efficient", "MATH": "math", "CUDNN_ATTENTION": "cudnn"}
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
MICRO_BATCH, SEQ_LEN = 2, 256


def write(path: Path | None, result: dict[str, Any]) -> None:
    if path is not None:
        path.write_text(json.dumps(result, indent=2) + "\n")


def kernel_table(console: Console, device: Device) -> list[dict[str, Any]]:
    from torch.nn.attention import SDPBackend

    table = Table(title=f"SDPA kernel for training on {torch.cuda.get_device_name()} ({device})")
    for col in ("dtype", "dropout", "mask", "head_dim", "torch", "planner", ""):
        table.add_column(col)
    rows: list[dict[str, Any]] = []
    for dtype, torch_dtype in DTYPES.items():
        for dropout in (0.0, 0.0625, 0.1):
            for mask in (False, True):
                for head_dim in (64, 128, 256):
                    q = torch.randn(2, 8, 512, head_dim, device="cuda", dtype=torch_dtype, requires_grad=True)
                    attn_mask = torch.ones(512, 512, device="cuda", dtype=torch.bool).tril() if mask else None
                    backend = torch._fused_sdp_choice(
                        q, q, q, attn_mask=attn_mask, dropout_p=dropout, is_causal=not mask
                    )
                    chosen = CHOICE.get(SDPBackend(backend).name, SDPBackend(backend).name)
                    planned = sdpa_kernel(device, dtype, dropout, mask, head_dim)
                    rows.append(
                        {"dtype": dtype, "dropout": dropout, "mask": mask, "head_dim": head_dim}
                        | {"torch": chosen, "planner": planned, "same": chosen == planned}
                    )
                    ok = "" if chosen == planned else "DIFFERS"
                    table.add_row(dtype, f"{dropout:g}", str(mask), str(head_dim), chosen, planned, ok)
    console.print(table)
    return rows


def dropout_mask(console: Console, device: Device) -> dict[str, Any]:
    from torch.distributed._tools.mem_tracker import MemTracker

    x = torch.randn(1024, 1024, device="cuda", dtype=torch.bfloat16, requires_grad=True)
    tracker = MemTracker()
    with tracker:
        y = torch.nn.functional.dropout(x * 2, p=0.1, training=True)
        live = tracker.get_tracker_snapshot("current")
    total = sum(int(v) for per in live.values() for k, v in per.items() if str(k) == "Total")
    per_element = total / y.numel() - y.element_size()  # what is kept besides the output
    console.print(
        f"bf16 dropout keeps {per_element:g} B per element besides its output on CUDA; planned: "
        f"{dropout_mask_bytes(device, 2)} B"
    )
    return {"bytes_per_element_besides_output": per_element, "planned_bytes": dropout_mask_bytes(device, 2)}


def model_peaks(console: Console, device: Device) -> list[dict[str, Any]]:
    from tests.plan.families import SMALL, with_dropout

    from treino.trace import engine

    table = Table(title="Peak of live tensors with 10 % dropout, MemTracker on the GPU vs the plan for it")
    for col in ("family", "precision", "attention", "kernel", "error"):
        table.add_column(col)
    rows: list[dict[str, Any]] = []
    for family in ("llama", "gpt2", "phi3", "gpt_neox"):
        cfg = with_dropout(SMALL[family])
        for precision in ("fp32", "bf16-mixed"):
            for attention in ("sdpa", "eager"):
                row: dict[str, Any] = {"family": family, "precision": precision, "attention": attention}
                try:
                    torch.manual_seed(0)
                    model = engine.build_hf_model(cfg, precision=precision, attention=attention).cuda()
                    batch = {k: v.cuda() for k, v in engine.lm_batch(cfg, MICRO_BATCH, SEQ_LEN).items()}
                    measured = engine.measure_training_step(model, batch, precision=precision, device_type="cuda")
                except Exception as exc:  # one failing case must not lose the others' rows
                    console.print(f"{family} {precision} {attention}: failed: {type(exc).__name__}: {exc}")
                    rows.append(row | {"error": f"{type(exc).__name__}: {exc}"})
                    continue
                setup = TrainSetup(
                    micro_batch=MICRO_BATCH, seq_len=SEQ_LEN, precision=precision, attention=attention, sm=device.sm
                )
                plan = estimate_training_memory(model_from_config(cfg), setup)
                error = plan.peak_tensor_bytes / measured.peak_bytes - 1
                rows.append(
                    row
                    | {"kernel": plan.attention_kernel, "planned_bytes": plan.peak_tensor_bytes}
                    | {"measured_bytes": measured.peak_bytes, "plan_error": error}
                )
                table.add_row(family, precision, attention, plan.attention_kernel, f"{error:+.1%}")
    console.print(table)
    errors = [abs(r["plan_error"]) for r in rows if "plan_error" in r]
    if errors:
        console.print(f"median |error| {statistics.median(errors):.1%}, max {max(errors):.1%}")
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="Also write the rows as JSON here (after each part).")
    args = parser.parse_args()
    console = Console(width=120)
    if not torch.cuda.is_available():
        console.print("No CUDA device: the CUDA kernel table is not checked here (see docs/attention-kernels.md).")
        return 0
    major, minor = torch.cuda.get_device_capability()
    device = Device("cuda", 10 * major + minor)
    console.print(f"torch {torch.__version__}, cuDNN {torch.backends.cudnn.version()}")
    result: dict[str, Any] = {
        "device": torch.cuda.get_device_name(),
        "sm": device.sm,
        "torch": torch.__version__,
        "cudnn": torch.backends.cudnn.version(),
    }
    result["kernel_table"] = kernel_table(console, device)
    wrong = sum(not r["same"] for r in result["kernel_table"])
    result["kernel_choices_differing"] = wrong
    write(args.json, result)
    result["dropout_mask"] = dropout_mask(console, device)
    write(args.json, result)
    result["model_peaks"] = model_peaks(console, device)
    write(args.json, result)
    return 1 if wrong else 0


if __name__ == "__main__":
    raise SystemExit(main())
