"""Downsampling a metric series (treino.server.metric_series.downsample), a pure function: never more points than
asked, the first and last kept, and every extreme of the series still in it, for any length and limit."""

from __future__ import annotations

import math

from treino.server.metric_series import Series, downsample


def wave(n: int) -> Series:
    """n steps of a noisy curve, with a NaN stretch (nulls) in its second quarter from 40 steps on."""
    values: list[float | None] = [
        None if n >= 40 and n // 4 <= i < n // 4 + 5 else math.sin(i * 0.37) * 10 + (i * 7919 % 13) for i in range(n)
    ]
    return Series("loss", list(range(1, n + 1)), values, n)


def test_at_most_max_points_with_the_ends_and_the_extremes() -> None:
    for n in (2, 3, 10, 101, 1000, 4999):
        series = wave(n)
        finite = [v for v in series.values if v is not None]
        for limit in (2, 3, 4, 5, 10, 99, 100, 1000, 10_000):
            small = downsample(series, limit)
            assert len(small.steps) == len(small.values) <= max(limit, 2)
            assert small.steps == sorted(set(small.steps)) and set(small.steps) <= set(series.steps)
            assert (small.steps[0], small.steps[-1], small.last) == (1, n, series.last)
            assert small.points == n and small.downsampled == (n > limit)
            kept = [v for v in small.values if v is not None]
            if limit >= 4 or n <= limit:  # with one run or more, the extremes survive
                assert (min(kept), max(kept)) == (min(finite), max(finite)), (n, limit)
            by_step = dict(zip(series.steps, series.values, strict=True))
            assert all(by_step[s] == v for s, v in zip(small.steps, small.values, strict=True))


def test_a_stretch_of_nulls_stays_a_gap() -> None:
    values: list[float | None] = [1.0] * 100 + [None] * 100 + [2.0] * 100
    small = downsample(Series("x", list(range(300)), values, 300), 20)
    assert None in small.values  # the diverged stretch is not drawn as a line from 1 to 2
