"""Small configs of every supported family, for tests that build real models with transformers."""

from __future__ import annotations

from typing import Any, NamedTuple

from treino.plan import TrainSetup, estimate_training_memory, model_from_config
from treino.plan.memory import MemoryEstimate

# Small enough that a step on two CPU cores takes a second or two (bf16 matmuls are slow on CPUs), large
# enough that activations and logits make a third or more of the peak at micro-batch 2 x 256 tokens.
H, FFN, LAYERS, HEADS, VOCAB = 128, 344, 3, 4, 2048
DECODER = {
    "hidden_size": H,
    "intermediate_size": FFN,
    "num_hidden_layers": LAYERS,
    "num_attention_heads": HEADS,
    "num_key_value_heads": 2,
    "vocab_size": VOCAB,
    "max_position_embeddings": 1024,
}

SMALL: dict[str, dict[str, Any]] = {
    "llama": {"model_type": "llama", **DECODER, "tie_word_embeddings": False},
    "mistral": {"model_type": "mistral", **DECODER, "sliding_window": None},
    "mixtral": {
        "model_type": "mixtral",
        **DECODER,
        "intermediate_size": 176,
        "num_local_experts": 4,
        "num_experts_per_tok": 2,
    },
    "qwen2": {"model_type": "qwen2", **DECODER, "tie_word_embeddings": True},
    # Qwen2-MoE: 8 fine-grained experts, top-4, a shared expert with its sigmoid gate.
    "qwen2_moe": {
        "model_type": "qwen2_moe",
        **DECODER,
        "moe_intermediate_size": 64,
        "shared_expert_intermediate_size": 256,
        "num_experts": 8,
        "num_experts_per_tok": 4,
    },
    "gemma": {"model_type": "gemma", **DECODER, "num_key_value_heads": 1, "head_dim": 48},
    "gemma2": {"model_type": "gemma2", **DECODER, "head_dim": 32, "query_pre_attn_scalar": 32, "sliding_window": 4096},
    "phi3": {"model_type": "phi3", **DECODER, "pad_token_id": 0},
    "gpt2": {
        "model_type": "gpt2",
        "n_embd": H,
        "n_layer": LAYERS,
        "n_head": HEADS,
        "vocab_size": VOCAB,
        "n_positions": 1024,
    },
    "gpt_neox": {
        "model_type": "gpt_neox",
        "hidden_size": H,
        "intermediate_size": 4 * H,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "vocab_size": VOCAB,
        "max_position_embeddings": 1024,
    },
    "bert": {
        "model_type": "bert",
        "hidden_size": H,
        "intermediate_size": 4 * H,
        "num_hidden_layers": LAYERS,
        "num_attention_heads": HEADS,
        "vocab_size": VOCAB,
        "max_position_embeddings": 512,
    },
}

# DeepSeek-V3, apart from SMALL (its tests: tests/plan/test_deepseek.py, tests/trace/test_parity.py). Small, with
# every size distinct: q and kv low-rank bottlenecks, qk head 28 + 12 (rope), v head 20, 8 experts in 2 groups
# (1 chosen), top-3, 2 shared experts, 1 dense block first.
DEEPSEEK_V3: dict[str, Any] = {
    "model_type": "deepseek_v3",
    "hidden_size": 128,
    "intermediate_size": 344,
    "moe_intermediate_size": 40,
    "num_hidden_layers": 3,
    "num_attention_heads": 4,
    "num_key_value_heads": 4,
    "n_routed_experts": 8,
    "num_experts_per_tok": 3,
    "n_group": 2,
    "topk_group": 1,
    "first_k_dense_replace": 1,
    "n_shared_experts": 2,
    "q_lora_rank": 72,
    "kv_lora_rank": 36,
    "qk_nope_head_dim": 28,
    "qk_rope_head_dim": 12,
    "v_head_dim": 20,
    "vocab_size": 2048,
    "max_position_embeddings": 1024,
}

DROPOUT_KEYS = ("attn_pdrop", "resid_pdrop", "embd_pdrop", "hidden_dropout_prob", "attention_probs_dropout_prob")


def without_dropout(cfg: dict[str, Any]) -> dict[str, Any]:
    """GPT-2 and BERT configs default to dropout 0.1; this config without it (the others default to none)."""
    if cfg["model_type"] not in ("gpt2", "bert"):
        return cfg
    return {**cfg, **dict.fromkeys(DROPOUT_KEYS, 0.0)}


def with_dropout(cfg: dict[str, Any], p: float = 0.1) -> dict[str, Any]:
    """Dropout `p` on every probability the family's config has (most LLM configs default to none)."""
    keys = ("attention_dropout", "hidden_dropout", "resid_pdrop", "attn_pdrop", "embd_pdrop")
    if cfg["model_type"] == "bert":
        keys = ("hidden_dropout_prob", "attention_probs_dropout_prob")
    return {**cfg, **dict.fromkeys(keys, p)}


def dropout_on(family: str) -> dict[str, Any]:
    """The family's small config with dropout: GPT-2's and BERT's default (10 %), 10 % on every dropout of the others
    (whose configs default to none). On CPU, SDPA with dropout runs the math kernel."""
    return SMALL[family] if family in ("gpt2", "bert") else with_dropout(SMALL[family])


def cpu_setup(
    precision: str, attention: str, checkpointing: str, micro_batch: int = 2, seq_len: int = 256
) -> TrainSetup:
    """The setup these configs are measured in, planned for the CPU that measures them (its kernels, its masks)."""
    return TrainSetup(
        micro_batch=micro_batch,
        seq_len=seq_len,
        precision=precision,
        attention=attention,
        checkpointing=checkpointing,
        device="cpu",
        sm=0,
    )


def planned_against_measured(
    cfg: dict[str, Any], precision: str, attention: str, checkpointing: str, micro_batch: int, seq_len: int
) -> tuple[MemoryEstimate, int, float]:
    """One training step of `cfg` built with transformers, measured by MemTracker on CPU, and the plan for the same
    setup on the device measured (its kernels and dropout masks: CPU keeps a noise tensor, CUDA a bool mask): the
    plan, the measured peak in bytes, and the plan's error against it."""
    import torch

    from treino.trace import engine

    torch.manual_seed(0)
    model = engine.build_hf_model(cfg, precision=precision, attention=attention)
    measured = engine.measure_training_step(
        model, engine.lm_batch(cfg, micro_batch, seq_len), precision=precision, checkpointing=checkpointing
    )
    setup = cpu_setup(precision, attention, checkpointing, micro_batch, seq_len)
    predicted = estimate_training_memory(model_from_config(cfg), setup)
    return predicted, measured.peak_bytes, predicted.peak_tensor_bytes / measured.peak_bytes - 1


class Moment(NamedTuple):
    """MemTracker's running total of live tensors around one operator of a measured step."""

    op: str  # the operator, e.g. "aten.mm.default"
    total: int  # bytes live after it
    backward: bool  # whether it ran in backward


def step_totals(
    cfg: dict[str, Any], precision: str, attention: str, checkpointing: str, micro_batch: int, seq_len: int
) -> tuple[list[Moment], int]:
    """One training step of `cfg` measured as planned_against_measured does, with MemTracker's running total of live
    tensors logged after every operator: (the moments in order, the step's peak in bytes). The totals show each
    moment of the step, where the peak shows only the largest."""
    import torch

    from treino.trace import engine

    totals: list[Moment] = []
    make_tracker = engine._peak_tracker

    def logging_tracker() -> Any:
        tracker = make_tracker()
        base = type(tracker)

        class Logged(base):  # type: ignore[misc, valid-type]
            def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
                self._op = str(func)
                return base.__torch_dispatch__(self, func, types, args, kwargs)

            def _update_peak_stats(self, peak_state: Any) -> None:
                for snapshot in self._curr_mem_snap.values():
                    totals.append(Moment(getattr(self, "_op", ""), snapshot["Total"], self._mod_tracker.is_bw))
                super()._update_peak_stats(peak_state)

        return Logged()

    engine._peak_tracker = logging_tracker
    try:
        torch.manual_seed(0)
        model = engine.build_hf_model(cfg, precision=precision, attention=attention)
        batch = engine.lm_batch(cfg, micro_batch, seq_len)
        measured = engine.measure_training_step(model, batch, precision=precision, checkpointing=checkpointing)
    finally:
        engine._peak_tracker = make_tracker
    return totals, measured.peak_bytes
