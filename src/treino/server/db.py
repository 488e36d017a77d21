"""The server's database: SQLAlchemy 2 models, the job state machine, and engine setup.

SQLite (WAL) under the data dir is the embedded default; PostgreSQL works by URL (`--db postgresql+psycopg://...`).
The schema is created and upgraded by Alembic (treino/server/migrations), never by `create_all`.

Job states and their transitions (`TRANSITIONS`):
    queued ──start──> running ──exit 0──> succeeded
      ^                 │  └──crash, restarts left──> queued (attempt + 1, from its last checkpoint)
      │                 ├──crash, none left / OOM──> failed
      └──preempted──── stopping <──cancel / preempt / timeout── running
                        └──cancel / timeout──> cancelled / failed
    queued ──cancel──> cancelled
    queued ──the checkpoint it continues from is gone──> failed (no_checkpoint)
    queued ──the checkpoint it continues from was trained on data erased since──> failed (erasure)
"""

from __future__ import annotations

import enum
import logging
import sysconfig
import time
import traceback
from pathlib import Path
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, String, Text, UniqueConstraint, create_engine, event
from sqlalchemy.engine import Engine
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Mapped, mapped_column, sessionmaker

from treino.errors import DatabaseBroken
from treino.orm import Base, BigInt, database_fault
from treino.server.states import JobState as JobState  # re-exported: the rest of the server imports it from here

SQLITE_BUSY_TIMEOUT_MS = 10_000
# A write transaction that holds SQLite's one write lock longer than this is logged with where it began: every other
# writer waits for it, and one that waits SQLITE_BUSY_TIMEOUT_MS fails.
SLOW_WRITE_S = 2.0
WRITE_VERBS = ("INSERT", "UPDATE", "DELETE", "REPLACE")

log = logging.getLogger("treino.server")


TRANSITIONS: dict[JobState, frozenset[JobState]] = {
    JobState.QUEUED: frozenset({JobState.RUNNING, JobState.CANCELLED, JobState.FAILED}),
    JobState.RUNNING: frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.QUEUED, JobState.STOPPING}),
    JobState.STOPPING: frozenset({JobState.QUEUED, JobState.CANCELLED, JobState.FAILED, JobState.SUCCEEDED}),
    JobState.SUCCEEDED: frozenset(),
    JobState.FAILED: frozenset(),
    JobState.CANCELLED: frozenset(),
}
FINAL_STATES = frozenset(s for s, nxt in TRANSITIONS.items() if not nxt)
ACTIVE_STATES = frozenset({JobState.RUNNING, JobState.STOPPING})  # holding devices


class StopRequest(enum.StrEnum):
    CANCEL = "cancel"
    PREEMPT = "preempt"
    TIMEOUT = "timeout"


class FailureReason(enum.StrEnum):
    OOM = "oom"
    USER_ERROR = "user_error"
    SIGNAL = "signal"
    NODE_FAULT = "node_fault"
    TIMEOUT = "timeout"
    DISK_FULL = "disk_full"  # ENOSPC: the job filled a disk (counted against max_restarts, as a user error)
    NO_CHECKPOINT = "no_checkpoint"  # a continuation whose old job's checkpoint was gone before it could start
    ERASURE = "erasure"  # a continuation whose old job's checkpoint was trained on data erased before it could start


class Token(Base):
    __tablename__ = "tokens"

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    role: Mapped[str] = mapped_column(String(20))
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)  # sha256 hex; the token itself is never stored
    user_id: Mapped[int | None] = mapped_column(ForeignKey("users.id"), default=None)
    last_used_at: Mapped[float | None] = mapped_column(Float, default=None)
    created_at: Mapped[float] = mapped_column(Float, default=time.time)
    expires_at: Mapped[float | None] = mapped_column(Float, default=None)
    revoked_at: Mapped[float | None] = mapped_column(Float, default=None)


class Job(Base):
    __tablename__ = "jobs"
    __table_args__ = (
        Index("ix_jobs_state_priority", "state", "priority", "id"),
        Index("ix_jobs_state_id", "state", "id"),  # GET /api/v1/jobs?state=: one state, newest first, by keyset
    )

    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(100))
    spec: Mapped[dict[str, Any]]
    owner: Mapped[str] = mapped_column(String(100))
    state: Mapped[str] = mapped_column(String(20), default=JobState.QUEUED)
    priority: Mapped[int] = mapped_column(BigInt, default=0)
    gpus: Mapped[int] = mapped_column(BigInt)
    submitted_at: Mapped[float] = mapped_column(Float, default=time.time)
    started_at: Mapped[float | None] = mapped_column(Float, default=None)  # first attempt
    ended_at: Mapped[float | None] = mapped_column(Float, default=None)
    attempts: Mapped[int] = mapped_column(BigInt, default=0)
    restarts: Mapped[int] = mapped_column(BigInt, default=0)  # attempts after a crash (counted by max_restarts)
    preemptions: Mapped[int] = mapped_column(BigInt, default=0)
    devices: Mapped[list[Any] | None] = mapped_column(default=None)  # held while running or stopping
    # Slurm partitions the job may run on (its datasets' residency, decided at submit); None: any
    partitions: Mapped[list[Any] | None] = mapped_column(default=None)
    stop_request: Mapped[str | None] = mapped_column(String(20), default=None)
    stop_requested_at: Mapped[float | None] = mapped_column(Float, default=None)
    exit_code: Mapped[int | None] = mapped_column(BigInt, default=None)
    failure_reason: Mapped[str | None] = mapped_column(String(20), default=None)
    failure_detail: Mapped[str | None] = mapped_column(Text, default=None)
    job_token_hash: Mapped[str] = mapped_column(String(64))
    checkpoint_step: Mapped[int | None] = mapped_column(BigInt, default=None)
    last_step: Mapped[int | None] = mapped_column(BigInt, default=None)
    last_loss: Mapped[float | None] = mapped_column(Float, default=None)
    steps_per_s: Mapped[float | None] = mapped_column(Float, default=None)
    last_metric_at: Mapped[float | None] = mapped_column(Float, default=None)
    # A resubmit that continues (treino.server.resubmission): the job whose checkpoint at this step it starts from
    continues_from: Mapped[int | None] = mapped_column(BigInt, default=None)
    continues_from_step: Mapped[int | None] = mapped_column(BigInt, default=None)


class SubmitKey(Base):
    """A submit's Idempotency-Key: the same key from the same user within IDEMPOTENCY_S returns this job instead
    of creating another (treino.server.submission). Unique per user, so two concurrent requests cannot both insert."""

    __tablename__ = "submit_keys"
    __table_args__ = (UniqueConstraint("owner", "key", name="uq_submit_keys_owner_key"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    owner: Mapped[str] = mapped_column(String(100))
    key: Mapped[str] = mapped_column(String(200))
    spec_sha256: Mapped[str] = mapped_column(String(64))  # of the spec as submitted: another spec is a 409
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    created_at: Mapped[float] = mapped_column(Float, default=time.time)


class Attempt(Base):
    __tablename__ = "attempts"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), index=True)
    number: Mapped[int] = mapped_column(BigInt)
    devices: Mapped[list[Any]]
    handle: Mapped[dict[str, Any]]  # the backend's record of the launched processes (pids, key, paths)
    started_at: Mapped[float] = mapped_column(Float, default=time.time)
    ended_at: Mapped[float | None] = mapped_column(Float, default=None)
    exit_code: Mapped[int | None] = mapped_column(BigInt, default=None)
    outcome: Mapped[str | None] = mapped_column(String(20), default=None)  # succeeded or a FailureReason/StopRequest


class Checkpoint(Base):
    __tablename__ = "checkpoints"

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), index=True)
    attempt: Mapped[int] = mapped_column(BigInt)
    step: Mapped[int] = mapped_column(BigInt)
    path: Mapped[str] = mapped_column(Text)
    bytes: Mapped[int] = mapped_column(BigInt)
    created_at: Mapped[float] = mapped_column(Float, default=time.time)


class MetricPoint(Base):
    __tablename__ = "metric_points"
    __table_args__ = (Index("ix_metric_points_job_step", "job_id", "step"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"))
    step: Mapped[int] = mapped_column(BigInt)
    time: Mapped[float] = mapped_column(Float)  # unix seconds, from the training process
    values: Mapped[dict[str, Any]]


class JobMetricKey(Base):
    """Each key a job's metric points hold, once (POST .../metrics adds the new ones): bounds the keys a job may
    log (METRIC_KEYS_PER_JOB_MAX) without reading its points."""

    __tablename__ = "metric_keys"

    job_id: Mapped[int] = mapped_column(ForeignKey("jobs.id"), primary_key=True)
    key: Mapped[str] = mapped_column(Text, primary_key=True)


class Quota(Base):
    """An admin's limit on a user's or a role's GPUs (treino.server.quotas): GPU-hours per calendar month, refused at
    submit once spent, and GPUs held at once, over which a job waits in the queue. A user's own row overrides their
    role's; None: no limit of that kind."""

    __tablename__ = "quotas"
    __table_args__ = (UniqueConstraint("kind", "name", name="uq_quotas_kind_name"),)

    id: Mapped[int] = mapped_column(primary_key=True)
    kind: Mapped[str] = mapped_column(String(10))  # "user" or "role"
    name: Mapped[str] = mapped_column(String(100))  # the user's name or the role's
    gpu_hours_month: Mapped[float | None] = mapped_column(Float, default=None)
    concurrent_gpus: Mapped[int | None] = mapped_column(BigInt, default=None)
    set_by: Mapped[str] = mapped_column(String(100))
    set_at: Mapped[float] = mapped_column(Float, default=time.time)


def sqlite_url(data_dir: Path) -> str:
    return f"sqlite:///{data_dir / 'treino.db'}"


def make_engine(url: str) -> Engine:
    """An engine for `url`. SQLite gets WAL, a busy timeout and foreign keys through connect-time pragmas: the
    settings PostgreSQL has by default; no query or model differs between the two."""
    engine = create_engine(url, pool_pre_ping=True)
    if engine.dialect.name == "sqlite":

        @event.listens_for(engine, "connect")
        def _pragmas(dbapi_connection: Any, _record: Any) -> None:
            cur = dbapi_connection.cursor()
            cur.execute("PRAGMA journal_mode=WAL")
            cur.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
            cur.execute("PRAGMA synchronous=NORMAL")
            cur.execute("PRAGMA foreign_keys=ON")
            cur.close()

        _log_slow_writes(engine)
    return engine


def _log_slow_writes(engine: Engine) -> None:
    """A warning for each write transaction that held SQLite's write lock (taken at its first write, by the BEGIN
    pysqlite sends before it, and held to its commit or rollback) longer than SLOW_WRITE_S, naming treino's code
    that made the first write."""

    @event.listens_for(engine, "before_cursor_execute")
    def _first_write(conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if "treino.write_began" not in conn.info and statement.lstrip().upper().startswith(WRITE_VERBS):
            conn.info["treino.write_began"] = (time.monotonic(), _caller())

    def _ended(conn: Any) -> None:
        began = conn.info.pop("treino.write_began", None)
        if began is not None and (held := time.monotonic() - began[0]) > SLOW_WRITE_S:
            log.warning("a write transaction held the database %.1f s (its first write: %s)", held, began[1])

    event.listen(engine, "commit", _ended)
    event.listen(engine, "rollback", _ended)

    @event.listens_for(engine, "checkin")
    def _returned(_dbapi_connection: Any, record: Any) -> None:
        record.info.pop("treino.write_began", None)  # a pooled connection starts its next use afresh


def _caller() -> str:
    """The innermost three frames of treino's or the application's code on the stack (not the standard library's,
    another installed library's or this module's): where a write came from."""
    frames = []
    for frame, lineno in traceback.walk_stack(None):  # innermost first; no source lines read (one call per write)
        name = frame.f_code.co_filename
        if name != __file__ and (name.startswith(_TREINO_DIR) or not name.startswith(_LIBRARY_DIRS)):
            frames.append(f"{Path(name).name}:{lineno} {frame.f_code.co_name}")
            if len(frames) == 3:
                break
    return " < ".join(frames) or "?"


_TREINO_DIR = str(Path(__file__).resolve().parents[1])  # treino's own code, even where it is an installed library
_LIBRARY_DIRS = tuple({sysconfig.get_paths()[k] for k in ("stdlib", "platstdlib", "purelib", "platlib")})


def check_database(engine: Engine) -> None:
    """DatabaseBroken unless the database answers and is sound, checked at start-up before anything writes to it:
    SQLite's `PRAGMA quick_check` (the b-trees and their pages, linear in the file's size: seconds per GiB), or
    a PostgreSQL connection and a trivial query (PostgreSQL checks its own pages as it reads them)."""
    sqlite = engine.dialect.name == "sqlite"
    where = engine.url.database if sqlite else engine.url.render_as_string(hide_password=True)
    try:
        with engine.connect() as conn:
            statement = "PRAGMA quick_check" if sqlite else "SELECT 1"
            problems = [str(row[0]) for row in conn.exec_driver_sql(statement)]
    except DBAPIError as exc:
        if database_fault(exc) != "corrupt":
            raise DatabaseBroken(
                f"Cannot use the database {where}: {exc.orig}. To fix: "
                + (
                    "check that the file and its folder are the server's user's, and that its disk has room."
                    if sqlite
                    else "check that PostgreSQL runs and that the URL (--db), user and password are right."
                )
            ) from exc
        problems = [str(exc.orig)]
        if not sqlite:
            raise DatabaseBroken(
                f"The database {where} is corrupt: {exc.orig}. To fix: restore it from a backup (pg_restore)."
            ) from exc
    if sqlite and problems != ["ok"]:
        raise DatabaseBroken(
            f"The database {where} is corrupt (PRAGMA quick_check: {'; '.join(problems[:3])}). To fix: stop the "
            f"server, then restore {where} from a backup, or salvage what it holds with sqlite3's .recover: "
            f"`sqlite3 {where} .recover | sqlite3 {where}.recovered`, move {where}.recovered to {where} and delete "
            f"{where}-wal and {where}-shm; then start the server and run `treino audit verify`."
        )


def make_sessionmaker(engine: Engine) -> sessionmaker[Any]:
    return sessionmaker(engine, expire_on_commit=False)


def all_models() -> None:
    """Import every module that defines tables, so Base.metadata is complete (migrations, tests)."""
    import treino.govern.models  # noqa: F401


def migrate(engine: Engine, *, key: bytes | None = None, store: Path | None = None) -> None:
    """Bring the schema to the newest Alembic revision (creates it on a fresh database). Data migrations that need
    the server key and the dataset store (0009_identity's aliases) run only when both are given."""
    from alembic import command
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", str(Path(__file__).with_name("migrations")))
    with engine.begin() as connection:
        cfg.attributes["connection"] = connection
        cfg.attributes["server_key"], cfg.attributes["store"] = key, store
        command.upgrade(cfg, "head")
