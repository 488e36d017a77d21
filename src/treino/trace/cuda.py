"""What a training step on a CUDA device runs differently from one on CPU, applied to CPU (fake) tensors.

Trace mode runs on CPU tensors; a plan for a GPU must see what the GPU runs. Two things differ in what they
keep in memory, and `as_on_cuda()`, a function mode, makes a step on CPU tensors run them as CUDA does:

Autocast lists. `torch.autocast("cpu")` applies the CPU lists. CUDA runs `pow`, `exp`, `rsqrt`, `sum`,
`softmax`, `layer_norm`, ... in fp32 when their input is 16-bit (GPT-2's tanh GELU keeps fp32 copies of its
MLP activation on a GPU, bf16 ones on a CPU), and `mv`, `addmv`, `addr`, `einsum`, `chain_matmul`,
`multi_dot` in 16 bits; CPU autocasts some ops to fp32 that CUDA runs in their input's dtype (pooling,
`binary_cross_entropy`, `grid_sample`, `huber_loss`, `ctc_loss`) and `_native_multi_head_attention` to 16
bits. Every other op goes to CPU autocast, whose lists agree with CUDA's. The lists: PyTorch's "Autocast Op
Reference" (https://pytorch.org/docs/2.9/amp.html#autocast-op-reference, "CUDA Ops that can autocast to
float16/float32", "CPU Ops that can autocast to bfloat16/float32") and `aten/src/ATen/autocast_mode.h`
(`AT_FORALL_LOWER_PRECISION_FP`, `AT_FORALL_FP32`), torch 2.6-2.13. As in autocast, only out-of-place ops
are eligible, and an op called with an explicit `dtype=` is left alone.

The attention kernel under dropout. With `dropout_p > 0` CPU's SDPA takes its math kernel, which saves the
(B, H, T, T) probabilities and dropout mask (`sdp_utils_cpp.cpp`: `use_flash_attention_cpp` checks
`check_for_dropout`). CUDA's flash and memory-efficient kernels apply dropout inside the kernel from a
Philox seed and save only the output and the (B, H, T) fp32 log-sum-exp, as CPU's flash kernel does without
dropout: on a CUDA plan SDPA runs with `dropout_p=0`, which on fake tensors changes no value that exists.
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
SDPA_DROPOUT_ARG = 4  # scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, ...)


def _cast(value: Any, dtype: torch.dtype, sources: tuple[torch.dtype, ...]) -> Any:
    if isinstance(value, torch.Tensor) and value.is_floating_point() and value.dtype in sources:
        return value.to(dtype)
    if isinstance(value, list | tuple) and any(isinstance(v, torch.Tensor) for v in value):
        return type(value)(_cast(v, dtype, sources) for v in value)
    return value


def _without_dropout(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """`scaled_dot_product_attention(query, key, value, attn_mask, dropout_p, ...)` with dropout_p 0."""
    if len(args) > SDPA_DROPOUT_ARG:
        return (*args[:SDPA_DROPOUT_ARG], 0.0, *args[SDPA_DROPOUT_ARG + 1 :]), kwargs
    return args, {**kwargs, "dropout_p": 0.0} if "dropout_p" in kwargs else kwargs


class _AsOnCuda(TorchFunctionMode):
    def __init__(self, device_type: str) -> None:
        super().__init__()
        self.device_type = device_type

    def __torch_function__(
        self, func: Any, types: Any, args: tuple[Any, ...] = (), kwargs: dict[str, Any] | None = None
    ) -> Any:
        kwargs = kwargs or {}
        name = getattr(func, "__name__", "")
        if name == "scaled_dot_product_attention":
            args, kwargs = _without_dropout(args, kwargs)
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
def as_on_cuda(device_type: str = "cpu") -> Iterator[None]:
    """Run SDPA with CUDA's memory under dropout and, inside `torch.autocast(device_type)`, the ops whose
    autocast dtype differs between CPU and CUDA as CUDA runs them."""
    with _AsOnCuda(device_type):
        yield
