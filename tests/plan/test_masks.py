"""Eager attention's causal mask, planned against the mask transformers really builds.

The plan counts the mask at the attention core's backward (`eager_mask_bytes`, part of `_core_backward_bytes`).
Measured here: the `attention_mask` each family's top attention module receives in a real forward (transformers
5.24.0, CPU, the small configs of tests/plan/families.py with dropout, so that SDPA runs its math kernel). A
decoder in eager attention gets an additive s x s mask per sequence, in the parameters' dtype (fp32 under
autocast); SDPA gets none (is_causal); BERT, whose batch has no padding, gets none in either.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.plan.families import cpu_setup, dropout_on
from treino.plan import model_from_config
from treino.plan.memory import eager_mask_bytes, planned_attention_kernel

torch = pytest.importorskip("torch")
engine = pytest.importorskip("treino.trace.engine")

MICRO_BATCH, SEQ_LEN = 2, 64


def measured_mask_bytes(cfg: dict[str, Any], precision: str, attention: str) -> int:
    """The bytes of the mask the top attention module receives in one forward (0 when it receives none)."""
    torch.manual_seed(0)
    model = engine.build_hf_model(cfg, precision=precision, attention=attention)
    top = [m for m in model.modules() if type(m).__name__.endswith("Attention")][-1]
    received: list[Any] = []
    top.register_forward_pre_hook(
        lambda _, args, kwargs: received.append(kwargs.get("attention_mask")), with_kwargs=True
    )
    model.train()
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=precision == "bf16-mixed"):
        model(**engine.lm_batch(cfg, MICRO_BATCH, SEQ_LEN))
    mask = received[-1]
    return 0 if mask is None else int(mask.untyped_storage().nbytes())


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
