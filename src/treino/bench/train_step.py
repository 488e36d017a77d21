"""`treino bench --train-step --model M`: real training steps of a model, their time, and the MFU they achieved.

The model is built from its config with transformers (random weights, no network), fed random tokens, and trained
with AdamW as PyTorch picks it for the device, in the plan's precision (autocast for the -mixed ones). The first
`warmup_steps` steps (allocator, kernels' first calls, the optimizer's state) are excluded; the step time is the
median of the rest.

    MFU      model FLOPs per step / (step seconds x peak), with the planner's own FLOP count
             (performance.model_flops_per_token: 6N + 12·L·d·s per token) so that the planner, dividing the same
             FLOPs by the same MFU, predicts the measured step exactly
    peak     a GPU: the dense peak the planner uses for that GPU with this profile, i.e. the datasheet-equivalent of
             the profile's measured matmul rate where the profile has one (bench.profile.apply_profile), else the
             datasheet's; the CPU: this host's dense matmul rate, measured here (CPU_MATMUL_DIM³ products), as no
             datasheet states one
    clock    wall time by default; `--cpu-time` times CPU steps by the process's CPU time on one thread, which
             other processes on a shared host do not inflate (measured on CPU here: three times less spread)

The profile keeps every measurement in `train_steps` (plan.calibration.MeasuredStep) and, on a CPU host, the
CPU's figures in `cpu`; `plan train --gpu cpu --profile P` plans for that CPU.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from treino.errors import PlanError, UsageError
from treino.i18n import Msg
from treino.plan.calibration import MeasuredStep
from treino.plan.hardware import GpuSpec
from treino.plan.memory import TrainSetup

WARMUP_STEPS = 2
STEPS = 5
PRECISIONS = ("fp32", "bf16-mixed", "fp16-mixed", "bf16-true")
CPU_DEVICE = "cpu"  # the plan's device name for a CPU host (`--gpu cpu`)
CPU_MATMUL_DIM = 512  # fits a core's caches; a tiny model's matmuls are this size or smaller
CPU_MATMUL_SECONDS = 0.5  # of back-to-back products per op and dtype, after one warm-up
CPU_COPY_BYTES = 64 * 1024**2  # the CPU's copy bandwidth (its "HBM" in the planner's roofline)
CPU_PCIE_GENERATION = 4  # unused on a CPU plan (no GPUs to join); a valid value for the spec


@dataclass(frozen=True)
class TrainStepRun:
    point: MeasuredStep
    step_seconds_all: tuple[float, ...]  # every step, the warm-up first
    prior_step_seconds: float  # what the planner predicted from its prior, before this measurement
    prior_mfu: float
    prior_source: str
    cpu: dict[str, Any] | None  # the CPU's figures for the profile (a CPU run)

    def to_json(self) -> dict[str, Any]:
        return {
            **self.point.to_json(),
            "step_seconds_all": list(self.step_seconds_all),
            "prior": {"step_seconds": self.prior_step_seconds, "mfu": self.prior_mfu, "source": self.prior_source},
        }


def now_iso() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def train_steps(profile: dict[str, Any]) -> tuple[MeasuredStep, ...]:
    """The profile's measured training steps (none in a profile from before `--train-step`)."""
    return tuple(MeasuredStep.from_json(p) for p in profile.get("train_steps") or [])


def profile_steps(path: Path | None) -> tuple[MeasuredStep, ...]:
    """The measured training steps of the profile at `path` (none without one)."""
    from treino.bench.profile import load_profile

    return train_steps(load_profile(path)) if path is not None else ()


def cpu_spec(cpu: dict[str, Any]) -> GpuSpec:
    """The planner's device for a CPU host: its measured matmul rates as the dense peaks, RAM as its memory."""
    tflops = cpu["tflops"]
    fp32 = float(tflops["fp32"])
    half = float(tflops.get("bf16") or fp32)
    when = str(cpu.get("measured_at", "?"))
    return GpuSpec(
        name=CPU_DEVICE,
        display_name=str(cpu.get("name") or CPU_DEVICE),
        memory_gb=int(cpu["memory_bytes"]) / 1e9,
        hbm_bandwidth_gb_s=float(cpu["copy_gb_s"]),
        fp32_tflops=fp32,
        tf32_tflops=fp32,  # no TF32 on a CPU: fp32 training runs fp32 matmuls
        bf16_tflops=half,
        fp16_tflops=half,
        fp8_tflops=0.0,
        gpu_link="none",
        gpu_link_gb_s_bidir=0.0,
        pcie_generation=CPU_PCIE_GENERATION,
        tdp_w=0.0,
        source=f"measured by treino bench --train-step at {when} ({cpu.get('threads')} thread(s))",
        as_of=when[:10],
        runtime_memory_bytes=int(cpu["memory_bytes"]),
        memory_source="/proc/meminfo MemTotal",
    )


@dataclass(frozen=True)
class PlanDevice:
    """What `plan ... --gpu G --profile P` plans with: the device, the profile's measured figures, its steps."""

    spec: GpuSpec
    measured: Any  # bench.profile.MeasuredGpu, or None where the profile measured no GPU figures
    calibration: tuple[MeasuredStep, ...]


def plan_device(gpu: str, profile_path: Path | None) -> PlanDevice:
    """The device of a plan: the catalog GPU (with the profile's measured figures), or the profiled CPU."""
    from treino import catalog
    from treino.bench.profile import apply_profile, load_profile

    if profile_path is None:
        return PlanDevice(catalog.gpu(gpu), None, ())
    profile = load_profile(profile_path)
    steps = train_steps(profile)
    if gpu.strip().lower() == CPU_DEVICE:
        if not profile.get("cpu"):
            raise UsageError(
                Msg(
                    "The profile {path} holds no CPU measurements. To fix: run 'treino bench --train-step --model M "
                    "--save {path}' on the CPU host (without CUDA).",
                    path=profile_path,
                )
            )
        return PlanDevice(cpu_spec(profile["cpu"]), None, steps)
    spec = catalog.gpu(gpu)
    if not profile.get("gpu") and steps:  # only training steps measured: the datasheet's peaks stay
        if not any(p.device == spec.name for p in steps):
            devices = ", ".join(sorted({p.device for p in steps}))
            raise UsageError(
                Msg(
                    "The profile {path} measured training steps on {devices}, not on {gpu}. To fix: --gpu {last}, or "
                    "run 'treino bench --train-step' on a {display}.",
                    path=profile_path,
                    devices=devices,
                    gpu=spec.name,
                    last=steps[-1].device,
                    display=spec.display_name,
                )
            )
        return PlanDevice(spec, None, steps)
    measured = apply_profile(spec, profile, str(profile_path))
    return PlanDevice(measured.spec, measured, steps)


def add_to_profile(profile: dict[str, Any] | None, run: TrainStepRun) -> dict[str, Any]:
    """`profile` (or a new one) with `run` added; an earlier measurement of the same setting is replaced."""
    from treino.bench.profile import SCHEMA_VERSION

    out: dict[str, Any] = (
        dict(profile) if profile else {"schema_version": SCHEMA_VERSION, "measured_at": now_iso(), "gpu": None}
    )
    out.setdefault("busbw", [])
    same = ("device", "model", "precision", "checkpointing", "micro_batch", "seq_len", "clock")
    new = run.point.to_json()
    kept = [p for p in out.get("train_steps") or [] if any(p.get(k) != new[k] for k in same)]
    out["train_steps"] = [*kept, new]
    if run.cpu is not None:
        out["cpu"] = run.cpu
    return out


def _torch_dtypes(precision: str) -> tuple[Any, Any]:
    """(weights' dtype, autocast dtype or None)."""
    from treino.trace.engine import autocast_dtype, weights_dtype

    if precision not in PRECISIONS:
        raise UsageError(
            Msg(
                "--precision {precision!r} cannot be benchmarked. To fix: use one of {valid}.",
                precision=precision,
                valid=", ".join(PRECISIONS),
            )
        )
    return weights_dtype(precision), autocast_dtype(precision)


@contextmanager
def _threads(count: int | None) -> Iterator[None]:
    import torch

    old = torch.get_num_threads()
    if count:
        torch.set_num_threads(count)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def _cpu_clock(cpu_time: bool) -> Callable[[], float]:
    return time.process_time if cpu_time else time.perf_counter


def measure_cpu(precision: str, cpu_time: bool) -> dict[str, Any]:
    """This host's dense matmul TFLOP/s (fp32, and bf16 for a 16-bit precision) and copy bandwidth, on the
    threads torch uses now: the CPU's peaks for the planner."""
    import torch

    from treino.bench.host import bandwidth_gb_s, cpu_model, ram_bytes

    clock = _cpu_clock(cpu_time)
    dtypes = {"fp32": torch.float32}
    if precision != "fp32":
        dtypes["bf16"] = torch.bfloat16
    tflops: dict[str, float] = {}
    # The faster of the two ops a step's matmuls run: on a CPU without bf16 instructions (AVX2) a bf16 `mm` takes a
    # slow generic path while `linear` (every nn.Linear) goes through oneDNN, 5x faster (measured: 0.0011 against
    # 0.0062 TFLOP/s on one AVX2 core). Against the slow one a bf16 step's MFU read 687 %.
    ops: dict[str, Callable[[Any, Any], Any]] = {"mm": torch.mm, "linear": torch.nn.functional.linear}
    for name, dtype in dtypes.items():
        a = torch.randn(CPU_MATMUL_DIM, CPU_MATMUL_DIM, dtype=dtype)
        b = torch.randn(CPU_MATMUL_DIM, CPU_MATMUL_DIM, dtype=dtype)
        rates: list[float] = []
        for op in ops.values():
            op(a, b)
            times: list[float] = []
            while sum(times) < CPU_MATMUL_SECONDS or len(times) < 5:
                start = clock()
                op(a, b)
                times.append(max(clock() - start, 1e-9))
            rates.append(2 * CPU_MATMUL_DIM**3 / statistics.median(times) / 1e12)
        tflops[name] = max(rates)
    src = torch.rand(CPU_COPY_BYTES // 4)
    dst = torch.empty_like(src)
    dst.copy_(src)
    copies: list[float] = []
    for _ in range(5):
        start = clock()
        dst.copy_(src)
        copies.append(max(clock() - start, 1e-9))
    return {
        "name": cpu_model(),
        "threads": torch.get_num_threads(),
        "clock": "cpu" if cpu_time else "wall",
        "tflops": tflops,
        "copy_gb_s": bandwidth_gb_s(CPU_COPY_BYTES, statistics.median(copies)),
        "memory_bytes": ram_bytes(),
        "measured_at": now_iso(),
    }


def _device(profile: dict[str, Any] | None, precision: str, cpu_time: bool) -> tuple[str, GpuSpec, str, Any]:
    """(torch device, the plan's device spec, where its peak comes from, the CPU block or None)."""
    import torch

    from treino import catalog
    from treino.bench.profile import apply_profile, catalog_match

    if torch.cuda.is_available():
        if cpu_time:
            raise UsageError(
                Msg(
                    "--cpu-time times steps on the CPU, and this host has a CUDA GPU. To fix: drop --cpu-time, or hide "
                    "the GPUs (CUDA_VISIBLE_DEVICES=) to benchmark the CPU."
                )
            )
        name = torch.cuda.get_device_name(0)
        match = catalog_match(name, catalog.gpus())
        if match is None:
            raise UsageError(
                Msg(
                    "The catalog has no GPU like {name!r}, so its peak TFLOP/s are unknown. To fix: add it to "
                    "gpus.csv, or run 'treino bench --train-step' on a catalog GPU ('treino gpus').",
                    name=name,
                )
            )
        spec = catalog.gpu(match)
        gpu = (profile or {}).get("gpu") or {}
        if gpu.get("catalog_name") == match and (gpu.get("tflops_burst") or gpu.get("tflops")):
            return "cuda", apply_profile(spec, profile or {}).spec, "measured", None
        return "cuda", spec, "datasheet", None
    threads = torch.get_num_threads()
    cpu = (profile or {}).get("cpu")
    wanted = "cpu" if cpu_time else "wall"
    # The CPU's peak is measured once per host, thread count and clock, then kept: every calibration of this
    # profile divides by the same figure.
    if (
        not cpu
        or cpu.get("threads") != threads
        or cpu.get("clock") != wanted
        or (precision != "fp32" and "bf16" not in cpu.get("tflops", {}))
    ):
        cpu = measure_cpu(precision, cpu_time)
    return "cpu", cpu_spec(cpu), "measured", cpu


def measure_train_step(
    model: str,
    *,
    micro_batch: int = 1,
    seq_len: int = 512,
    precision: str = "bf16-mixed",
    steps: int = STEPS,
    warmup_steps: int = WARMUP_STEPS,
    cpu_time: bool = False,
    profile: dict[str, Any] | None = None,
    on_step: Callable[[str], None] = lambda what: None,
) -> TrainStepRun:
    """Train `model` (a preset or config.json the planner accepts) for `warmup_steps + steps` steps."""
    if steps < 1 or warmup_steps < 0:
        raise UsageError(
            Msg(
                "--steps must be at least 1 and --warmup-steps at least 0, got {steps} and {warmup}.",
                steps=steps,
                warmup=warmup_steps,
            )
        )
    if micro_batch < 1 or seq_len < 1:
        raise UsageError(
            Msg(
                "--micro-batch and --seq-len must be at least 1, got {micro_batch} and {seq_len}.",
                micro_batch=micro_batch,
                seq_len=seq_len,
            )
        )
    _torch_dtypes(precision)
    with _threads(1 if cpu_time else None):
        return _measure(model, micro_batch, seq_len, precision, steps, warmup_steps, cpu_time, profile, on_step)


def _measure(
    model: str,
    micro_batch: int,
    seq_len: int,
    precision: str,
    steps: int,
    warmup_steps: int,
    cpu_time: bool,
    profile: dict[str, Any] | None,
    on_step: Callable[[str], None],
) -> TrainStepRun:
    import torch

    from treino import catalog
    from treino.plan.performance import estimate_time, model_flops_per_token
    from treino.trace.engine import build_hf_model, lm_batch

    spec = catalog.model(model)
    config = catalog.model_config(model)
    _, autocast = _torch_dtypes(precision)
    on_step("device")
    device, device_spec, peak_source, cpu = _device(profile, precision, cpu_time)
    setup = TrainSetup(micro_batch=micro_batch, seq_len=seq_len, precision=precision)
    link = device_spec.interconnect
    prior = estimate_time(spec, device_spec, setup, interconnect=link)
    on_step("model")
    torch.manual_seed(0)
    with torch.device(device):  # built in place: a 3B model's random init on the host takes minutes
        net = build_hf_model(config, precision=precision, attention="sdpa")
    net.train()
    optimizer = torch.optim.AdamW([p for p in net.parameters() if p.requires_grad], lr=1e-5)
    batch = {k: v.to(device) for k, v in lm_batch(config, micro_batch, seq_len).items()}
    scaler = torch.amp.GradScaler(device) if precision == "fp16-mixed" else None
    clock = _cpu_clock(cpu_time)

    def one_step() -> None:
        with torch.autocast(device, dtype=autocast, enabled=autocast is not None):
            output = net(**batch)
        loss = getattr(output, "loss", output)
        if not isinstance(loss, torch.Tensor):
            raise PlanError(
                Msg("{model}'s forward returned no loss. To fix: a config with a language-model head.", model=model)
            )
        if scaler is not None:
            scaler.scale(loss).backward()  # type: ignore[no-untyped-call]  # unannotated (torch 2.13)
            scaler.step(optimizer)
            scaler.update()
        else:
            loss.backward()  # type: ignore[no-untyped-call]  # Tensor.backward is unannotated (torch 2.13)
            optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    def sync() -> None:
        if device == "cuda":
            torch.cuda.synchronize()

    times: list[float] = []
    try:
        for i in range(warmup_steps + steps):
            on_step(Msg("step {n}/{total}", n=i + 1, total=warmup_steps + steps))
            sync()
            start = clock()
            one_step()
            sync()
            times.append(clock() - start)
    except torch.OutOfMemoryError as exc:
        raise UsageError(
            Msg(
                "{model} at micro-batch {micro_batch} x {seq_len} tokens does not fit this GPU: {error}. To fix: a "
                "smaller --micro-batch or --seq-len.",
                model=model,
                micro_batch=micro_batch,
                seq_len=seq_len,
                error=exc,
            )
        ) from exc
    step_seconds = statistics.median(times[warmup_steps:])
    flops = model_flops_per_token(spec, seq_len) * micro_batch * seq_len
    peak = device_spec.dense_tflops("tf32" if precision == "fp32" else "bf16")
    names = {"cuda": torch.cuda.get_device_name(0) if device == "cuda" else "", "cpu": device_spec.display_name}
    point = MeasuredStep(
        device=device_spec.name,
        device_name=names[device],
        model=spec.name,
        family=spec.family,
        params=spec.params,
        hidden_size=spec.hidden_size,
        precision=precision,
        checkpointing="none",
        micro_batch=micro_batch,
        seq_len=seq_len,
        steps=steps,
        warmup_steps=warmup_steps,
        step_seconds=step_seconds,
        flops_per_step=flops,
        peak_tflops=peak,
        peak_source=peak_source,
        mfu=flops / (step_seconds * peak * 1e12),
        measured_at=now_iso(),
        clock="cpu" if cpu_time else "wall",
    )
    return TrainStepRun(point, tuple(times), prior.step_seconds, prior.mfu, prior.mfu_source, cpu)
