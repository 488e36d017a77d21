"""FP8 training (torchao float8, tensorwise) against bf16-mixed on a real GPU: the planner's predicted ratios of
peak memory and step time vs the measured ones.

Needs a CUDA GPU with FP8 tensor cores (Ada or Hopper and later) and torchao (`pip install torchao`); it exits
with a message elsewhere:
    python benchmarks/fp8_check.py [--preset llama-3.2-1b] [--compile blocks|full|none] [--json out.json]
Expected, from the published figures the planner is checked against (tests/plan/test_fp8.py): on an H100/H200
Llama-3 8B at seq 8192 runs x1.25-1.28 faster in FP8 with torch.compile (torchtitan) and holds the same peak
memory to within 1 %; small models gain less (their step is not dominated by Linear layers). Not yet measured
by treino.

--compile blocks (the default) compiles each decoder layer (`layer.compile()`, as torchtitan compiles each block):
the layers share one compiled graph, so compilation takes seconds rather than the minute or two of compiling the
whole model (--compile full); the LM head and the loss stay eager in both runs. On an H200 with blocks: about 15 s
of imports, then per precision a model built on the GPU, 3 warm-up steps (the first compiles: about 20-60 s) and 5
timed steps; expected about 90-150 s in all (benchmarks/device_check.sh gives it 230 s). With --json the result is
written after the bf16 run too, so a run stopped at its limit keeps it.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from treino import catalog
from treino.plan import TrainSetup, estimate_training_memory
from treino.plan.performance import estimate_time

TIMED_STEPS = 5


def compiled(model: Any, how: str) -> Any:
    """What the training step calls: the model itself with each decoder layer compiled ("blocks"; the whole model
    where it has no `model.layers`), the whole model compiled ("full"), or the model eager ("none")."""
    import torch

    layers = getattr(getattr(model, "model", None), "layers", None)
    if how == "full" or (how == "blocks" and layers is None):
        return torch.compile(model)
    if how == "blocks":
        for layer in layers:
            layer.compile()
    return model


def run(preset: str, precision: str, micro_batch: int, seq_len: int, how: str) -> tuple[int, float, float]:
    """Peak allocated bytes, median step seconds and the first step's seconds (compilation included) of bf16-mixed
    or torchao-float8 training steps."""
    import torch

    from treino.trace import engine

    cfg = catalog.model_config(preset)
    torch._dynamo.reset()  # the previous run's compiled graphs (and the tensors they hold) go
    gc.collect()
    torch.cuda.empty_cache()
    torch.manual_seed(0)
    with torch.device("cuda"):
        model = engine.build_hf_model(cfg, precision="bf16-mixed", attention="sdpa")
    if precision == "fp8":
        from torchao.float8 import convert_to_float8_training

        # The LM head stays in bf16, as in torchao's README example and torchtitan's default.
        convert_to_float8_training(model, module_filter_fn=lambda mod, fqn: fqn != "lm_head")
    step_model = compiled(model, how)
    model.train()
    opt = engine.make_optimizer("adamw", list(model.parameters()))
    ids = torch.randint(0, int(cfg["vocab_size"]), (micro_batch, seq_len), device="cuda")

    def step() -> None:
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = step_model(input_ids=ids, labels=ids).loss
        loss.backward()
        opt.step()
        opt.zero_grad(set_to_none=True)

    first = time.perf_counter()
    step()  # compilation, the optimizer's state
    torch.cuda.synchronize()
    first = time.perf_counter() - first
    for _ in range(2):  # steady state
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
    return torch.cuda.max_memory_allocated(), statistics.median(times), first


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="llama-3.2-1b")
    parser.add_argument("--micro-batch", type=int, default=4)
    parser.add_argument("--seq-len", type=int, default=2048)
    parser.add_argument(
        "--compile",
        choices=("blocks", "full", "none"),
        default="blocks",
        help="torch.compile each decoder layer (default), the whole model, or nothing (torchao's casts unfused).",
    )
    parser.add_argument("--no-compile", action="store_true", help="The same as --compile none.")
    parser.add_argument("--gpu", default="", help="Catalog GPU (default: matched from the CUDA device name).")
    parser.add_argument("--json", type=Path, help="Also write the result as JSON here.")
    args = parser.parse_args()
    import torch

    if not torch.cuda.is_available() or torch.cuda.get_device_capability(0) < (8, 9):
        print("No CUDA GPU with FP8 tensor cores (Ada/Hopper or later) visible: this check needs one.", file=sys.stderr)
        return 2
    try:
        import torchao
        from torchao.float8 import convert_to_float8_training  # noqa: F401
    except Exception as exc:  # not installed, or built for another torch
        print(f"torchao is not importable ({type(exc).__name__}: {exc}). To fix: pip install torchao", file=sys.stderr)
        return 2
    how = "none" if args.no_compile else args.compile
    from treino.bench.profile import catalog_match

    device_name = torch.cuda.get_device_name(0)
    gpu = catalog.gpu(args.gpu or catalog_match(device_name, catalog.gpus()) or "h100-sxm")
    spec = catalog.model(args.preset)
    result: dict[str, Any] = {
        "device": device_name,
        "catalog_gpu": gpu.name,
        "preset": args.preset,
        "micro_batch": args.micro_batch,
        "seq_len": args.seq_len,
        "compile": how,
        "torch": torch.__version__,
        "torchao": getattr(torchao, "__version__", "?"),
    }
    for precision in ("bf16-mixed", "fp8"):
        setup = TrainSetup(micro_batch=args.micro_batch, seq_len=args.seq_len, precision=precision)
        peak, step_s, first_s = run(args.preset, precision, args.micro_batch, args.seq_len, how)
        result[precision] = {
            "predicted_peak_tensor_bytes": estimate_training_memory(spec, setup).peak_tensor_bytes,
            "measured_peak_allocated_bytes": peak,
            "predicted_step_s": estimate_time(spec, gpu, setup).step_seconds,
            "measured_step_s": step_s,
            "first_step_s": first_s,
        }
        print(f"{precision}: {result[precision]}", flush=True)
        if args.json:
            args.json.write_text(json.dumps(result, indent=2) + "\n")
    bf16, fp8 = result["bf16-mixed"], result["fp8"]
    print(
        f"{device_name} ({gpu.name}), {args.preset} mb{args.micro_batch} s{args.seq_len}: "
        f"speed-up predicted x{bf16['predicted_step_s'] / fp8['predicted_step_s']:.2f}, "
        f"measured x{bf16['measured_step_s'] / fp8['measured_step_s']:.2f}; fp8/bf16 peak memory predicted "
        f"{fp8['predicted_peak_tensor_bytes'] / bf16['predicted_peak_tensor_bytes']:.3f}, measured "
        f"{fp8['measured_peak_allocated_bytes'] / bf16['measured_peak_allocated_bytes']:.3f}"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
