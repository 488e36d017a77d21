"""Everything one running server holds, built once at start and handed to the app (`app.state.ctx`):

settings      where and how (treino.server.settings)
sessions      the database
engine        the job engine (treino.server.service.Service): the job state machine and nothing else
auth          tokens -> principals (treino.server.auth)
audit         the hash-chained audit log (treino.govern.audit)
submissions   the one submit path, with admission (treino.server.submission)
tasks         periodic work (treino.server.tasks)
webhooks      notifications on job end and erasure deadlines (treino.server.webhooks), when --webhook is given
anchors       the audit head written outside the data dir (treino.server.anchors), when --audit-anchor(-url) is given
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from sqlalchemy.orm import Session, sessionmaker
from starlette.concurrency import run_in_threadpool

from treino.govern.audit import AuditLog
from treino.server.anchors import Anchors
from treino.server.auth import Authenticator, FailureBudget, create_admin_token
from treino.server.backend import Backend
from treino.server.lineage import GovernanceEvents
from treino.server.service import Service
from treino.server.settings import JOB_LIST_PAGES_MAX, Settings
from treino.server.submission import PlanCheck, Submissions
from treino.server.tasks import PeriodicTask, server_tasks
from treino.server.webhooks import Webhooks

PageKey = tuple[str | None, int, int | None]  # (state, limit, before_id)


@dataclass
class JobListCache:
    """GET /api/v1/jobs pages, as the bytes answered, each kept JOBS_CACHE_S: 50 clients polling must not each
    re-read and re-serialise the table (benchmarks/server_bench.py). Any submit, cancel or erasure clears it.

    A page is read in a worker thread, one read per page at a time, while the event loop goes on answering: the
    clients that ask meanwhile get the page it replaces (stale by at most the read's own time), or, when there is
    none, wait for that same read. A read that began before a `clear()` is answered to those who waited on it but
    not kept, so a submitter's next listing always shows its job."""

    pages: dict[PageKey, tuple[float, bytes]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)
    generation: int = 0  # clear() counts up: a read of an earlier generation is not kept
    reading: dict[tuple[PageKey, int], asyncio.Future[bytes]] = field(default_factory=dict)

    async def page(self, key: PageKey, max_age_s: float, read: Callable[[], bytes]) -> bytes:
        """The page `key`, read by `read` (blocking: it runs in a worker thread) when none is fresh."""
        with self.lock:
            hit, generation = self.pages.get(key), self.generation
        if hit is not None and time.monotonic() - hit[0] < max_age_s:
            return hit[1]
        pending = self.reading.get((key, generation))  # only the event loop's thread touches `reading`
        if pending is None:
            pending = asyncio.ensure_future(run_in_threadpool(read))
            self.reading[(key, generation)] = pending
            pending.add_done_callback(lambda done: self._keep(key, generation, done))
        elif hit is not None:
            return hit[1]  # a read is under way: the page it replaces, rather than a wait
        return await asyncio.shield(pending)  # a client that leaves does not cancel the others' read

    def ready(self, key: PageKey, max_age_s: float) -> bytes | None:
        """What `page` would answer at once without starting a read: the page `key` if fresh, or the page it
        replaces while its read is under way; else None. Only on the event loop's thread."""
        with self.lock:
            hit, generation = self.pages.get(key), self.generation
        if hit is None:
            return None
        if time.monotonic() - hit[0] < max_age_s or (key, generation) in self.reading:
            return hit[1]
        return None

    def _keep(self, key: PageKey, generation: int, done: asyncio.Future[bytes]) -> None:
        self.reading.pop((key, generation), None)
        if done.cancelled() or done.exception() is not None:
            return  # the waiting clients got the error; the next ask reads again
        with self.lock:
            if generation != self.generation:
                return
            if len(self.pages) > JOB_LIST_PAGES_MAX:
                self.pages.clear()
            self.pages[key] = (time.monotonic(), done.result())

    def clear(self) -> None:
        with self.lock:
            self.pages.clear()
            self.generation += 1


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
    webhooks: Webhooks | None = None
    anchors: Anchors | None = None
    # Set when a dataset is registered or its retention extended: the retention check runs again at once and
    # learns when the next period ends (treino.server.retention).
    retention_changed: threading.Event = field(default_factory=threading.Event)

    @classmethod
    def create(
        cls,
        settings: Settings,
        sessions: sessionmaker[Session],
        backend: Backend,
        plan_check: PlanCheck | None = None,
    ) -> ServerContext:
        audit = AuditLog(settings.key)
        engine = Service(settings, sessions, backend, GovernanceEvents(audit, backend.name, settings.jobs_dir))
        tasks = server_tasks(engine, sessions, audit)
        webhooks = None
        if settings.webhooks:
            webhooks = Webhooks(
                settings.webhooks, settings.webhook_secret, settings.data_dir, sessions, settings.erasure_warn_days
            )
            webhooks.watch_jobs()
            tasks.append(webhooks.erasure_task())
        anchors = None
        if settings.audit_anchor_file is not None or settings.audit_anchor_urls:
            anchors = Anchors(settings, sessions)
            tasks.append(anchors.task())
        ctx = cls(
            settings=settings,
            sessions=sessions,
            engine=engine,
            auth=Authenticator(sessions, FailureBudget(settings.auth_failures_max, settings.auth_failure_window_s)),
            audit=audit,
            submissions=Submissions(settings, sessions, engine, audit, plan_check),
            tasks=tasks,
            webhooks=webhooks,
            anchors=anchors,
        )
        if settings.webhooks or settings.retention_erase:
            from treino.server.retention import retention_task  # it acts on a context: imported once one exists

            tasks.append(retention_task(ctx))
        return ctx

    @property
    def backend(self) -> Backend:
        return self.engine.backend

    def create_admin_token(self) -> str | None:
        return create_admin_token(self.settings, self.sessions, self.audit)

    def start(self) -> None:
        """Start the periodic tasks (reconcile first: treino.server.service.Service.reconcile)."""
        if self.webhooks is not None:
            self.webhooks.start()
        if self.anchors is not None:
            self.anchors.start()
        for task in self.tasks:
            task.start()

    def shutdown(self) -> Shutdown:
        """Stop the tasks, then sign the audit head: records after the last checkpoint are not protected against a
        cut tail. Running jobs keep running (their supervisors are detached) and are adopted at the next start."""
        for task in self.tasks:
            task.stop()
        if self.webhooks is not None:
            self.webhooks.stop()  # what is still pending stays in its queue file for the next start
        with self.sessions.begin() as s:
            signed = self.audit.checkpoint(s)
            seq = signed.seq if signed is not None else 0
        if self.anchors is not None:  # after the last record: the anchor holds the head the checkpoint signed
            self.anchors.stop()
        return Shutdown(audit_seq_signed=seq, jobs_left_running=len(self.engine.active_handles()))


@dataclass(frozen=True)
class Shutdown:
    """What a clean stop did, for the line the server prints as it exits."""

    audit_seq_signed: int  # the audit record the final checkpoint signs (0: the log is empty)
    jobs_left_running: int  # attempts left to their supervisors, adopted at the next start
