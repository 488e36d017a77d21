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
        raise PlanError(f"num_experts_per_tok ({top_k}) exceeds n_routed_experts ({experts}).")
    groups = _int(cfg, "n_group", default=8)
    if experts % groups:
        raise PlanError(f"n_group ({groups}) does not divide n_routed_experts ({experts}). To fix: correct the config.")
    shared = cfg.get("n_shared_experts", 1)
    if shared is None:
        shared = 0
    if isinstance(shared, bool) or not isinstance(shared, int) or shared < 0:
        raise PlanError(f"config.json field 'n_shared_experts' must be a non-negative integer, got {shared!r}.")
    first_dense = cfg.get("first_k_dense_replace", 3)
    if isinstance(first_dense, bool) or not isinstance(first_dense, int) or not 0 <= first_dense <= L:
        raise PlanError(
            f"config.json field 'first_k_dense_replace' must be an integer from 0 to num_hidden_layers ({L}), "
            f"got {first_dense!r}. To fix: correct the config."
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
