"""DeepSeek-V3 (multi-head latent attention, shared and routed experts, dense first blocks): parameters exact
against transformers' own build, training memory against MemTracker on real CPU tensors, FLOPs against PyTorch's
FlopCounterMode, and the released model's counts against DeepSeek's published figures."""

from __future__ import annotations

from typing import Any

import pytest

from tests.plan.families import planned_against_measured
from treino import catalog
from treino.errors import PlanError
from treino.plan import TrainSetup, estimate_inference, model_from_config
from treino.plan.memory import block_activation_bytes, planned_attention_kernel
from treino.plan.performance import model_flops_per_token

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

# Small, with every size distinct: q and kv low-rank bottlenecks, qk head 28 + 12 (rope), v head 20, 8 experts in
# 2 groups (1 chosen), top-3, 2 shared experts, 1 dense block first.
TINY: dict[str, Any] = {
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
# DeepSeek-V2-Lite's shape of MLA (q projected directly: q_lora_rank null), biases, tied embeddings, no dense block.
TINY_NO_Q_LORA = {
    **TINY,
    "q_lora_rank": None,
    "attention_bias": True,
    "tie_word_embeddings": True,
    "first_k_dense_replace": 0,
    "n_shared_experts": 1,
}


def _hf(cfg: dict[str, Any], **kwargs: Any) -> Any:
    fields = {k: v for k, v in cfg.items() if k != "model_type"}
    config = transformers.AutoConfig.for_model("deepseek_v3", **fields)
    return transformers.AutoModelForCausalLM.from_config(config, **kwargs)


@pytest.mark.parametrize("cfg", [TINY, TINY_NO_Q_LORA], ids=["q-lora", "no-q-lora"])
def test_parameters_equal_transformers(cfg: dict[str, Any]) -> None:
    with torch.device("meta"):
        model = _hf(cfg)
    assert model_from_config(cfg).params == sum(p.numel() for p in model.parameters())


def test_deepseek_v3_matches_published_counts() -> None:
    """DeepSeek-V3 technical report (arXiv 2412.19437, abstract): "671B total parameters with 37B activated for
    each token"; DeepSeek's README_WEIGHTS.md (github.com/deepseek-ai/DeepSeek-V3; copy in tenstorrent/tt-metal
    models/demos/deepseek_v3/reference/README_WEIGHTS.md): main model 671B, "Activation parameters: 36.6B
    (including 0.9B for the output Head)", i.e. without the input embedding. The multi-token-prediction module
    (14B) is not part of the model transformers builds."""
    model = catalog.model("deepseek-v3")
    assert model.params == 671_026_404_352  # transformers 5.24's build on the meta device (test_params.py)
    assert model.params == pytest.approx(671e9, rel=0.001)
    assert model.active_params - model.embedding_params == pytest.approx(36.6e9, rel=0.002)
    assert model.head_params == pytest.approx(0.9e9, rel=0.05)


def test_flops_per_token_match_flop_counter() -> None:
    """A training step's matmul FLOPs as PyTorch counts them (FlopCounterMode, forward and backward; experts run
    one Linear per expert so that they are counted, attention by SDPA's math kernel, which the counter counts
    over the full s x s as the 12·L·d·s convention does). The convention's 6·N counts the input embedding,
    which is a lookup, not a matmul: it is left out here."""
    flop_counter = pytest.importorskip("torch.utils.flop_counter")
    torch.manual_seed(0)
    model = _hf(TINY, experts_implementation="eager", attn_implementation="sdpa")
    ids = torch.randint(0, TINY["vocab_size"], (2, 128))
    with flop_counter.FlopCounterMode(display=False) as counter:
        model(input_ids=ids, labels=ids).loss.backward()
    spec = model_from_config(TINY)
    predicted = (model_flops_per_token(spec, 128) - 6 * spec.embedding_params) * ids.numel()
    assert predicted == pytest.approx(counter.get_total_flops(), rel=0.005)  # the norms' weights: 0.16 %


def test_mla_kernels() -> None:
    """PyTorch's flash kernels need v's head size equal to q's (sdp_utils `check_head_dim_size_cpp`,
    `check_head_dim_size_flash`): with MLA's 40 and 20 the CPU runs the math kernel."""
    setup = TrainSetup(micro_batch=2, seq_len=128, precision="bf16-mixed", device="cpu", sm=0)
    assert planned_attention_kernel(model_from_config(TINY), setup) == "math"
    same = model_from_config({**TINY, "v_head_dim": 40})
    assert planned_attention_kernel(same, setup) == "flash-cpu"


def test_kv_cache_equals_transformers_cache() -> None:
    """MLA caches the compressed latent (kv_lora_rank) and the shared rope key per token, not per head."""
    engine = pytest.importorskip("treino.trace.engine")
    model = engine.build_hf_model(TINY, precision="bf16-true", attention="sdpa").eval()
    ids = torch.randint(0, TINY["vocab_size"], (3, 40))
    with torch.no_grad():
        cache = model(input_ids=ids, use_cache=True).past_key_values
    measured = sum(t.numel() * t.element_size() for layer in cache.layers for t in (layer.keys, layer.values))
    est = estimate_inference(model_from_config(TINY), catalog.gpu("l4"), batch=3, context=40)
    assert est.kv_cache_bytes == measured


@pytest.mark.parametrize(
    "field,value", [("topk_group", 3), ("num_experts_per_tok", 9), ("first_k_dense_replace", 4), ("n_group", 3)]
)
def test_bad_configs_are_rejected(field: str, value: int) -> None:
    with pytest.raises(PlanError, match="To fix"):
        model_from_config({**TINY, field: value})


# (precision, attention, checkpointing): both attention paths, all three compute modes, with and without
# activation checkpointing. Bound: 10 % per case, as every family's (tests/plan/test_accuracy.py).
# The last case has v's head size equal to q's: the CPU's flash kernel instead of the math one.
CASES = [
    ("fp32", "eager", "none", 20),
    ("bf16-mixed", "sdpa", "none", 20),
    ("bf16-mixed", "eager", "full", 20),
    ("bf16-true", "sdpa", "full", 20),
    ("bf16-true", "sdpa", "none", 40),
]


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_training_memory_within_10_percent(case: tuple[str, str, str, int]) -> None:
    pytest.importorskip("treino.trace.engine")
    precision, attention, checkpointing, v_head_dim = case
    cfg = {**TINY, "v_head_dim": v_head_dim}
    predicted, measured, error = planned_against_measured(cfg, precision, attention, checkpointing, 2, 128)
    assert abs(error) <= 0.10, (
        f"{case}: predicted {predicted.peak_tensor_bytes:,} B ({predicted.peak_phase}), "
        f"measured {measured:,} B: {error:+.1%}"
    )


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed", "bf16-true"])
def test_block_activations_equal_saved_tensors(precision: str) -> None:
    """What the blocks' forward saves for backward, listed with `saved_tensors_hooks` on real CPU tensors (each
    storage once, parameters left out), against the planned blocks' activations: tighter than the peak, so that
    each MLA and MoE term counts."""
    engine = pytest.importorskip("treino.trace.engine")
    torch.manual_seed(0)
    model = engine.build_hf_model(TINY, precision=precision, attention="sdpa").train()
    params = {p.untyped_storage().data_ptr() for p in model.parameters()}
    saved: dict[int, int] = {}
    in_block = [False]

    def pack(t: Any) -> Any:
        ptr = t.untyped_storage().data_ptr()
        if in_block[0] and ptr not in params:
            saved[ptr] = t.untyped_storage().nbytes()
        return t

    def enter(*_: Any) -> None:
        in_block[0] = True

    def leave(*_: Any) -> None:
        in_block[0] = False

    for layer in model.model.layers:
        layer.register_forward_pre_hook(enter)
        layer.register_forward_hook(leave)
    ids = torch.randint(0, TINY["vocab_size"], (2, 128))
    autocast = torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16-mixed")
    with autocast, torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        model(input_ids=ids, labels=ids)
    setup = TrainSetup(micro_batch=2, seq_len=128, precision=precision, device="cpu", sm=0)
    planned = TINY["num_hidden_layers"] * block_activation_bytes(model_from_config(TINY), setup, ids.numel())
    assert planned == pytest.approx(sum(saved.values()), rel=0.01)
