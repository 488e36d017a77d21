"""Every metric a job logged, one series per key: which keys, each key's points, downsampled for long runs.

A job's metric points are rows (step, time, values {key: float | None}); a key is any name a point's values hold, so
`run.log(step, loss=..., lr=...)` and a later `run.log(step, val_acc=...)` make three series. Read back:

    a step logged twice counts once, with its latest value (by time): an attempt restarted from a checkpoint
                 logs again the steps after that checkpoint, and the curve that trained the model is the newer one
    null         a value that was NaN or inf in the training process: a gap in a chart, left out of min and max
    downsampled  a series longer than `max_points` keeps its first and last points and, in equal runs of points
                 between them, each run's lowest and highest value: a loss spike survives, which even thinning
                 would drop (the min/max idea of M4, Jugel et al., VLDB 2014)

The API (/api/v1/jobs/{id}/metrics/keys and .../series), the job page and `treino show --metric` read through here.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from treino.errors import NotFound
from treino.server.db import MetricPoint


@dataclass
class Series:
    """One key's points in step order (each step once), with statistics over all of them, before downsampling."""

    key: str
    steps: list[int] = field(default_factory=list)
    values: list[float | None] = field(default_factory=list)
    points: int = 0  # before downsampling
    downsampled: bool = False

    @property
    def last(self) -> float | None:
        """The value at the last step (None when it was not finite: a run that diverged shows it)."""
        return self.values[-1] if self.values else None

    @property
    def finite(self) -> list[float]:
        return [v for v in self.values if v is not None]

    def stats(self) -> dict[str, Any]:
        finite = self.finite
        return {
            "key": self.key,
            "points": self.points,
            "first_step": self.steps[0] if self.steps else None,
            "last_step": self.steps[-1] if self.steps else None,
            "last": self.last,
            "min": min(finite) if finite else None,
            "max": max(finite) if finite else None,
        }


def read(s: Session, job_id: int) -> dict[str, Series]:
    """Every key's series of job `job_id`, keys in name order (one indexed scan: ix_metric_points_job_step)."""
    latest: dict[str, dict[int, float | None]] = {}
    rows = s.execute(
        select(MetricPoint.step, MetricPoint.values)
        .where(MetricPoint.job_id == job_id)
        .order_by(MetricPoint.step, MetricPoint.time, MetricPoint.id)
    )
    for step, values in rows:  # values are finite numbers or None: POST .../metrics stored them so (MetricIn)
        for key, value in values.items():
            by_step = latest.get(key)
            if by_step is None:
                by_step = latest[key] = {}
            by_step[step] = value  # a later time overwrites
    found: dict[str, Series] = {}
    for key in sorted(latest):
        by_step = latest[key]  # filled in ascending step order: its keys are sorted
        found[key] = Series(key, list(by_step), list(by_step.values()), len(by_step))
    return found


def keys(s: Session, job_id: int) -> list[dict[str, Any]]:
    """Each key's statistics: points, first and last step, last value, min and max."""
    return [series.stats() for series in read(s, job_id).values()]


def pick(found: dict[str, Series], job_id: int, wanted: list[str], max_points: int) -> list[Series]:
    """The series of `wanted`, in that order, each downsampled to `max_points`; NotFound naming a key the job never
    logged, with the keys it did (and the closest one)."""
    missing = [k for k in dict.fromkeys(wanted) if k not in found]
    if missing:
        raise NotFound(unknown_key_message(job_id, missing[0], list(found)))
    return [downsample(found[k], max_points) for k in dict.fromkeys(wanted)]


def unknown_key_message(job_id: int, key: str, logged: list[str]) -> str:
    if not logged:
        return f"Job {job_id} has logged no metrics. To fix: log some with run.log(step, name=value)."
    close = difflib.get_close_matches(key, logged, n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    shown = ", ".join(logged[:50]) + (f" and {len(logged) - 50} more" if len(logged) > 50 else "")
    return (
        f"Job {job_id} never logged a metric {key!r}.{hint} It logged: {shown}. "
        f"To fix: name one of those (treino metrics {job_id} lists them)."
    )


def downsample(series: Series, max_points: int) -> Series:
    """At most `max_points` (>= 2) of `series`: the first and the last, and between them (max_points - 2) // 2 equal
    runs of points, each keeping its lowest and highest finite value (or its first point, a gap, when it has none)."""
    n = len(series.steps)
    if n <= max_points:
        return series
    runs = (max_points - 2) // 2
    picked = {0, n - 1}
    inner = n - 2
    for r in range(runs):
        lo, hi = 1 + r * inner // runs, 1 + (r + 1) * inner // runs  # [lo, hi): this run's points
        finite = [(v, i) for i in range(lo, hi) if (v := series.values[i]) is not None]
        picked.update((min(finite)[1], max(finite)[1]) if finite else (lo,))
    order = sorted(picked)
    return Series(
        series.key,
        [series.steps[i] for i in order],
        [series.values[i] for i in order],
        series.points,
        downsampled=True,
    )
