"""A job's metrics by key (treino.server.metric_series): what the job page's charts and `treino show --metric` read.

GET /api/v1/jobs/{id}/metrics/keys                           every key the job logged, with points, last, min, max
GET /api/v1/jobs/{id}/metrics/series?key=&key=&max_points=   those keys' series (404 naming the keys it did log),
                                                             each downsampled to max_points (METRIC_SERIES_POINTS_*)
The raw points, every key at once, stay at GET /api/v1/jobs/{id}/metrics (treino.server.api.routes.jobs).
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from treino.server import metric_series
from treino.server.api.deps import JobId, ReadMetrics, SessionDep, job_or_404
from treino.server.schemas import MetricKey, MetricKeys, MetricSeries, MetricSeriesList, responses
from treino.server.settings import METRIC_SERIES_KEYS_MAX, METRIC_SERIES_POINTS_DEFAULT, METRIC_SERIES_POINTS_MAX

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"], responses=responses(401, 422))
Keys = Annotated[
    list[str],
    Query(alias="key", min_length=1, max_length=METRIC_SERIES_KEYS_MAX, description="A metric key; repeat for more."),
]
MaxPoints = Annotated[int, Query(ge=2, le=METRIC_SERIES_POINTS_MAX, description="Points per series at most.")]


@router.get("/{job_id}/metrics/keys", response_model=MetricKeys, responses=responses(403, 404))
def metric_keys(job_id: JobId, s: SessionDep, _who: ReadMetrics) -> MetricKeys:
    job_or_404(s, job_id)
    return MetricKeys(job=job_id, keys=[MetricKey(**k) for k in metric_series.keys(s, job_id)])


@router.get("/{job_id}/metrics/series", response_model=MetricSeriesList, responses=responses(403, 404))
def metric_series_of(
    job_id: JobId,
    s: SessionDep,
    _who: ReadMetrics,
    key: Keys,
    max_points: MaxPoints = METRIC_SERIES_POINTS_DEFAULT,
) -> MetricSeriesList:
    job_or_404(s, job_id)
    picked = metric_series.series(s, job_id, key, max_points)
    return MetricSeriesList(job=job_id, series=[series_out(x) for x in picked])


def series_out(series: metric_series.Series) -> MetricSeries:
    return MetricSeries(**series.stats(), step=series.steps, value=series.values, downsampled=series.downsampled)
