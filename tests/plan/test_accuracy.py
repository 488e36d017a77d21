"""The analytic planner against PyTorch's MemTracker on real CPU tensors.

For every family, with its config's default dropout (SDPA and eager), planned for the CPU it is measured on: a small
model built by transformers, one AdamW step to create the optimizer state, then a measured step; with no
checkpointing, the attention core recomputed (selective, treino.trace.engine's `selective_checkpointing`) and
every block recomputed (full). Weights, gradients and optimizer state must be exact (summed from the real tensors); the
peak of live tensors within 10 % per case and 3 % median over the cases (issue 18's target; MemTracker's own tests
hold it to ±10 % of CUDA's allocator, torch test/distributed/_tools/test_mem_tracker.py). The full grid (bf16-true,
dropout 0 and 10 %, every family) is benchmarks/kernel_accuracy.py's.
"""

from __future__ import annotations

import statistics

import pytest

from tests.plan.families import SMALL, dropout_on, planned_against_measured, without_dropout
from treino.plan import TrainSetup, estimate_training_memory, model_from_config

torch = pytest.importorskip("torch")
engine = pytest.importorskip("treino.trace.engine")

MICRO_BATCH, SEQ_LEN = 2, 256
CASES = [
    (family, precision, attention, checkpointing)
    for family in SMALL
    for precision in ("fp32", "bf16-mixed")
    for attention in ("eager", "sdpa")
    for checkpointing in ("none", "selective", "full")
    if not (family == "gemma2" and attention == "sdpa")  # transformers 5.24 has no SDPA path for gemma2
]
# |error| of every case test_peak_within_10_percent_of_memtracker measured, filled in order: pytest-xdist's
# `--dist loadfile` (make test) keeps this module on one worker, so the median test below runs after them.
RESULTS: dict[tuple[str, str, str, str], float] = {}


@pytest.mark.slow
@pytest.mark.parametrize("family,precision,attention,checkpointing", CASES)
def test_peak_within_10_percent_of_memtracker(family: str, precision: str, attention: str, checkpointing: str) -> None:
    cfg = SMALL[family]  # each family's default dropout: GPT-2 and BERT drop out 10 %, so CPU SDPA runs math
    predicted, measured, error = planned_against_measured(
        cfg, precision, attention, checkpointing, MICRO_BATCH, SEQ_LEN
    )
    RESULTS[family, precision, attention, checkpointing] = abs(error)
    assert abs(error) <= 0.10, (
        f"{family} {precision} {attention} {checkpointing}: predicted {predicted.peak_tensor_bytes:,} B "
        f"({predicted.peak_phase}), measured {measured:,} B: {error:+.1%}"
    )


@pytest.mark.slow
def test_median_peak_error_within_3_percent() -> None:
    """The median over every case above; it needs them all (a deselected or unrun case would bias it)."""
    missing = [case for case in CASES if case not in RESULTS]
    if missing:
        pytest.skip(
            f"{len(missing)} of {len(CASES)} peak cases did not run in this session (deselected, or on another "
            f"worker), e.g. {' '.join(missing[0])}: the median needs them all"
        )
    median = statistics.median(RESULTS[case] for case in CASES)
    worst = max(CASES, key=RESULTS.__getitem__)
    assert median <= 0.03, (
        f"median |error| {median:.1%} over {len(CASES)} cases (target 3 %); worst {' '.join(worst)}: "
        f"{RESULTS[worst]:.1%}"
    )


# The grid's worst corner until 2026-12-07 (BERT +13.2 %, gemma +10.3 %): bf16-true, SDPA with dropout (the math
# kernel on CPU), the attention core recomputed. Every family but gemma2 (no SDPA path), 10 % dropout where its
# default has none; tests/plan/test_selective.py holds the recompute's own phase.
@pytest.mark.slow
@pytest.mark.parametrize("family", [f for f in sorted(SMALL) if f != "gemma2"])
def test_bf16_true_math_kernel_selective_within_10_percent(family: str) -> None:
    cfg = dropout_on(family)
    predicted, measured, error = planned_against_measured(cfg, "bf16-true", "sdpa", "selective", MICRO_BATCH, SEQ_LEN)
    assert predicted.attention_kernel == "math"
    assert abs(error) <= 0.10, (
        f"{family}: predicted {predicted.peak_tensor_bytes:,} B ({predicted.peak_phase}), measured {measured:,} B: "
        f"{error:+.1%}"
    )


@pytest.mark.parametrize("family", sorted(SMALL))
@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed", "bf16-true"])
def test_weights_gradients_optimizer_state_exact(family: str, precision: str) -> None:
    cfg = without_dropout(SMALL[family])
    torch.manual_seed(0)
    attention = "eager" if family == "gemma2" else "sdpa"
    model = engine.build_hf_model(cfg, precision=precision, attention=attention)
    opt = engine.make_optimizer("adamw", list(model.parameters()))
    batch = engine.lm_batch(cfg, 1, 16)
    loss = model(**batch).loss
    loss.backward()
    grads = sum(p.grad.numel() * p.grad.element_size() for p in model.parameters())
    opt.step()
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    state = sum(v.numel() * v.element_size() for s in opt.state.values() for k, v in s.items() if k != "step")
    predicted = estimate_training_memory(
        model_from_config(cfg), TrainSetup(precision=precision, seq_len=16, grad_accum=2)
    )
    assert predicted.weights_bytes == weights
    assert predicted.optimizer_bytes == state
    assert predicted.gradients_bytes == grads  # grad-accum > 1 keeps every gradient live at the peak
