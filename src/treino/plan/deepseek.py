"""DeepSeek-V3's architecture (transformers models/deepseek_v3/modeling_deepseek_v3.py, transformers 5.24).

A DeepSeek-V3 block is a Llama-style pre-norm block with two changes:
- multi-head latent attention (MLA, `DeepseekV3Attention`): q through a low-rank bottleneck
  (`q_a_proj` h -> q_lora_rank, an RMSNorm, `q_b_proj` -> heads·(qk_nope + qk_rope)), or one `q_proj` when
  `q_lora_rank` is null; keys and values from a compressed latent (`kv_a_proj_with_mqa` h -> kv_lora_rank +
  qk_rope, an RMSNorm on the first part, `kv_b_proj` -> heads·(qk_nope + v_head_dim)); the rope part of the key
  is shared by every head; `o_proj` heads·v_head_dim -> h;
- from block `first_k_dense_replace` on, a MoE feed-forward (`DeepseekV3MoE`): a sigmoid router (fp32 weight,
  a correction-bias buffer that is not a parameter, grouped top-k over `n_group` groups), `n_routed_experts`
  fused experts of `moe_intermediate_size`, and a shared SwiGLU MLP of `n_shared_experts ·
  moe_intermediate_size` every token passes through (no gate). The first blocks have a dense SwiGLU MLP of
  `intermediate_size`.
The multi-token-prediction module of the released checkpoint (`num_nextn_predict_layers`) is not built by
transformers, so it is not counted (DeepSeek-V3 technical report, arXiv 2412.19437, §4.2: 671B main model
parameters plus 14B of the MTP module).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from treino.errors import PlanError
from treino.i18n import Msg
from treino.plan.model import ModelSpec, Tensor, _check_heads, _float, _int, _linear


def _optional_int(cfg: Mapping[str, Any], key: str, default: int | None) -> int | None:
    """An integer field that may be null (DeepSeek-V2-Lite's `q_lora_rank`)."""
    if key in cfg and cfg[key] is None:
        return None
    return _int(cfg, key, default=default) if default is not None or key in cfg else None


def _mla(cfg: Mapping[str, Any], h: int, a: int) -> tuple[list[Tensor], int, int, int, int, int]:
    """MLA's tensors; returns them with (q_lora_rank or 0, kv_lora_rank, qk_nope, qk_rope, v_head_dim)."""
    q_rank = _optional_int(cfg, "q_lora_rank", 1536)
    kv_rank = _int(cfg, "kv_lora_rank", default=512)
    nope = _int(cfg, "qk_nope_head_dim", default=128)
    rope = _int(cfg, "qk_rope_head_dim", default=64)
    v = _int(cfg, "v_head_dim", default=128)
    bias = bool(cfg.get("attention_bias", False))
    out: list[Tensor] = []
    if q_rank is None:
        out += _linear("q_proj", h, a * (nope + rope), False, "q_proj")
    else:
        out += _linear("q_a_proj", h, q_rank, bias, "q_a_proj")
        out.append(Tensor("q_a_layernorm", (q_rank,)))
        out += _linear("q_b_proj", q_rank, a * (nope + rope), False, "q_b_proj")
    out += _linear("kv_a_proj_with_mqa", h, kv_rank + rope, bias, "kv_a_proj_with_mqa")
    out.append(Tensor("kv_a_layernorm", (kv_rank,)))
    out += _linear("kv_b_proj", kv_rank, a * (nope + v), False, "kv_b_proj")
    out += _linear("o_proj", a * v, h, bias, "o_proj")
    return out, q_rank or 0, kv_rank, nope, rope, v


def _swiglu(prefix: str, h: int, f: int) -> list[Tensor]:
    return [
        *_linear(prefix + "gate_proj", h, f, False, "gate_proj"),
        *_linear(prefix + "up_proj", h, f, False, "up_proj"),
        *_linear(prefix + "down_proj", f, h, False, "down_proj"),
    ]


def deepseek_v3_from_config(cfg: Mapping[str, Any], name: str) -> ModelSpec:
    """A DeepSeek-V3 config.json (defaults: transformers' DeepseekV3Config, which are DeepSeek-V3's own)."""
    h = _int(cfg, "hidden_size", default=7168)
    L = _int(cfg, "num_hidden_layers", default=61)
    a = _int(cfg, "num_attention_heads", default=128)
    _check_heads(h, a, a, True)
    f_dense = _int(cfg, "intermediate_size", default=18432)
    fe = _int(cfg, "moe_intermediate_size", default=2048)
    experts = _int(cfg, "n_routed_experts", default=256)
    top_k = _int(cfg, "num_experts_per_tok", default=8)
    if top_k > experts:
        raise PlanError(
            Msg(
                "num_experts_per_tok ({top_k}) exceeds n_routed_experts ({experts}). To fix: correct the config.",
                top_k=top_k,
                experts=experts,
            )
        )
    groups = _int(cfg, "n_group", default=8)
    if experts % groups:
        raise PlanError(
            Msg(
                "n_group ({groups}) does not divide n_routed_experts ({experts}). To fix: correct the config.",
                groups=groups,
                experts=experts,
            )
        )
    topk_groups = _int(cfg, "topk_group", default=4)
    if topk_groups > groups:
        raise PlanError(
            Msg(
                "topk_group ({topk_groups}) exceeds n_group ({groups}). To fix: correct the config.",
                topk_groups=topk_groups,
                groups=groups,
            )
        )
    shared = cfg.get("n_shared_experts", 1)
    if shared is None:
        shared = 0
    if isinstance(shared, bool) or not isinstance(shared, int) or shared < 0:
        raise PlanError(
            Msg(
                "config.json field 'n_shared_experts' must be a non-negative integer, got {shared!r}. "
                "To fix: correct the config.",
                shared=shared,
            )
        )
    first_dense = cfg.get("first_k_dense_replace", 3)
    if isinstance(first_dense, bool) or not isinstance(first_dense, int) or not 0 <= first_dense <= L:
        raise PlanError(
            Msg(
                "config.json field 'first_k_dense_replace' must be an integer from 0 to num_hidden_layers ({L}), "
                "got {first_dense!r}. To fix: correct the config.",
                L=L,
                first_dense=first_dense,
            )
        )
    V = _int(cfg, "vocab_size", default=129280)
    tied = bool(cfg.get("tie_word_embeddings", False))
    attention, q_rank, kv_rank, nope, rope, v = _mla(cfg, h, a)
    norms = [Tensor("norm0", (h,)), Tensor("norm1", (h,))]
    moe = [
        *attention,
        Tensor("router", (experts, h)),
        Tensor("expert.gate_up_proj", (experts, 2 * fe, h), "experts"),
        Tensor("expert.down_proj", (experts, h, fe), "experts"),
        *(_swiglu("shared_expert.", h, shared * fe) if shared else []),
        *norms,
    ]
    dense = [*attention, *_swiglu("", h, f_dense), *norms]
    outer = [Tensor("token_embed", (V, h)), Tensor("final_norm", (h,))]
    if not tied:
        outer.append(Tensor("lm_head", (V, h), "lm_head"))
    return ModelSpec(
        name=name,
        family="deepseek_v3",
        hidden_size=h,
        num_layers=L,
        num_heads=a,
        num_kv_heads=a,  # MLA expands the latent into every head's key and value
        head_dim=nope + rope,  # the query/key head size; values have v_head_dim
        intermediate_size=fe,
        vocab_size=V,
        max_positions=_int(cfg, "max_position_embeddings", default=4096),
        tied_embeddings=tied,
        num_experts=experts,
        experts_per_token=top_k,
        dropout=_float(cfg, "attention_dropout"),
        layer_tensors=tuple(moe),
        outer_tensors=tuple(outer),
        shared_expert_size=shared * fe,
        router_groups=groups,
        router_topk_groups=topk_groups,
        router_renormalizes=bool(cfg.get("norm_topk_prob", True)),
        attention_dropout=_float(cfg, "attention_dropout"),
        q_lora_rank=q_rank,
        kv_lora_rank=kv_rank,
        qk_rope_head_dim=rope,
        v_head_dim=v,
        dense_layers=first_dense,
        dense_layer_tensors=tuple(dense),
        dense_intermediate_size=f_dense,
    )


# Saved activations, tensor by tensor (listed with `torch.autograd.graph.saved_tensors_hooks` on real CPU tensors,
# transformers 5.24, torch 2.13; checked against MemTracker in tests/plan/test_deepseek.py). `compute` as in
# activations.py: "fp32", "mixed" (autocast over fp32 weights) or "16bit".
INDEX_BYTES = 8  # int64 indices (torch.topk, the experts' sort)
RSQRT_BYTES = 4  # an RMSNorm's fp32 1/rms per token


def _norm(n: int, compute: str, fp32_input: bool, consumers: int) -> float:
    """An RMSNorm of size n (DeepseekV3RMSNorm) and the inputs its `consumers` Linears save. It saves its input
    in fp32 (a copy when the input is 16-bit), 1/rms, and the normalized tensor in the input's dtype; its output
    is saved by the Linears it feeds: once in fp32 or 16-bit training, one 16-bit copy per Linear under autocast
    (whose fp32 output, weight times a 16-bit tensor, is no Linear's own input)."""
    if compute == "fp32":
        return 12 * n + RSQRT_BYTES
    if compute == "mixed":
        normalized = 4 if fp32_input else 2
        return 4 * n + RSQRT_BYTES + normalized * n + 2 * n * consumers
    return 8 * n + RSQRT_BYTES


def mla_kernel(kernel: str, model: ModelSpec) -> str:
    """The SDPA kernel MLA runs: PyTorch's flash kernels (CUDA and CPU) need the values' head size equal to the
    queries' (`check_head_dim_size_flash`, `check_head_dim_size_cpp` in sdp_utils), so with `v_head_dim` !=
    qk_nope + qk_rope (DeepSeek-V3: 128 and 192) the CPU runs the math kernel and CUDA the memory-efficient one,
    which allows a different value size. cuDNN is treated like flash (not checked on a GPU)."""
    if model.v_head_dim == model.head_dim or kernel in ("eager", "math", "efficient"):
        return kernel
    return "math" if kernel == "flash-cpu" else "efficient"


def _mla_bytes(model: ModelSpec, compute: str, kernel: str, core: bool) -> float:
    """One MLA block's attention half per token, but for its s x s tensors: input norm, q and kv projections,
    the attention core's q, k and v (the tensors its kernel saves; its inputs when `core` is recomputed),
    o_proj's input."""
    h, a, qk, v = model.hidden_size, model.num_heads, model.head_dim, model.v_head_dim
    kvr, rope = model.kv_lora_rank, model.qk_rope_head_dim
    act = 4 if compute == "fp32" else 2
    out = _norm(h, compute, compute != "16bit", consumers=2)  # q_a_proj (or q_proj) and kv_a_proj_with_mqa
    if model.q_lora_rank:  # q_a_proj's output through q_a_layernorm into q_b_proj
        out += _norm(model.q_lora_rank, compute, compute == "fp32", consumers=1)
    # kv_a_proj_with_mqa's output: kv_a_layernorm's input (in fp32 a view of the whole kvr + rope output).
    out += 4 * (kvr + rope) + RSQRT_BYTES + 8 * kvr if compute == "fp32" else 8 * kvr + RSQRT_BYTES
    # The attention core (kernels.py): q's and k's rope products save only cos and sin, shared by every block.
    if not core:
        # Selective checkpointing recomputes the core: backward keeps its inputs, not what the kernel saves.
        # q and k leave the rope in fp32 under autocast (cos and sin take the fp32 embeddings' dtype), v leaves
        # kv_b_proj in the activations' dtype (measured: tests/plan/test_deepseek.py).
        qk_bytes = 2 if compute == "16bit" else 4
        out += qk_bytes * 2 * a * qk + act * a * v
    elif kernel in ("math", "eager"):
        # The math kernel upcasts q, k and v to fp32 and keeps the fp32 softmax; eager attention saves q and k^T
        # in the activations' dtype (under autocast bf16 copies of the fp32 rope output), the fp32 softmax, its
        # 16-bit copy (16-bit activations) and v.
        qkv = 4 if kernel == "math" else act
        out += qkv * (2 * a * qk + a * v)
    else:  # flash / efficient / cudnn: q, k, v, the output and the fp32 log-sum-exp
        out += act * (2 * a * qk + 2 * a * v) + 4 * a
    out += act * a * v  # o_proj's input: the contiguous copy of the attention output
    return out


def _score_bytes_per_key(compute: str, kernel: str) -> float:
    """Bytes per head, query token and key of the s x s tensors the kernel keeps (none for fused kernels)."""
    if kernel == "math":
        return 4
    if kernel == "eager":
        return 4 if compute == "fp32" else 4 + 2
    return 0.0


def _ffn_bytes(model: ModelSpec, compute: str, dense: bool) -> float:
    """The feed-forward half per token: post-attention norm, then the dense SwiGLU MLP (first blocks) or the MoE."""
    h = model.hidden_size
    swiglu = 16 if compute == "fp32" else 8  # gate and up outputs, SiLU output, their product
    if dense:
        return _norm(h, compute, compute != "16bit", consumers=2) + swiglu * model.dense_intermediate_size
    shared = model.shared_expert_size
    out = _norm(h, compute, compute != "16bit", consumers=1 + (2 if shared else 0))
    E, k, fe = model.num_experts, model.experts_per_token, model.intermediate_size
    # Router (DeepseekV3TopkRouter): an fp32 Linear (under autocast bf16 logits), sigmoid scores, the groups'
    # top-2 indices, the chosen groups' indices, the boolean mask, the top-k indices, the renormalization's
    # numerator and sum. In 16-bit training the router casts its input to fp32: one more copy.
    router = 2 if compute == "mixed" else 4
    out += 4 * h if compute == "16bit" else 0
    groups = model.router_groups
    out += router * E + INDEX_BYTES * (2 * groups + model.router_topk_groups) + E + INDEX_BYTES * k
    if model.router_renormalizes:
        out += router * (k + 1)
    # Dispatch (integrations/moe.py grouped_mm, in the weights' dtype): per (token, expert) pair two indices, the
    # routing weight, the gathered input, the gate_up output, SiLU's output, their product, the down output.
    expert = 2 if compute == "16bit" else 4
    out += k * (2 * INDEX_BYTES + router + expert * (2 * h + 4 * fe))
    out += swiglu * shared
    return out


def mla_block_bytes_per_token(model: ModelSpec, compute: str, kernel: str, seq_len: int, core: bool) -> float:
    """Saved bytes per token of one DeepSeek-V3 block, averaged over the dense first blocks and the MoE ones
    (their sum over the model is exact; a single recomputed block is the average)."""
    kernel = mla_kernel(kernel, model)
    attention = _mla_bytes(model, compute, kernel, core)
    if core:  # selective checkpointing recomputes the attention core and drops its s x s tensors
        attention += _score_bytes_per_key(compute, kernel) * model.num_heads * seq_len
    L, dense = model.num_layers, model.dense_layers
    ffn = ((L - dense) * _ffn_bytes(model, compute, False) + dense * _ffn_bytes(model, compute, True)) / L
    return attention + ffn
