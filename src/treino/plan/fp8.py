"""FP8 training as torchao's float8 recipe runs it (`torchao.float8.convert_to_float8_training`, tensorwise
dynamic scaling): every `nn.Linear` becomes a `Float8Linear`; weights, gradients and optimizer state stay in
fp32 (the master), the rest of the model runs under bf16 autocast.

Memory. `Float8Linear.forward` casts its input to the autocast dtype and calls
`matmul_with_hp_or_float8_args`, which saves the *high-precision* input and the weight itself
(`ctx.save_for_backward(input_hp, weight_hp_t)`, torchao/float8/float8_linear.py) and casts both to fp8 (e4m3)
only for the matmul; backward casts them again, and the output gradient (e5m2) twice, for the input and the
weight gradients. So the saved activations are bf16-mixed's, without autocast's saved 16-bit weight copies; the
fp8 casts are transient, one Linear at a time (at most 1 B per weight and per input value of a block's largest
Linear, far below the logits at the peak). The LM head stays in bf16: torchao's README example filters the last
Linear out (`module_filter_fn`) and torchtitan's float8 converter skips `output` by default.
Published: torchtitan, Llama-3-8B on 8 x H100, bf16 + compile 47.65 GiB, tensorwise
float8 + compile (fp8 all-gather) 47.32 GiB (pytorch/torchtitan commit 7a04053, 2025-01).

Time. The Linear layers' FLOPs run on the FP8 tensor cores (the hardware catalog's dense fp8 TFLOP/s: H100/H200
SXM 1,979, L40S 733, L4 242.5), the rest (attention, MoE experts through `grouped_mm`, embeddings) in bf16.
FP8 matmuls reach a smaller share of their peak than bf16 ones inside a training step (dynamic scaling's amax
reductions and casts, smaller tiles): `FP8_LINEAR_EFFICIENCY` is that ratio.
"""

from __future__ import annotations

from treino.plan.model import ModelSpec

# FP8 Linear FLOP/s relative to the FP8 peak, as a share of what bf16 Linear FLOPs reach of the bf16 peak.
# Derived from torchtitan's Llama-3-8B, 8 x H100, seq 8192 (pytorch/torchtitan commit 7a04053, 2025-01): bf16
# + compile 5,760 tok/s/GPU, tensorwise float8 + compile 7,186 (x1.248); with 41.9 of the 61.1 GFLOP per token
# in the blocks' Linear layers, x1.248 needs 0.70 of the ideal 2x. For comparison, the best-shape matmul
# benchmark (MAMF, hardware-and-prices.md §4.1) gives 0.709/0.803 = 0.88 on an H100: the rest is scaling overhead.
FP8_LINEAR_EFFICIENCY = 0.70


def linear_flops_per_token(model: ModelSpec) -> float:
    """Training FLOPs (6 per weight) of the layers Float8Linear replaces: every block's Linear layers (not the
    MoE experts, which run through `grouped_mm`; not the LM head, left in bf16)."""
    return 6 * model.blocks_linear_params


def fp8_peak_tflops(model: ModelSpec, flops_per_token: float, bf16_tflops: float, fp8_tflops: float) -> float:
    """The step's effective peak: Linear FLOPs at the FP8 peak (times FP8_LINEAR_EFFICIENCY), the rest at bf16's.
    The planner's MFU priors, measured in bf16, then apply to it unchanged."""
    linear = min(linear_flops_per_token(model), flops_per_token)
    seconds = linear / (fp8_tflops * FP8_LINEAR_EFFICIENCY) + (flops_per_token - linear) / bf16_tflops
    return flops_per_token / seconds
