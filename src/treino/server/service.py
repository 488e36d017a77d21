"""The job engine: the job state machine, the scheduling loop, attempt outcomes and crash reconciliation, and
nothing else (authentication, dataset admission, the audit chain and lineage live beside it: treino.server.auth,
.submission, .lineage; periodic work runs as treino.server.tasks).

All job state lives in the database; this object holds nothing that a restart could lose. `tick()` (every
settings.TICK_S, and at once after a submit or cancel) collects finished attempts, enforces timeouts and grace
periods, then asks the pure scheduler (treino.server.scheduler) what to start and what to preempt. What governance
must hear of (an attempt placed, checkpoints found on disk, a job that succeeded) goes to `events` (JobEvents).

The tick's cost does not grow with the queue. The engine keeps a copy of what the scheduler reads of each queued
job (a `scheduler.Queue`) and the ids of the running and stopping jobs, read from the database once, at the first
tick, with a select of those columns only. After that the engine's own commits keep the copy: every change of a
job's state goes through `_transition`, which notes it in the session (`session.info`), and the note is applied
when that transaction commits (dropped when it rolls back), so the copy never holds what the database does not.
Submits commit without the engine's lock (a submit never waits for a tick); their commit hands the job's id to the
next tick, which reads that row back (a job cancelled in between is not added). A tick then
  - with no running or stopping job, does not query the database at all;
  - runs a scheduling pass only when something the decision reads has changed since the last one (the queue, the
    active jobs, a stop, a placement, the inventory). Time alone never lets a job start that could not before
    (backfill only tightens as `now` grows), so a pass over unchanged inputs would decide nothing new.
"""

from __future__ import annotations

import collections
import logging
import os
import re
import secrets
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple, Protocol

from sqlalchemy import event, select
from sqlalchemy.orm import Session, object_session, sessionmaker

from treino.errors import Conflict, NotFound, SpecError
from treino.i18n import Msg
from treino.server import failures, quotas, scheduler, waits
from treino.server.auth import dead_token_hash, new_job_token, token_hash
from treino.server.backend import Backend, BackendUnavailable, ExitInfo, LaunchRequest, Placement
from treino.server.db import (
    ACTIVE_STATES,
    FINAL_STATES,
    TRANSITIONS,
    Attempt,
    FailureReason,
    Job,
    JobState,
    StopRequest,
)
from treino.server.disk import DISK_FULL_PATTERNS, folders_in, spaces_text
from treino.server.inventory import Device, Inventory
from treino.server.isolation import prepare_job_folder, prepare_trackers_dir
from treino.server.meters import Meters
from treino.server.seed import CheckpointGone, ContinuationErased, seed_checkpoint
from treino.server.settings import (
    BACKEND_RETRY_S,
    EXIT_RESERVE_BYTES,
    KILL_MARGIN_S,
    LOST_ATTEMPTS_MAX,
    QUEUE_READ_IDS_MAX,
    QUOTA_RECHECK_S,
    Settings,
)
from treino.server.spec import DEFAULT_GRACE_S, JobSpec
from treino.server.supervisor import free_bytes
from treino.server.unlearning import drop_erased_rows

log = logging.getLogger("treino.server")

# What a failed attempt's output says about why (the classes SkyPilot and Determined separate, reference §2-3).
OOM_PATTERNS = re.compile(r"CUDA out of memory|OutOfMemoryError|HIP out of memory|CUBLAS_STATUS_ALLOC_FAILED")
SIGNAL_PATTERNS = re.compile(r"Signal \d+ \(SIG\w+\) received|exitcode\s*:\s*-\d+|Killed")
NODE_PATTERNS = re.compile(r"uncorrectable ECC|Xid \d+|GPU has fallen off the bus|NCCL error.*unhandled system error")


class JobEvents(Protocol):
    """What the engine reports, inside its own transaction, to whoever must record it (treino.server.lineage)."""

    def attempt_started(self, s: Session, job: Job, attempt: Attempt, placement: Placement) -> None: ...

    def job_succeeded(self, s: Session, job: Job) -> None: ...

    def reconcile_checkpoints(self, s: Session, job: Job, checkpoint_dir: Path) -> None:
        """Checkpoints in `checkpoint_dir` the job saved but could not report (the server was down): at adoption
        and when an attempt ends, before its token dies."""

    def continuation_refusal(self, s: Session, job: Job) -> str | None:
        """Why continued `job` may not start from its old job's checkpoint (data it was trained on was erased since
        the resubmit), ending with "To fix: ..."; None when it may. Asked before the checkpoint is seeded."""

    def checkpoint_seeded(self, s: Session, job: Job, step: int, path: Path, size_bytes: int) -> None:
        """A continued job's starting checkpoint, placed in its folder before its first attempt (treino.server.seed)
        from the job it continues (`job.continues_from`)."""


class NoEvents:
    def attempt_started(self, s: Session, job: Job, attempt: Attempt, placement: Placement) -> None:
        pass

    def job_succeeded(self, s: Session, job: Job) -> None:
        pass

    def reconcile_checkpoints(self, s: Session, job: Job, checkpoint_dir: Path) -> None:
        pass

    def continuation_refusal(self, s: Session, job: Job) -> str | None:
        return None

    def checkpoint_seeded(self, s: Session, job: Job, step: int, path: Path, size_bytes: int) -> None:
        pass


def classify(info: ExitInfo) -> tuple[str, str]:
    """(outcome, detail) of an ended attempt: succeeded, or a FailureReason with the line that shows it."""
    if info.reason is not None:  # the backend knows (Slurm's TIMEOUT, OUT_OF_MEMORY, NODE_FAIL, ...)
        return info.reason, info.detail
    if info.returncode == 0:
        return "succeeded", ""
    # A full disk first: the job's writes failed, whatever else its output says after that.
    disk_full = [line for line in (info.detail or info.log_tail).splitlines() if DISK_FULL_PATTERNS.search(line)]
    if disk_full:
        return FailureReason.DISK_FULL, disk_full[-1].strip()[:500]
    if info.returncode is None:
        return FailureReason.NODE_FAULT, failures.SUPERVISOR_VANISHED
    if info.detail:  # the backend refused to start it (e.g. sbatch's error)
        return FailureReason.USER_ERROR, info.detail
    for reason, pattern in (
        (FailureReason.OOM, OOM_PATTERNS),
        (FailureReason.NODE_FAULT, NODE_PATTERNS),
        (FailureReason.SIGNAL, SIGNAL_PATTERNS),
    ):
        lines = [line for line in info.log_tail.splitlines() if pattern.search(line)]
        if lines:
            return reason, lines[-1].strip()[:500]
    if info.returncode < 0:
        return FailureReason.SIGNAL, failures.killed_by_signal(-info.returncode)
    last = [line for line in info.log_tail.splitlines() if line.strip()]
    return FailureReason.USER_ERROR, (last[-1].strip()[:500] if last else failures.exit_code(info.returncode))


class Service:
    """The job engine. Submits enter through treino.server.submission (which admits them first), everything else
    through `cancel`, `tick` and `reconcile`."""

    def __init__(
        self, settings: Settings, sessions: sessionmaker[Session], backend: Backend, events: JobEvents | None = None
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.backend = backend
        self.events: JobEvents = events or NoEvents()
        self.meters = Meters(sessions)  # /metrics' event counters and histograms, counted when a transaction commits
        # One changer of job state at a time: the loop, cancel, reconcile (and the sweep, which must see no attempt
        # start). Submits do not take it: they only add rows, which the next tick reads back.
        self.lock = threading.RLock()
        self.wakeup = threading.Event()  # set by submit and cancel: the scheduling task runs at once
        self.backend_unavailable_until = 0.0  # no starts before this (monotonic), after a BackendUnavailable
        self.backend_unavailable_why = ""  # its message
        # Rule 5 of treino.server.scheduler: why a job may not start now under a quota, or None. None: the
        # database's quotas (treino.server.quotas.blocker, read once per pass). Whoever sets another calls
        # `reschedule()` when its answers change for a reason the engine does not see.
        self.quota_block: scheduler.QuotaBlock | None = None
        self._snapshot: waits.Snapshot | None = None  # the last scheduling pass, for why each queued job waits
        self._backend_pending: dict[int, str] = {}  # running jobs the backend has not started yet: its reason
        # What the scheduler reads, kept from the engine's commits (module docstring). Changed under `lock` only.
        self._queue: scheduler.Queue | None = None  # None: (re)read from the database at the next tick
        self._active: set[int] = set()  # ids of the running and stopping jobs
        self._dirty = True  # something a scheduling decision reads changed since the last pass
        self._devices_seen: tuple[Device, ...] | None = None
        self._groups_seen: tuple[tuple[str, tuple[str, ...]], ...] | None = None  # nodes and their partitions
        self._submitted: collections.deque[int] = collections.deque()  # committed by submits, not yet read back
        self.quota_holds: dict[int, str] = {}  # job id -> why the last pass held it back (treino.server.quotas)
        self._recheck_at = float("inf")  # monotonic: a pass then, though nothing changed (a monthly quota resets)
        event.listen(sessions, "after_commit", self._committed)
        event.listen(sessions, "after_soft_rollback", self._rolled_back)

    @property
    def inventory(self) -> Inventory:
        return self.backend.inventory()

    def wake(self) -> None:
        self.wakeup.set()

    def reschedule(self) -> None:
        """Run a scheduling pass at the next tick, and wake it (a quota's answers changed)."""
        self._dirty = True
        self.wake()

    def waits(self) -> waits.Waits:
        """Why the queued jobs wait, as the last scheduling pass decided (treino.server.waits): read it once per
        job list, then ask it about each row. Lock-free: it reads only what the engine replaces whole."""
        down = self.backend_unavailable_why if time.monotonic() < self.backend_unavailable_until else None
        return waits.Waits(self._snapshot, self._backend_pending, down)

    def job_dir(self, job_id: int) -> Path:
        return self.settings.jobs_dir / str(job_id)

    def checkpoint_dir(self, job_id: int) -> Path:
        return self.job_dir(job_id) / "checkpoints"

    # --- submit and cancel -----------------------------------------------------------------------------------
    def capacity_error(self, spec: JobSpec) -> SpecError | None:
        """Why this server could never run `spec`, whatever else runs (refused at submit); None if it could."""
        inventory = self.inventory
        if spec.nodes > 1 and not self.backend.multi_node:
            return SpecError(
                "nodes",
                Msg(
                    "asks for {asked} nodes, but this server runs jobs on one machine. To fix: nodes: 1, or start the "
                    "server on a Slurm cluster with 'treino server --backend slurm' (docs/cluster.md).",
                    asked=spec.nodes,
                ),
            )
        nodes, per_node = inventory.node_count(), inventory.max_devices_per_node()
        if spec.nodes > nodes:
            return SpecError(
                "nodes",
                Msg(
                    "asks for {asked} nodes but {inventory}. To fix: nodes <= {nodes}.",
                    asked=spec.nodes,
                    inventory=inventory.describe(),
                    nodes=nodes,
                ),
            )
        if spec.gpus > per_node:
            fields = {"gpus": spec.gpus, "per_node": per_node, "inventory": inventory.describe()}
            return SpecError(
                "gpus",
                Msg(
                    "asks for {gpus} per node but a node has at most {per_node} ({inventory}). To fix: gpus <= "
                    "{per_node}, and more nodes.",
                    **fields,
                )
                if inventory.nodes
                else Msg(
                    "asks for {gpus} but this server has {per_node} ({inventory}). To fix: gpus <= {per_node}.",
                    **fields,
                ),
            )
        return None

    def check_partitions(self, spec: JobSpec, partitions: list[str] | None) -> None:
        """A job kept to some partitions (its data's residency) must fit in them."""
        if partitions is None:
            return
        inventory = self.inventory
        shape = scheduler.Queued(0, 0, spec.gpus, 0.0, None, spec.nodes, node_groups(inventory, partitions))
        if not scheduler.could_ever_fit(inventory.devices, shape):
            raise SpecError(
                "nodes",
                Msg(
                    "asks for {asked} node(s) x {gpus} GPU(s), more than the partitions its data may be processed in "
                    "({partitions}) have up now ({inventory}). To fix: fewer nodes or GPUs per node, or bring nodes "
                    "of those partitions back (sinfo -R tells why they are down).",
                    asked=spec.nodes,
                    gpus=spec.gpus,
                    partitions=", ".join(partitions),
                    inventory=inventory.describe(),
                ),
            )

    def enqueue(self, s: Session, spec: JobSpec, owner: str, partitions: list[str] | None) -> Job:
        """A queued job in `s`; the caller commits (without `lock`: a submit never waits for a tick), then calls
        `wake`. The commit hands its id to the next tick. Its token is minted when an attempt starts; until then no
        process holds one."""
        job = Job(
            name=spec.name,
            spec=spec.model_dump(mode="json"),
            owner=owner,
            state=JobState.QUEUED,
            priority=spec.priority,
            gpus=spec.gpus,
            submitted_at=time.time(),
            job_token_hash=dead_token_hash(),
            partitions=partitions,
        )
        s.add(job)
        s.flush()
        s.info.setdefault(self, []).append(_Change(job.id, None, JobState.QUEUED, None))
        self.meters.submitted(s)
        return job

    def quotas_changed(self) -> None:
        """A quota was set (treino.server.quotas): the next pass looks at the queue again, at once."""
        with self.lock:
            self._dirty = True
        self.wake()

    def cancel(self, job_id: int) -> Job:
        with self.lock, self.sessions.begin() as s:
            job = s.get(Job, job_id)
            if job is None:
                raise NotFound(Msg("No job {job_id}. To fix: list jobs with 'treino jobs'.", job_id=job_id))
            if job.state in FINAL_STATES:
                raise Conflict(
                    Msg("Job {job_id} is already {state}; nothing to cancel.", job_id=job_id, state=Msg(job.state))
                )
            if job.state == JobState.QUEUED:
                self._end(job, JobState.CANCELLED)
            elif job.stop_request != StopRequest.CANCEL:
                self._request_stop(s, job, StopRequest.CANCEL)
        self.wake()
        return job

    def latest_attempt(self, s: Session, job: Job) -> Attempt | None:
        return s.scalars(
            select(Attempt).where(Attempt.job_id == job.id).order_by(Attempt.number.desc()).limit(1)
        ).first()

    def active_handles(self) -> list[dict[str, Any]]:
        """The backend handles of every running or stopping attempt (the backend's hygiene spares them)."""
        with self.sessions() as s:
            active = s.scalars(select(Job).where(Job.state.in_(list(ACTIVE_STATES))))
            return [self._latest_attempt(s, j).handle for j in active]

    # --- the loop --------------------------------------------------------------------------------------------
    def tick(self) -> None:
        with self.lock:
            to_start: list[tuple[int, LaunchRequest]] = []
            try:
                self._follow_inventory()
                if self._queue is None:
                    self._load()
                self._read_submitted()
                self._tick(to_start)
            except BaseException:
                self._dirty = True  # whatever failed (a locked database, say), the next tick's pass runs
                raise
            # The attempts are committed before their processes start: a server that dies in between leaves an
            # attempt with no process (requeued), never a process the database does not know of.
            for attempt_id, request in to_start:
                self._start(attempt_id, request)

    def _tick(self, to_start: list[tuple[int, LaunchRequest]]) -> None:
        with self.sessions.begin() as s:
            now = time.time()
            active = list(s.scalars(select(Job).where(Job.state.in_(list(ACTIVE_STATES))))) if self._active else []
            # Every attempt polled before the first write: the transaction holds SQLite's write lock (which submits
            # wait for) only from there to its commit, not across the backend's calls.
            attempts = [(job, self._latest_attempt(s, job)) for job in active]
            polled = [(job, attempt, self.backend.poll(attempt.handle)) for job, attempt in attempts]
            pending: dict[int, str] = {}
            for job, attempt, info in polled:
                if info is not None:
                    self._finish(s, job, attempt, info)
                    continue
                self._place(s, job, attempt)
                if (placed := attempt.handle.get("placement") or {}).get("state") == "pending":
                    pending[job.id] = str(placed.get("reason") or "")  # Slurm's own reason (squeue's %r)
                timeout = _timeout_s(job)
                if job.state == JobState.RUNNING and timeout and now > attempt.started_at + timeout:
                    self._request_stop(s, job, StopRequest.TIMEOUT)
                elif (
                    job.state == JobState.STOPPING
                    and job.stop_requested_at is not None
                    and now > job.stop_requested_at + _grace_s(job) + KILL_MARGIN_S
                ):
                    self.backend.kill(attempt.handle)  # the supervisor did not finish the job off: we do
            self._backend_pending = pending
            self._schedule(s, now, to_start)

    def _place(self, s: Session, job: Job, attempt: Attempt) -> None:
        """Record where a live attempt runs (Slurm: its job id, nodes and partition, or why it is still pending);
        when it starts on machines it was not on before, `events` hears of it (the audit's job.start)."""
        placement = self.backend.placement(attempt.handle)
        if placement is None:
            return
        seen = {"state": placement.state, "nodes": list(placement.nodes), "reason": placement.reason}
        if attempt.handle.get("placement") == seen:
            return
        was_running = (attempt.handle.get("placement") or {}).get("state") == "running"
        attempt.handle = {**attempt.handle, **placement.extra, "placement": seen}
        if placement.state != "running" or not placement.nodes:
            return
        if not was_running:
            # Time pending in the backend's queue (Slurm's) is not the job's: its timeout counts from its start.
            attempt.started_at = time.time()
            self._dirty = True  # so did the reservations that count on its end
        self.events.attempt_started(s, job, attempt, placement)

    def _schedule(self, s: Session, now: float, to_start: list[tuple[int, LaunchRequest]]) -> None:
        if time.monotonic() < self.backend_unavailable_until:
            return  # `_dirty` stays set: the pass runs once the backend may be tried again
        if (not self._dirty and time.monotonic() < self._recheck_at) or not self._queue:
            return  # nothing the decision reads has changed since the last pass (module docstring)
        self._dirty, self._recheck_at = False, float("inf")
        queue = self._queue
        inventory = self.inventory
        active = list(s.scalars(select(Job).where(Job.state.in_(list(ACTIVE_STATES))))) if self._active else []
        running = []
        for job in active:
            attempt = self._latest_attempt(s, job)
            stopping_until = (job.stop_requested_at or now) + _grace_s(job) if job.state == JobState.STOPPING else None
            running.append(
                scheduler.Running(
                    job.id,
                    job.priority,
                    tuple(job.devices or ()),
                    attempt.started_at,
                    _timeout_s(job),
                    stopping_until,
                )
            )
        # Jobs requeued by this tick (a crash with restarts left, a preemption) are in line now, though the copy
        # takes them at commit: in for this decision, out again, so a rollback leaves the copy as it was.
        joining = [c.queued for c in s.info.get(self, ()) if c.queued is not None]
        for q in joining:
            queue.add(q)
        try:
            decision = scheduler.schedule(
                inventory.devices,
                queue.ordered(),
                running,
                now,
                ordered=True,
                shapes=queue.shapes(),
                quota_block=self.quota_block or quotas.blocker(s, now),
            )
            # Kept for why each job waits (treino.server.waits): a copy of the queue's references, no other work.
            self._snapshot = waits.Snapshot(decision, tuple(queue.ordered()), tuple(inventory.devices))
        finally:
            for q in joining:
                queue.discard(q.id)
        self.quota_holds = dict(decision.quota_blocked)
        # time alone lifts a spent monthly quota, at the month's turn: look again now and then
        if decision.quota_blocked:
            self._recheck_at = time.monotonic() + QUOTA_RECHECK_S
        by_id = {j.id: j for j in active}
        for job_id in decision.preempt:
            self._request_stop(s, by_id[job_id], StopRequest.PREEMPT)
        for job_id, devices in decision.start:
            chosen = s.get(Job, job_id)
            if chosen is None or chosen.state != JobState.QUEUED:  # never, unless the copy went wrong: read it again
                state = chosen.state if chosen else "gone"
                log.error("job %s was in the engine's queue but is %s; the queue is read again", job_id, state)
                self._queue = None
                return
            try:
                to_start.append(self._prepare(s, chosen, devices, inventory))
            except (CheckpointGone, ContinuationErased) as exc:  # cannot continue: said, not started from scratch
                log.error("job %s: cannot start: %s", job_id, exc)
                self._end(
                    chosen,
                    JobState.FAILED,
                    FailureReason.ERASURE if isinstance(exc, ContinuationErased) else FailureReason.NO_CHECKPOINT,
                    f"Cannot continue job {chosen.continues_from}: {exc}",
                )
            except OSError as exc:  # its folder could not be made (a full disk, a broken mount): the rest go on
                log.error("job %s: cannot prepare its folder (%s); it stays queued", job_id, exc)
                self._dirty = True  # and is tried again at the next tick

    # --- the engine's copy of the queue (module docstring) ----------------------------------------------------
    def _follow_inventory(self) -> None:
        """A changed inventory (a Slurm node drained or back) is a reason for a pass; changed partitions change
        the node groups of queued jobs: the queue is read again."""
        inventory = self.inventory
        if inventory.devices != self._devices_seen:
            self._devices_seen, self._dirty = inventory.devices, True
        groups = tuple((n.name, n.partitions) for n in inventory.nodes)
        if groups != self._groups_seen:
            self._groups_seen, self._queue = groups, None

    def _load(self) -> None:
        """The queued and active jobs from the database: at the first tick (and after the inventory's partitions
        change). Only the columns the scheduler reads: no job's spec is loaded whole."""
        inventory = self.inventory
        with self.sessions() as s:
            rows = s.execute(select(*_QUEUED_COLUMNS).where(Job.state == JobState.QUEUED)).all()
            active = s.scalars(select(Job.id).where(Job.state.in_(list(ACTIVE_STATES)))).all()
        self._queue = scheduler.Queue(_queued_row(row, inventory) for row in rows)
        self._active = set(active)
        self._dirty = True

    def _read_submitted(self) -> None:
        """The jobs submits committed since the last tick, read back by id: those still queued join the queue."""
        assert self._queue is not None
        ids = [self._submitted.popleft() for _ in range(len(self._submitted))]
        if not ids:
            return
        inventory = self.inventory
        try:
            with self.sessions() as s:
                for i in range(0, len(ids), QUEUE_READ_IDS_MAX):
                    chunk = ids[i : i + QUEUE_READ_IDS_MAX]
                    query = select(*_QUEUED_COLUMNS).where(Job.id.in_(chunk), Job.state == JobState.QUEUED)
                    for row in s.execute(query):
                        self._queue.add(_queued_row(row, inventory))
        except BaseException:
            self._queue = None  # those ids are gone from the hand-over: the next tick reads the whole queue
            raise
        self._dirty = True

    def _queued(self, job: Job) -> scheduler.Queued:
        return scheduler.Queued(
            job.id,
            job.priority,
            job.gpus,
            job.submitted_at,
            _timeout_s(job),
            int(job.spec.get("nodes", 1)),
            node_groups(self.inventory, job.partitions),
        )

    def _note(self, job: Job, old: JobState, new: JobState) -> None:
        """A state change of `job`, applied to the copy when its transaction commits."""
        s = object_session(job)
        assert s is not None, f"job {job.id} changes state outside a session"
        queued = self._queued(job) if new == JobState.QUEUED else None
        s.info.setdefault(self, []).append(_Change(job.id, old, new, queued))
        self._dirty = True  # for this tick's own pass too

    def _committed(self, s: Session) -> None:
        """SQLAlchemy's after_commit, for every session of `sessions`: apply this engine's notes, if any. Notes of
        state changes come from holders of `lock`; a submit's (old None) only hands the job's id to the tick."""
        changes: list[_Change] | None = s.info.pop(self, None)
        for change in changes or ():
            if change.old is None:
                self._submitted.append(change.job_id)
                continue
            self._dirty = True
            if change.old in ACTIVE_STATES:
                self._active.discard(change.job_id)
            if change.new in ACTIVE_STATES:
                self._active.add(change.job_id)
            if self._queue is not None:
                if change.old == JobState.QUEUED:
                    self._queue.discard(change.job_id)
                if change.queued is not None:
                    self._queue.add(change.queued)

    def _rolled_back(self, s: Session, _transaction: Any) -> None:
        s.info.pop(self, None)

    # --- transitions -----------------------------------------------------------------------------------------
    def _transition(self, job: Job, new: JobState) -> None:
        old = JobState(job.state)
        if new not in TRANSITIONS[old]:
            raise AssertionError(f"job {job.id}: {old} -> {new} is not a transition")
        job.state = new
        self._note(job, old, new)

    def _latest_attempt(self, s: Session, job: Job) -> Attempt:
        """The attempt of a job that has one (running or stopping jobs always do)."""
        attempt = self.latest_attempt(s, job)
        assert attempt is not None, f"job {job.id} has no attempt"
        return attempt

    def _prepare(
        self, s: Session, job: Job, devices: tuple[int, ...], inventory: Inventory
    ) -> tuple[int, LaunchRequest]:
        """The attempt's row, its devices and the job's running state, in `s`; the processes start after commit."""
        # First, before any change to the job: an OSError here leaves it queued as it was (_schedule)
        if job.attempts == 0 and job.continues_from is not None and job.continues_from_step is not None:
            # A continued job starts from its old job's checkpoint, in its own folder before its processes exist:
            # unless data that checkpoint was trained on was erased since the resubmit (checked there, and again here).
            if (refusal := self.events.continuation_refusal(s, job)) is not None:
                raise ContinuationErased(refusal)
            seeded, size = seed_checkpoint(
                self.checkpoint_dir(job.continues_from),
                job.continues_from_step,
                self.job_dir(job.id),
                self.settings.job_user,
            )
            self.events.checkpoint_seeded(s, job, job.continues_from_step, seeded, size)
        checkpoint_dir, work_dir = prepare_job_folder(self.job_dir(job.id), self.settings.job_user)
        trackers_dir = prepare_trackers_dir(self.job_dir(job.id), self.settings.job_user)
        spec = JobSpec.model_validate(job.spec)
        number = job.attempts + 1
        job_token = new_job_token()  # a fresh token per attempt; the old one stops working
        job.job_token_hash = token_hash(job_token)
        env = {
            **_base_env(),
            **spec.env,
            "TREINO_URL": self.settings.url,
            "TREINO_JOB_ID": str(job.id),
            "TREINO_JOB_TOKEN": job_token,
            "TREINO_CHECKPOINT_DIR": str(checkpoint_dir),
            "TREINO_ATTEMPT": str(number),
            "TREINO_TRACKERS_DIR": str(trackers_dir),
            **({} if spec.trackers is None else {"TREINO_TRACKERS": ",".join(spec.trackers)}),
            **({} if spec.sisa is None else {"TREINO_SISA": f"{spec.sisa.shards}:{spec.sisa.slices}"}),
        }
        node_of = {d.index: d.node for d in inventory.devices}
        nodes = tuple(dict.fromkeys(node_of[i] for i in devices))  # in order, once each
        request = LaunchRequest(
            job_id=job.id,
            attempt=number,
            argv=spec.argv(spec.gpus, self.settings.python),
            cwd=spec.workdir or str(work_dir),
            env=env,
            grace_s=spec.grace_seconds,
            attempt_dir=self.job_dir(job.id) / f"attempt-{number}",
            key=secrets.token_hex(16),
            devices=devices,
            nodes=nodes,
            gpus_per_node=spec.gpus,
            script=spec.script_argv(),
            python=self.settings.python,
            timeout_s=_timeout_s(job),
            partitions=tuple(job.partitions) if job.partitions is not None else None,
            memory_bytes=spec.memory_bytes,
            home=work_dir,
        )
        handle = self.backend.handle_for(request)
        attempt = Attempt(job_id=job.id, number=number, devices=list(devices), handle=handle, started_at=time.time())
        s.add(attempt)
        self.meters.attempt_started(s, number, job.submitted_at, attempt.started_at)
        self._transition(job, JobState.RUNNING)
        job.attempts = number
        job.devices = list(devices)
        job.started_at = job.started_at or time.time()
        s.flush()
        return attempt.id, request

    def _start(self, attempt_id: int, request: LaunchRequest) -> None:
        try:
            handle = self.backend.launch(request)
        except BackendUnavailable as exc:
            # Nothing started (e.g. slurmctld down): the job goes back to the queue as it was, attempt undone.
            log.warning("job %s: not started, will retry: %s", request.job_id, exc)
            self.backend_unavailable_why = str(exc)
            self._unlaunch(attempt_id)
            return
        except Exception as exc:  # refused (e.g. sbatch's error): the attempt fails with the reason
            log.exception("job %s attempt %s: the launch failed", request.job_id, request.attempt)
            handle = {**self._handle_of(attempt_id), "launch_error": str(exc)[:2000]}
        with self.sessions.begin() as s:
            attempt = s.get(Attempt, attempt_id)
            assert attempt is not None
            attempt.handle = handle
        log.info("job %s attempt %s started", request.job_id, request.attempt)

    def _handle_of(self, attempt_id: int) -> dict[str, Any]:
        with self.sessions() as s:
            attempt = s.get(Attempt, attempt_id)
            assert attempt is not None
            return dict(attempt.handle)

    def _unlaunch(self, attempt_id: int) -> None:
        with self.lock, self.sessions.begin() as s:
            attempt = s.get(Attempt, attempt_id)
            assert attempt is not None
            job = s.get(Job, attempt.job_id)
            assert job is not None
            s.delete(attempt)
            job.attempts -= 1
            job.devices = None
            if job.attempts == 0:
                job.started_at = None
            self._note(job, JobState(job.state), JobState.QUEUED)
            job.state = JobState.QUEUED  # back where it was: not a transition of the job's life
            job.job_token_hash = dead_token_hash()
        self.backend_unavailable_until = time.monotonic() + BACKEND_RETRY_S

    def _request_stop(self, s: Session, job: Job, why: StopRequest) -> None:
        if job.state == JobState.RUNNING:
            self._transition(job, JobState.STOPPING)
        job.stop_request = why
        job.stop_requested_at = time.time()
        self._dirty = True  # its devices come back at the end of this grace period
        self.backend.stop(self._latest_attempt(s, job).handle, _grace_s(job))
        log.info("job %s: %s requested", job.id, why)

    def _finish(self, s: Session, job: Job, attempt: Attempt, info: ExitInfo) -> None:
        self.events.reconcile_checkpoints(s, job, self.checkpoint_dir(job.id))  # what it saved but did not report
        outcome, detail = classify(info)
        if outcome == FailureReason.NODE_FAULT and info.returncode is None and self._disk_full_at(job):
            # A supervisor that could not even record the exit, on a full disk: the disk, not the machine.
            outcome, detail = FailureReason.DISK_FULL, failures.SUPERVISOR_VANISHED_ON_FULL_DISK
        if outcome == FailureReason.DISK_FULL:
            detail = self._disk_full_detail(job, detail)
        # The attempt's token dies with it: a finished job may no longer read datasets or write lineage.
        job.job_token_hash = dead_token_hash()
        attempt.ended_at = time.time()
        attempt.exit_code = info.returncode
        spec = JobSpec.model_validate(job.spec)
        job.devices = None
        job.exit_code = info.returncode
        stop = job.stop_request
        job.stop_request, job.stop_requested_at = None, None
        attempt.outcome = stop or outcome
        self.meters.attempt_finished(s, attempt.outcome, attempt.started_at, attempt.ended_at)
        if stop == StopRequest.CANCEL:  # the server asked for the stop: whatever the exit status says
            self._end(job, JobState.CANCELLED)
        elif stop == StopRequest.PREEMPT:
            job.preemptions += 1
            self.meters.preempted(s)
            self._transition(job, JobState.QUEUED)  # keeps its submission time: first in line again
        elif stop == StopRequest.TIMEOUT:
            self._end(job, JobState.FAILED, FailureReason.TIMEOUT, failures.timed_out(spec.timeout_minutes))
        elif outcome == "succeeded":
            self._end(job, JobState.SUCCEEDED)
            job.failure_reason = job.failure_detail = None
            self.events.job_succeeded(s, job)
        elif info.reason in (FailureReason.TIMEOUT, FailureReason.SIGNAL):
            # The backend's own verdict (Slurm's time limit; cancelled in Slurm by an operator): final, as a
            # treino timeout or cancel is; a retry would meet the same limit or overrule the operator.
            self._end(job, JobState.FAILED, outcome, detail)
        elif outcome == FailureReason.OOM:  # never retried: the same attempt would run out of memory again
            self._end(job, JobState.FAILED, outcome, detail)
        elif outcome == FailureReason.NODE_FAULT and info.returncode is None and not self._lost_repeatedly(s, job):
            # Not the job's fault (the machine went down): requeue without spending a restart.
            job.failure_reason, job.failure_detail = outcome, detail
            self._transition(job, JobState.QUEUED)
        elif job.restarts < spec.max_restarts:
            job.restarts += 1
            self.meters.restarted(s)
            job.failure_reason, job.failure_detail = outcome, detail
            self._transition(job, JobState.QUEUED)
        else:
            self._end(job, JobState.FAILED, outcome, detail)
        if job.state in FINAL_STATES:  # an erasure's retraining: the erased rows it was given go with its end
            drop_erased_rows(self.job_dir(job.id))
        said = f"{stop} requested" if stop else detail  # a requested stop explains the end, whatever Slurm says
        log.info("job %s attempt %s ended: %s (%s) -> %s", job.id, attempt.number, attempt.outcome, said, job.state)

    def _disk_full_at(self, job: Job) -> bool:
        """The filesystem of the job's folder has less than an attempt's exit reserve free."""
        try:
            return free_bytes(self.job_dir(job.id)) < EXIT_RESERVE_BYTES
        except OSError:
            return False

    def _disk_full_detail(self, job: Job, seen: str) -> str:
        """What a job that failed on a full disk is told: what was seen, which folders, how much is free now."""
        workdir = job.spec.get("workdir")
        folders = [*folders_in(seen), self.job_dir(job.id), *([Path(workdir)] if workdir else [])]
        return (
            f"The disk is full: {seen.rstrip('.')}. Free now: {spaces_text(folders)}. To fix: free space on that "
            f"disk (old checkpoints in {self.job_dir(job.id) / 'checkpoints'} and other job folders in "
            f"{self.settings.jobs_dir}), or give the job's output a bigger disk (--data-dir or --shared-dir of "
            "treino server, the spec's workdir), then submit the job again."
        )

    @staticmethod
    def _lost_repeatedly(s: Session, job: Job) -> bool:
        """The last LOST_ATTEMPTS_MAX attempts all vanished: something about this job kills its supervisor, so
        requeueing it for free again would loop forever."""
        outcomes = s.scalars(
            select(Attempt.outcome)
            .where(Attempt.job_id == job.id)
            .order_by(Attempt.number.desc())
            .limit(LOST_ATTEMPTS_MAX)
        ).all()
        return len(outcomes) == LOST_ATTEMPTS_MAX and all(o == FailureReason.NODE_FAULT for o in outcomes)

    def _end(self, job: Job, state: JobState, reason: str | None = None, detail: str | None = None) -> None:
        self._transition(job, state)
        job.ended_at = time.time()
        # An erasure's retraining ends here too when it never ran (cancelled in the queue, its checkpoint gone):
        # the erased rows it was given go with its end, whichever way it ends.
        drop_erased_rows(self.job_dir(job.id))
        if (s := object_session(job)) is not None:
            self.meters.job_finished(s, state)
        if reason:
            job.failure_reason, job.failure_detail = reason, detail
        elif state == JobState.CANCELLED:  # an earlier attempt's failure (a crash, then restarts) is not why it ended
            job.failure_reason = job.failure_detail = None

    # --- restart ---------------------------------------------------------------------------------------------
    def reconcile(self) -> dict[str, int]:
        """After a (crashed) server starts: finished attempts are recorded, live ones adopted, lost ones requeued;
        checkpoints saved while it was down are recorded either way (`events`). Devices are taken from the
        database's active jobs only, so none is handed out twice."""
        counts = {"adopted": 0, "finished": 0, "requeued": 0}
        with self.lock, self.sessions.begin() as s:
            for job in s.scalars(select(Job).where(Job.state.in_(list(ACTIVE_STATES)))):
                attempt = self._latest_attempt(s, job)
                info = self.backend.poll(attempt.handle)
                if info is None:
                    self.events.reconcile_checkpoints(s, job, self.checkpoint_dir(job.id))  # saved while we were down
                    counts["adopted"] += 1
                    log.info("job %s: attempt %s still running, adopted", job.id, attempt.number)
                    continue
                self.backend.kill(attempt.handle)  # nothing of a lost attempt may keep a GPU
                self._finish(s, job, attempt, info)
                counts["requeued" if job.state == JobState.QUEUED else "finished"] += 1
        return counts


class _Change(NamedTuple):
    """A job's state change (old None: a submit), noted in its session and applied to the copy at commit."""

    job_id: int
    old: JobState | None
    new: JobState
    queued: scheduler.Queued | None  # what the scheduler reads of it, when it (re)joins the queue


# What the scheduler reads of a queued job, without loading its spec whole (a spec may be megabytes).
_QUEUED_COLUMNS = (
    Job.id,
    Job.priority,
    Job.gpus,
    Job.submitted_at,
    Job.spec["timeout_minutes"].as_float(),
    Job.spec["nodes"].as_integer(),
    Job.partitions,
)


def _queued_row(row: Sequence[Any], inventory: Inventory) -> scheduler.Queued:
    job_id, priority, gpus, submitted_at, timeout_minutes, nodes, partitions = row
    timeout_s = float(timeout_minutes) * 60 if timeout_minutes else None  # as _timeout_s reads the spec
    return scheduler.Queued(
        job_id, priority, gpus, submitted_at, timeout_s, int(nodes or 1), node_groups(inventory, partitions)
    )


def _timeout_s(job: Job) -> float | None:
    """The spec's timeout in seconds. Specs are validated once, at submit: the loop reads the stored dict rather
    than re-validating every job's spec every tick."""
    minutes = job.spec.get("timeout_minutes")
    return float(minutes) * 60 if minutes else None


def _grace_s(job: Job) -> float:
    return float(job.spec.get("grace_seconds", DEFAULT_GRACE_S))


def node_groups(inventory: Inventory, partitions: list[Any] | None) -> tuple[frozenset[str], ...] | None:
    """The machines of each of `partitions`, one group each: a job's nodes all come from one partition, which
    sbatch needs (None: no partitions, any machine)."""
    if partitions is None:
        return None
    return tuple(frozenset(n.name for n in inventory.nodes if p in n.partitions) for p in partitions)


def _base_env() -> dict[str, str]:
    """The server's environment minus treino's own variables: PATH, HOME, locale, proxies for the job."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TREINO_") and k != "CUDA_VISIBLE_DEVICES"}
