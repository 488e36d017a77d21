"""The server's event counters and histograms for `/metrics` (treino.server.metrics renders them with its gauges).

The engine (treino.server.service) reports an event inside the transaction that records it; the count or
observation is applied when that transaction commits and dropped when it rolls back, so `/metrics` never counts
what the database does not hold. The values live in this process only: a restart of the server starts every
counter and histogram at zero again, as Prometheus expects of a process's counters (`rate()` and `increase()` treat
the drop as a reset). What can be read back from the database after a restart (jobs by state, the queue) is
exported as gauges computed at scrape time instead (treino.server.metrics).
"""

from __future__ import annotations

from collections.abc import Callable

from prometheus_client import CollectorRegistry, Counter, Histogram, disable_created_metrics
from sqlalchemy import event
from sqlalchemy.orm import Session, sessionmaker

from treino.server.settings import ATTEMPT_DURATION_BUCKETS_S, QUEUE_WAIT_BUCKETS_S

# The text format would write each counter's and histogram's creation time as one more gauge (`NAME_created`): a
# second family per metric that is neither a count nor a state. Prometheus does not need it (a reset shows as a drop).
disable_created_metrics()  # type: ignore[no-untyped-call]


class Meters:
    """One server's counters and histograms, in their own registry (`registry`)."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.jobs_submitted = Counter("treino_jobs_submitted", "Jobs accepted into the queue.", registry=r)
        self.jobs_finished = Counter(
            "treino_jobs_finished", "Jobs that reached a final state, by state.", ["state"], registry=r
        )
        self.attempts_started = Counter("treino_attempts_started", "Attempts started (placed on devices).", registry=r)
        self.attempts_finished = Counter(
            "treino_attempts_finished",
            "Attempts that ended, by outcome (succeeded, a failure reason, or the stop the server requested).",
            ["outcome"],
            registry=r,
        )
        self.restarts = Counter(
            "treino_job_restarts", "Failed attempts requeued, spending one of the job's max_restarts.", registry=r
        )
        self.preemptions = Counter("treino_job_preemptions", "Attempts stopped to make room for others.", registry=r)
        self.queue_wait = Histogram(
            "treino_queue_wait_seconds",
            "From a job's submission to the start of its first attempt.",
            buckets=QUEUE_WAIT_BUCKETS_S,
            registry=r,
        )
        self.attempt_duration = Histogram(
            "treino_attempt_duration_seconds",
            "From an attempt's start to its end, whatever the outcome.",
            buckets=ATTEMPT_DURATION_BUCKETS_S,
            registry=r,
        )
        event.listen(sessions, "after_commit", self._committed)
        event.listen(sessions, "after_soft_rollback", self._rolled_back)

    def on_commit(self, s: Session, apply: Callable[[], None]) -> None:
        """Run `apply` (a count or an observation) when `s`'s transaction commits; never if it rolls back."""
        s.info.setdefault(self, []).append(apply)

    def _committed(self, s: Session) -> None:
        applies: list[Callable[[], None]] | None = s.info.pop(self, None)
        for apply in applies or ():
            apply()

    def _rolled_back(self, s: Session, _transaction: object) -> None:
        s.info.pop(self, None)

    # --- what the engine reports -----------------------------------------------------------------------------
    def submitted(self, s: Session) -> None:
        self.on_commit(s, self.jobs_submitted.inc)

    def attempt_started(self, s: Session, number: int, submitted_at: float, started_at: float) -> None:
        self.on_commit(s, self.attempts_started.inc)
        if number == 1:
            self.on_commit(s, lambda: self.queue_wait.observe(max(0.0, started_at - submitted_at)))

    def attempt_finished(self, s: Session, outcome: str, started_at: float, ended_at: float) -> None:
        self.on_commit(s, self.attempts_finished.labels(outcome=outcome).inc)
        self.on_commit(s, lambda: self.attempt_duration.observe(max(0.0, ended_at - started_at)))

    def restarted(self, s: Session) -> None:
        self.on_commit(s, self.restarts.inc)

    def preempted(self, s: Session) -> None:
        self.on_commit(s, self.preemptions.inc)

    def job_finished(self, s: Session, state: str) -> None:
        self.on_commit(s, self.jobs_finished.labels(state=state).inc)
