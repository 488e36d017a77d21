"""Eager attention's causal masks, planned against the masks transformers really builds.

The plan counts the masks at the attention core's backward (`eager_mask_bytes`, part of `_core_backward_bytes`).
Measured here: the distinct `attention_mask` tensors the attention modules receive in a real forward (transformers
5.24.0, CPU, the small configs of tests/plan/families.py with dropout, so that SDPA runs its math kernel). A
decoder in eager attention gets an additive s x s mask per sequence, in the parameters' dtype (fp32 under
autocast), one per kind of attention layer (full, sliding-window); SDPA gets none (is_causal); BERT, whose batch
has no padding, gets none in either.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.plan.families import SMALL, cpu_setup, dropout_on
from treino.plan import model_from_config
from treino.plan.memory import eager_mask_bytes, planned_attention_kernel

torch = pytest.importorskip("torch")
engine = pytest.importorskip("treino.trace.engine")

MICRO_BATCH, SEQ_LEN = 2, 64


def measured_mask_bytes(cfg: dict[str, Any], precision: str, attention: str) -> int:
    """The bytes of the distinct masks the attention modules receive in one forward (0 when they receive none)."""
    torch.manual_seed(0)
    model = engine.build_hf_model(cfg, precision=precision, attention=attention)
    masks: dict[int, int] = {}  # storage address -> bytes

    def receive(module: Any, args: Any, kwargs: dict[str, Any]) -> None:
        mask = kwargs.get("attention_mask")
        if mask is not None:
            masks[mask.untyped_storage().data_ptr()] = mask.untyped_storage().nbytes()

    for module in model.modules():
        if type(module).__name__.endswith("Attention"):
            module.register_forward_pre_hook(receive, with_kwargs=True)
    model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16-mixed"):
        model(**engine.lm_batch(cfg, MICRO_BATCH, SEQ_LEN))
    return sum(masks.values())


@pytest.mark.parametrize("family", ["llama", "gpt2", "gpt_neox", "bert"])
@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed", "bf16-true"])
@pytest.mark.parametrize("attention", ["eager", "sdpa"])
def test_the_planned_mask_is_the_one_transformers_builds(family: str, precision: str, attention: str) -> None:
    cfg = dropout_on(family)
    setup = cpu_setup(precision, attention, "selective", MICRO_BATCH, SEQ_LEN)
    model = model_from_config(cfg)
    kernel = planned_attention_kernel(model, setup)
    planned = eager_mask_bytes(model, setup, MICRO_BATCH * SEQ_LEN, kernel)
    assert planned == measured_mask_bytes(cfg, precision, attention), kernel


# Full and sliding-window layers mixed: gemma2 (alternating; eager attention only) and Qwen2 sliding from its second
# layer on. Each kind of layer gets its own mask (transformers' `causal_mask_mapping`); Mistral, all of whose layers
# slide, gets one.
MIXED = {
    "gemma2": SMALL["gemma2"],
    "qwen2": {**SMALL["qwen2"], "use_sliding_window": True, "sliding_window": 32, "max_window_layers": 1},
    "mistral": {**SMALL["mistral"], "sliding_window": 32},
}


@pytest.mark.parametrize("family", sorted(MIXED))
@pytest.mark.parametrize("precision", ["fp32", "bf16-true"])
def test_each_kind_of_attention_layer_has_its_mask(family: str, precision: str) -> None:
    cfg = MIXED[family]
    setup = cpu_setup(precision, "eager", "selective", MICRO_BATCH, SEQ_LEN)
    planned = eager_mask_bytes(model_from_config(cfg), setup, MICRO_BATCH * SEQ_LEN, "eager")
    assert planned == measured_mask_bytes(cfg, precision, "eager")
