"""Why each queued job waits, read off the scheduler's own decision (treino.server.waits): on hand-made queues, and
as the engine keeps its last pass (in-process, a real database, the local backend's real processes)."""

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tests.conftest import Database
from tests.server.conftest import kill_jobs
from treino.govern.access import Principal, Role
from treino.server.backend import LocalBackend, Placement
from treino.server.context import ServerContext
from treino.server.db import make_engine, make_sessionmaker, migrate, sqlite_url
from treino.server.inventory import Device, cpu_inventory
from treino.server.scheduler import Queue, Queued, Running, schedule
from treino.server.settings import Settings
from treino.server.spec import JobSpec
from treino.server.waits import Snapshot, Wait, WaitReason, Waits

NOW = 1000.0


def gpus(count: int) -> list[Device]:
    return [Device(i, "gpu", "H100", 80 * 2**30, 0) for i in range(count)]


def q(id: int, gpus: int, priority: int = 0, timeout_s: float | None = None) -> Queued:
    return Queued(id, priority, gpus, float(id), timeout_s)


def waits_of(
    devices: list[Device], queue: list[Queued], running: list[Running], **kwargs: object
) -> dict[int, Wait | None]:
    kept = Queue(queue)
    decision = schedule(devices, kept.ordered(), running, NOW, ordered=True, shapes=kept.shapes(), **kwargs)  # type: ignore[arg-type]
    snapshot = Snapshot(decision, tuple(kept.ordered()), tuple(devices))
    return {job.id: snapshot.wait(job.id) for job in queue}


def test_the_head_waits_for_resources_naming_the_jobs_that_hold_them_and_when_they_end() -> None:
    running = [Running(10, 0, (0, 1), NOW - 100, 700.0), Running(11, 0, (2,), NOW - 100, None)]
    # 2 GPUs free. Job 5 (priority 3) starts first; job 1 (3 GPUs) is then the head, due at NOW + 600 when job 10
    # ends; job 2 (1 GPU, no timeout) fits but would delay it; job 3 (3 GPUs) waits behind it in FIFO order; job 4
    # starts in the last free GPU (it ends before the head's reservation).
    queue = [q(1, 3), q(2, 1), q(3, 3), q(4, 1, timeout_s=60), q(5, 1, priority=3)]
    w = waits_of(gpus(5), queue, running)
    assert w[5] is None and w[4] is None  # started: not waiting
    head = w[1]
    assert head is not None and head.reason == WaitReason.RESOURCES and head.position == 1
    assert (head.blocked_by, head.gpus_needed, head.gpus_free, head.until) == ((10, 11), 3, 1, NOW + 600)
    assert "needs 3 device(s), 1 free; held by jobs 10, 11, expected free at" in head.detail()
    assert w[2] == Wait(WaitReason.BACKFILL, 2, (1,), 1, None, NOW + 600)
    assert w[3] == Wait(WaitReason.QUEUE, 3, (1,), 3, 0)


def test_a_lower_priority_job_behind_a_waiting_higher_one_waits_for_priority() -> None:
    running = [Running(10, 9, (0,), NOW - 100, None)]  # outranks both: no preemption
    w = waits_of(gpus(1), [q(1, 1, priority=0), q(2, 1, priority=5)], running)
    assert w[2] is not None and (w[2].reason, w[2].position, w[2].blocked_by) == (WaitReason.RESOURCES, 1, (10,))
    assert "free time unknown" in w[2].detail()
    assert w[1] is not None and (w[1].reason, w[1].position, w[1].blocked_by) == (WaitReason.PRIORITY, 2, (2,))


def test_backfill_refused_says_until_when() -> None:
    running = [Running(10, 0, (0, 1, 2), NOW - 100, 700.0)]
    w = waits_of(gpus(4), [q(1, 4), q(2, 1, timeout_s=3000)], running)
    assert w[2] is not None and w[2].reason == WaitReason.BACKFILL and w[2].until == NOW + 600
    assert w[2].detail().startswith("fits now, but would delay job 1, due to start at ")


def test_a_quota_passes_a_job_over_with_its_message_and_sees_the_jobs_starting_before_it() -> None:
    seen: list[Sequence[int]] = []

    def quota(job: Queued, starting: Sequence[Queued]) -> str | None:
        seen.append([j.id for j in starting])
        return "ana has 1 of 1 concurrent GPUs. To fix: wait." if job.id == 2 else None

    w = waits_of(gpus(2), [q(1, 1), q(2, 1), q(3, 1)], [], quota_block=quota)
    assert w[2] == Wait(WaitReason.QUOTA, 1, gpus_needed=1, note="ana has 1 of 1 concurrent GPUs. To fix: wait.")
    assert w[1] is None and w[3] is None  # job 3 took the GPU job 2 could not
    assert seen == [[], [1], [1]]


def test_preempting_head_and_a_job_no_machine_can_seat() -> None:
    running = [Running(10, 0, (0, 1), NOW - 100, None)]
    w = waits_of(gpus(2), [q(1, 2, priority=5), q(2, 3)], running)
    assert w[1] is not None and (w[1].reason, w[1].preempting, w[1].blocked_by) == (WaitReason.RESOURCES, True, (10,))
    assert w[2] is not None and w[2].reason == WaitReason.RESOURCES and "cannot seat it" in w[2].detail()


def test_a_job_pending_in_slurm_and_an_unreachable_backend() -> None:
    snapshot = Snapshot(schedule(gpus(1), [q(1, 1)], [Running(9, 0, (0,), NOW, None)], NOW), (q(1, 1),), ())
    assert Waits(None, {7: "Priority"}).of(7, "running") == Wait(WaitReason.SLURM, None, note="Priority")
    assert Waits(None, {7: "Priority"}).of(8, "running") is None
    down = Waits(snapshot, {}, "slurmctld down").of(1, "queued")
    assert down is not None and (down.reason, down.position, down.note) == (WaitReason.BACKEND, 1, "slurmctld down")
    assert Waits(snapshot, {}).of(1, "succeeded") is None


class PendingInSlurm(LocalBackend):
    """The local backend, whose attempts say what a Slurm job pending in its queue says (treino.server.slurm)."""

    def placement(self, handle: dict[str, Any]) -> Placement | None:
        return Placement((), "pending", "ReqNodeNotAvail, UnavailableNodes:gpu-01")


def test_the_engine_keeps_its_last_pass_and_the_backend_s_reasons(tmp_path: Path, database: Database) -> None:
    db = make_engine(database.new_url() or sqlite_url(tmp_path))
    migrate(db)
    settings = Settings(tmp_path, "http://127.0.0.1:0", key=b"k" * 32)
    ctx = ServerContext.create(settings, make_sessionmaker(db), PendingInSlurm(cpu_inventory(1)))
    admin = Principal("admin", Role.ADMIN, 0, None)
    try:
        holder = ctx.submissions.submit(JobSpec(name="hold", command=["sleep", "600"], priority=9), admin).id
        for _ in range(3):
            ctx.engine.tick()
        queued = [ctx.submissions.submit(JobSpec(name=f"q{i}", command=["true"]), admin).id for i in range(2)]
        for _ in range(3):
            ctx.engine.tick()
        waits = ctx.engine.waits()
        assert waits.of(holder, "running") == Wait(
            WaitReason.SLURM, None, note="ReqNodeNotAvail, UnavailableNodes:gpu-01"
        )
        first, second = (waits.of(i, "queued") for i in queued)
        assert first is not None and (first.reason, first.position, first.blocked_by) == ("resources", 1, (holder,))
        assert second is not None and (second.reason, second.position, second.blocked_by) == ("queue", 2, (queued[0],))
    finally:
        kill_jobs(tmp_path)
        db.dispose()
