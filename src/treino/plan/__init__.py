"""The planner: pure functions from a model, a GPU and a training setup to numbers. No I/O, no torch.

plan_training(model, gpu, setup)  -> TrainPlan  (memory per GPU, fit verdict, advice)
estimate_inference(model, gpu, ...) -> InferenceEstimate
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from treino.plan.advice import Advice, advise
from treino.plan.hardware import GpuSpec
from treino.plan.inference import InferenceEstimate, estimate_inference
from treino.plan.memory import MemoryEstimate, TrainSetup, estimate_training_memory
from treino.plan.model import SUPPORTED_FAMILIES, ModelSpec, model_from_config

__all__ = [
    "SUPPORTED_FAMILIES",
    "Advice",
    "GpuSpec",
    "InferenceEstimate",
    "MemoryEstimate",
    "ModelSpec",
    "TrainPlan",
    "TrainSetup",
    "estimate_inference",
    "estimate_training_memory",
    "model_from_config",
    "plan_training",
]

JSON_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class TrainPlan:
    model: ModelSpec
    gpu: GpuSpec
    setup: TrainSetup
    memory: MemoryEstimate
    method: str  # "analytic" or "trace"

    @property
    def fits(self) -> bool:
        return self.memory.peak_bytes <= self.gpu.memory_bytes

    @property
    def headroom_bytes(self) -> int:
        return self.gpu.memory_bytes - self.memory.peak_bytes

    def advice(self) -> list[Advice]:
        return advise(self.model, self.gpu, self.setup, self.memory)

    def to_json(self) -> dict[str, Any]:
        """The documented `--json` schema (docs/plan-json.md)."""
        m = self.memory
        return {
            "schema_version": JSON_SCHEMA_VERSION,
            "method": self.method,
            "model": self.model.name,
            "family": self.model.family,
            "device": m.device or str(self.setup.target),
            "params": m.params,
            "trainable_params": m.trainable_params,
            "setup": {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self.setup).items()},
            "memory": {
                "weights_bytes": m.weights_bytes,
                "gradients_bytes": m.gradients_bytes,
                "optimizer_bytes": m.optimizer_bytes,
                "activations_bytes": m.activations_bytes,
                "logits_bytes": m.logits_bytes,
                "temporary_bytes": m.temporary_bytes,
                "peak_tensor_bytes": m.peak_tensor_bytes,
                "overhead_bytes": m.overhead_bytes,
                "peak_bytes": m.peak_bytes,
                "peak_phase": m.peak_phase,
                "attention_kernel": m.attention_kernel or None,
                "cpu_offload_bytes": m.cpu_offload_bytes,
            },
            "gpu": {
                "name": self.gpu.name,
                "display_name": self.gpu.display_name,
                "memory_gb": self.gpu.memory_gb,
                "memory_bytes": self.gpu.memory_bytes,
                "memory_source": self.gpu.memory_source,
                "source": self.gpu.source,
                "as_of": self.gpu.as_of,
            },
            "fits": self.fits,
            "headroom_bytes": self.headroom_bytes,
            "advice": [asdict(a) for a in self.advice()],
            "notes": list(m.notes),
        }


def plan_training(model: ModelSpec, gpu: GpuSpec, setup: TrainSetup) -> TrainPlan:
    return TrainPlan(model, gpu, setup, estimate_training_memory(model, setup), "analytic")
