"""Why a queued job waits, and its place in line: read off the scheduler's own last decision (treino.server.scheduler),
never guessed again beside it.

The engine keeps the last pass's `Snapshot` (the decision, the queue in order as that pass read it, the devices);
a job list asks it once per page and then each queued row's `Wait` in O(1): no query per row, no second pass. A pass
runs whenever something it reads changes (treino.server.service), so a snapshot is at most one tick old. A job
submitted since has none yet (None: not yet considered).

Reasons, the first that holds (`WaitReason`):
    quota      a quota holds it (the scheduler's quota_block, rule 5); its message says which
    resources  it is the head: the first in line that does not fit in the devices it may use; they are held by
               `blocked_by` (or being taken back from them: preemption), expected free at `until` (None: unknown,
               a holder has no timeout). Also a job that no machine it may use could seat now (nodes down).
    backfill   it fits in the free devices now, but starting it could delay the head's start at `until` (it has no
               timeout_minutes ending before then, and the head will need those devices)
    priority   it does not fit in the free devices, and the head (`blocked_by`), of higher priority, goes first
    queue      likewise behind a head of its own priority, submitted earlier (FIFO within a priority)
    slurm      treino started it, but Slurm has not yet: `note` is Slurm's own reason (squeue's %r)
    backend    the backend cannot be reached (slurmctld down): no job starts until it can
"""

from __future__ import annotations

import enum
import functools
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from treino.server import scheduler
from treino.server.inventory import Device

BLOCKERS_NAMED_MAX = 3  # jobs a reason's sentence names; the API lists them all


class WaitReason(enum.StrEnum):
    QUOTA = "quota"
    RESOURCES = "resources"
    BACKFILL = "backfill"
    PRIORITY = "priority"
    QUEUE = "queue"
    SLURM = "slurm"
    BACKEND = "backend"


@dataclass(frozen=True)
class Wait:
    reason: WaitReason
    position: int | None  # in the queue, 1 = next; None for a job the backend holds (started by treino)
    blocked_by: tuple[int, ...] = ()  # resources: the jobs holding the devices; backfill, priority, queue: the head
    gpus_needed: int | None = None  # devices it needs (gpus x nodes)
    gpus_free: int | None = None  # free devices it could use now
    until: float | None = None  # resources, backfill: when the head is expected to start (unix s; None: unknown)
    preempting: bool = False  # resources: `blocked_by` are being stopped to give the head their devices
    note: str | None = None  # the quota's message, Slurm's reason

    def detail(self) -> str:
        """The reason in one English sentence (the dashboard builds its own, translated, from the fields)."""
        need = f"needs {self.gpus_needed} device(s), {self.gpus_free} free"
        jobs = _jobs(self.blocked_by)
        at = f" at {time.strftime('%Y-%m-%d %H:%M', time.localtime(self.until))}" if self.until else ""
        match self.reason:
            case WaitReason.QUOTA:
                return f"held by a quota: {self.note}"
            case WaitReason.RESOURCES if self.preempting:
                return f"{need}; preempting {jobs} to free them"
            case WaitReason.RESOURCES if not self.blocked_by and self.gpus_free is None:
                return f"needs {self.gpus_needed} device(s): the machines it may use cannot seat it now (nodes down)"
            case WaitReason.RESOURCES:
                held = f"; held by {jobs}" if self.blocked_by else ""
                expected = f", expected free{at}" if at else ", free time unknown (they have no timeout)"
                return f"{need}{held}{expected if self.blocked_by else ''}"
            case WaitReason.BACKFILL:
                head = _jobs(self.blocked_by[:1])
                if not at:
                    return f"fits now, but {head} waits first and its start time is unknown (no timeout)"
                return f"fits now, but would delay {head}, due to start{at}; a timeout_minutes ending sooner lets it in"
            case WaitReason.PRIORITY:
                return f"{_jobs(self.blocked_by[:1])}, of higher priority, goes first; {need}"
            case WaitReason.QUEUE:
                return f"{_jobs(self.blocked_by[:1])}, submitted earlier, goes first; {need}"
            case WaitReason.SLURM:
                return f"pending in Slurm: {self.note or 'no reason given'}"
            case WaitReason.BACKEND:
                return f"the backend cannot be reached: {self.note}" if self.note else "the backend cannot be reached"
        return str(self.reason)


def _jobs(ids: tuple[int, ...]) -> str:
    named = ", ".join(str(i) for i in ids[:BLOCKERS_NAMED_MAX])
    more = f" and {len(ids) - BLOCKERS_NAMED_MAX} more" if len(ids) > BLOCKERS_NAMED_MAX else ""
    return f"job{'s' if len(ids) > 1 else ''} {named}{more}"


@dataclass(frozen=True)
class Snapshot:
    """One scheduling pass: its decision, the queue in order as it read it, and the devices it placed on."""

    decision: scheduler.Decision
    ordered: tuple[scheduler.Queued, ...]
    devices: tuple[Device, ...]
    _seats: dict[scheduler.Shape, bool] = field(default_factory=dict, compare=False, repr=False)

    @functools.cached_property
    def _index(self) -> dict[int, tuple[int, scheduler.Queued]]:
        """Job id -> (position, the job), the started ones left out; built once, at the first question (a list
        read), not by the pass: a pass over a long queue stays as cheap as before."""
        started = {job_id for job_id, _ in self.decision.start}
        kept = (q for q in self.ordered if q.id not in started)
        return {q.id: (i, q) for i, q in enumerate(kept, start=1)}

    @functools.cached_property
    def _blocked(self) -> Mapping[int, str]:
        return dict(self.decision.quota_blocked)

    def wait(self, job_id: int) -> Wait | None:
        """Why queued job `job_id` waits; None when this pass did not see it queued (submitted since, or started)."""
        entry = self._index.get(job_id)
        if entry is None:
            return None
        position, job = entry
        d = self.decision
        need = job.devices_needed
        if job_id in self._blocked:
            return Wait(WaitReason.QUOTA, position, gpus_needed=need, note=self._blocked[job_id])
        if job_id == d.head:
            blockers = d.preempt or d.head_holders
            return Wait(WaitReason.RESOURCES, position, blockers, need, d.head_free, d.reservation_at, bool(d.preempt))
        if not self._seats_ever(job):
            return Wait(WaitReason.RESOURCES, position, gpus_needed=need)
        head = self._index.get(d.head) if d.head is not None else None
        if head is None:  # no head: everything that fit started (a decision rolled back meanwhile)
            return Wait(WaitReason.RESOURCES, position, gpus_needed=need, gpus_free=d.free)
        if job_id in d.backfill_refused:
            return Wait(WaitReason.BACKFILL, position, (head[1].id,), need, None, d.reservation_at)
        reason = WaitReason.PRIORITY if head[1].priority > job.priority else WaitReason.QUEUE
        return Wait(reason, position, (head[1].id,), need, d.free)

    def _seats_ever(self, job: scheduler.Queued) -> bool:
        shape = scheduler.shape_of(job)
        if shape not in self._seats:
            self._seats[shape] = scheduler.could_ever_fit(self.devices, job)
        return self._seats[shape]


@dataclass(frozen=True)
class Waits:
    """What a job list reads, once per page: the last pass, the jobs the backend holds, and whether it is reachable."""

    snapshot: Snapshot | None
    backend_pending: Mapping[int, str]  # running (for treino) jobs the backend has not started: its reason
    backend_down: str | None = None  # why the backend cannot be reached, while it cannot

    def of(self, job_id: int, state: str) -> Wait | None:
        if state == "running" and job_id in self.backend_pending:
            return Wait(WaitReason.SLURM, None, note=self.backend_pending[job_id] or None)
        if state != "queued":
            return None
        if self.backend_down is not None:
            position = self.snapshot.wait(job_id) if self.snapshot is not None else None
            return Wait(WaitReason.BACKEND, position.position if position else None, note=self.backend_down)
        return self.snapshot.wait(job_id) if self.snapshot is not None else None


NO_WAITS = Waits(None, {})
