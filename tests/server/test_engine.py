"""The job engine in-process, on a real database and the local backend's real supervisors: a tick's cost does not
grow with the queue, and a submit never waits for a tick.

Work is counted, not timed: the SQL statements an idle tick sends (SQLAlchemy's before_cursor_execute), the Job
objects it loads, the SQLite virtual-machine steps its statements take (a progress handler: rows read cost steps),
and the scheduling passes it runs.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event, select
from sqlalchemy.engine import Engine

from tests.conftest import Database
from tests.server.conftest import kill_jobs
from treino.govern.access import Principal, Role
from treino.server import scheduler
from treino.server.backend import ExitInfo, LocalBackend
from treino.server.context import ServerContext
from treino.server.db import Job, JobState, make_engine, make_sessionmaker, migrate, sqlite_url
from treino.server.inventory import Inventory, cpu_inventory
from treino.server.settings import Settings
from treino.server.spec import JobSpec

ADMIN = Principal("admin", Role.ADMIN, 0, None)
WAIT_S = 20.0  # for a thread to get somewhere, or a job to reach a state; far beyond what either takes
POLL_S = 0.05
HOLD = JobSpec(name="hold", command=["sleep", "600"], priority=10, grace_seconds=1)  # outranks the queue: no preemption


class HoldableBackend(LocalBackend):
    """The local backend, whose poll can be held (as a slow squeue or a hung NFS mount would hold it)."""

    def __init__(self, inventory: Inventory) -> None:
        super().__init__(inventory)
        self.hold = threading.Event()
        self.held = threading.Event()  # a poll is waiting
        self.release = threading.Event()

    def poll(self, handle: dict[str, Any]) -> ExitInfo | None:
        if self.hold.is_set():
            self.held.set()
            self.release.wait(WAIT_S)
        return super().poll(handle)


@dataclass
class Harness:
    ctx: ServerContext
    db: Engine
    backend: HoldableBackend

    def submit(self, spec: JobSpec) -> int:
        return self.ctx.submissions.submit(spec, ADMIN).id

    def enqueue(self, count: int) -> None:
        """`count` queued jobs, committed in one transaction through the engine's own enqueue."""
        spec = JobSpec(name="queued", command=["true"])
        with self.ctx.sessions.begin() as s:
            for _ in range(count):
                self.ctx.engine.enqueue(s, spec, "admin", None)

    def state(self, job_id: int) -> str:
        with self.ctx.sessions() as s:
            return str(s.scalar(select(Job.state).where(Job.id == job_id)))

    def tick_until(self, job_id: int, state: str) -> None:
        deadline = time.monotonic() + WAIT_S
        while self.state(job_id) != state:
            assert time.monotonic() < deadline, f"job {job_id} is {self.state(job_id)}, not {state}"
            self.ctx.engine.tick()
            time.sleep(POLL_S)

    def settle(self) -> None:
        """Ticks until one does nothing: submits read back, placements recorded, the pass run."""
        for _ in range(3):
            self.ctx.engine.tick()


@pytest.fixture
def engine(tmp_path: Path, database: Database) -> Iterator[Harness]:
    db = make_engine(database.new_url() or sqlite_url(tmp_path))
    migrate(db)
    backend = HoldableBackend(cpu_inventory(2))
    ctx = ServerContext.create(Settings(tmp_path, "http://127.0.0.1:0", key=b"k" * 32), make_sessionmaker(db), backend)
    try:
        yield Harness(ctx, db, backend)
    finally:
        backend.release.set()
        kill_jobs(tmp_path)
        db.dispose()


@dataclass(frozen=True)
class Work:
    statements: int
    job_loads: int  # Job objects the ORM built
    vm_steps: int | None  # SQLite only
    passes: int  # scheduling passes


def work(e: Harness, monkeypatch: pytest.MonkeyPatch, run: Callable[[], None]) -> Work:
    """What `run()` costs the database and the scheduler."""
    counts = {"statements": 0, "loads": 0, "steps": 0, "passes": 0}
    sqlite = e.db.dialect.name == "sqlite"
    counting: list[Any] = []  # the SQLite connections given the progress handler, to take it off again

    def step() -> int:
        counts["steps"] += 1
        return 0  # go on

    def statement(conn: Any, *_: Any) -> None:
        counts["statements"] += 1
        if sqlite:  # on for the rows fetched after execute too: those are steps of the same statement
            counting.append(conn.connection.dbapi_connection)
            counting[-1].set_progress_handler(step, 1)

    def load(*_: Any) -> None:
        counts["loads"] += 1

    real_schedule = scheduler.schedule

    def counted_schedule(*args: Any, **kwargs: Any) -> scheduler.Decision:
        counts["passes"] += 1
        return real_schedule(*args, **kwargs)

    monkeypatch.setattr(scheduler, "schedule", counted_schedule)
    event.listen(e.db, "before_cursor_execute", statement)
    event.listen(Job, "load", load)
    try:
        run()
    finally:
        event.remove(e.db, "before_cursor_execute", statement)
        event.remove(Job, "load", load)
        monkeypatch.setattr(scheduler, "schedule", real_schedule)
        for dbapi_connection in counting:
            dbapi_connection.set_progress_handler(None, 1)
    return Work(counts["statements"], counts["loads"], counts["steps"] if sqlite else None, counts["passes"])


def test_an_idle_tick_does_the_same_work_with_10_or_1000_jobs_queued(
    engine: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine.ctx.engine.tick()  # the first tick reads the (empty) queue
    # Nothing queued, nothing running, nothing changed: not one statement.
    assert work(engine, monkeypatch, engine.ctx.engine.tick) == Work(
        0, 0, 0 if engine.db.dialect.name == "sqlite" else None, 0
    )
    holders = [engine.submit(HOLD) for _ in range(2)]  # both CPU slots, until the end: the queue cannot start
    for job_id in holders:
        engine.tick_until(job_id, JobState.RUNNING)
    engine.enqueue(10)
    engine.settle()
    with_10 = work(engine, monkeypatch, engine.ctx.engine.tick)
    engine.enqueue(990)
    engine.settle()
    with_1000 = work(engine, monkeypatch, engine.ctx.engine.tick)
    # The two running jobs are polled (their rows and latest attempts); the queue is neither read nor scheduled.
    assert with_1000 == with_10
    assert with_10.passes == 0 and with_10.job_loads == 2
    assert all(engine.state(j) == JobState.RUNNING for j in holders)


def test_a_submit_completes_while_a_tick_is_held(engine: Harness) -> None:
    running = engine.submit(JobSpec(name="running", command=["sleep", "600"], grace_seconds=1))
    engine.tick_until(running, JobState.RUNNING)
    engine.backend.hold.set()
    ticker = threading.Thread(target=engine.ctx.engine.tick)
    ticker.start()
    submitted: list[int] = []
    try:
        assert engine.backend.held.wait(WAIT_S), "the tick never polled the running job"
        submitter = threading.Thread(
            target=lambda: submitted.append(engine.submit(JobSpec(name="new", command=["true"])))
        )
        submitter.start()
        submitter.join(WAIT_S)
        assert submitted, "the submit waited for the held tick"
        assert ticker.is_alive() and engine.state(submitted[0]) == JobState.QUEUED
    finally:
        engine.backend.hold.clear()
        engine.backend.release.set()
        ticker.join(WAIT_S)
    engine.tick_until(submitted[0], JobState.RUNNING)  # read back by the next tick, onto the free slot


def test_the_queue_the_engine_keeps_is_the_database_s_in_scheduling_order(engine: Harness) -> None:
    """Submits, a cancel, and a preemption (the victim requeued, first in line again): the engine's copy of the
    queue and the database's agree, in the order the scheduler serves them."""
    low = [engine.submit(JobSpec(name=f"low-{i}", command=["sleep", "600"], grace_seconds=1)) for i in range(2)]
    for job_id in low:
        engine.tick_until(job_id, JobState.RUNNING)
    waiting = [engine.submit(JobSpec(name=f"waiting-{i}", command=["true"])) for i in range(3)]
    engine.ctx.engine.cancel(waiting[1])
    high = engine.submit(JobSpec(name="high", command=["sleep", "600"], priority=5, grace_seconds=1))
    engine.tick_until(high, JobState.RUNNING)
    victims = [j for j in low if engine.state(j) == JobState.QUEUED]
    assert len(victims) == 1
    with engine.ctx.sessions() as s:
        queued = s.scalars(select(Job).where(Job.state == JobState.QUEUED)).all()
    in_order = [j.id for j in sorted(queued, key=lambda j: (-j.priority, j.submitted_at, j.id))]
    assert in_order == [victims[0], waiting[0], waiting[2]]
    copy = engine.ctx.engine._queue  # the engine's own, compared here with the database's
    assert copy is not None and [q.id for q in copy.ordered()] == in_order
    # And it is served so: the victim takes the next free slot, before the jobs submitted after it.
    survivor = next(j for j in low if j not in victims)
    engine.ctx.engine.cancel(survivor)
    engine.tick_until(victims[0], JobState.RUNNING)
    assert engine.state(waiting[0]) == JobState.QUEUED
