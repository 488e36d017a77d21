"""Everything one running server holds, built once at start and handed to the app (`app.state.ctx`):

settings      where and how (treino.server.settings)
sessions      the database
engine        the job engine (treino.server.service.Service): the job state machine and nothing else
auth          tokens -> principals (treino.server.auth)
audit         the hash-chained audit log (treino.govern.audit)
submissions   the one submit path, with admission (treino.server.submission)
tasks         periodic work (treino.server.tasks)
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker

from treino.govern.audit import AuditLog
from treino.server.auth import Authenticator, FailureBudget, create_admin_token
from treino.server.backend import Backend
from treino.server.lineage import GovernanceEvents
from treino.server.service import Service
from treino.server.settings import Settings
from treino.server.submission import PlanCheck, Submissions
from treino.server.tasks import PeriodicTask, server_tasks


@dataclass
class JobListCache:
    """GET /api/v1/jobs pages, each kept JOBS_CACHE_S: 50 clients polling must not each re-read and re-serialise
    the table (benchmarks/server_bench.py). Any submit or cancel clears it."""

    pages: dict[tuple[str | None, int, int | None], tuple[float, bytes]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def get(self, key: tuple[str | None, int, int | None], max_age_s: float) -> bytes | None:
        with self.lock:
            hit = self.pages.get(key)
        return hit[1] if hit is not None and time.monotonic() - hit[0] < max_age_s else None

    def put(self, key: tuple[str | None, int, int | None], body: bytes) -> None:
        with self.lock:
            if len(self.pages) > 1000:
                self.pages.clear()
            self.pages[key] = (time.monotonic(), body)

    def clear(self) -> None:
        with self.lock:
            self.pages.clear()


@dataclass
class ServerContext:
    settings: Settings
    sessions: sessionmaker[Session]
    engine: Service
    auth: Authenticator
    audit: AuditLog
    submissions: Submissions
    tasks: list[PeriodicTask]
    job_lists: JobListCache = field(default_factory=JobListCache)

    @classmethod
    def create(
        cls,
        settings: Settings,
        sessions: sessionmaker[Session],
        backend: Backend,
        plan_check: PlanCheck | None = None,
    ) -> ServerContext:
        audit = AuditLog(settings.key)
        engine = Service(settings, sessions, backend, GovernanceEvents(audit, backend.name))
        return cls(
            settings=settings,
            sessions=sessions,
            engine=engine,
            auth=Authenticator(sessions, FailureBudget(settings.auth_failures_max, settings.auth_failure_window_s)),
            audit=audit,
            submissions=Submissions(settings, sessions, engine, audit, plan_check),
            tasks=server_tasks(engine, sessions, audit),
        )

    @property
    def backend(self) -> Backend:
        return self.engine.backend

    def create_admin_token(self) -> str | None:
        return create_admin_token(self.settings, self.sessions, self.audit)

    def start(self) -> None:
        """Start the periodic tasks (reconcile first: treino.server.service.Service.reconcile)."""
        for task in self.tasks:
            task.start()

    def shutdown(self) -> Shutdown:
        """Stop the tasks, then sign the audit head: records after the last checkpoint are not protected against a
        cut tail. Running jobs keep running (their supervisors are detached) and are adopted at the next start."""
        for task in self.tasks:
            task.stop()
        with self.sessions.begin() as s:
            signed = self.audit.checkpoint(s)
            seq = signed.seq if signed is not None else 0
        return Shutdown(audit_seq_signed=seq, jobs_left_running=len(self.engine.active_handles()))


@dataclass(frozen=True)
class Shutdown:
    """What a clean stop did, for the line the server prints as it exits."""

    audit_seq_signed: int  # the audit record the final checkpoint signs (0: the log is empty)
    jobs_left_running: int  # attempts left to their supervisors, adopted at the next start
