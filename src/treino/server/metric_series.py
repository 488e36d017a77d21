"""Every metric a job logged, one series per key: which keys, each key's points, downsampled for long runs.

A job's metric points are rows (step, time, values {key: float | None}); a key is any name a point's values hold, so
`run.log(step, loss=..., lr=...)` and a later `run.log(step, val_acc=...)` make three series. Read back:

    a step logged twice counts once, with its latest value (by time): an attempt restarted from a checkpoint
                 logs again the steps after that checkpoint, and the curve that trained the model is the newer one
    null         a value that was NaN or inf in the training process: a gap in a chart, left out of min and max
    downsampled  a series longer than `max_points` keeps its first and last points and, in equal runs of points
                 between them, each run's lowest and highest value: a loss spike survives, which even thinning
                 would drop (the min/max idea of M4, Jugel et al., VLDB 2014)

The API (/api/v1/jobs/{id}/metrics/keys and .../series), the job page and `treino show --metric` read through here,
never holding a job's points in memory: keys' statistics are one aggregate query, and a series is downsampled while
its points stream in (memory O(max_points), however long the run).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from treino.errors import NotFound, TreinoError
from treino.i18n import Msg
from treino.server.db import JobMetricKey, MetricPoint
from treino.server.settings import METRIC_KEY_CHARS_MAX, METRIC_KEYS_PER_JOB_MAX, METRIC_STREAM_ROWS


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


# Each key's statistics, computed by the database (memory stays flat however long the run): every (point, key)
# pair from the point's JSON values, the newest (time, then id) of each (key, step) kept, grouped by key. The pairs
# come from json_each on both databases; only a value's read differs (SQLite: the number or NULL; PostgreSQL: json).
_STATS_SQL = """
WITH pairs AS (
    SELECT kv.key AS key, p.step AS step, {value} AS value,
           ROW_NUMBER() OVER (PARTITION BY kv.key, p.step ORDER BY p.time DESC, p.id DESC) AS newest
    FROM metric_points p, json_each(p."values") kv
    WHERE p.job_id = :job_id {only}
), steps AS (
    SELECT key, step, value, ROW_NUMBER() OVER (PARTITION BY key ORDER BY step DESC) AS back
    FROM pairs WHERE newest = 1
)
SELECT key, COUNT(*), MIN(step), MAX(step), MAX(CASE WHEN back = 1 THEN value END), MIN(value), MAX(value)
FROM steps GROUP BY key
"""
_VALUE_SQL = {
    "sqlite": "kv.value",
    "postgresql": "CASE WHEN json_typeof(kv.value) = 'number' THEN CAST(kv.value #>> '{{}}' AS DOUBLE PRECISION) END",
}


def keys(s: Session, job_id: int, only: list[str] | None = None) -> list[dict[str, Any]]:
    """Each key's statistics (of `only`'s keys, when given), in name order: points, first and last step, last value,
    min and max. One aggregate query: no point is loaded into this process."""
    dialect = s.get_bind().dialect.name
    params: dict[str, Any] = {"job_id": job_id}
    where = ""
    if only is not None:
        # A key no job can have logged (a NUL byte, which PostgreSQL's text refuses outright, or over the API's
        # length) matches nothing: it is left out of the query rather than failing it.
        names = [k for k in dict.fromkeys(only) if "\x00" not in k and len(k) <= METRIC_KEY_CHARS_MAX]
        params |= {f"k{i}": k for i, k in enumerate(names)}
        where = "AND kv.key IN (" + ", ".join(f":k{i}" for i in range(len(names))) + ")" if names else "AND 1 = 0"
    sql = _STATS_SQL.format(value=_VALUE_SQL[dialect].format(), only=where)
    found = [
        {
            "key": k,
            "points": n,
            "first_step": first,
            "last_step": last,
            "last": _num(v),
            "min": _num(lo),
            "max": _num(hi),
        }
        for k, n, first, last, v, lo, hi in s.execute(text(sql), params)
    ]
    return sorted(found, key=lambda k: k["key"])  # code point order on either database, whatever its collation


def _num(value: Any) -> float | None:
    return None if value is None else float(value)


def series(s: Session, job_id: int, wanted: list[str], max_points: int, *, strict: bool = True) -> list[Series]:
    """The series of `wanted`, in that order, each downsampled to `max_points` while it is read: the job's points
    stream in step order, and each key keeps only what its downsampled series needs (memory O(max_points) a key,
    however many points the job logged). A key the job never logged: NotFound naming the keys it did (and the
    closest one), or, when not `strict`, left out."""
    wanted = list(dict.fromkeys(wanted))
    counts = {k["key"]: k["points"] for k in keys(s, job_id, wanted)}
    missing = [k for k in wanted if k not in counts]
    if missing and strict:
        raise NotFound(unknown_key_message(job_id, missing[0], [k["key"] for k in keys(s, job_id)]))
    builders = {k: Downsampler(k, counts[k], max_points) for k in wanted if k in counts}
    if builders:
        rows = s.execute(
            select(MetricPoint.step, MetricPoint.values)
            .where(MetricPoint.job_id == job_id)
            .order_by(MetricPoint.step, MetricPoint.time, MetricPoint.id)
            .execution_options(yield_per=METRIC_STREAM_ROWS)
        )
        for step, values in rows:  # values are finite numbers or None: POST .../metrics stored them so (MetricIn)
            for key, builder in builders.items():
                if key in values:
                    builder.add(step, values[key])
    return [b.series() for b in builders.values()]


class Downsampler:
    """`downsample` of a series whose points arrive one at a time in step order (a step again: the later value
    replaces it, as a restarted attempt's does), holding only what the result keeps. `points` is how many steps
    the series has (keys()' count); should more arrive (points logged meanwhile), the last one still ends it."""

    def __init__(self, key: str, points: int, max_points: int) -> None:
        self.key, self.n, self.max_points = key, points, max_points
        self.thin = points > max_points
        self.runs = (max_points - 2) // 2
        self.inner = points - 2
        self.seen = 0  # steps finished
        self.step: int | None = None  # the step in hand, not finished until another begins
        self.value: float | None = None
        self.every: list[tuple[int, float | None]] = []  # every point, while the series fits max_points
        self.first: tuple[int, float | None] | None = None
        self.run = 0
        self.lo: dict[int, tuple[float, int, int]] = {}  # run -> (value, index, step) of its lowest finite value
        self.hi: dict[int, tuple[float, int, int]] = {}
        self.start: dict[int, tuple[int, int]] = {}  # run -> (index, step) of its first point, a gap if none is finite

    def add(self, step: int, value: float | None) -> None:
        if step != self.step and self.step is not None:
            self._finish()
        self.step, self.value = step, value

    def _finish(self) -> None:
        assert self.step is not None
        i, step, value = self.seen, self.step, self.value
        self.seen += 1
        if not self.thin:
            self.every.append((step, value))
            return
        if i == 0:
            self.first = (step, value)
            return
        if i >= self.n - 1 or not self.runs:  # the last is series()'s; past it: logged after keys() counted them
            return
        while i >= 1 + (self.run + 1) * self.inner // self.runs:
            self.run += 1
        r = self.run
        self.start.setdefault(r, (i, step))
        if value is not None:
            if r not in self.lo or (value, i) < self.lo[r][:2]:
                self.lo[r] = (value, i, step)
            if r not in self.hi or (value, i) > self.hi[r][:2]:
                self.hi[r] = (value, i, step)

    def series(self) -> Series:
        if self.step is None:
            return Series(self.key)
        if not self.thin:
            self._finish()
            whole = Series(self.key, [s for s, _ in self.every], [v for _, v in self.every], self.seen)
            return downsample(whole, self.max_points)  # unchanged, unless more were logged after keys() counted
        last = (self.step, self.value)
        self.seen += 1
        assert self.first is not None
        picked: dict[int, tuple[int, float | None]] = {0: self.first}
        for r, (i, step) in self.start.items():
            if r in self.lo:
                (lv, li, ls), (hv, hi, hs) = self.lo[r], self.hi[r]
                picked |= {li: (ls, lv), hi: (hs, hv)}
            else:
                picked[i] = (step, None)
        picked[self.seen - 1] = last
        order = [picked[i] for i in sorted(picked)]
        return Series(self.key, [s for s, _ in order], [v for _, v in order], self.seen, downsampled=True)


def admit_keys(s: Session, job_id: int, wanted: set[str]) -> None:
    """Record the keys of `wanted` job `job_id` has not logged before; TreinoError (422) when they would take it past
    METRIC_KEYS_PER_JOB_MAX keys (nothing of the POST is then stored)."""
    if not wanted:
        return
    known: set[str] = set()
    names = sorted(wanted)
    for i in range(0, len(names), METRIC_KEYS_PER_JOB_MAX):  # a batch of parameters at a time
        chunk = names[i : i + METRIC_KEYS_PER_JOB_MAX]
        known |= set(
            s.scalars(select(JobMetricKey.key).where(JobMetricKey.job_id == job_id, JobMetricKey.key.in_(chunk)))
        )
    new = [k for k in names if k not in known]
    if not new:
        return
    had = s.scalar(select(func.count()).select_from(JobMetricKey).where(JobMetricKey.job_id == job_id)) or 0
    if had + len(new) > METRIC_KEYS_PER_JOB_MAX:
        raise TreinoError(
            Msg(
                "Job {job_id} would log {total:,} distinct metric keys (it has {had:,}; this batch adds {added:,}, "
                "such as {example!r}); a job may log at most {max_keys:,}. To fix: log fewer distinct "
                "keys (a per-item value belongs in one key's series, not in the key's name).",
                job_id=job_id,
                total=had + len(new),
                had=had,
                added=len(new),
                example=new[0][:80],
                max_keys=METRIC_KEYS_PER_JOB_MAX,
            )
        )
    s.add_all(JobMetricKey(job_id=job_id, key=k) for k in new)


def unknown_key_message(job_id: int, key: str, logged: list[str]) -> Msg:
    if not logged:
        return Msg(
            "Job {job_id} has logged no metrics. To fix: log some with run.log(step, name=value).", job_id=job_id
        )
    close = difflib.get_close_matches(key, logged, n=1)
    shown = ", ".join(logged[:50])
    if len(logged) > 50:
        shown = Msg("{names} and {more} more", names=shown, more=len(logged) - 50)
    if close:
        return Msg(
            "Job {job_id} never logged a metric {key!r}. Did you mean {close!r}? It logged: {shown}. To fix: name one "
            "of those (treino metrics {job_id} lists them).",
            job_id=job_id,
            key=key,
            close=close[0],
            shown=shown,
        )
    return Msg(
        "Job {job_id} never logged a metric {key!r}. It logged: {shown}. To fix: name one of those (treino metrics "
        "{job_id} lists them).",
        job_id=job_id,
        key=key,
        shown=shown,
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
