"""Who runs next, on which devices: a pure function over the queue, the running jobs and the inventory.

Rules (the issue's, and Slurm's EASY backfill, which small GPU clusters use):
1. Whole devices only: a device is held by at most one job. A job asks for `gpus` on each of `nodes` machines
   (best fit: the machines with the fewest free devices that still fit, keeping emptier machines whole for bigger
   jobs), all of them inside one of its `node_groups` (a Slurm partition its data may be processed in). On a machine,
   its devices come from one NVLink domain when one has enough free (best fit again), else from the fullest
   domains first.
2. Order: higher priority first, FIFO (submission order) within a priority.
3. The first job that cannot start is the head. It gets a reservation: the earliest time enough devices free up,
   from the running jobs' known ends (start + timeout_minutes; stopping jobs: now + their grace). A later job may
   backfill when it fits in the free devices and either ends before the reservation (it has a timeout that says
   so) or uses only devices the head will not need at the reservation: spare ones then, or ones on machines the
   head may not use (placed there when its best fit would take the head's). A job without a timeout has no known
   end, so behind a head whose reservation is unknown nothing backfills on the head's machines: backfill never
   delays the head.
4. Preemption: a head that outranks running jobs takes their devices: the lowest priority first, then the most
   recently started (the least progress to lose), only as many as it needs, and only when that is enough.
5. Quotas: `quota_block(job, starting)`, when given, is asked before a job would start or become the head; a job it
   holds (its message) is passed over, as Slurm passes over a job held by a QOS limit: it never blocks the queue.

The decision also says why the jobs it does not start wait (the head's free and needed devices and who holds them,
the jobs held back for the head's reservation, those a quota holds): treino.server.waits turns it into each
queued job's reason, from this pass, not from a second guess.

Cost: one pass reads each queued job at most once, with one fit test per job *shape* (GPUs, nodes, node groups),
not per job (behind the head, one more where the head's machines are to be kept), and stops behind the head as soon
as no shape in the queue fits in the free devices (nothing behind it could start). The engine keeps its queue in
`order` (a `Queue`, which also counts its shapes), so a pass over 10,000 queued jobs sorts nothing, and when nothing
can start it looks at the jobs up to the head only.
"""

from __future__ import annotations

import bisect
import dataclasses
import math
from collections import Counter
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass, field

from treino.server.inventory import Device


@dataclass(frozen=True)
class Queued:
    id: int
    priority: int
    gpus: int  # per node
    submitted_at: float
    timeout_s: float | None
    nodes: int = 1
    node_groups: tuple[frozenset[str], ...] | None = None  # its machines all come from one group; None: any

    def eligible(self, devices: Sequence[Device]) -> list[Device]:
        """The devices the job could ever be given (any group's)."""
        if self.node_groups is None:
            return list(devices)
        nodes = frozenset().union(*self.node_groups)
        return [d for d in devices if d.node in nodes]

    @property
    def devices_needed(self) -> int:
        return self.gpus * self.nodes


Shape = tuple[int, int, tuple[frozenset[str], ...] | None]  # what a fit depends on: gpus, nodes, node groups


def shape_of(job: Queued) -> Shape:
    return (job.gpus, job.nodes, job.node_groups)


@dataclass(frozen=True)
class Running:
    id: int
    priority: int
    devices: tuple[int, ...]
    started_at: float
    timeout_s: float | None
    stopping_until: float | None = None  # set while stopping: when the grace period ends

    def expected_end(self) -> float:
        if self.stopping_until is not None:
            return self.stopping_until
        return self.started_at + self.timeout_s if self.timeout_s else math.inf


@dataclass(frozen=True)
class Decision:
    start: tuple[tuple[int, tuple[int, ...]], ...]  # (job id, device indices)
    preempt: tuple[int, ...]  # job ids to stop and requeue
    head: int | None  # the job holding the reservation, if any
    reservation_at: float | None  # when the head is expected to start (None: unknown)
    # Why the others wait (treino.server.waits reads these; two decisions that act alike are equal):
    backfill_refused: tuple[int, ...] = field(default=(), compare=False)  # fit now, held back for the head's start
    quota_blocked: tuple[tuple[int, str], ...] = field(default=(), compare=False)  # (job, the quota's message)
    head_free: int = field(default=0, compare=False)  # free devices the head may use, before any preemption
    head_holders: tuple[int, ...] = field(default=(), compare=False)  # holding what the head may use, soonest end first
    free: int = field(default=0, compare=False)  # free devices left once this decision's jobs have started


# Rule 5's hook: why `job` may not start now under a quota (a message that ends with "To fix: ..."), or None when it
# may. `starting`: the jobs this same decision starts before it (a concurrency quota counts their devices too).
# Asked once per job that would start or become the head, per pass: it must answer from memory, without a query.
QuotaBlock = Callable[["Queued", Sequence["Queued"]], str | None]


def order_key(q: Queued) -> tuple[int, float, int]:
    """Rule 2: higher priority first, then submission order (the id breaks ties)."""
    return (-q.priority, q.submitted_at, q.id)


def order(queue: Sequence[Queued]) -> list[Queued]:
    return sorted(queue, key=order_key)


class Queue:
    """The queued jobs in `order`, kept sorted as they come and go (a binary search and a list insert or delete
    each), so a scheduling pass sorts nothing. Its owner (the engine) changes it under its own lock."""

    def __init__(self, jobs: Iterable[Queued] = ()) -> None:
        self._by_id = {job.id: job for job in jobs}
        self._ordered = order(list(self._by_id.values()))
        self._shapes = Counter(shape_of(job) for job in self._ordered)

    def __len__(self) -> int:
        return len(self._by_id)

    def __contains__(self, job_id: object) -> bool:
        return job_id in self._by_id

    def add(self, job: Queued) -> None:
        self.discard(job.id)
        bisect.insort(self._ordered, job, key=order_key)
        self._by_id[job.id] = job
        self._shapes[shape_of(job)] += 1

    def discard(self, job_id: int) -> None:
        job = self._by_id.pop(job_id, None)
        if job is None:
            return
        i = bisect.bisect_left(self._ordered, order_key(job), key=order_key)
        assert self._ordered[i] is job, f"queue out of order at job {job_id}"
        del self._ordered[i]
        shape = shape_of(job)
        self._shapes[shape] -= 1
        if not self._shapes[shape]:
            del self._shapes[shape]

    def shapes(self) -> Collection[Shape]:
        """The distinct shapes of the queued jobs (a handful, however long the queue)."""
        return self._shapes.keys()

    def ordered(self) -> Sequence[Queued]:
        """Every queued job, in `order` (the queue's own list: read it, do not keep it)."""
        return self._ordered


def choose_devices(
    free: Sequence[Device], count: int, nodes: int = 1, groups: tuple[frozenset[str], ...] | None = None
) -> tuple[int, ...] | None:
    """`count` device indices on each of `nodes` machines from `free`, all machines from one of `groups` (None:
    any), inside one NVLink domain per machine when possible; None if too few."""
    for group in groups if groups is not None else (None,):
        by_node: dict[str, list[Device]] = {}
        for d in sorted(free, key=lambda d: d.index):
            if group is None or d.node in group:
                by_node.setdefault(d.node, []).append(d)
        fitting = sorted(
            (devs for devs in by_node.values() if len(devs) >= count), key=lambda devs: (len(devs), devs[0].index)
        )
        if len(fitting) >= nodes:
            return tuple(i for devs in fitting[:nodes] for i in _within_node(devs, count))
    return None


def _within_node(free: Sequence[Device], count: int) -> tuple[int, ...]:
    """`count` of one machine's free devices, inside one NVLink domain when one has enough."""
    by_domain: dict[int, list[Device]] = {}
    for d in free:
        by_domain.setdefault(d.domain, []).append(d)
    fitting = [devs for devs in by_domain.values() if len(devs) >= count]
    if fitting:
        best = min(fitting, key=lambda devs: (len(devs), devs[0].index))
        return tuple(d.index for d in best[:count])
    chosen: list[int] = []
    for devs in sorted(by_domain.values(), key=lambda devs: (-len(devs), devs[0].index)):
        chosen.extend(d.index for d in devs[: count - len(chosen)])
        if len(chosen) == count:
            break
    return tuple(chosen)


def could_ever_fit(devices: Sequence[Device], job: Queued) -> bool:
    """Whether the whole inventory, empty, could seat the job (refused at submit otherwise; never blocks)."""
    return choose_devices(devices, job.gpus, job.nodes, job.node_groups) is not None


def schedule(
    devices: Sequence[Device],
    queue: Sequence[Queued],
    running: Sequence[Running],
    now: float,
    *,
    ordered: bool = False,
    shapes: Collection[Shape] | None = None,
    quota_block: QuotaBlock | None = None,
) -> Decision:
    """The jobs to start now and the running ones to preempt. `ordered`: `queue` is already in `order`'s order.
    `shapes`: every shape in `queue`, when the caller knows them: behind the head, the pass stops as soon as none
    fits in the free devices. `quota_block`: rule 5 (None: no quotas)."""
    held = {i for r in running for i in r.devices}
    free = [d for d in devices if d.index not in held]
    starts: list[tuple[int, tuple[int, ...]]] = []
    starting: list[Queued] = []
    preempt: list[int] = []
    refused: list[int] = []
    blocked: list[tuple[int, str]] = []
    free_for_head = 0
    holders: tuple[int, ...] = ()
    head: Queued | None = None
    reservation = math.inf
    spare_at_reservation = 0  # devices beyond the head's need when it starts
    # Per job shape (gpus, nodes, node groups): whether the empty inventory seats it, and where it fits in `free`
    # (cleared whenever a start takes devices). Thousands of queued jobs come in a handful of shapes.
    ever_fits: dict[Shape, bool] = {}
    fits_now: dict[Shape, tuple[int, ...] | None] = {}
    head_may_use: set[int] = set()  # the devices on the head's machines (rule 3: backfill keeps its spare ones)
    fits_off_head: dict[Shape, tuple[int, ...] | None] = {}  # where it fits in `free` off the head's machines

    def fit(shape: Shape) -> tuple[int, ...] | None:
        if shape not in fits_now:
            fits_now[shape] = choose_devices(free, *shape)
        return fits_now[shape]

    def none_fits() -> bool:
        """Behind the head a job starts only on free devices: none left, or none that seats any queued shape."""
        return not free or (shapes is not None and all(fit(shape) is None for shape in shapes))

    for job in queue if ordered else order(queue):
        shape = shape_of(job)
        ever = ever_fits.get(shape)
        if ever is None:
            ever = ever_fits[shape] = could_ever_fit(devices, job)
        if not ever:
            continue  # refused at submit (or its machines are down); never blocks the queue
        chosen = fit(shape)
        if chosen is None and head is not None:
            continue  # behind the head, only a job that fits in the free devices may start
        if (why := _held(quota_block, job, starting)) is not None:
            blocked.append((job.id, why))
            continue  # rule 5: passed over, as a job that never fits is
        if head is None:
            if chosen is not None:
                starts.append((job.id, chosen))
                starting.append(job)
                free = [d for d in free if d.index not in chosen]
                fits_now.clear()
                continue
            head = job
            free_for_head, holders, reservation, spare_at_reservation, victims, head_may_use = _reserve(
                job, devices, free, running, now
            )
            preempt.extend(victims)
            if none_fits():
                break
            continue
        assert chosen is not None
        ends_in_time = job.timeout_s is not None and not math.isinf(reservation) and now + job.timeout_s <= reservation
        spare = None if ends_in_time else spare_at_reservation  # those it may hold at the reservation (None: any)
        chosen = _behind_head(chosen, spare, head_may_use, free, fits_off_head, shape)
        if chosen is None:
            refused.append(job.id)  # it could delay the head's start
            continue
        starts.append((job.id, chosen))
        starting.append(job)
        free = [d for d in free if d.index not in chosen]
        fits_now.clear()
        fits_off_head.clear()
        if not ends_in_time:
            spare_at_reservation -= _taken(chosen, head_may_use)
        if none_fits():
            break
    return Decision(
        tuple(starts),
        tuple(preempt),
        head.id if head else None,
        None if head is None or math.isinf(reservation) else reservation,
        backfill_refused=tuple(refused),
        quota_blocked=tuple(blocked),
        head_free=free_for_head,
        head_holders=holders,
        free=len(free),
    )


def _reserve(
    head: Queued, devices: Sequence[Device], free: Sequence[Device], running: Sequence[Running], now: float
) -> tuple[int, tuple[int, ...], float, int, list[int], set[int]]:
    """Rules 3 and 4 for the head: the free devices it may use, the jobs holding the others (soonest expected end
    first), its reservation and the devices to spare then, the jobs to preempt for it, and the devices it may use."""
    # Counted on the machines it may use only (its data's residency): free GPUs elsewhere do not seat it.
    eligible = {d.index for d in head.eligible(devices)}
    free_for_head = sum(1 for d in free if d.index in eligible)
    mine = [_on(r, eligible) for r in running]
    holders = tuple(r.id for r in sorted(mine, key=lambda r: r.expected_end()) if r.devices)
    reservation, spare = _reservation(free_for_head, mine, head.devices_needed)
    victims = _victims(head, free_for_head, mine)
    if victims:
        # The head takes the next devices to come free: nothing backfills on its machines in this decision (a
        # victim's expected end is its timeout, not the grace period it is about to get).
        reservation, spare = now, 0
    return free_for_head, holders, reservation, spare, victims, eligible


def _behind_head(
    chosen: tuple[int, ...],
    spare: int | None,
    head_may_use: set[int],
    free: Sequence[Device],
    memo: dict[Shape, tuple[int, ...] | None],
    shape: Shape,
) -> tuple[int, ...] | None:
    """Rule 3: where a job behind the head may start. Its best fit `chosen` when it ends before the reservation
    (`spare` None) or holds no more than `spare` of the head's devices, else a fit in `free` off the head's machines
    (`memo`: those found since `free` last changed), else None (it waits: it could delay the head's start)."""
    if spare is None or _taken(chosen, head_may_use) <= spare:
        return chosen
    if shape not in memo:
        memo[shape] = choose_devices([d for d in free if d.index not in head_may_use], *shape)
    return memo[shape]


def _taken(chosen: Sequence[int], head_may_use: set[int]) -> int:
    """How many of `chosen` the head may use (those a backfilled job would keep from it)."""
    return sum(1 for i in chosen if i in head_may_use)


def _held(quota_block: QuotaBlock | None, job: Queued, starting: Sequence[Queued]) -> str | None:
    """Rule 5: why a quota holds `job`, or None (no quotas: None)."""
    return None if quota_block is None else quota_block(job, starting)


def _on(r: Running, eligible: set[int]) -> Running:
    """`r` holding only its devices among `eligible` (what its end frees for a job kept to those)."""
    return dataclasses.replace(r, devices=tuple(i for i in r.devices if i in eligible))


def _reservation(free: int, running: Sequence[Running], need: int) -> tuple[float, int]:
    """When `need` devices will be free (from known ends), and how many beyond `need` are free then."""
    available = free
    for r in sorted(running, key=lambda r: r.expected_end()):
        if math.isinf(r.expected_end()):
            break
        available += len(r.devices)
        if available >= need:
            return r.expected_end(), available - need
    return math.inf, 0


def _victims(head: Queued, free: int, running: Sequence[Running]) -> list[int]:
    """Running jobs of lower priority whose devices, with the free and the already stopping ones, seat the head."""
    stopping = sum(len(r.devices) for r in running if r.stopping_until is not None)
    if free + stopping >= head.devices_needed:
        return []  # devices are already on their way back
    candidates = sorted(
        (r for r in running if r.stopping_until is None and r.priority < head.priority and r.devices),
        key=lambda r: (r.priority, -r.started_at),
    )
    chosen: list[int] = []
    available = free + stopping
    for r in candidates:
        if available >= head.devices_needed:
            break
        chosen.append(r.id)
        available += len(r.devices)
    return chosen if available >= head.devices_needed else []
