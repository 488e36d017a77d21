"""MoE and encoder shapes the planner's coefficients were not measured on, against MemTracker on real CPU tensors.

tests/plan/test_accuracy.py checks every family at one shape each (Mixtral with 4 experts, top-2). The MoE
terms (plan/moe.py) scale with the experts per token, the expert count and the experts' size, and BERT's head
terms (plan/encoder.py) with the hidden size and the vocabulary: these cases change each of them. Bound: 10 %
per case, 3 % median (issue 18's targets).
"""

from __future__ import annotations

import statistics

import pytest

from tests.plan.families import SMALL, planned_against_measured, without_dropout

torch = pytest.importorskip("torch")
engine = pytest.importorskip("treino.trace.engine")

MIXTRAL, QWEN2_MOE, BERT = SMALL["mixtral"], SMALL["qwen2_moe"], SMALL["bert"]
# (name, config, micro-batch, seq-len, precision, attention, checkpointing)
CASES = [
    (
        "mixtral 16 small experts top-4",
        {**MIXTRAL, "num_local_experts": 16, "num_experts_per_tok": 4, "intermediate_size": 64},
        2,
        256,
        "fp32",
        "sdpa",
        "none",
    ),
    (
        "qwen2-moe top-2 renormalized",
        {**QWEN2_MOE, "num_experts_per_tok": 2, "norm_topk_prob": True},
        2,
        256,
        "bf16-mixed",
        "eager",
        "none",
    ),
    ("bert vocab 5120", without_dropout({**BERT, "vocab_size": 5120}), 4, 128, "fp32", "sdpa", "none"),
    (
        "bert h256 dropout",
        {**BERT, "hidden_size": 256, "intermediate_size": 1024},
        2,
        256,
        "bf16-mixed",
        "eager",
        "none",
    ),
]
ERRORS: dict[str, float] = {}


@pytest.mark.slow
@pytest.mark.parametrize("case", CASES, ids=[c[0] for c in CASES])
def test_untuned_moe_and_encoder_shapes_within_10_percent(case: tuple) -> None:
    name, cfg, micro_batch, seq_len, precision, attention, checkpointing = case
    predicted, measured, error = planned_against_measured(
        cfg, precision, attention, checkpointing, micro_batch, seq_len
    )
    ERRORS[name] = error
    assert abs(error) <= 0.10, (
        f"{name}: predicted {predicted.peak_tensor_bytes:,} B ({predicted.peak_phase}), "
        f"measured {measured:,} B: {error:+.1%}"
    )


@pytest.mark.slow
def test_untuned_shapes_median_within_3_percent() -> None:
    """Runs after the cases above (same module, pytest's order); skipped when they were not all run."""
    if len(ERRORS) < len(CASES):
        pytest.skip("needs every case of test_untuned_moe_and_encoder_shapes_within_10_percent in this process")
    assert statistics.median(abs(e) for e in ERRORS.values()) <= 0.03, ERRORS
