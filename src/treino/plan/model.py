"""Model architecture from a Hugging Face config.json, and its exact parameter count.

The count is built from the tensors each family's transformers implementation creates, so it equals
`sum(p.numel() for p in model.parameters())` of `AutoModelForCausalLM` (BERT: `BertForMaskedLM`)
built from the same config. Formulas: planner-formulas-and-data.md §B1 (checked there against meta-device
builds: Llama-2-7B 6,738,415,616; Llama-3-8B 8,030,261,248; GPT-2 124,439,808; BERT-base-MLM 109,514,298).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from treino.errors import PlanError, UnsupportedModelError
from treino.i18n import Msg

LLAMA_LIKE = ("llama", "mistral", "mixtral", "qwen2", "gemma", "gemma2", "phi3", "qwen2_moe")
MOE_FAMILIES = ("mixtral", "qwen2_moe", "deepseek_v3")
SUPPORTED_FAMILIES = (*LLAMA_LIKE, "gpt2", "gpt_neox", "bert", "deepseek_v3")


@dataclass(frozen=True)
class Tensor:
    """One parameter tensor of a transformer block (or of the embeddings/head)."""

    name: str
    shape: tuple[int, ...]
    lora_target: str = ""  # the module name PEFT's target_modules matches ("q_proj"), "" if not a Linear

    @property
    def numel(self) -> int:
        n = 1
        for dim in self.shape:
            n *= dim
        return n


@dataclass(frozen=True)
class ModelSpec:
    """A transformer's shape. Sizes are element counts; `layer_tensors` describe one block."""

    name: str
    family: str
    hidden_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    max_positions: int
    tied_embeddings: bool
    num_experts: int  # 0 for dense models
    experts_per_token: int
    dropout: float  # largest dropout probability in the config; 0 for most modern LLMs
    layer_tensors: tuple[Tensor, ...]
    outer_tensors: tuple[Tensor, ...]  # embeddings, final norm, LM/MLM head
    logit_softcap: bool = False  # gemma2: logits = cap·tanh(logits/cap), one more logits-sized tensor
    # MoE (`intermediate_size` is then one routed expert's): Qwen2-MoE's always-active shared expert and its
    # sigmoid gate, and whether the router divides the top-k probabilities by their sum (Mixtral always;
    # Qwen2-MoE with `norm_topk_prob`).
    shared_expert_size: int = 0
    shared_expert_gated: bool = False
    router_renormalizes: bool = False
    # Dropout probabilities as each family's modules use them (transformers 5.24 modeling_*.py): on the attention
    # probabilities, on `hidden_dropout_sites` hidden-size outputs per block, and on the embeddings' output.
    attention_dropout: float = 0.0
    hidden_dropout: float = 0.0
    hidden_dropout_sites: int = 0
    embedding_dropout: float = 0.0
    # DeepSeek-V3: multi-head latent attention's ranks (0 without MLA; q_lora_rank 0 when q is projected
    # directly), and the first `dense_layers` blocks, whose tensors are `dense_layer_tensors` (a dense SwiGLU
    # MLP in place of the MoE block); `num_layers` counts them too.
    q_lora_rank: int = 0
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    v_head_dim: int = 0
    dense_layers: int = 0
    dense_layer_tensors: tuple[Tensor, ...] = ()
    dense_intermediate_size: int = 0
    # Attention masks one forward builds in eager attention: 2 where full and sliding-window layers mix (gemma2,
    # Qwen2 with `use_sliding_window`), each s x s per sequence (transformers 5.24 `causal_mask_mapping`).
    mask_kinds: int = 1
    router_groups: int = 1  # DeepSeek-V3's grouped top-k: `n_group` groups of experts, `topk_group` chosen
    router_topk_groups: int = 1

    @property
    def q_size(self) -> int:
        return self.num_heads * self.head_dim

    @property
    def kv_size(self) -> int:
        return self.num_kv_heads * self.head_dim

    @property
    def attention_core_width(self) -> float:
        """Per-token width of the attention core's two matmuls, averaged: q·kᵀ over heads·head_dim and the
        probabilities times v over heads·v_head_dim (MLA: 192 and 128 per head; equal elsewhere)."""
        return (self.q_size + self.num_heads * self.v_head_dim) / 2 if self.v_head_dim else self.q_size

    @functools.cached_property  # a sweep asks for it many times per plan
    def layer_params(self) -> int:
        return sum(t.numel for t in self.layer_tensors)

    @functools.cached_property  # a sweep asks for it many times per plan
    def layer_linear_params(self) -> int:
        """Weights of one block's matrix multiplies that autocast casts to 16 bits. Routed experts are not:
        transformers runs them with `grouped_mm`, which autocast does not cover, in the weights' own dtype
        (transformers integrations/moe.py `_grouped_mm`: `input.to(weight.dtype)`)."""
        return sum(t.numel for t in self.layer_tensors if len(t.shape) >= 2 and not t.name.startswith("expert."))

    @property
    def embedding_params(self) -> int:
        return sum(t.numel for t in self.outer_tensors if t.name.endswith("embed"))

    @property
    def head_params(self) -> int:
        """The untied LM head's weight (0 when tied to the embedding)."""
        return sum(t.numel for t in self.outer_tensors if t.name == "lm_head")

    @functools.cached_property
    def blocks_linear_params(self) -> int:
        """`layer_linear_params` summed over all the blocks (the dense first ones have their own)."""
        dense = sum(t.numel for t in self.dense_layer_tensors if len(t.shape) >= 2 and not t.name.startswith("expert."))
        return (self.num_layers - self.dense_layers) * self.layer_linear_params + self.dense_layers * dense

    @functools.cached_property  # a sweep asks for it many times per plan
    def blocks_params(self) -> int:
        """Parameters of all the blocks (the MoE ones and any dense first ones)."""
        dense = self.dense_layers * sum(t.numel for t in self.dense_layer_tensors)
        return (self.num_layers - self.dense_layers) * self.layer_params + dense

    @functools.cached_property  # a sweep asks for it many times per plan
    def params(self) -> int:
        return self.blocks_params + sum(t.numel for t in self.outer_tensors)

    @property
    def active_params(self) -> int:
        """Parameters a token passes through (MoE: only `experts_per_token` experts)."""
        if not self.num_experts:
            return self.params
        expert = sum(t.numel for t in self.layer_tensors if t.name.startswith("expert."))
        idle = expert * (self.num_experts - self.experts_per_token) // self.num_experts
        return self.params - (self.num_layers - self.dense_layers) * idle

    def all_tensors(self) -> list[tuple[Tensor, int]]:
        """Every tensor with how many copies of it the model holds."""
        moe = self.num_layers - self.dense_layers
        dense = [(t, self.dense_layers) for t in self.dense_layer_tensors] if self.dense_layers else []
        return [(t, moe) for t in self.layer_tensors] + dense + [(t, 1) for t in self.outer_tensors]


def _int(cfg: Mapping[str, Any], *keys: str, default: int | None = None) -> int:
    for key in keys:
        value = cfg.get(key)
        if value is not None:
            if isinstance(value, bool) or not isinstance(value, int):
                raise PlanError(
                    Msg("config.json field '{key}' must be an integer, got {value!r}.", key=key, value=value)
                )
            if value <= 0:
                raise PlanError(Msg("config.json field '{key}' must be positive, got {value}.", key=key, value=value))
            return value
    if default is None:
        raise PlanError(Msg("config.json lacks '{key}'. To fix: add it (an integer) to the config.", key=keys[0]))
    return default


def _float(cfg: Mapping[str, Any], *keys: str, default: float = 0.0) -> float:
    """The largest of these fields; `default` (transformers' config default) for those absent."""
    values = [cfg.get(k, default) for k in keys]
    return max((float(v) for v in values if isinstance(v, int | float) and not isinstance(v, bool)), default=default)


def _linear(name: str, d_in: int, d_out: int, bias: bool, target: str) -> list[Tensor]:
    out = [Tensor(name, (d_out, d_in), target)]
    if bias:
        out.append(Tensor(name + ".bias", (d_out,)))
    return out


def _layernorm(name: str, h: int, bias: bool) -> list[Tensor]:
    return [Tensor(name, (h,))] + ([Tensor(name + ".bias", (h,))] if bias else [])


def model_from_config(cfg: Mapping[str, Any], name: str = "custom") -> ModelSpec:
    """Read a Hugging Face config.json dict. Raises PlanError naming the bad field."""
    if not isinstance(cfg, Mapping):
        raise PlanError(Msg("config.json must hold a JSON object."))
    family = cfg.get("model_type")
    if not isinstance(family, str):
        raise PlanError(Msg("config.json lacks 'model_type'. To fix: add the Hugging Face model_type (e.g. 'llama')."))
    if family not in SUPPORTED_FAMILIES:
        raise UnsupportedModelError(
            Msg(
                "The analytic planner does not model model_type '{family}'. Supported: {supported}. To fix: use "
                "--method trace, which runs the real model on fake tensors.",
                family=family,
                supported=", ".join(SUPPORTED_FAMILIES),
            )
        )
    if family in LLAMA_LIKE:
        spec = _llama_like(cfg, family, name)
    elif family == "gpt2":
        spec = _gpt2(cfg, name)
    elif family == "gpt_neox":
        spec = _gpt_neox(cfg, name)
    elif family == "deepseek_v3":
        from treino.plan.deepseek import deepseek_v3_from_config

        spec = deepseek_v3_from_config(cfg, name)
    else:
        spec = _bert(cfg, name)
    return spec


def _check_heads(h: int, a: int, kv: int, head_dim_given: bool) -> None:
    if not head_dim_given and h % a:
        raise PlanError(
            Msg("num_attention_heads ({a}) does not divide hidden_size ({h}). To fix: correct the config.", a=a, h=h)
        )
    if a % kv:
        raise PlanError(Msg("num_key_value_heads ({kv}) does not divide num_attention_heads ({a}).", kv=kv, a=a))


def _mask_kinds(cfg: Mapping[str, Any], family: str, layers: int) -> int:
    """The kinds of attention layers, full and sliding-window, as transformers 5.24 sets `layer_types`: given in
    the config, alternating in gemma2, and in Qwen2 sliding from `max_window_layers` on with `use_sliding_window`."""
    types = cfg.get("layer_types")
    if isinstance(types, list) and types:
        return len(set(map(str, types)))
    if family == "gemma2":
        return 2
    if family in ("qwen2", "qwen2_moe") and cfg.get("use_sliding_window"):
        return 2 if 0 < _int(cfg, "max_window_layers", default=28) < layers else 1
    return 1


def _llama_like(cfg: Mapping[str, Any], family: str, name: str) -> ModelSpec:
    # transformers models/{llama,mistral,mixtral,qwen2,gemma,gemma2,phi3,qwen2_moe}/modeling_*.py
    h = _int(cfg, "hidden_size")
    L = _int(cfg, "num_hidden_layers")
    a = _int(cfg, "num_attention_heads")
    kv = _int(cfg, "num_key_value_heads", default=a)
    head_dim_given = cfg.get("head_dim") is not None
    _check_heads(h, a, kv, head_dim_given)
    d = _int(cfg, "head_dim", default=h // a)
    # Qwen2-MoE's `intermediate_size` is its dense layers' (none here, see _qwen2_moe_mlp); f is one expert's.
    f = _int(cfg, "moe_intermediate_size", default=1408) if family == "qwen2_moe" else _int(cfg, "intermediate_size")
    V = _int(cfg, "vocab_size")
    tied = bool(cfg.get("tie_word_embeddings", family in ("gemma", "gemma2")))
    qkv_bias = family == "qwen2" or bool(cfg.get("attention_bias", False))
    o_bias = family != "qwen2" and bool(cfg.get("attention_bias", False))
    if family == "qwen2_moe":  # transformers models/qwen2_moe/configuration_qwen2_moe.py: qkv_bias=True
        qkv_bias, o_bias = bool(cfg.get("qkv_bias", True)), False
    mlp_bias = bool(cfg.get("mlp_bias", False)) and family == "llama"
    layer: list[Tensor] = []
    layer += _linear("q_proj", h, a * d, qkv_bias, "q_proj")
    layer += _linear("k_proj", h, kv * d, qkv_bias, "k_proj")
    layer += _linear("v_proj", h, kv * d, qkv_bias, "v_proj")
    layer += _linear("o_proj", a * d, h, o_bias, "o_proj")
    experts = 0
    top_k = 0
    shared, shared_gated, renormalizes = 0, False, False
    if family == "qwen2_moe":
        layer, experts, top_k, shared = _qwen2_moe_mlp(cfg, h, layer)
        shared_gated, renormalizes = True, bool(cfg.get("norm_topk_prob", False))
    elif family == "mixtral":
        renormalizes = True
        experts = _int(cfg, "num_local_experts")
        top_k = _int(cfg, "num_experts_per_tok", default=2)
        if top_k > experts:
            raise PlanError(
                Msg(
                    "num_experts_per_tok ({top_k}) exceeds num_local_experts ({experts}).", top_k=top_k, experts=experts
                )
            )
        layer.append(Tensor("router", (experts, h)))
        layer.append(Tensor("expert.gate_up_proj", (experts, 2 * f, h), "experts"))
        layer.append(Tensor("expert.down_proj", (experts, h, f), "experts"))
    else:
        layer += _linear("gate_proj", h, f, mlp_bias, "gate_proj")
        layer += _linear("up_proj", h, f, mlp_bias, "up_proj")
        layer += _linear("down_proj", f, h, mlp_bias, "down_proj")
    norms = 4 if family == "gemma2" else 2  # gemma2 adds pre/post feed-forward norms
    layer += [Tensor(f"norm{i}", (h,)) for i in range(norms)]
    outer = [Tensor("token_embed", (V, h)), Tensor("final_norm", (h,))]
    if not tied:
        outer.append(Tensor("lm_head", (V, h), "lm_head"))
    return ModelSpec(
        name=name,
        family=family,
        hidden_size=h,
        num_layers=L,
        num_heads=a,
        num_kv_heads=kv,
        head_dim=d,
        intermediate_size=f,
        vocab_size=V,
        max_positions=_int(cfg, "max_position_embeddings", default=4096),
        tied_embeddings=tied,
        num_experts=experts,
        experts_per_token=top_k,
        dropout=_float(cfg, "attention_dropout", *(("resid_pdrop",) if family == "phi3" else ())),
        layer_tensors=tuple(layer),
        outer_tensors=tuple(outer),
        attention_dropout=_float(cfg, "attention_dropout"),
        # phi3 drops out both residual branches (resid_attn_dropout, resid_mlp_dropout); embd_pdrop is unused.
        hidden_dropout=_float(cfg, "resid_pdrop") if family == "phi3" else 0.0,
        hidden_dropout_sites=2 if family == "phi3" else 0,
        logit_softcap=family == "gemma2" and cfg.get("final_logit_softcapping", 30.0) is not None,
        mask_kinds=_mask_kinds(cfg, family, L),
        shared_expert_size=shared,
        shared_expert_gated=shared_gated,
        router_renormalizes=renormalizes,
    )


def _qwen2_moe_mlp(cfg: Mapping[str, Any], h: int, layer: list[Tensor]) -> tuple[list[Tensor], int, int, int]:
    """Qwen2-MoE's feed-forward block (transformers models/qwen2_moe/modeling_qwen2_moe.py
    `Qwen2MoeSparseMoeBlock`): a top-k router over fused experts of `moe_intermediate_size`, plus a shared
    expert (a SwiGLU MLP of `shared_expert_intermediate_size`) that every token passes through, scaled by a
    sigmoid gate (a Linear h -> 1). Returns the layer's tensors, experts, top-k and the shared expert's size."""
    experts = _int(cfg, "num_experts", default=60)
    top_k = _int(cfg, "num_experts_per_tok", default=4)
    if top_k > experts:
        raise PlanError(
            Msg("num_experts_per_tok ({top_k}) exceeds num_experts ({experts}).", top_k=top_k, experts=experts)
        )
    if _int(cfg, "decoder_sparse_step", default=1) != 1 or cfg.get("mlp_only_layers"):
        raise UnsupportedModelError(
            Msg(
                "The analytic planner models Qwen2-MoE with an MoE block in every layer; this config mixes in dense "
                "layers (decoder_sparse_step or mlp_only_layers). To fix: use --method trace."
            )
        )
    fe = _int(cfg, "moe_intermediate_size", default=1408)
    fs = _int(cfg, "shared_expert_intermediate_size", default=5632)
    out = list(layer)
    out.append(Tensor("router", (experts, h)))
    out.append(Tensor("expert.gate_up_proj", (experts, 2 * fe, h), "experts"))
    out.append(Tensor("expert.down_proj", (experts, h, fe), "experts"))
    out += _linear("shared_expert.gate_proj", h, fs, False, "gate_proj")
    out += _linear("shared_expert.up_proj", h, fs, False, "up_proj")
    out += _linear("shared_expert.down_proj", fs, h, False, "down_proj")
    out.append(Tensor("shared_expert_gate", (1, h)))
    return out, experts, top_k, fs


def _gpt2(cfg: Mapping[str, Any], name: str) -> ModelSpec:
    # transformers models/gpt2/modeling_gpt2.py: Conv1D c_attn/c_proj/c_fc with biases, tied lm_head
    h = _int(cfg, "n_embd", "hidden_size")
    L = _int(cfg, "n_layer", "num_hidden_layers")
    a = _int(cfg, "n_head", "num_attention_heads")
    _check_heads(h, a, a, False)
    f = _int(cfg, "n_inner", default=4 * h)
    V = _int(cfg, "vocab_size")
    P = _int(cfg, "n_positions", "max_position_embeddings", default=1024)
    layer = [
        *_layernorm("ln_1", h, True),
        *_linear("c_attn", h, 3 * h, True, "c_attn"),
        *_linear("attn.c_proj", h, h, True, "c_proj"),
        *_layernorm("ln_2", h, True),
        *_linear("c_fc", h, f, True, "c_fc"),
        *_linear("mlp.c_proj", f, h, True, "c_proj"),
    ]
    outer = [Tensor("token_embed", (V, h)), Tensor("position_embed", (P, h)), *_layernorm("ln_f", h, True)]
    return ModelSpec(
        name=name,
        family="gpt2",
        hidden_size=h,
        num_layers=L,
        num_heads=a,
        num_kv_heads=a,
        head_dim=h // a,
        intermediate_size=f,
        vocab_size=V,
        max_positions=P,
        tied_embeddings=True,
        num_experts=0,
        experts_per_token=0,
        dropout=_float(cfg, "attn_pdrop", "resid_pdrop", "embd_pdrop", default=0.1),
        layer_tensors=tuple(layer),
        outer_tensors=tuple(outer),
        # attn_dropout on the probabilities, resid_dropout after attn.c_proj and mlp.dropout, drop on embeddings
        attention_dropout=_float(cfg, "attn_pdrop", default=0.1),
        hidden_dropout=_float(cfg, "resid_pdrop", default=0.1),
        hidden_dropout_sites=2,
        embedding_dropout=_float(cfg, "embd_pdrop", default=0.1),
    )


def _gpt_neox(cfg: Mapping[str, Any], name: str) -> ModelSpec:
    # transformers models/gpt_neox/modeling_gpt_neox.py: fused query_key_value, LayerNorms with bias
    h = _int(cfg, "hidden_size")
    L = _int(cfg, "num_hidden_layers")
    a = _int(cfg, "num_attention_heads")
    _check_heads(h, a, a, False)
    f = _int(cfg, "intermediate_size")
    V = _int(cfg, "vocab_size")
    bias = bool(cfg.get("attention_bias", True))
    tied = bool(cfg.get("tie_word_embeddings", False))
    layer = [
        *_layernorm("input_layernorm", h, True),
        *_layernorm("post_attention_layernorm", h, True),
        *_linear("query_key_value", h, 3 * h, bias, "query_key_value"),
        *_linear("dense", h, h, bias, "dense"),
        *_linear("dense_h_to_4h", h, f, True, "dense_h_to_4h"),
        *_linear("dense_4h_to_h", f, h, True, "dense_4h_to_h"),
    ]
    outer = [Tensor("token_embed", (V, h)), *_layernorm("final_layer_norm", h, True)]
    if not tied:
        outer.append(Tensor("lm_head", (V, h), "embed_out"))
    return ModelSpec(
        name=name,
        family="gpt_neox",
        hidden_size=h,
        num_layers=L,
        num_heads=a,
        num_kv_heads=a,
        head_dim=h // a,
        intermediate_size=f,
        vocab_size=V,
        max_positions=_int(cfg, "max_position_embeddings", default=2048),
        tied_embeddings=tied,
        num_experts=0,
        experts_per_token=0,
        dropout=_float(cfg, "attention_dropout", "hidden_dropout"),
        layer_tensors=tuple(layer),
        outer_tensors=tuple(outer),
        # post_attention_dropout, post_mlp_dropout and emb_dropout all use hidden_dropout
        attention_dropout=_float(cfg, "attention_dropout"),
        hidden_dropout=_float(cfg, "hidden_dropout"),
        hidden_dropout_sites=2,
        embedding_dropout=_float(cfg, "hidden_dropout"),
    )


def _bert(cfg: Mapping[str, Any], name: str) -> ModelSpec:
    # transformers models/bert/modeling_bert.py, BertForMaskedLM (no pooler; decoder tied, own bias)
    h = _int(cfg, "hidden_size")
    L = _int(cfg, "num_hidden_layers")
    a = _int(cfg, "num_attention_heads")
    _check_heads(h, a, a, False)
    f = _int(cfg, "intermediate_size")
    V = _int(cfg, "vocab_size")
    P = _int(cfg, "max_position_embeddings", default=512)
    types = _int(cfg, "type_vocab_size", default=2)
    layer = [
        *_linear("query", h, h, True, "query"),
        *_linear("key", h, h, True, "key"),
        *_linear("value", h, h, True, "value"),
        *_linear("attention.output.dense", h, h, True, "dense"),
        *_layernorm("attention.output.LayerNorm", h, True),
        *_linear("intermediate.dense", h, f, True, "dense"),
        *_linear("output.dense", f, h, True, "dense"),
        *_layernorm("output.LayerNorm", h, True),
    ]
    outer = [
        Tensor("token_embed", (V, h)),
        Tensor("position_embed", (P, h)),
        Tensor("token_type_embed", (types, h)),
        *_layernorm("embeddings.LayerNorm", h, True),
        *_linear("cls.transform.dense", h, h, True, "dense"),
        *_layernorm("cls.transform.LayerNorm", h, True),
        Tensor("cls.decoder.bias", (V,)),
    ]
    return ModelSpec(
        name=name,
        family="bert",
        hidden_size=h,
        num_layers=L,
        num_heads=a,
        num_kv_heads=a,
        head_dim=h // a,
        intermediate_size=f,
        vocab_size=V,
        max_positions=P,
        tied_embeddings=True,
        num_experts=0,
        experts_per_token=0,
        dropout=_float(cfg, "hidden_dropout_prob", "attention_probs_dropout_prob", default=0.1),
        layer_tensors=tuple(layer),
        outer_tensors=tuple(outer),
        # BertSelfOutput and BertOutput drop out before their LayerNorm; BertEmbeddings after its LayerNorm
        attention_dropout=_float(cfg, "attention_probs_dropout_prob", default=0.1),
        hidden_dropout=_float(cfg, "hidden_dropout_prob", default=0.1),
        hidden_dropout_sites=2,
        embedding_dropout=_float(cfg, "hidden_dropout_prob", default=0.1),
    )
