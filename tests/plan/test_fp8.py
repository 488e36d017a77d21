"""FP8 training (torchao float8, tensorwise) against published torchtitan figures. Nothing here is measured by
treino: torchao and an FP8 GPU are not available to the tests."""

from __future__ import annotations

import pytest

from treino import catalog
from treino.errors import PlanError
from treino.plan import TrainSetup, estimate_training_memory
from treino.plan.performance import estimate_time

# torchtitan's Llama-3 8B runs: 8 GPUs, FSDP, seq 8192, local batch 1, activation checkpointing.
SEQ, GPUS = 8192, 8


def _setup(precision: str) -> TrainSetup:
    return TrainSetup(micro_batch=1, seq_len=SEQ, precision=precision, gpus=GPUS, zero=3, checkpointing="full")


def test_fp8_speedup_on_h100_matches_torchtitan() -> None:
    # hardware-and-prices.md S53 (torchtitan benchmark, 2024-12, Llama 3.1 8B on H100): 6,667 tok/s/GPU with
    # bf16 + compile, 8,532 with float8 added: x1.280. (FP8_LINEAR_EFFICIENCY comes from a different run,
    # torchtitan commit 7a04053: x1.248.)
    model, gpu = catalog.model("llama-3-8b"), catalog.gpu("h100-sxm")
    bf16 = estimate_time(model, gpu, _setup("bf16-mixed"), mfu=0.35)
    fp8 = estimate_time(model, gpu, _setup("fp8"), mfu=0.35)
    speedup = bf16.step_seconds / fp8.step_seconds
    assert speedup == pytest.approx(8532 / 6667, rel=0.05)


def test_fp8_peak_memory_matches_torchtitan() -> None:
    # pytorch/torchtitan commit 7a04053 (2025-01), Llama-3-8B on 8 x H100: bf16 + compile 47.65 GiB, tensorwise
    # float8 + compile 47.32 GiB (-0.7 %): the recipe keeps the high-precision activations.
    model = catalog.model("llama-3-8b")
    bf16 = estimate_training_memory(model, _setup("bf16-mixed")).peak_tensor_bytes
    fp8 = estimate_training_memory(model, _setup("fp8")).peak_tensor_bytes
    assert fp8 / bf16 - 1 == pytest.approx(47.32 / 47.65 - 1, abs=0.01)


def test_fp8_needs_fp8_tensor_cores() -> None:
    """The message names the GPU and the two ways out: bf16, or a GPU that has FP8 (the GPUs that do, by family)."""
    with pytest.raises(PlanError) as error:
        estimate_time(catalog.model("llama-3-8b"), catalog.gpu("a100-80gb-sxm"), _setup("fp8"))
    assert str(error.value) == (
        "The NVIDIA A100 80GB SXM has no FP8 tensor cores. To fix: use --precision bf16-mixed, or a GPU with FP8 "
        "(Ada: L4, L40S; Hopper: H100, H200; Blackwell)."
    )
