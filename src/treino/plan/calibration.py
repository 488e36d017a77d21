"""Calibrated MFU: the planner's step time from training steps measured on the plan's own device.

`treino bench --train-step --model M --save PROFILE` runs real training steps of M and stores, per device, model
family and size, the step time and the MFU it achieved (model FLOPs per step / (step seconds x the device's
peak)). The planner then uses that MFU in place of its prior for a plan on the same device, the same family,
the same precision class (fp32 against the 16-bit ones: they divide by different peaks) and a close size:

    close    total parameters within a factor of CLOSE_PARAMS_RATIO (2) of the measured model's, the nearest
             (in log of parameters) winning, the newest among equals.
Why 2: MFU changes with model size mainly through the width of its matmuls. Published runs on the same GPUs
move by about 15 pp over 8x the parameters (MPT-125M 44.8 %, MPT-1B 59.9 % MFU, llm-foundry's benchmarking
README, planner-formulas §C B5c), about 5 pp (10 % of the MFU) per doubling; the planner's own size curve
(`performance.mfu_size_factor`, from the same table) corrects for what remains, so within a factor of 2 the
correction stays small and the measurement dominates. Farther away the prior's size curve would be doing most
of the work, and the prior says so honestly.

The measured point is kept as achieved TFLOP/s (MFU x the peak it was measured against), so a plan whose peak
comes from elsewhere (a profile's matmul rates measured later, or the datasheet) divides the same achieved rate
by its own peak: the predicted step time of the measured setting is the measured one whatever the peak.

Pure: the points come in as arguments (treino.bench.train_step reads and writes them in the profile).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from treino.i18n import Msg
from treino.plan.hardware import GpuSpec
from treino.plan.memory import TrainSetup
from treino.plan.model import ModelSpec

CLOSE_PARAMS_RATIO = 2.0


@dataclass(frozen=True)
class MeasuredStep:
    """One `treino bench --train-step` measurement, as the profile's `train_steps` list holds it."""

    device: str  # the catalog GPU name ("h200-sxm"), or "cpu"
    device_name: str  # what the runtime called it ("NVIDIA H200", the CPU model)
    model: str
    family: str
    params: int
    hidden_size: int
    precision: str
    checkpointing: str
    micro_batch: int
    seq_len: int
    steps: int  # timed steps, warm-up excluded
    warmup_steps: int
    step_seconds: float  # the median of the timed steps
    flops_per_step: float  # model FLOPs (the planner's count, performance.model_flops_per_token)
    peak_tflops: float  # what the MFU divides by
    peak_source: str  # "measured" (the profile's or this run's matmul rate) or "datasheet"
    mfu: float
    measured_at: str  # ISO 8601, UTC
    clock: str = "wall"  # "wall", or "cpu": the process's CPU time, one thread (a shared CPU host)

    @property
    def achieved_tflops(self) -> float:
        return self.mfu * self.peak_tflops

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MeasuredStep:
        names = set(cls.__dataclass_fields__)
        return cls(**{k: v for k, v in data.items() if k in names})


def peak_dtype(precision: str) -> str:
    """The dense peak a plan of `precision` divides by (as performance.estimate_time does)."""
    return "tf32" if precision == "fp32" else "bf16"


def closest(points: Iterable[MeasuredStep], model: ModelSpec, gpu: GpuSpec, setup: TrainSetup) -> MeasuredStep | None:
    """The measured point that calibrates this plan: same device, family and precision class, parameters within
    CLOSE_PARAMS_RATIO; the nearest in log(parameters), then the newest."""
    dtype = peak_dtype(setup.precision)
    limit = math.log(CLOSE_PARAMS_RATIO) + 1e-9
    candidates = [
        p
        for p in points
        if p.device == gpu.name
        and p.family == model.family
        and peak_dtype(p.precision) == dtype
        and p.params > 0
        and abs(math.log(model.params / p.params)) <= limit
    ]
    if not candidates:
        return None
    return min(candidates, key=lambda p: (abs(math.log(model.params / p.params)), _newest_first(p.measured_at)))


def _newest_first(when: str) -> tuple[int, ...]:
    return tuple(-ord(c) for c in when)


def calibrated_mfu(
    model: ModelSpec, gpu: GpuSpec, setup: TrainSetup, points: Sequence[MeasuredStep]
) -> tuple[float, Msg] | None:
    """The MFU a measured point gives this plan, and where it came from; None when no point is close.

    The point's achieved TFLOP/s over this plan's peak, scaled by the size curve between the two models'
    widths, and by the recompute factor where one ran full activation checkpointing and the other not."""
    from treino.plan.performance import RECOMPUTE_MFU_FACTOR, mfu_size_factor

    point = closest(points, model, gpu, setup)
    if point is None:
        return None
    peak = gpu.dense_tflops(peak_dtype(setup.precision))
    mfu = point.achieved_tflops / peak
    mfu *= mfu_size_factor(model.hidden_size) / mfu_size_factor(point.hidden_size)
    if (setup.checkpointing == "full") != (point.checkpointing == "full"):
        mfu = mfu * RECOMPUTE_MFU_FACTOR if setup.checkpointing == "full" else mfu / RECOMPUTE_MFU_FACTOR
    source = Msg(
        "measured on {device}, {date}: {model} at micro-batch {micro_batch} x {seq_len} tokens, MFU {mfu:.1f} %",
        device=point.device_name or point.device,
        date=point.measured_at[:10],
        model=point.model,
        micro_batch=point.micro_batch,
        seq_len=point.seq_len,
        mfu=100 * point.mfu,
    )
    return min(mfu, 1.0), source
