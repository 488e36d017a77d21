"""CUDA's autocast lists on CPU tensors: what a mixed-precision step on a GPU keeps in which dtype.

Trace mode runs on CPU (fake) tensors, where `torch.autocast("cpu")` applies the CPU lists; a plan for a GPU
must see the CUDA lists. They differ in what matters for memory: CUDA runs `pow`, `exp`, `rsqrt`, `sum`,
`softmax`, `layer_norm`, ... in fp32 when their input is 16-bit (GPT-2's tanh GELU keeps fp32 copies of its
MLP activation on a GPU, bf16 ones on a CPU), and `einsum`, `mv`, `addmv`, `addr`, `chain_matmul`,
`multi_dot` in 16 bits; CPU autocasts some ops to fp32 that CUDA runs in their input's dtype (pooling,
`binary_cross_entropy`, `grid_sample`, `huber_loss`, `ctc_loss`) and `_native_multi_head_attention` to 16
bits. `cuda_autocast_lists()` is a function mode that, inside `torch.autocast("cpu")`, makes these ops run
as CUDA's autocast runs them; every other op goes to CPU autocast, whose lists agree with CUDA's.

The lists: PyTorch's "Autocast Op Reference" (https://pytorch.org/docs/2.9/amp.html#autocast-op-reference,
"CUDA Ops that can autocast to float16/float32", "CPU Ops that can autocast to bfloat16/float32") and
`aten/src/ATen/autocast_mode.h` (`AT_FORALL_LOWER_PRECISION_FP`, `AT_FORALL_FP32`), torch 2.6-2.13. As in
autocast, only out-of-place ops are eligible, and an op called with an explicit `dtype=` is left alone.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

# The lists as the Python names of the functions and methods that reach these operators.
# fmt: off
# CUDA Ops that can autocast to float32.
CUDA_FP32 = frozenset({
    "__pow__", "__rdiv__", "__rpow__", "__rtruediv__", "acos", "asin", "binary_cross_entropy_with_logits", "cosh",
    "cosine_embedding_loss", "cdist", "cosine_similarity", "cross_entropy", "cumprod", "cumsum", "dist", "erfinv",
    "exp", "expm1", "group_norm", "hinge_embedding_loss", "kl_div", "l1_loss", "layer_norm", "log", "log_softmax",
    "log10", "log1p", "log2", "margin_ranking_loss", "mse_loss", "multilabel_margin_loss", "multi_margin_loss",
    "nll_loss", "norm", "normalize", "pdist", "poisson_nll_loss", "pow", "prod", "reciprocal", "rsqrt", "sinh",
    "smooth_l1_loss", "soft_margin_loss", "softmax", "softmin", "softplus", "sum", "renorm", "tan",
    "triplet_margin_loss",
})
# In CUDA's lower-precision list and not in CPU's (einsum, chain_matmul and multi_dot reach CPU's bmm/mm, which
# are, but after their reshapes: CUDA casts their inputs first).
CUDA_ONLY_LOWER = frozenset({"addmv", "addr", "einsum", "mv", "chain_matmul", "multi_dot"})
# CPU autocast changes their dtype, CUDA's does not: run them with CPU autocast off (CUDA's fp32 ops that are
# also on CPU's fp32 list, such as nll_loss and mse_loss, are in CUDA_FP32 above).
CPU_ONLY = frozenset({
    "avg_pool3d", "max_pool3d", "adaptive_avg_pool3d", "max_unpool2d", "max_unpool3d", "binary_cross_entropy",
    "grid_sample", "huber_loss", "ctc_loss", "stft", "quantile", "nanquantile", "trace", "polar",
    "_native_multi_head_attention",
})
# fmt: on
_LOWER = (torch.float16, torch.bfloat16)


def _cast(value: Any, dtype: torch.dtype, sources: tuple[torch.dtype, ...]) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype in sources:
        return value.to(dtype)
    if isinstance(value, list | tuple) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(_cast(v, dtype, sources) for v in value)
    return value


class _CudaAutocastLists(TorchFunctionMode):
    def __init__(self, device_type: str) -> None:
        super().__init__()
        self.device_type = device_type

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if not torch.is_autocast_enabled(self.device_type) or kwargs.get("dtype") is not None:
            return func(*args, **kwargs)
        if name in CUDA_FP32:
            args = tuple(_cast(a, torch.float32, _LOWER) for a in args)
            kwargs = {k: _cast(v, torch.float32, _LOWER) for k, v in kwargs.items()}
        elif name in CUDA_ONLY_LOWER:
            lower = torch.get_autocast_dtype(self.device_type)
            args = tuple(_cast(a, lower, (torch.float32,)) for a in args)
            kwargs = {k: _cast(v, lower, (torch.float32,)) for k, v in kwargs.items()}
        elif name in CPU_ONLY:
            with torch.autocast(self.device_type, enabled=False):
                return func(*args, **kwargs)
        return func(*args, **kwargs)


@contextlib.contextmanager
def cuda_autocast_lists(device_type: str = "cpu") -> Iterator[None]:
    """Inside `torch.autocast(device_type)`, run the ops whose autocast dtype differs between CPU and CUDA as
    CUDA runs them (outside autocast it changes nothing)."""
    with _CudaAutocastLists(device_type):
        yield
