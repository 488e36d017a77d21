"""Which attention kernel PyTorch runs on the plan's device, and which dropout masks a training step keeps.

    device_for_gpu(name)                                      -> Device (device_of(kind, sm) for a plan's fields)
    sdpa_kernel(device, dtype, dropout, mask, head_dim)       -> "flash", "efficient", "cudnn", "math", "flash-cpu"
    attention_kernel(device, attention, dtype, dropout, ...)  -> the above, or "eager"
    dropout_mask_bytes(device, act_bytes)                     -> bytes per element of a saved dropout mask

`F.scaled_dot_product_attention` picks its kernel at run time, from the first backend in a priority order whose
checks all pass (PyTorch `aten/src/ATen/native/transformers/cuda/sdp_utils.cpp` `select_sdp_backend`; CPU:
`sdp_utils_cpp.cpp` `select_sdp_backend_cpp`; both read on pytorch/pytorch main, commit 001f694, 2026, the code of
torch 2.13). The rules kept here, for training (inputs that require grad), dense 4-D inputs and head dims equal
for q, k and v:

CPU (`priority_order_cpp`: flash, math)
    flash-cpu   dropout == 0 (`check_for_dropout`); fp32, fp64, bf16, fp16; any mask (`check_attn_mask_shape`)
    math        dropout > 0

CUDA (`priority_order`: cudnn, flash, efficient, math on sm90/sm100 with cuDNN > 9.15
(`check_prefer_cudnn_attention`); flash, efficient, math elsewhere)

    | GPU (sm)                     | dtype     | dropout          | mask | kernel    |
    |------------------------------|-----------|------------------|------|-----------|
    | H100/H200 (90), B200 (100)   | bf16/fp16 | 0 or k/16        | any  | cudnn     |
    | H100/H200 (90), B200 (100)   | bf16/fp16 | other (e.g. 0.1) | none | flash     |
    | H100/H200 (90), B200 (100)   | bf16/fp16 | other (e.g. 0.1) | yes  | efficient |
    | A100 (80), A10/L4/L40S/4090  | bf16/fp16 | any              | none | flash     |
    |   (86, 89)                   |           |                  |      |           |
    | A100 (80), A10/L4/L40S/4090  | bf16/fp16 | any              | yes  | efficient |
    | any sm50-sm121               | fp32      | any              | any  | efficient |
    | V100 (70), T4 (75)           | fp16      | any              | none | efficient |
    | below sm50, or no check met  | any       | any              | any  | math      |

    cudnn       fp16/bf16 (`check_dtypes_low_precision`), sm80-sm121, dropout a multiple of 1/16
                (`check_cudnn_dropout`), head_dim <= 128 (256 on sm90/sm100 with a recent cuDNN) and a multiple of 8
    flash       no attn_mask (`check_for_attn_mask`), fp16/bf16 on sm80+ (`check_dtypes_flash_attention`),
                head_dim <= 256, sm80-sm121; on sm86/89/120 training needs head_dim <= 192, or > 224 without dropout
    efficient   sm50-sm121, fp32/fp16 (bf16 on sm80+), head_dim a multiple of 4 (fp32) or 8 (fp16/bf16), any mask
    math        always (unless disabled)

ROCm (MI300X, gfx942): AOTriton flash and efficient, no cuDNN; the same priority without cuDNN.

What each keeps for backward (the memory that matters; q, k, v and the output are kept by all):
    flash, efficient, cudnn, flash-cpu  an fp32 log-sum-exp per head and query token (4 B); dropout is drawn
                inside the kernel from a Philox seed and offset, so no mask is kept
    math        the s x s softmax output in fp32 (fp16/bf16 inputs are upcast: `allowFP16BF16ReductionMathSDP` is
                off by default, `_scaled_dot_product_attention_math` in `attention.cpp`), and with dropout the
                dropout mask and the dropped-out probabilities, plus fp32 copies of the scaled q and k and of v
    eager       the family's own softmax output(s), and with dropout its mask and output

Dropout masks (`aten/src/ATen/native/Dropout.cpp`): on CUDA `at::dropout` runs the fused `native_dropout`, which
keeps a bool mask (1 B per element); on CPU `is_fused_kernel_acceptable` is false and `_dropout_impl` multiplies
by a noise tensor of the input's dtype, which autograd keeps (4 B in fp32, 2 B in bf16).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache

from treino.errors import PlanError
from treino.i18n import Msg

DEVICE_KINDS = ("cuda", "rocm", "cpu")
SDPA_KERNELS = ("cudnn", "flash", "efficient", "math", "flash-cpu")
CPU_DEVICE_NAME = "cpu"  # `--gpu cpu`: plan for the CPU host itself

# Compute capability (sm) of the catalog's NVIDIA GPUs: https://developer.nvidia.com/cuda-gpus (as of 2026-12):
# A100 8.0; A10 8.6; L4, L40S, RTX 4090, RTX 6000 Ada 8.9; H100, H200 9.0; B200 10.0. MI300X is gfx942 (ROCm
# https://rocm.docs.amd.com/en/latest/reference/gpu-arch-specs.html).
GPU_SM: dict[str, int] = {
    "l4": 89,
    "l40s": 89,
    "a10": 86,
    "a100-40gb-pcie": 80,
    "a100-80gb-sxm": 80,
    "h100-pcie": 90,
    "h100-sxm": 90,
    "h100-nvl": 90,
    "h200-sxm": 90,
    "h200-nvl": 90,
    "b200": 100,
    "rtx-4090": 89,
    "rtx-6000-ada": 89,
}
ROCM_GPUS = ("mi300x",)
# A catalog GPU missing above is planned as a current NVIDIA part: every GPU the catalog sells is sm80 or newer.
DEFAULT_SM = 90
# cuDNN attention is first in the order on sm90 and sm100 only (`check_prefer_cudnn_attention`).
CUDNN_PREFERRED_SM = (90, 100)
CUDNN_DROPOUT_STEPS = 16  # cuDNN draws dropout at a resolution of 1/16 (`check_cudnn_dropout`)


@dataclass(frozen=True)
class Device:
    """Where the step runs: `kind` is cuda, rocm or cpu; `sm` the CUDA compute capability x10 (0 elsewhere)."""

    kind: str = "cuda"
    sm: int = DEFAULT_SM

    def __str__(self) -> str:
        return f"cuda sm{self.sm}" if self.kind == "cuda" else self.kind


@cache
def device_of(kind: str, sm: int) -> Device:
    """The Device for a plan's `device` and `sm` fields (one object per pair: plans are made by the thousand)."""
    return Device(kind, sm if kind == "cuda" else 0)


def device_for_gpu(name: str) -> Device:
    """The device a catalog GPU name (or `cpu`) stands for."""
    if name == CPU_DEVICE_NAME:
        return Device("cpu", 0)
    if name in ROCM_GPUS:
        return Device("rocm", 0)
    return Device("cuda", GPU_SM.get(name, DEFAULT_SM))


def _cudnn_ok(device: Device, dtype: str, dropout: float, head_dim: int) -> bool:
    limit = 256 if device.sm in CUDNN_PREFERRED_SM else 128
    steps = dropout * CUDNN_DROPOUT_STEPS
    return (
        device.sm in CUDNN_PREFERRED_SM
        and dtype in ("bf16", "fp16")
        and steps == int(steps)
        and head_dim <= limit
        and head_dim % 8 == 0
    )


def _flash_ok(device: Device, dtype: str, dropout: float, mask: bool, head_dim: int) -> bool:
    if mask or dtype not in ("bf16", "fp16") or head_dim > 256:
        return False
    if device.kind == "rocm":
        return True
    if not 80 <= device.sm <= 121:
        return False
    if device.sm in (86, 87, 88, 89, 120, 121):  # backward limits on consumer parts
        return head_dim <= 192 or (head_dim > 224 and dropout == 0)
    return True


def _efficient_ok(device: Device, dtype: str, head_dim: int) -> bool:
    if device.kind == "rocm":
        return dtype in ("fp32", "fp16", "bf16")
    if not 50 <= device.sm <= 121:
        return False
    if dtype == "bf16" and device.sm < 80:
        return False
    alignment = 8 if dtype in ("bf16", "fp16") else (4 if device.sm >= 80 else 1)
    return dtype in ("fp32", "fp16", "bf16") and head_dim % alignment == 0


def sdpa_kernel(device: Device, dtype: str, dropout: float, mask: bool, head_dim: int = 128) -> str:
    """The kernel `F.scaled_dot_product_attention` runs in training: `dtype` of q/k/v (fp32, bf16, fp16),
    `dropout` its dropout_p, `mask` whether an attn_mask is passed (transformers passes none for causal,
    unpadded batches: `sdpa_mask`'s `allow_is_causal_skip`). Rules and sources: the module docstring."""
    if dtype not in ("fp32", "bf16", "fp16"):
        raise PlanError(Msg("Unknown attention dtype {dtype!r}. To fix: use fp32, bf16 or fp16.", dtype=dtype))
    if device.kind == "cpu":
        return "flash-cpu" if dropout == 0 else "math"
    if device.kind == "cuda" and _cudnn_ok(device, dtype, dropout, head_dim):
        return "cudnn"
    if _flash_ok(device, dtype, dropout, mask, head_dim):
        return "flash"
    if _efficient_ok(device, dtype, head_dim):
        return "efficient"
    return "math"


def attention_kernel(
    device: Device, attention: str, dtype: str, dropout: float, mask: bool = False, head_dim: int = 128
) -> str:
    """`eager` for transformers' eager attention, otherwise the SDPA kernel (see `sdpa_kernel`)."""
    if attention == "eager":
        return "eager"
    return sdpa_kernel(device, dtype, dropout, mask, head_dim)


def keeps_scores(kernel: str) -> bool:
    """Whether the kernel keeps s x s attention tensors for backward (math and eager) or only a log-sum-exp."""
    return kernel in ("math", "eager")


def dropout_mask_bytes(device: Device, act_bytes: int) -> int:
    """Bytes per element of the mask a dropout keeps for backward: a bool mask from CUDA's fused
    `native_dropout` (ROCm the same), a noise tensor in the activation's dtype on CPU (module docstring)."""
    return act_bytes if device.kind == "cpu" else 1
