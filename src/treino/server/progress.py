"""A job's progress and times, from its row alone (no query): steps done of its total, when it should end, how long
it waited and ran. The job list, `treino show` and the dashboard all read these.

Total steps: the spec's `total_steps`, else `--steps N` (or `--steps=N`) in its `args`; None when neither says.
Rate: `steps_per_s`, measured by the metrics route from the points the SDK posts (within one batch, else between the
last two posts); there is none before the job has logged two points, and then no ETA either: nothing rather than a
guess. ETA: `eta_at` = the last logged point's time + the steps left / that rate, for a running job only.
Queue wait: from submit to the first attempt's start. Duration: from the first attempt's start to the job's end, so
a job that was preempted or restarted counts the time it spent queued again between attempts (each attempt's own run
time is on the job's page).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from treino.server.spec import TOTAL_STEPS_MAX

ETA_MAX_S = 4e9  # unix s (year 2096): past it an ETA is no estimate, and clocks cannot show it


def total_steps(spec_total: Any, args: Any) -> int | None:
    """The job's last step: the spec's `total_steps`, else `--steps N` / `--steps=N` in `args`."""
    if isinstance(spec_total, int) and not isinstance(spec_total, bool) and 0 < spec_total <= TOTAL_STEPS_MAX:
        return spec_total
    if not isinstance(args, Sequence) or isinstance(args, str):
        return None
    strings = [str(a) for a in args]
    for i, arg in enumerate(strings):
        value = strings[i + 1] if arg == "--steps" and i + 1 < len(strings) else arg.removeprefix("--steps=")
        # ASCII digits only ("²".isdigit() is True, int("²") fails), and no more than the spec's own bound allows
        ascii_number = value.isascii() and value.isdigit() and len(value) <= len(str(TOTAL_STEPS_MAX))
        if (arg == "--steps" or arg.startswith("--steps=")) and ascii_number and 0 < int(value) <= TOTAL_STEPS_MAX:
            return int(value)
    return None


def eta_at(
    state: str, total: int | None, last_step: int | None, last_metric_at: float | None, steps_per_s: float | None
) -> float | None:
    """When a running job should reach `total` (unix s), at its measured rate; None when anything is unknown."""
    if state != "running" or total is None or last_step is None or last_metric_at is None:
        return None
    if steps_per_s is None or not math.isfinite(steps_per_s) or steps_per_s <= 0:
        return None  # under two points, or a restart that went back to an earlier checkpoint's step
    eta = last_metric_at + max(total - last_step, 0) / steps_per_s
    return eta if eta <= ETA_MAX_S else None  # a rate of 1e-300 steps/s says nothing about when


def queue_wait_s(submitted_at: float, started_at: float | None) -> float | None:
    """From submit to the first attempt's start; None before it starts."""
    return None if started_at is None else max(started_at - submitted_at, 0.0)


def duration_s(started_at: float | None, ended_at: float | None) -> float | None:
    """From the first attempt's start to the job's end (requeued time between attempts included); None before."""
    return None if started_at is None or ended_at is None else max(ended_at - started_at, 0.0)
