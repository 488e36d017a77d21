"""LoRA: the analytic planner against PEFT's real adapters, measured with MemTracker on CPU tensors.

The base model is held in bf16 and frozen, the adapters are fp32 (PEFT's autocast_adapter_dtype default),
and the step runs under bf16 autocast: the usual single-GPU LoRA fine-tune.
"""

from __future__ import annotations

import pytest

from tests.plan.families import SMALL, without_dropout
from treino.plan import TrainSetup, estimate_training_memory, model_from_config

torch = pytest.importorskip("torch")
peft = pytest.importorskip("peft")
engine = pytest.importorskip("treino.trace.engine")

TARGETS = {
    "llama": ("q_proj", "k_proj", "v_proj", "o_proj"),
    "qwen2": ("q_proj", "v_proj"),
    "gpt_neox": ("query_key_value", "dense"),
}


def _peft_model(family: str, attention: str, rank: int):  # type: ignore[no-untyped-def]
    cfg = without_dropout(SMALL[family])
    torch.manual_seed(0)
    base = engine.build_hf_model(cfg, precision="bf16-true", attention=attention)
    return cfg, peft.get_peft_model(base, peft.LoraConfig(r=rank, target_modules=list(TARGETS[family])))


@pytest.mark.parametrize("family", sorted(TARGETS))
@pytest.mark.parametrize("rank", [4, 16])
def test_trainable_params_equal_peft(family: str, rank: int) -> None:
    cfg, model = _peft_model(family, "sdpa", rank)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    setup = TrainSetup(lora_rank=rank, lora_targets=TARGETS[family], seq_len=16)
    assert estimate_training_memory(model_from_config(cfg), setup).trainable_params == trainable


@pytest.mark.parametrize("family", ["mixtral", "qwen2_moe"])
@pytest.mark.parametrize("rank", [4, 16])
def test_fused_expert_adapters_equal_peft(family: str, rank: int) -> None:
    """transformers holds a MoE layer's experts as 3-D parameters (experts, d_out, d_in); PEFT adapts them with
    `target_parameters`, one A (r·E x d_in) and B (d_out x r·E) per parameter (peft 0.21 tuners/lora ParamWrapper).
    The planner's target "experts" counts the same, next to the attention's own adapters."""
    cfg = without_dropout(SMALL[family])
    torch.manual_seed(0)
    base = engine.build_hf_model(cfg, precision="bf16-true", attention="sdpa")
    config = peft.LoraConfig(
        r=rank, target_modules=["q_proj"], target_parameters=["experts.gate_up_proj", "experts.down_proj"]
    )
    model = peft.get_peft_model(base, config)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    setup = TrainSetup(lora_rank=rank, lora_targets=("q_proj", "experts"), seq_len=16)
    assert estimate_training_memory(model_from_config(cfg), setup).trainable_params == trainable


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(TARGETS))
@pytest.mark.parametrize("attention", ["sdpa", "eager"])
def test_lora_peak_within_10_percent(family: str, attention: str) -> None:
    cfg, model = _peft_model(family, attention, 8)
    measured = engine.measure_training_step(model, engine.lm_batch(cfg, 2, 256), precision="bf16-mixed")
    setup = TrainSetup(
        micro_batch=2,
        seq_len=256,
        precision="bf16-mixed",
        attention=attention,
        lora_rank=8,
        lora_targets=TARGETS[family],
    )
    predicted = estimate_training_memory(model_from_config(cfg), setup)
    error = predicted.peak_tensor_bytes / measured.peak_bytes - 1
    assert abs(error) <= 0.10, f"{family} {attention}: {error:+.1%}"
    # bf16 base + fp32 adapters, exactly (MemTracker rounds each tensor to 512 B, so count the tensors)
    assert predicted.weights_bytes == sum(p.numel() * p.element_size() for p in model.parameters())


@pytest.mark.parametrize("family", ["gpt2", "gpt_neox", "bert"])
def test_default_targets_are_peft_defaults(family: str) -> None:
    """Without --lora-targets, families whose attention is not q/k/v/o_proj take PEFT's own defaults: a LoraConfig
    without target_modules adapts the same modules (peft/utils/constants.py)."""
    cfg = without_dropout(SMALL[family])
    torch.manual_seed(0)
    base = engine.build_hf_model(cfg, precision="bf16-true", attention="sdpa")
    model = peft.get_peft_model(base, peft.LoraConfig(r=8))
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    setup = TrainSetup(lora_rank=8, seq_len=16)
    assert estimate_training_memory(model_from_config(cfg), setup).trainable_params == trainable


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed", "bf16-true"])
def test_the_base_and_adapters_weigh_what_peft_holds(precision: str) -> None:
    """The frozen base in the parameters' dtype (fp32 in fp32 training, bf16 otherwise) and PEFT's adapters in fp32
    (`autocast_adapter_dtype`), byte for byte against the PEFT model's parameters."""
    cfg = without_dropout(SMALL["llama"])
    torch.manual_seed(0)
    base = engine.build_hf_model(cfg, precision="fp32" if precision == "fp32" else "bf16-true", attention="sdpa")
    model = peft.get_peft_model(base, peft.LoraConfig(r=8, target_modules=list(TARGETS["llama"])))
    setup = TrainSetup(precision=precision, lora_rank=8, lora_targets=TARGETS["llama"], seq_len=16)
    planned = estimate_training_memory(model_from_config(cfg), setup).weights_bytes
    assert planned == sum(p.numel() * p.element_size() for p in model.parameters())
