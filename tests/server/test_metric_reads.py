"""Reading a job's metrics without holding its points (treino.server.metric_series.keys and .series) on a real
database: each key's statistics are the database's aggregate, a series is downsampled while its points stream in,
and both answer exactly what reading every point into memory would (a step logged again: its newest value)."""

from __future__ import annotations

import random
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.config import Config
from sqlalchemy import Engine, insert, select
from sqlalchemy.orm import Session

from tests.conftest import Database
from tests.server.test_metric_series import wave
from treino.errors import NotFound
from treino.server import db, metric_series
from treino.server.db import Job, JobMetricKey, MetricPoint, all_models, make_engine, migrate, sqlite_url
from treino.server.metric_series import Downsampler, Series, downsample


@pytest.fixture(scope="module")
def engine(database: Database, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Engine]:
    url = database.new_url() or sqlite_url(tmp_path_factory.mktemp("db"))
    engine = make_engine(url)
    all_models()
    migrate(engine)
    yield engine
    engine.dispose()


def new_job(engine: Engine, points: list[dict[str, Any]]) -> int:
    with Session(engine) as s, s.begin():
        job = Job(name="m", spec={}, owner="admin", gpus=0, job_token_hash="0" * 64)
        s.add(job)
        s.flush()
        for i in range(0, len(points), 10_000):
            s.execute(insert(MetricPoint), [{"job_id": job.id, **p} for p in points[i : i + 10_000]])
        return job.id


def in_memory(points: list[dict[str, Any]]) -> dict[str, Series]:
    """What reading every point (in insert order) would give: each key's steps, a step's newest (by time, then the
    later inserted) value."""
    latest: dict[str, dict[int, float | None]] = {}
    for p in sorted(points, key=lambda p: (p["step"], p["time"])):  # sorted() is stable: insert order breaks ties
        for key, value in p["values"].items():
            latest.setdefault(key, {})[p["step"]] = value
    return {k: Series(k, sorted(v), [v[s] for s in sorted(v)], len(v)) for k, v in sorted(latest.items())}


def messy(n: int, seed: int) -> list[dict[str, Any]]:
    """n steps of three keys, posted out of order, with nulls, a key logged every 7th step, repeated steps (a
    restart's, later), and a same-time repeat: the statistics must take the newest of each step."""
    rng = random.Random(seed)
    points: list[dict[str, Any]] = []
    for step in range(n):
        values: dict[str, float | None] = {"loss": rng.uniform(-5, 5), "lr": None if rng.random() < 0.2 else step}
        if step % 7 == 3:
            values["val/acc <x>"] = rng.random()
        points.append({"step": step, "time": 100.0 + step, "values": values})
    for step in range(n // 2, n):  # a restart from the middle
        points.append({"step": step, "time": 10_000.0 + step, "values": {"loss": rng.uniform(-50, 50)}})
    points.append({"step": n - 1, "time": 10_000.0 + n - 1, "values": {"loss": None, "lr": 7.5}})  # same time: later
    rng.shuffle(points)
    return points


def test_keys_and_series_answer_what_every_point_in_memory_would(engine: Engine) -> None:
    points = messy(600, seed=1)
    job_id = new_job(engine, points)
    with Session(engine) as s:
        stored = [{"step": m.step, "time": m.time, "values": m.values} for m in s.query(MetricPoint).order_by("id")]
        expected = in_memory(stored)
        assert metric_series.keys(s, job_id) == [x.stats() for x in expected.values()]
        assert metric_series.keys(s, job_id, ["lr", "nope"]) == [expected["lr"].stats()]
        for limit in (2, 3, 10, 99, 100, 1000):
            got = metric_series.series(s, job_id, ["val/acc <x>", "loss", "lr", "loss"], limit)
            assert [x.key for x in got] == ["val/acc <x>", "loss", "lr"]
            for x in got:
                assert x == downsample(expected[x.key], limit), (x.key, limit)
        with pytest.raises(NotFound, match=r"never logged a metric 'los'\. Did you mean 'loss'"):
            metric_series.series(s, job_id, ["loss", "los"], 100)
        assert [x.key for x in metric_series.series(s, job_id, ["los", "lr"], 100, strict=False)] == ["lr"]
        assert metric_series.keys(s, new_job(engine, [])) == []


def test_the_streaming_downsampler_is_downsample() -> None:
    for n in (1, 2, 3, 4, 5, 10, 101, 1000, 4999):
        series = wave(n)
        for limit in (2, 3, 4, 5, 10, 99, 100, 1000, 10_000):
            d = Downsampler("loss", n, limit)
            for step, value in zip(series.steps, series.values, strict=True):
                d.add(step, 1e9)  # a step's earlier value, replaced by its later one
                d.add(step, value)
            assert d.series() == downsample(series, limit), (n, limit)


def test_memory_stays_flat_however_long_the_run(engine: Engine, database: Database, tmp_path: Path) -> None:
    if database.kind != "sqlite":
        pytest.skip("what this process holds does not depend on the database: [sqlite] measures it")
    n = 20_000
    job_id = new_job(
        engine, [{"step": i, "time": float(i), "values": {"loss": 1 / (1 + i), "lr": 0.1}} for i in range(n)]
    )
    with Session(engine) as s:
        tracemalloc.start()
        try:
            keys = metric_series.keys(s, job_id)
            (loss,) = metric_series.series(s, job_id, ["loss"], 1000)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert [k["points"] for k in keys] == [n, n] and (loss.points, len(loss.steps)) == (n, 1000)
    # every point held (a dict entry, an int and a float each, for each key) would take over 10 MB
    assert peak < 4 * 1024**2, f"{peak / 1024**2:.1f} MiB"


def test_the_migration_records_the_keys_of_points_stored_before_it(
    database: Database, tmp_path_factory: pytest.TempPathFactory
) -> None:
    engine = make_engine(database.new_url() or sqlite_url(tmp_path_factory.mktemp("old")))
    cfg = alembic_config()
    with engine.begin() as c:
        cfg.attributes["connection"] = c
        command.upgrade(cfg, "0006_resubmit")
    job_id = new_job(engine, [{"step": 1, "time": 1.0, "values": {"loss": 1.0, "a<b": None}}])
    new_job(engine, [{"step": 1, "time": 1.0, "values": {"lr": 0.1}}, {"step": 2, "time": 2.0, "values": {"loss": 1}}])
    migrate(engine)
    with Session(engine) as s:
        rows = s.execute(select(JobMetricKey.job_id, JobMetricKey.key).order_by(JobMetricKey.job_id, JobMetricKey.key))
        assert [tuple(r) for r in rows] == [(job_id, "a<b"), (job_id, "loss"), (job_id + 1, "loss"), (job_id + 1, "lr")]
    engine.dispose()


def alembic_config() -> Config:
    cfg = Config()
    cfg.set_main_option("script_location", str(Path(db.__file__).with_name("migrations")))
    return cfg
