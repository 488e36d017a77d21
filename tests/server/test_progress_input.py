"""A job's args are its submitter's: whatever they hold, the job list's progress fields stay computable (a 500
there would fail every reader's list)."""

from __future__ import annotations

from treino.server.progress import eta_at, total_steps
from treino.server.spec import TOTAL_STEPS_MAX


def test_steps_in_args_that_are_no_ascii_number_or_are_huge_give_no_total() -> None:
    assert total_steps(None, ["--steps", "²"]) is None  # "²".isdigit() is True, int("²") raises
    assert total_steps(None, ["--steps=٣"]) is None  # an Arabic-Indic digit
    assert total_steps(None, ["--steps", "9" * 5000]) is None  # over Python's int-conversion limit
    assert total_steps(None, ["--steps", str(TOTAL_STEPS_MAX + 1)]) is None
    assert total_steps(None, ["--steps", "120"]) == 120 and total_steps(None, ["--steps=7"]) == 7
    assert total_steps(500, ["--steps", "120"]) == 500  # the spec's key wins


def test_an_eta_too_far_to_mean_anything_is_none() -> None:
    assert eta_at("running", TOTAL_STEPS_MAX, 1, 1000.0, 1e-300) is None  # would overflow a clock
    assert eta_at("running", 100, 50, 1000.0, 10.0) == 1005.0
    assert eta_at("queued", 100, 50, 1000.0, 10.0) is None
