"""The scheduler's rules on hand-made queues: whole devices, priority + FIFO, EASY backfill, preemption, NVLink; and
the queue the engine keeps, against a fresh sort of every job."""

import dataclasses
import math
import random
from collections.abc import Iterable, Iterator, Sequence
from typing import TypeVar

from treino.server.inventory import Device
from treino.server.scheduler import (
    Decision,
    Queue,
    Queued,
    Running,
    _on,
    _reservation,
    _victims,
    choose_devices,
    could_ever_fit,
    order,
    schedule,
)

NOW = 1000.0
T = TypeVar("T")


def gpus(domains: list[int]) -> list[Device]:
    return [Device(i, "gpu", "H100", 80 * 2**30, dom) for i, dom in enumerate(domains)]


def q(id: int, gpus: int, priority: int = 0, at: float = 0.0, timeout_s: float | None = None) -> Queued:
    return Queued(id, priority, gpus, at or float(id), timeout_s)


def test_priority_then_fifo_and_never_two_jobs_on_one_device() -> None:
    d = schedule(gpus([0, 0, 0, 0]), [q(1, 2), q(2, 2, priority=5), q(3, 1)], [], NOW)
    started = dict(d.start)
    assert list(started) == [2, 1]  # priority 5 first, then FIFO; job 3 finds no device left
    assert not set(started[2]) & set(started[1])


def test_gpus_of_a_job_stay_in_one_nvlink_domain_best_fit() -> None:
    # Domain 0 has 4 free, domain 1 has 2 free: a 2-GPU job takes domain 1, keeping domain 0 whole for a 4-GPU job.
    free = gpus([0, 0, 0, 0, 1, 1])
    assert choose_devices(free, 2) == (4, 5)
    assert choose_devices(free, 4) == (0, 1, 2, 3)
    assert choose_devices(free, 5) is not None and len(set(choose_devices(free, 5) or ())) == 5
    assert choose_devices(free, 7) is None


def test_a_machine_without_one_domain_big_enough_gives_the_fullest_domains_first() -> None:
    # Domains of 3, 2 and 1 free: 5 GPUs come from the domain of 3, then the domain of 2, leaving the single one.
    assert choose_devices(gpus([0, 0, 0, 1, 1, 2]), 5) == (0, 1, 2, 3, 4)
    # Two domains of 2 free: the one with the lower first index first.
    assert choose_devices(gpus([1, 0, 0, 1, 2]), 3) == (0, 3, 1)


def test_backfill_only_when_it_cannot_delay_the_head() -> None:
    devices = gpus([0, 0, 0, 0])
    # Job 10 holds 3 GPUs until NOW + 600 s. Head (job 1) needs 4: its reservation is NOW + 600.
    running = [Running(10, 0, (0, 1, 2), NOW - 100, 700.0)]
    small_short = q(2, 1, timeout_s=300)  # ends by NOW + 300 < reservation: backfills
    small_long = q(3, 1, timeout_s=3000)  # would still run at the reservation: waits
    d = schedule(devices, [q(1, 4), small_long, small_short], running, NOW)
    assert dict(d.start) == {2: (3,)}
    assert d.head == 1 and d.reservation_at == NOW + 600


def test_no_backfill_behind_a_head_whose_reservation_is_unknown() -> None:
    devices = gpus([0, 0, 0, 0])
    running = [Running(10, 0, (0, 1, 2), NOW - 100, None)]  # no timeout: its end is unknown
    d = schedule(devices, [q(1, 4), q(2, 1, timeout_s=60)], running, NOW)
    assert d.start == () and d.head == 1 and d.reservation_at is None


def test_backfill_into_devices_the_head_will_not_need() -> None:
    devices = gpus([0] * 8)
    running = [Running(10, 0, (0, 1, 2, 3, 4, 5), NOW - 10, 60.0)]  # 2 free now, 8 free at NOW + 50
    d = schedule(devices, [q(1, 4), q(2, 2)], running, NOW)  # head needs 4 of the 8: 4 to spare
    assert dict(d.start) == {2: (6, 7)}


def test_preemption_takes_the_lowest_priority_newest_jobs_only_as_needed() -> None:
    devices = gpus([0, 0, 0, 0])
    running = [
        Running(10, 0, (0,), NOW - 500, None),
        Running(11, 0, (1,), NOW - 100, None),  # same priority, started later: less progress to lose
        Running(12, 3, (2, 3), NOW - 50, None),
    ]
    d = schedule(devices, [q(1, 1, priority=5)], running, NOW)
    assert d.preempt == (11,) and d.start == ()
    # Nothing to preempt for a head of equal priority.
    assert schedule(devices, [q(1, 1, priority=0)], running, NOW).preempt == ()


def test_no_second_preemption_while_devices_are_on_their_way_back() -> None:
    devices = gpus([0, 0])
    running = [Running(10, 0, (0,), NOW - 100, None, stopping_until=NOW + 30), Running(11, 0, (1,), NOW, None)]
    assert schedule(devices, [q(1, 1, priority=5)], running, NOW).preempt == ()


def test_a_job_larger_than_the_server_never_blocks_the_queue() -> None:
    d = schedule(gpus([0, 0]), [q(1, 3), q(2, 1)], [], NOW)
    assert dict(d.start) == {2: (0,)}


def test_nothing_backfills_onto_the_devices_a_preempting_head_waits_for() -> None:
    # Found in review: L (priority 0, 10 h timeout) holds 0-1; H (priority 10) needs all 4; B (priority 10, 2 GPUs,
    # 1 h timeout) came after H. Preempting L while B takes 2-3 would leave H waiting on B and L stopped for nothing.
    devices = gpus([0, 0, 0, 0])
    running = [Running(10, 0, (0, 1), NOW - 100, 36_000.0)]
    d = schedule(devices, [q(1, 4, priority=10), q(2, 2, priority=10, timeout_s=3600)], running, NOW)
    assert d.preempt == (10,) and d.start == () and d.head == 1


def cluster(gpus_per_node: dict[str, int]) -> list[Device]:
    """A Slurm inventory's shape: each node its own domain, indices running over the nodes."""
    devices, index = [], 0
    for ordinal, (node, count) in enumerate(gpus_per_node.items()):
        devices += [Device(index + g, "gpu", "GPU", 0, ordinal, node=node) for g in range(count)]
        index += count
    return devices


def test_a_job_gets_gpus_on_each_of_its_nodes_never_split_within_a_node() -> None:
    devices = cluster({"n1": 2, "n2": 2, "n3": 1})
    # 2 nodes x 1 GPU: best fit takes the nodes with the fewest free (n3, then n1), keeping n2 whole.
    assert choose_devices(devices, 1, nodes=2) == (4, 0)
    # 1 node x 2 GPUs: one machine, never 1 + 1 across two (a 1-node job cannot span machines).
    assert choose_devices(devices, 2, nodes=1) == (0, 1)
    assert choose_devices([devices[0], devices[2], devices[4]], 2, nodes=1) is None
    assert choose_devices(devices, 2, nodes=3) is None  # n3 has one GPU only
    assert choose_devices(devices, 1, nodes=3) is not None


def test_residency_keeps_a_job_to_its_allowed_nodes_and_an_unplaceable_job_never_blocks() -> None:
    devices = cluster({"sp1": 2, "mia": 2})
    assert choose_devices(devices, 2, groups=(frozenset({"mia"}),)) == (2, 3)
    sp1 = (frozenset({"sp1"}),)
    br_only = Queued(1, 0, 1, 1.0, None, nodes=2, node_groups=sp1)  # 2 nodes, 1 allowed
    other = Queued(2, 0, 1, 2.0, None, node_groups=sp1)
    d = schedule(devices, [br_only, other], [], NOW)
    assert dict(d.start) == {2: (0,)} and d.head is None
    # Held devices count per node: with sp1 busy, a job kept to sp1 waits although mia is free.
    d = schedule(devices, [other], [Running(9, 0, (0, 1), NOW, None)], NOW)
    assert d.start == () and d.head == 2


def test_a_multi_node_job_stays_inside_one_partition() -> None:
    devices = cluster({"a1": 1, "b1": 1, "b2": 1})
    groups = (frozenset({"a1"}), frozenset({"b1", "b2"}))  # partitions A and B: only B has two machines
    assert choose_devices(devices, 1, nodes=2, groups=groups) == (1, 2)
    assert choose_devices(devices[:2], 1, nodes=2, groups=groups) is None  # a1 + b1 would span two partitions


def test_preemption_counts_only_the_machines_the_head_may_use() -> None:
    devices = cluster({"sp1": 2, "mia": 2})
    low = Running(9, 0, (0,), NOW - 10, None)  # holds one of sp1's two GPUs; mia is all free
    head = Queued(1, 10, 2, 1.0, None, node_groups=(frozenset({"sp1"}),))
    d = schedule(devices, [head], [low], NOW)
    assert d.preempt == (9,) and d.start == ()  # mia's free GPUs do not seat a job kept to sp1


def reference_schedule(devices: list[Device], queue: list[Queued], running: list[Running], now: float) -> Decision:
    """The scheduler as written before its per-shape memo, its stop at the head and its pre-ordered queue: every
    job looked at, every fit computed afresh. The real one must decide exactly as this does."""
    held = {i for r in running for i in r.devices}
    free = [d for d in devices if d.index not in held]
    starts: list[tuple[int, tuple[int, ...]]] = []
    preempt: list[int] = []
    head: Queued | None = None
    reservation, spare, eligible = math.inf, 0, set()
    for job in order(queue):
        if not could_ever_fit(devices, job):
            continue
        chosen = choose_devices(free, job.gpus, job.nodes, job.node_groups)
        if head is None:
            if chosen is not None:
                starts.append((job.id, chosen))
                free = [d for d in free if d.index not in chosen]
                continue
            head = job
            eligible = {d.index for d in job.eligible(devices)}
            free_for_head = sum(1 for d in free if d.index in eligible)
            mine = [_on(r, eligible) for r in running]
            reservation, spare = _reservation(free_for_head, mine, job.devices_needed)
            victims = _victims(job, free_for_head, mine)
            if victims:
                preempt.extend(victims)
                reservation, spare = now, 0
            continue
        if chosen is None:
            continue
        ends_in_time = job.timeout_s is not None and not math.isinf(reservation) and now + job.timeout_s <= reservation
        if not ends_in_time and len(set(chosen) & eligible) > spare:  # it would keep the head's devices: elsewhere?
            off_head = [d for d in free if d.index not in eligible]
            chosen = choose_devices(off_head, job.gpus, job.nodes, job.node_groups)
        if chosen is not None:
            starts.append((job.id, chosen))
            free = [d for d in free if d.index not in chosen]
            if not ends_in_time:
                spare -= len(set(chosen) & eligible)
    at = None if head is None or math.isinf(reservation) else reservation
    return Decision(tuple(starts), tuple(preempt), head.id if head else None, at)


def test_the_kept_queue_decides_as_a_fresh_sort_of_every_job_would() -> None:
    """Random clusters, running jobs and queues (many jobs of few shapes, as real queues are), the queue kept by
    `Queue` through adds and removals: the same decision as the reference, every time."""
    rng = random.Random(13)
    nodes = {"n1": 4, "n2": 4, "n3": 2}
    devices = cluster(nodes)
    groups = [None, (frozenset({"n1"}),), (frozenset({"n2", "n3"}),), (frozenset({"n1"}), frozenset({"n2"}))]
    for _ in range(300):
        shuffled = rng.sample(devices, len(devices))
        running, taken = [], 0
        for rid in range(rng.randint(0, 5)):
            n = rng.randint(1, 3)
            held = tuple(d.index for d in shuffled[taken : taken + n])
            taken += n
            if held:
                stopping = NOW + rng.choice([10, 60]) if rng.random() < 0.2 else None
                timeout = rng.choice([None, 300.0, 3600.0])
                running.append(
                    Running(100 + rid, rng.randint(0, 3), held, NOW - rng.randint(0, 600), timeout, stopping)
                )
        jobs = [
            Queued(
                i,
                rng.randint(0, 4),
                rng.choice([1, 1, 2, 4, 5]),
                float(rng.randint(0, 50)),
                rng.choice([None, 60.0, 600.0, 7200.0]),
                rng.choice([1, 1, 2]),
                rng.choice(groups),
            )
            for i in range(rng.randint(0, 60))
        ]
        kept = Queue(jobs[: len(jobs) // 2])
        for job in jobs[len(jobs) // 2 :]:
            kept.add(job)
        gone = rng.sample(jobs, len(jobs) // 5)
        for job in gone:
            kept.discard(job.id)
        left = [j for j in jobs if j not in gone]
        assert list(kept.ordered()) == order(left)
        decided = schedule(devices, kept.ordered(), running, NOW, ordered=True, shapes=kept.shapes())
        assert decided == reference_schedule(devices, left, running, NOW)
        assert schedule(devices, left, running, NOW) == decided


def why(d: Decision) -> dict[str, object]:
    """Every field of a decision, the reasons why the others wait included (equality compares the actions only)."""
    return dataclasses.asdict(d)


def test_a_decision_says_why_the_others_wait() -> None:
    devices = gpus([0] * 8)
    running = [
        Running(10, 0, (0, 1, 2, 3), NOW - 100, 200.0),  # ends at NOW + 100
        Running(11, 0, (4, 5), NOW - 50, 100.0),  # ends at NOW + 50
    ]
    queue = [
        q(1, 7),  # the head: 2 free now, 4 at NOW + 50, 8 at NOW + 100: its reservation, with 1 to spare
        q(2, 2),  # fits in the 2 free, but would still hold 2 at the reservation, where 1 is spare: held back
        q(3, 1, timeout_s=50),  # ends by the reservation: backfills
        q(4, 1),  # no known end, but 1 device is spare at the reservation: backfills
        q(5, 1),  # nothing left free
    ]
    assert why(schedule(devices, queue, running, NOW)) == {
        "start": ((3, (6,)), (4, (7,))),
        "preempt": (),
        "head": 1,
        "reservation_at": NOW + 100,
        "backfill_refused": (2,),
        "quota_blocked": (),
        "head_free": 2,
        "head_holders": (11, 10),  # soonest expected end first
        "free": 0,
    }
    # Everything starts: no head, nothing held, nobody waits, the rest free.
    assert why(schedule(devices, [q(1, 2), q(2, 1)], [], NOW)) == {
        "start": ((1, (0, 1)), (2, (2,))),
        "preempt": (),
        "head": None,
        "reservation_at": None,
        "backfill_refused": (),
        "quota_blocked": (),
        "head_free": 0,
        "head_holders": (),
        "free": 5,
    }


def test_a_quota_holds_its_jobs_and_never_the_queue() -> None:
    """Rule 5: the hook is asked before each job would start or become the head, with the jobs this decision starts
    before it; a job it holds is passed over and the pass goes on."""
    devices = gpus([0] * 5)
    running = [Running(10, 0, (0, 1), NOW, 100.0)]  # ends at NOW + 100
    asked: list[tuple[int, tuple[int, ...]]] = []

    def quota(job: Queued, starting: Sequence[Queued]) -> str | None:
        asked.append((job.id, tuple(s.id for s in starting)))
        held = job.id in (2, 5)
        return f"Job {job.id} is over its quota. To fix: wait for {len(starting)} jobs to end." if held else None

    queue = [
        q(1, 1),  # starts on device 2
        q(2, 1),  # held by the quota
        q(3, 4),  # the head: 2 free, 4 at NOW + 100, none to spare
        q(4, 1, timeout_s=50),  # ends before the reservation: backfills on device 3
        q(5, 1, timeout_s=50),  # would backfill, but the quota holds it
        q(6, 1),  # fits on device 4, but would delay the head
        q(7, 9),  # never fits this server: not asked
    ]
    assert why(schedule(devices, queue, running, NOW, quota_block=quota)) == {
        "start": ((1, (2,)), (4, (3,))),
        "preempt": (),
        "head": 3,
        "reservation_at": NOW + 100,
        "backfill_refused": (6,),
        "quota_blocked": (
            (2, "Job 2 is over its quota. To fix: wait for 1 jobs to end."),
            (5, "Job 5 is over its quota. To fix: wait for 2 jobs to end."),
        ),
        "head_free": 2,
        "head_holders": (10,),
        "free": 1,
    }
    assert asked == [(1, ()), (2, (1,)), (3, (1,)), (4, (1,)), (5, (1, 4)), (6, (1, 4))]


def test_the_head_counts_only_devices_and_holders_on_the_machines_it_may_use() -> None:
    devices = cluster({"sp1": 2, "mia": 2})
    running = [
        Running(8, 0, (2, 3), NOW - 10, 60.0),  # on mia, ends at NOW + 50: frees nothing the head may use
        Running(9, 0, (0, 1), NOW - 10, 500.0),  # on sp1, ends at NOW + 490
    ]
    head = Queued(1, 0, 2, 1.0, None, node_groups=(frozenset({"sp1"}),))
    d = schedule(devices, [head], running, NOW)
    assert (d.head, d.reservation_at, d.head_free, d.head_holders, d.preempt) == (1, NOW + 490, 0, (9,), ())
    assert _on(running[1], {0, 3}) == Running(9, 0, (0,), NOW - 10, 500.0)
    assert _on(running[0], {0, 1}).devices == ()


def test_the_reservation_is_the_first_known_end_that_frees_enough() -> None:
    ends = [Running(10, 0, (0, 1, 2), NOW, 100.0), Running(11, 0, (3, 4, 5, 6), NOW, 300.0)]
    assert _reservation(1, ends, 4) == (NOW + 100, 0)
    assert _reservation(1, ends, 2) == (NOW + 100, 2)  # 4 free then, 2 of them spare
    assert _reservation(1, ends, 6) == (NOW + 300, 2)
    assert _reservation(1, ends, 9) == (math.inf, 0)
    unknown = Running(12, 0, (7, 8, 9, 10, 11), NOW, None)  # no timeout: its devices never count
    assert _reservation(1, [unknown, *ends], 9) == (math.inf, 0)


def test_preemption_counts_stopping_devices_and_takes_nothing_when_not_enough() -> None:
    # One device on its way back and one a lower-priority job holds: the head needs both, so it takes the job's.
    devices = gpus([0, 0])
    running = [Running(10, 0, (0,), NOW - 100, None, stopping_until=NOW + 30), Running(11, 0, (1,), NOW, None)]
    assert schedule(devices, [q(1, 2, priority=5)], running, NOW).preempt == (11,)
    # Free plus stopping exactly what the head needs: nothing more is stopped.
    head = q(1, 2, priority=5)
    assert _victims(head, 1, running[:1]) == [] and _victims(head, 0, running) == [11]
    # Preempting every lower-priority job would still not seat the head: nobody is stopped for nothing.
    devices = gpus([0, 0, 0, 0])
    running = [Running(10, 0, (0,), NOW - 100, None), Running(11, 9, (1, 2, 3), NOW - 100, None)]
    d = schedule(devices, [q(1, 4, priority=5)], running, NOW)
    assert (d.preempt, d.head, d.start) == ((), 1, ())


def test_the_kept_queue_counts_its_shapes_through_adds_replacements_and_removals() -> None:
    one, two = (1, 1, None), (2, 1, None)
    kept = Queue([q(1, 1), q(2, 1)])
    assert set(kept.shapes()) == {one} and 1 in kept and 3 not in kept
    kept.add(q(1, 1, priority=5))  # the same job again, now of higher priority: it replaces the first
    kept.add(q(3, 2))
    assert [j.id for j in kept.ordered()] == [1, 2, 3] and kept.ordered()[0].priority == 5 and len(kept) == 3
    assert set(kept.shapes()) == {one, two}
    kept.discard(2)
    assert set(kept.shapes()) == {one, two} and 2 not in kept  # job 1 is still of shape `one`
    kept.discard(1)
    kept.discard(1)  # gone already: nothing happens
    assert set(kept.shapes()) == {two} and [j.id for j in kept.ordered()] == [3]
    kept.discard(3)
    assert set(kept.shapes()) == set() and len(kept) == 0


def test_the_kept_shapes_let_a_job_behind_the_head_backfill_after_its_twin_left() -> None:
    devices = gpus([0, 0, 0, 0])
    running = [Running(10, 0, (0, 1, 2), NOW - 100, 200.0)]  # ends at NOW + 100
    kept = Queue([q(1, 4), q(2, 1, timeout_s=50), q(3, 1, timeout_s=50)])
    kept.discard(2)  # job 3's shape is still queued: the pass must not stop behind the head
    d = schedule(devices, kept.ordered(), running, NOW, ordered=True, shapes=kept.shapes())
    assert dict(d.start) == {3: (3,)} and d.head == 1


class Reads(list[T]):
    """A list that counts how often it is gone through, and how many items were read."""

    def __init__(self, items: Iterable[T]) -> None:
        super().__init__(items)
        self.passes = self.read = 0

    def __iter__(self) -> Iterator[T]:
        self.passes += 1
        for item in super().__iter__():
            self.read += 1
            yield item


def test_a_pass_that_can_start_nothing_reads_the_queue_up_to_the_head_only() -> None:
    """The module's promise: an ordered queue is not sorted again, and behind the head the pass stops when no free
    devices are left, or (the queue's shapes known) when none of them seats any queued shape."""
    devices = gpus([0, 0, 0, 0])
    full = [Running(10, 0, (0, 1, 2, 3), NOW, None)]
    queue = Reads(q(i, 1) for i in range(1, 1001))
    assert schedule(devices, queue, full, NOW, ordered=True).head == 1 and queue.read == 1
    one_free = [Running(10, 0, (0, 1, 2), NOW, None)]
    queue = Reads(q(i, 2) for i in range(1, 1001))
    d = schedule(devices, queue, one_free, NOW, ordered=True, shapes={(2, 1, None)})
    assert (d.head, d.free, queue.read) == (1, 1, 1)


def test_a_pass_tests_each_shape_against_the_inventory_once_not_each_job() -> None:
    def passes_over_inventory(jobs: int) -> int:
        devices = Reads(gpus([0, 0, 0, 0]))
        too_big = [q(i, 8) for i in range(1, jobs + 1)]  # never fit this server
        assert schedule(devices, too_big, [], NOW, ordered=True) == Decision((), (), None, None)
        return devices.passes

    assert passes_over_inventory(1000) == passes_over_inventory(1)


def test_a_job_on_machines_the_head_may_not_use_backfills_behind_it() -> None:
    """Rule 3: a job that uses only devices the head will not need may backfill; the devices of a partition the
    head's data may not go to are such devices, whether or not the head's reservation is known."""
    devices = cluster({"sp1": 2, "mia": 2})
    sp1 = (frozenset({"sp1"}),)
    for timeout in (100.0, None):  # sp1's holder ends at NOW + 100, or at an unknown time
        running = [Running(9, 0, (0, 1), NOW, timeout)]
        queue = [Queued(1, 0, 2, 1.0, None, node_groups=sp1), Queued(2, 0, 1, 2.0, None), Queued(3, 0, 1, 3.0, None)]
        d = schedule(devices, queue, running, NOW)
        assert (dict(d.start), d.head, d.backfill_refused) == ({2: (2,), 3: (3,)}, 1, ())
    # Its best fit would be the head's free device (sp1's fullest machine): it is placed on mia instead; a job kept to
    # sp1 without a known end waits for the head.
    running = [Running(9, 0, (0,), NOW, 100.0)]
    kept_to_sp1 = Queued(3, 0, 1, 3.0, None, node_groups=sp1)
    queue = [Queued(1, 0, 2, 1.0, None, node_groups=sp1), Queued(2, 0, 1, 2.0, None), kept_to_sp1]
    d = schedule(devices, queue, running, NOW)
    assert (dict(d.start), d.head, d.backfill_refused) == ({2: (2,)}, 1, (3,))
