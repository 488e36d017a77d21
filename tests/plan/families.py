"""Small configs of every supported family, for tests that build real models with transformers."""

from __future__ import annotations

from typing import Any

DECODER = {
    "hidden_size": 256,
    "intermediate_size": 688,
    "num_hidden_layers": 4,
    "num_attention_heads": 8,
    "num_key_value_heads": 4,
    "vocab_size": 4096,
    "max_position_embeddings": 1024,
}

SMALL: dict[str, dict[str, Any]] = {
    "llama": {"model_type": "llama", **DECODER, "tie_word_embeddings": False},
    "mistral": {"model_type": "mistral", **DECODER, "sliding_window": None},
    "mixtral": {
        "model_type": "mixtral",
        **DECODER,
        "intermediate_size": 344,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
    },
    "qwen2": {"model_type": "qwen2", **DECODER, "tie_word_embeddings": True},
    "gemma": {"model_type": "gemma", **DECODER, "num_attention_heads": 4, "num_key_value_heads": 1, "head_dim": 96},
    "gemma2": {"model_type": "gemma2", **DECODER, "head_dim": 32, "query_pre_attn_scalar": 32, "sliding_window": 4096},
    "phi3": {"model_type": "phi3", **DECODER, "pad_token_id": 0},
    "gpt2": {"model_type": "gpt2", "n_embd": 256, "n_layer": 4, "n_head": 8, "vocab_size": 4096, "n_positions": 1024},
    "gpt_neox": {
        "model_type": "gpt_neox",
        "hidden_size": 256,
        "intermediate_size": 1024,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "vocab_size": 4096,
        "max_position_embeddings": 1024,
    },
    "bert": {
        "model_type": "bert",
        "hidden_size": 256,
        "intermediate_size": 1024,
        "num_hidden_layers": 4,
        "num_attention_heads": 8,
        "vocab_size": 4096,
        "max_position_embeddings": 512,
    },
}

DROPOUT_KEYS = ("attn_pdrop", "resid_pdrop", "embd_pdrop", "hidden_dropout_prob", "attention_probs_dropout_prob")


def without_dropout(cfg: dict[str, Any]) -> dict[str, Any]:
    """GPT-2 and BERT configs default to dropout 0.1. With dropout, PyTorch's CPU SDPA takes the math path and
    keeps s x s tensors that the CUDA flash kernel does not; the planner models the CUDA kernel, so SDPA cases
    are measured without dropout."""
    if cfg["model_type"] not in ("gpt2", "bert"):
        return cfg
    return {**cfg, **dict.fromkeys(DROPOUT_KEYS, 0.0)}
