"""Inference memory (weights, KV cache, activations) and a bandwidth bound on decode speed.

KV cache: 2 · layers · kv_heads · head_dim · context · batch · bytes (planner-formulas §B6; Llama-2-7B fp16
524,288 B/token, Llama-3-8B 131,072 B/token). Decoding one token reads every weight and the whole KV cache
once, so tokens/s ≤ batch · HBM bandwidth / (weights + KV bytes) (llm-analysis `inference()`; §B6).
"""

from __future__ import annotations

from dataclasses import dataclass

from treino.errors import PlanError
from treino.i18n import Msg
from treino.plan.hardware import GpuSpec
from treino.plan.memory import DEFAULT_CUDA_CONTEXT_BYTES
from treino.plan.model import ModelSpec

# Bytes per weight. int8: one byte plus a per-channel scale (negligible). int4: 4 bits plus an fp16 scale
# per group of 128 (GPTQ/AWQ default group size): 0.5 + 2/128. Embeddings and the LM head stay 16-bit.
WEIGHT_BYTES = {"bf16": 2.0, "fp16": 2.0, "fp32": 4.0, "int8": 1.0, "int4": 0.5 + 2 / 128}
KV_BYTES = {"bf16": 2, "fp16": 2, "fp32": 4, "fp8": 1}


@dataclass(frozen=True)
class InferenceEstimate:
    params: int
    weights_bytes: int
    kv_cache_bytes: int
    kv_cache_bytes_per_token: int  # per sequence, all layers
    activations_bytes: int
    overhead_bytes: int
    peak_bytes: int
    decode_tokens_per_s_bound: float  # whole batch, at 100 % of HBM bandwidth
    decode_ms_per_token_bound: float


def kv_cache_bytes_per_token(model: ModelSpec, kv_dtype: str = "bf16") -> int:
    if model.kv_lora_rank:  # MLA caches the compressed latent and the shared rope key (DeepseekV3Attention)
        return model.num_layers * (model.kv_lora_rank + model.qk_rope_head_dim) * KV_BYTES[kv_dtype]
    return 2 * model.num_layers * model.kv_size * KV_BYTES[kv_dtype]


def estimate_inference(
    model: ModelSpec,
    gpu: GpuSpec,
    *,
    batch: int,
    context: int,
    weights: str = "bf16",
    kv_dtype: str = "bf16",
    gpus: int = 1,
    cuda_context_bytes: int = DEFAULT_CUDA_CONTEXT_BYTES,
) -> InferenceEstimate:
    """Memory per GPU for serving `batch` sequences of `context` tokens, tensor-parallel over `gpus`."""
    if batch < 1 or context < 1 or gpus < 1:
        raise PlanError(Msg("--batch, --context and --gpus must be at least 1."))
    if weights not in WEIGHT_BYTES:
        raise PlanError(
            Msg(
                "Unknown --weights {weights!r}. To fix: use one of {valid}.",
                weights=weights,
                valid=", ".join(WEIGHT_BYTES),
            )
        )
    if kv_dtype not in KV_BYTES:
        raise PlanError(
            Msg(
                "Unknown KV-cache dtype {dtype!r}. To fix: use one of {valid}.",
                dtype=kv_dtype,
                valid=", ".join(KV_BYTES),
            )
        )
    if model.num_kv_heads % gpus and gpus > 1:
        raise PlanError(
            Msg(
                "{gpus} GPUs do not divide the model's {kv_heads} key/value heads.",
                gpus=gpus,
                kv_heads=model.num_kv_heads,
            )
        )
    quantized = sum(
        t.numel * n
        for t, n in model.all_tensors()
        if len(t.shape) >= 2 and not t.name.endswith("embed") and t.name != "lm_head"
    )
    weight_bytes = WEIGHT_BYTES[weights] * quantized + 2.0 * (model.params - quantized)
    if weights == "fp32":
        weight_bytes = 4.0 * model.params
    per_token = kv_cache_bytes_per_token(model, kv_dtype)
    kv = per_token * context * batch
    # Prefill of one block at a time: hidden states, q/k/v, the gated MLP's intermediates (16-bit), and
    # fp32 logits of the last position for each sequence.
    act = batch * context * (4 * model.hidden_size + 3 * model.intermediate_size) * 2 / gpus
    act += batch * model.vocab_size * 4
    w = weight_bytes / gpus
    kv_gpu = kv if model.kv_lora_rank else kv / gpus  # MLA's latent is one per token: every rank holds it
    peak_tensor = w + kv_gpu + act
    overhead = cuda_context_bytes
    # Decode reads the weights a token uses (MoE: active experts only, an optimistic bound) and the cache.
    active_share = model.active_params / model.params
    bytes_per_step = w * active_share + kv_gpu
    seconds = bytes_per_step / (gpu.hbm_bandwidth_gb_s * 1e9)
    return InferenceEstimate(
        params=model.params,
        weights_bytes=round(w),
        kv_cache_bytes=round(kv_gpu),
        kv_cache_bytes_per_token=per_token,
        activations_bytes=round(act),
        overhead_bytes=overhead,
        peak_bytes=round(peak_tensor + overhead),
        decode_tokens_per_s_bound=batch / seconds,
        decode_ms_per_token_bound=seconds * 1e3,
    )
