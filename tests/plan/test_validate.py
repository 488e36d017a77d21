"""Every refusal of an impossible setup, with its whole message: what is wrong and how to fix it (the CLI prints
these as they are, exit 2). A message that names the wrong option, or a bound that lets a bad value through, must
fail here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from tests.plan.families import SMALL
from treino.errors import PlanError
from treino.plan import TrainSetup, estimate_training_memory, model_from_config
from treino.plan.memory import validate_setup

BASE = TrainSetup()
LLAMA = model_from_config(SMALL["llama"])  # 3 layers, 4 heads, 2 key/value heads, 1,024 positions (rotary)

REFUSED_SETUPS: list[tuple[dict[str, Any], str]] = [
    (
        {"precision": "fp64"},
        "Unknown precision 'fp64'. To fix: use one of fp32, bf16-mixed, fp16-mixed, bf16-master, bf16-true, fp8, "
        "bf16-fsdp.",
    ),
    (
        {"optimizer": "adam"},
        "Unknown optimizer 'adam'. To fix: use one of adamw, adamw-8bit, sgd, sgd-momentum, adafactor, lion.",
    ),
    ({"attention": "flash"}, "Unknown attention 'flash'. To fix: use one of sdpa, eager."),
    ({"checkpointing": "all"}, "Unknown checkpointing 'all'. To fix: use one of none, selective, full."),
    ({"offload": "params"}, "Unknown offload 'params'. To fix: use one of none, optimizer, optimizer+params."),
    ({"quant": "int8"}, "Unknown quant 'int8'. To fix: use one of none, nf4."),
    ({"kernels": "apex"}, "Unknown kernels 'apex'. To fix: use one of hf, megatron."),
    ({"device": "tpu"}, "Unknown device 'tpu'. To fix: use one of cuda, rocm, cpu."),
    ({"loop": "keras"}, "Unknown loop 'keras'. To fix: use one of plain, trainer."),
    ({"micro_batch": 0}, "--micro-batch must be at least 1, got 0."),
    ({"seq_len": -5}, "--seq-len must be at least 1, got -5."),
    ({"grad_accum": 0}, "--grad-accum must be at least 1, got 0."),
    ({"gpus": 0}, "--gpus must be at least 1, got 0."),
    ({"tp": 0}, "--tp must be at least 1, got 0."),
    ({"pp": 0}, "--pp must be at least 1, got 0."),
    ({"pp_interleave": 0}, "--pp-interleave must be at least 1, got 0."),
    ({"zero": 4}, "--zero must be 0, 1, 2 or 3, got 4."),
    ({"zero": -1}, "--zero must be 0, 1, 2 or 3, got -1."),
    ({"gpus": 3, "tp": 2}, "--tp 2 does not divide --gpus 3. To fix: use divisors of the GPU count."),
    ({"gpus": 6, "tp": 2, "pp": 2}, "--tp 2 x --pp 2 does not divide --gpus 6. To fix: use divisors of the GPU count."),
    ({"gpus": 3, "pp": 2}, "--tp 1 x --pp 2 does not divide --gpus 3. To fix: use divisors of the GPU count."),
    (
        {"offload": "optimizer+params", "zero": 2},
        "Offloading parameters needs ZeRO-3 (FSDP full shard). To fix: add --zero 3.",
    ),
    ({"lora_rank": -1}, "--lora-rank must be positive, got -1."),
    (
        {"precision": "bf16-fsdp", "zero": 1, "gpus": 2},
        "--precision bf16-fsdp is FSDP2's MixedPrecisionPolicy, for a full fine-tune sharded by FSDP. To fix: add "
        "--zero 3 (or 2), or, with LoRA, use --precision bf16-mixed.",
    ),
    (
        {"precision": "bf16-fsdp", "zero": 3, "gpus": 2, "lora_rank": 16},
        "--precision bf16-fsdp is FSDP2's MixedPrecisionPolicy, for a full fine-tune sharded by FSDP. To fix: add "
        "--zero 3 (or 2), or, with LoRA, use --precision bf16-mixed.",
    ),
    ({"quant": "nf4"}, "NF4 weights are frozen, so --quant nf4 needs LoRA. To fix: add --lora-rank 16 (QLoRA)."),
]


@pytest.mark.parametrize(("changes", "message"), REFUSED_SETUPS, ids=[m[:40] for _, m in REFUSED_SETUPS])
def test_an_impossible_setup_is_refused_with_what_to_fix(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(PlanError) as refused:
        validate_setup(replace(BASE, **changes))
    assert str(refused.value) == message


ACCEPTED_SETUPS: list[dict[str, Any]] = [
    {"micro_batch": 1, "seq_len": 1, "grad_accum": 1, "gpus": 1, "tp": 1, "pp": 1, "pp_interleave": 1},
    {"zero": 0},
    {"zero": 3, "gpus": 2},
    {"gpus": 8, "tp": 2, "pp": 2},
    {"gpus": 6, "tp": 3, "pp": 2},  # a product, not a sum, of the two
    {"offload": "optimizer+params", "zero": 3},
    {"lora_rank": 0},
    {"precision": "bf16-fsdp", "zero": 2, "gpus": 2},
    {"quant": "nf4", "lora_rank": 16},
]


@pytest.mark.parametrize("changes", ACCEPTED_SETUPS, ids=str)
def test_the_bounds_themselves_are_accepted(changes: dict[str, Any]) -> None:
    validate_setup(replace(BASE, **changes))


REFUSED_FOR_THE_MODEL: list[tuple[dict[str, Any], dict[str, Any], str]] = [
    (
        {},
        {"pp": 2, "gpus": 2},
        "--pp 2 x --pp-interleave 1 does not divide the model's 3 layers. To fix: pick stage counts that divide the "
        "layers.",
    ),
    (
        {"num_hidden_layers": 4},
        {"pp": 2, "pp_interleave": 4, "gpus": 2},
        "--pp 2 x --pp-interleave 4 does not divide the model's 4 layers. To fix: pick stage counts that divide the "
        "layers.",
    ),
    (
        {},
        {"tp": 4, "gpus": 4},
        "--tp 4 does not divide the model's 4 attention heads and 2 key/value heads. To fix: use a tensor-parallel "
        "size that divides both.",
    ),
    (
        {"num_attention_heads": 2, "num_key_value_heads": 2},
        {"tp": 4, "gpus": 4},
        "--tp 4 does not divide the model's 2 attention heads and 2 key/value heads. To fix: use a tensor-parallel "
        "size that divides both.",
    ),
    (
        {},
        {"lora_rank": 8, "lora_targets": ("q_proj", "c_attn")},
        "LoRA target(s) c_attn are not modules of a llama model. Valid: down_proj, gate_proj, k_proj, lm_head, "
        "o_proj, q_proj, up_proj, v_proj.",
    ),
    (
        {},
        {"lora_rank": 8, "lora_targets": ("c_attn", "q_proj", "c_fc")},
        "LoRA target(s) c_attn, c_fc are not modules of a llama model. Valid: down_proj, gate_proj, k_proj, "
        "lm_head, o_proj, q_proj, up_proj, v_proj.",
    ),
]


@pytest.mark.parametrize(
    ("config", "changes", "message"), REFUSED_FOR_THE_MODEL, ids=[m[:40] for _, _, m in REFUSED_FOR_THE_MODEL]
)
def test_a_setup_impossible_for_the_model_is_refused(
    config: dict[str, Any], changes: dict[str, Any], message: str
) -> None:
    model = model_from_config({**SMALL["llama"], **config})
    with pytest.raises(PlanError) as refused:
        estimate_training_memory(model, replace(BASE, **changes))
    assert str(refused.value) == message


def test_learned_positions_bound_the_sequence_but_rotary_ones_do_not() -> None:
    gpt2 = model_from_config(SMALL["gpt2"])  # 1,024 learned positions
    estimate_training_memory(gpt2, replace(BASE, seq_len=1024))
    with pytest.raises(PlanError) as refused:
        estimate_training_memory(gpt2, replace(BASE, seq_len=1025))
    assert str(refused.value) == "--seq-len 1025 exceeds the model's 1024 learned positions."
    bert = model_from_config(SMALL["bert"])  # 512 learned positions
    estimate_training_memory(bert, replace(BASE, seq_len=512))
    with pytest.raises(PlanError) as refused:
        estimate_training_memory(bert, replace(BASE, seq_len=513))
    assert str(refused.value) == "--seq-len 513 exceeds the model's 512 learned positions."
    estimate_training_memory(LLAMA, replace(BASE, seq_len=4096))  # rotary: a longer plan is the user's choice


def test_lora_with_the_default_targets_checks_them_against_the_model() -> None:
    """No --lora-target: the family's defaults (its attention projections) are what is checked, and they exist."""
    estimate_training_memory(LLAMA, replace(BASE, lora_rank=8))
    estimate_training_memory(model_from_config(SMALL["gpt2"]), replace(BASE, lora_rank=8, seq_len=1024))
