"""The LM head and the loss, planned against MemTracker's running total on real CPU tensors (torch 2.13.0,
transformers 5.24.0, the small configs of tests/plan/families.py).

The step's peak shows the head's bytes only inside the top of backward, beside everything else live then. These
tests read the moments themselves from the operator-by-operator totals (families.step_totals):
- the loss: the largest total before backward starts (the logits upcast to fp32, log_softmax's output, ...);
- the top of backward: the largest total over the loss's backward and the head's matmuls;
- and the size of both against the vocabulary: 2,048 -> 4,096 tokens of vocabulary adds only what is vocabulary-sized
  (the head's weights and their optimizer state, the logit-sized tensors, the head's gradient), so the planned
  difference must equal the measured one, byte for byte at these sizes.

What they caught, fixed 2026-12-07: autocast's 16-bit copy of the head's weight is live at the loss and through the
top of backward (H x V x 2 B, missing in bf16-mixed: the difference -3.0 %); and the head's weight gradient is not
live at the top of backward, where log_softmax's tensors are (counted there: +1 MiB of 22 in fp32). It forms after
they are freed, beside only the logits' gradient, in 16 bits under autocast; at a few tokens per step that moment
is the larger one.
"""

from __future__ import annotations

import pytest

from tests.plan.families import SMALL, cpu_setup, dropout_on, step_totals
from treino.plan import estimate_training_memory, model_from_config

MIB = 2**20
# Operators of backward from its start through the head's two matmuls (the loss's backward, log_softmax's, the
# upcast's, the logits' views, the matmuls and their transposes), before the final norm's backward.
HEAD_OPS = 12


def _moments(cfg: dict[str, object], precision: str, micro_batch: int, seq_len: int) -> tuple[int, int]:
    """Measured (the largest total before backward, the largest over backward's first HEAD_OPS operators)."""
    totals, _ = step_totals(cfg, precision, "sdpa", "none", micro_batch, seq_len)
    first = next(i for i, m in enumerate(totals) if m.backward)
    return max(m.total for m in totals[:first]), max(m.total for m in totals[first : first + HEAD_OPS])


def _planned(cfg: dict[str, object], precision: str, micro_batch: int, seq_len: int) -> tuple[float, float]:
    plan = estimate_training_memory(model_from_config(cfg), cpu_setup(precision, "sdpa", "none", micro_batch, seq_len))
    phases = dict(plan.phase_peaks_bytes)
    return phases["loss"], phases["backward"]


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed", "bf16-true"])
@pytest.mark.parametrize("family", ["llama", "gpt2", "bert"])  # untied, tied, and an MLM head (encoder.py)
def test_the_loss_and_the_top_of_backward_grow_with_the_vocabulary_as_measured(family: str, precision: str) -> None:
    small, large = ({**dropout_on(family), "vocab_size": v} for v in (SMALL[family]["vocab_size"], 4096))
    measured = [_moments(cfg, precision, 2, 256) for cfg in (small, large)]
    planned = [_planned(cfg, precision, 2, 256) for cfg in (small, large)]
    for moment, name in enumerate(("loss", "top of backward")):
        grown = measured[1][moment] - measured[0][moment]
        planned_growth = planned[1][moment] - planned[0][moment]
        assert planned_growth == pytest.approx(grown, rel=0.01), (
            f"{name}: +{planned_growth / MIB:.3f} MiB planned, +{grown / MIB:.3f} measured"
        )
    # And the loss itself (measured -1.5 to +1.6 % over these nine cases; the top of backward is the step's peak,
    # held by test_accuracy.py and test_kernels.py).
    for (loss, _), (planned_loss, _) in zip(measured, planned, strict=True):
        assert planned_loss == pytest.approx(loss, rel=0.025), f"loss {planned_loss / MIB:.2f} vs {loss / MIB:.2f} MiB"


@pytest.mark.parametrize("precision", ["fp32", "bf16-mixed", "bf16-true"])
def test_at_a_few_tokens_the_heads_weight_gradient_is_the_larger_moment(precision: str) -> None:
    """At 1 x 16 tokens the head's gradient (128 x 2,048, 1 MiB in fp32) outweighs the logits' tensors (12 x 16 x
    2,048 x 4 B = 1.5 MiB counted at the top of backward against 0.125 MiB plus the gradient at the head): the plan's
    "backward" phase is that moment. Measured -0.26 %, -0.04 % and -0.16 %."""
    cfg = dropout_on("llama")
    _, head = _moments(cfg, precision, 1, 16)
    _, planned = _planned(cfg, precision, 1, 16)
    assert planned == pytest.approx(head, rel=0.01), f"{planned / MIB:.3f} MiB planned, {head / MIB:.3f} measured"
