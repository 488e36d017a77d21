"""The notes a plan carries, checked whole: a user reads them as they are, so a changed word is a changed plan."""

from __future__ import annotations

import pytest

from treino import catalog
from treino.plan import TrainSetup, estimate_training_memory

LLAMA = "llama-3-8b"


@pytest.mark.parametrize("offload", ["optimizer", "optimizer+params"])
def test_an_offloaded_optimizer_is_said_to_step_on_the_cpu(offload: str) -> None:
    """ZeRO-Offload (Ren et al. 2021, arXiv 2101.06840 §4) keeps the fp32 master weights and AdamW's two moments on
    the CPU, 12 B per parameter, and runs their step there."""
    model = catalog.model(LLAMA)
    setup = TrainSetup(precision="bf16-master", zero=3, gpus=8, offload=offload)
    estimate = estimate_training_memory(model, setup)
    assert "The optimizer step runs on the CPU (DeepSpeed ZeRO-Offload)." in estimate.notes
    weights_on_cpu = 2 * model.params / 8 if offload == "optimizer+params" else 0
    assert estimate.cpu_offload_bytes == round(12 * model.params / 8 + weights_on_cpu)


def test_sgd_and_no_offload_have_no_such_note() -> None:
    model = catalog.model(LLAMA)
    for setup in (TrainSetup(optimizer="sgd", offload="optimizer", zero=2, gpus=2), TrainSetup()):
        notes = estimate_training_memory(model, setup).notes
        assert not [n for n in notes if "ZeRO-Offload" in n], notes
    assert estimate_training_memory(model, TrainSetup()).cpu_offload_bytes == 0


def test_8bit_adamw_says_where_its_step_comes_from() -> None:
    notes = estimate_training_memory(catalog.model(LLAMA), TrainSetup(optimizer="adamw-8bit")).notes
    expected = (
        "8-bit AdamW is planned as bitsandbytes' AdamW8bit, whose state treino's tests measure; its step's "
        "temporaries (none: the CUDA kernel updates in place) come from its source, not a measurement."
    )
    assert expected in notes, notes
    assert not [n for n in estimate_training_memory(catalog.model(LLAMA), TrainSetup()).notes if "8-bit" in n]


def test_qlora_of_a_moe_model_says_its_experts_stay_16_bit() -> None:
    """Mixtral-8x7B's experts (mistralai/Mixtral-8x7B-v0.1 config.json: 32 layers of 8 experts, each three
    4,096 x 14,336 matrices) in bf16: 84.0 GiB."""
    setup = TrainSetup(lora_rank=16, quant="nf4", seq_len=2048)
    notes = estimate_training_memory(catalog.model("mixtral-8x7b"), setup).notes
    expected = (
        "NF4 applies to Linear layers only: this model's 84.0 GiB of MoE experts stay 16-bit, as transformers 5 "
        "holds them as 3-D parameters that bitsandbytes does not quantize (with transformers 4, whose experts were "
        "Linear layers, they were NF4)."
    )
    assert expected in notes, notes
