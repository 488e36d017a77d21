"""The planner against a real GPU: predicted memory and step time vs what CUDA reports for real training steps.

Run on a machine with a CUDA GPU (it exits with a message elsewhere):
    python benchmarks/gpu_plan_check.py [--json out.json]
For each case it builds the preset's Hugging Face model with random weights directly on the GPU, runs warm-up
steps (the first creates AdamW's state), then measures one step's `torch.cuda.max_memory_allocated` (the peak of
live tensors, what `peak_tensor_bytes` predicts), the process's device memory in use (`mem_get_info`: CUDA
context + the caching allocator's reserve, what `peak_bytes` predicts) and the median step time, timed with CUDA
events, against `estimate_time` with its MFU prior. With --json the rows are written after each case, so a run
stopped at its time limit keeps the cases that finished. On an H200 each case takes about 5-15 s (a model built on
the GPU, 7 steps of 0.1-0.4 s): about 60-90 s for the six (benchmarks/device_check.sh gives it 150 s).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from treino import catalog
from treino.plan import TrainSetup, estimate_training_memory
from treino.plan.performance import estimate_time, model_flops_per_token

MIB = 2**20
# (preset, micro_batch, seq_len, checkpointing): bf16-mixed AdamW with SDPA, the planner's default setup.
CASES = (
    ("qwen2.5-0.5b", 4, 2048, "none"),
    ("qwen2.5-0.5b", 4, 2048, "full"),
    ("llama-3.2-1b", 4, 2048, "none"),
    ("llama-3.2-1b", 4, 2048, "full"),
    ("llama-3.2-3b", 2, 2048, "none"),
    ("llama-3.2-3b", 2, 2048, "full"),
)
TIMED_STEPS = 5


def measure(preset: str, micro_batch: int, seq_len: int, checkpointing: str, gpu_name: str) -> dict[str, Any]:
    import torch

    from treino.trace import engine

    cfg = catalog.model_config(preset)
    spec = catalog.model(preset)
    setup = TrainSetup(micro_batch=micro_batch, seq_len=seq_len, checkpointing=checkpointing)
    predicted = estimate_training_memory(spec, setup)
    timing = estimate_time(spec, catalog.gpu(gpu_name), setup)

    torch.cuda.empty_cache()
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = engine.build_hf_model(cfg, precision=setup.precision, attention=setup.attention)
    if checkpointing == "full":
        kwargs = {"use_reentrant": False}
        if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5.x
            model.activation_checkpointing_enable(activation_checkpointing_kwargs=kwargs)
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs=kwargs)
    model.train()
    opt = engine.make_optimizer(setup.optimizer, [p for p in model.parameters()])
    ids = torch.randint(0, int(cfg["vocab_size"]), (micro_batch, seq_len), device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    for _ in range(2):  # the first creates the optimizer state; the second reaches the steady state
        step()
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    times = []
    for _ in range(TIMED_STEPS):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end) / 1e3)
    peak_allocated = torch.cuda.max_memory_allocated()
    peak_reserved = torch.cuda.max_memory_reserved()
    free, total = torch.cuda.mem_get_info()
    in_use = total - free  # context + everything the caching allocator holds now
    context = in_use - torch.cuda.memory_reserved()
    step_s = statistics.median(times)
    tokens = micro_batch * seq_len
    gpu = catalog.gpu(gpu_name)
    measured_mfu = model_flops_per_token(spec, seq_len) * tokens / step_s / (gpu.dense_tflops("bf16") * 1e12)
    return {
        "preset": preset,
        "micro_batch": micro_batch,
        "seq_len": seq_len,
        "checkpointing": checkpointing,
        "predicted_peak_tensor_mib": predicted.peak_tensor_bytes / MIB,
        "measured_peak_allocated_mib": peak_allocated / MIB,
        "tensor_error": predicted.peak_tensor_bytes / peak_allocated - 1,
        "predicted_peak_mib": predicted.peak_bytes / MIB,
        "measured_device_in_use_mib": (context + peak_reserved) / MIB,
        "device_error": predicted.peak_bytes / (context + peak_reserved) - 1,
        "measured_context_mib": context / MIB,
        "measured_reserved_mib": peak_reserved / MIB,
        "predicted_step_s": timing.step_seconds,
        "predicted_mfu": timing.mfu,
        "measured_step_s": step_s,
        "measured_mfu": measured_mfu,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="Also write the rows as JSON here.")
    parser.add_argument("--gpu", default="", help="Catalog GPU (default: matched from the CUDA device name).")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available():
        print("No CUDA GPU visible to PyTorch: this check needs one.", file=sys.stderr)
        return 2
    from treino.bench.profile import catalog_match

    device_name = torch.cuda.get_device_name(0)
    gpu_name = args.gpu or catalog_match(device_name, catalog.gpus()) or "h100-sxm"
    print(f"{device_name} -> catalog {gpu_name}; torch {torch.__version__}", flush=True)
    rows: list[dict[str, Any]] = []

    def save() -> None:
        if args.json:
            args.json.write_text(json.dumps({"device": device_name, "catalog_gpu": gpu_name, "rows": rows}, indent=2))

    for case in CASES:
        t0 = time.perf_counter()
        try:
            row = measure(*case, gpu_name=gpu_name)
        except Exception as exc:  # one failing case must not lose the others' rows
            print(f"{case}: failed: {type(exc).__name__}: {exc}", flush=True)
            continue
        rows.append(row)
        print(
            f"{row['preset']:>13} mb{row['micro_batch']} s{row['seq_len']} ckpt={row['checkpointing']:<4} "
            f"tensors {row['predicted_peak_tensor_mib']:9.0f} / {row['measured_peak_allocated_mib']:9.0f} MiB "
            f"({row['tensor_error']:+.1%})  device {row['predicted_peak_mib']:9.0f} / "
            f"{row['measured_device_in_use_mib']:9.0f} MiB ({row['device_error']:+.1%}, context "
            f"{row['measured_context_mib']:.0f} MiB)  step {row['predicted_step_s']:.3f} / "
            f"{row['measured_step_s']:.3f} s (MFU prior {row['predicted_mfu']:.2f}, measured "
            f"{row['measured_mfu']:.2f})  [{time.perf_counter() - t0:.0f} s]",
            flush=True,
        )
        save()
    save()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
