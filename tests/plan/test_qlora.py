"""QLoRA's frozen base: which weights bitsandbytes quantizes to NF4, and their bytes, against a real quantized model.

Measured with transformers 5.24.0 and bitsandbytes 0.50.2 on CPU: each family's small config (tests/plan/families.py,
bf16) saved and loaded again with `BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4",
bnb_4bit_use_double_quant=True)`, the bytes of every parameter it holds, plus each NF4 weight's quantization
constants (its uint8 absmax per block of 64 and the fp32 absmax of those per block of 256, QLoRA §3), less the two
code tables each NF4 weight carries (1,088 B whatever its size; the plan leaves them out). Until 2026-12-07 the
plan quantized the MoE families' experts and routers too: since transformers 5 the experts are 3-D parameters and
the routers no Linear modules, so bitsandbytes leaves them unquantized (Mixtral's small config -44 %, Qwen2-MoE -36 %,
DeepSeek -22 %; Mixtral-8x7B's experts are 45 billion of its 47 billion parameters).
"""

from __future__ import annotations

import tempfile
from typing import Any

import pytest

from tests.plan.families import DEEPSEEK_V3, SMALL, without_dropout
from treino.plan import TrainSetup, estimate_training_memory, model_from_config
from treino.plan.memory import nf4_params

CONFIGS = {**{f: without_dropout(SMALL[f]) for f in SMALL if f != "gemma2"}, "deepseek_v3": DEEPSEEK_V3}
# family -> (elements bitsandbytes quantizes to NF4, bytes of the base), measured as the module docstring says
# (2026-12-07)
MEASURED = {
    "bert": (606_208, 983_956),
    "deepseek_v3": (325_632, 1_718_752),
    "gemma": (580_608, 825_636),
    "gpt2": (589_824, 1_101_200),
    "gpt_neox": (589_824, 1_363_344),
    "llama": (543_744, 1_330_892),
    "mistral": (543_744, 1_330_892),
    "mixtral": (147_456, 2_751_536),
    "phi3": (543_744, 1_330_880),
    "qwen2": (543_744, 808_140),
    "qwen2_moe": (442_752, 2_466_122),
}
# NF4_BYTES_PER_PARAM is QLoRA's 4.127 bits rounded to 0.516 B. DeepSeek's base is 0.24 % over the plan: transformers
# keeps its routers' weights in fp32 (`_keep_in_fp32_modules_strict`), 4 KiB here, which the plan counts in 16 bits.
BOUND = 0.003


def planned_base_bytes(cfg: dict[str, Any]) -> float:
    setup = TrainSetup(precision="bf16-mixed", lora_rank=8, quant="nf4", seq_len=16)
    estimate = estimate_training_memory(model_from_config(cfg), setup)
    return estimate.weights_bytes - 4 * estimate.trainable_params  # less PEFT's fp32 adapters


@pytest.mark.parametrize("family", sorted(MEASURED))
def test_the_weights_planned_in_nf4_are_those_bitsandbytes_quantizes(family: str) -> None:
    assert nf4_params(model_from_config(CONFIGS[family])) == MEASURED[family][0]


@pytest.mark.parametrize("family", sorted(MEASURED))
def test_the_nf4_base_is_what_bitsandbytes_holds(family: str) -> None:
    planned = planned_base_bytes(CONFIGS[family])
    measured = MEASURED[family][1]
    assert abs(planned / measured - 1) <= BOUND, f"{family}: planned {planned:,.0f} B, measured {measured:,} B"


def quantized_base(cfg: dict[str, Any]) -> tuple[int, int]:
    """(NF4 elements, bytes) of `cfg`'s model loaded in 4 bits by transformers and bitsandbytes on the CPU."""
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    pytest.importorskip("bitsandbytes")
    engine = pytest.importorskip("treino.trace.engine")
    torch.manual_seed(0)
    model = engine.build_hf_model(cfg, precision="bf16-true", attention="sdpa")
    config = transformers.BitsAndBytesConfig(
        load_in_4bit=True,
        bnb_4bit_quant_type="nf4",
        bnb_4bit_use_double_quant=True,
        bnb_4bit_compute_dtype=torch.bfloat16,
    )
    auto = transformers.AutoModelForMaskedLM if cfg["model_type"] == "bert" else transformers.AutoModelForCausalLM
    with tempfile.TemporaryDirectory() as folder:
        model.save_pretrained(folder)
        quantized = auto.from_pretrained(folder, quantization_config=config, device_map="cpu", dtype=torch.bfloat16)
    elements, total = 0, 0
    for p in quantized.parameters():
        total += p.numel() * p.element_size()
        state = getattr(p, "quant_state", None)
        if state is not None:
            elements += state.shape.numel()
            total += state.absmax.nbytes + state.state2.absmax.nbytes
    return elements, total


@pytest.mark.slow
@pytest.mark.parametrize("family", sorted(MEASURED))
def test_the_recorded_bases_are_measured_again(family: str) -> None:
    assert quantized_base(CONFIGS[family]) == MEASURED[family]


def test_a_moe_plan_says_its_experts_stay_16_bit() -> None:
    """Mixtral-8x7B's experts (mistralai/Mixtral-8x7B-v0.1 config.json: 32 layers of 8 experts, each three
    4,096 x 14,336 matrices) are 84.0 GiB in bf16, which QLoRA under transformers 5 leaves unquantized; a dense
    model's plan has no such note."""
    from treino import catalog

    setup = TrainSetup(lora_rank=16, quant="nf4", seq_len=2048)
    experts = 32 * 8 * 3 * 4096 * 14336 * 2 / 2**30
    notes = estimate_training_memory(catalog.model("mixtral-8x7b"), setup).notes
    assert [n for n in notes if n.startswith("NF4 applies") and f"{experts:,.1f} GiB" in n], notes
    assert not [n for n in estimate_training_memory(catalog.model("llama-3-8b"), setup).notes if "NF4" in n]
