"""Quotas: an admin's limits on a user's (or a role's) GPUs, kept in the `quotas` table (treino.server.db.Quota).

    gpu_hours_month   GPU-hours per calendar month (server's local time; resets on the 1st at 00:00), counted as
                      `treino usage` counts them (treino.server.usage). At submit (`check_admission`): a job is
                      refused (403, rule "quota") when the month's hours are spent, or when its worst case
                      (GPUs x timeout_minutes) would take them past the limit. A queued job does not start while
                      they are spent (`quota_block`); running jobs are never stopped for it.
    concurrent_gpus   GPUs a user's running jobs hold at once. A job over it is admitted and waits in the queue
                      (`quota_block`: the engine asks before it starts a job) until enough of the user's jobs end;
                      one that alone asks for more than the limit is refused at submit (it could never start).

A user's own row wins over their role's; a limit left None is no limit. No row: no quota.
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from treino.errors import PolicyViolation
from treino.govern.models import User
from treino.i18n import Msg
from treino.server.db import ACTIVE_STATES, Job, Quota
from treino.server.scheduler import Queued, QuotaBlock
from treino.server.spec import JobSpec
from treino.server.usage import gpu_hours_of, gpus_held, month_start, next_month_start

RULE = "quota"  # the PolicyViolation's rule, and the wait reason's first word


@dataclass(frozen=True)
class Limits:
    gpu_hours_month: float | None
    concurrent_gpus: int | None
    set_for: str  # "user alice" or "role engineer": whose row it is


class QuotaBook:
    """Every quota row, read once (the table holds one row per user or role with a quota), and what each user's
    limits are checked against, read once per user: a scheduling pass asks it for each job it is about to start
    with no query at all when nobody has a quota, and with one per user, not per job, when some do."""

    def __init__(self, s: Session) -> None:
        self._rows = {(q.kind, q.name): q for q in s.scalars(select(Quota))}
        self._roles: dict[str, str | None] = {}
        self._running: dict[str, int] = {}  # user -> GPUs their running jobs hold
        self._used: dict[str, float] = {}  # user -> GPU-hours this month

    def running(self, s: Session, user: str) -> int:
        if user not in self._running:
            self._running[user] = gpus_running(s, user)
        return self._running[user]

    def used(self, s: Session, user: str, now: float) -> float:
        if user not in self._used:
            self._used[user] = gpu_hours_of(s, user, month_start(now), now, now)
        return self._used[user]

    @property
    def empty(self) -> bool:
        return not self._rows

    def limits_for(self, s: Session, user: str) -> Limits | None:
        if not self._rows:
            return None
        row = self._rows.get(("user", user))
        if row is None:
            if user not in self._roles:
                self._roles[user] = s.scalar(select(User.role).where(User.name == user))
            role = self._roles[user]
            row = self._rows.get(("role", role)) if role is not None else None
        if row is None:
            return None
        return Limits(row.gpu_hours_month, row.concurrent_gpus, f"{row.kind} {row.name}")


def gpus_running(s: Session, user: str) -> int:
    """GPUs `user`'s running and stopping jobs hold now."""
    held = s.scalar(
        select(func.sum(gpus_held())).where(Job.owner == user, Job.state.in_([str(x) for x in ACTIVE_STATES]))
    )
    return int(held or 0)


def _when(ts: float) -> str:
    return dt.datetime.fromtimestamp(ts).strftime("%Y-%m-%d %H:%M")


def _whose(limits: Limits) -> Msg:
    """'user alice', 'role engineer', as a Msg (the kind translated, in a client that words it)."""
    kind, _, name = limits.set_for.partition(" ")
    return Msg("{kind} {name}", kind=Msg(kind), name=name)


def _raise_it(limits: Limits) -> str:
    kind, _, name = limits.set_for.partition(" ")
    return f"'treino quotas set --{kind} {name} ...'"


def quota_block(
    s: Session, job: Job, starting_gpus: int = 0, now: float | None = None, book: QuotaBook | None = None
) -> str | None:
    """Why `job` may not start now for its owner's quota (beginning "quota: "), or None when it may: a Msg, which a
    job's `wait` also gives as data (WaitOut.note_msg) for clients that word it in their language.
    `starting_gpus`: GPUs of the owner's jobs the same scheduling pass is starting (not yet running)."""
    need = job.gpus * int(job.spec.get("nodes", 1) or 1)
    now = time.time() if now is None else now
    return _block(s, job.owner, need, starting_gpus, now, book or QuotaBook(s))


def _block(s: Session, owner: str, need: int, starting_gpus: int, now: float, book: QuotaBook) -> str | None:
    limits = book.limits_for(s, owner)
    if limits is None:
        return None
    if limits.concurrent_gpus is not None:
        held = book.running(s, owner) + starting_gpus
        if held + need > limits.concurrent_gpus:
            return Msg(
                "quota: {owner}'s jobs hold {held} of the {limit} GPU(s) their quota allows at once ({whose}); this "
                "job needs {need}. It starts when enough of them end.",
                owner=owner,
                held=held,
                limit=limits.concurrent_gpus,
                whose=_whose(limits),
                need=need,
            )
    if limits.gpu_hours_month is not None:
        used = book.used(s, owner, now)
        if used >= limits.gpu_hours_month:
            # Everyone who lists jobs reads this: the month's quota is spent, not how much was used (treino usage
            # shows that, to the user and admins only)
            return Msg(
                "quota: {owner}'s {hours:g} GPU-hours of this month are spent ({whose}). It starts when the quota "
                "resets, {resets}.",
                owner=owner,
                hours=limits.gpu_hours_month,
                whose=_whose(limits),
                resets=_when(next_month_start(now)),
            )
    return None


def standing(s: Session, user: str, now: float) -> tuple[Limits, float, int, float] | None:
    """`user`'s limits, GPU-hours used this month, GPUs held now and when the month resets; None: no quota."""
    book = QuotaBook(s)
    limits = book.limits_for(s, user)
    if limits is None:
        return None
    return limits, book.used(s, user, now), book.running(s, user), next_month_start(now)


def check_admission(s: Session, spec: JobSpec, user: str, now: float | None = None) -> None:
    """PolicyViolation("quota") for a submit that its owner's quota refuses: the month's GPU-hours spent, or its
    worst case (GPUs x timeout) past what is left, or more GPUs than it may ever hold at once."""
    now = time.time() if now is None else now
    limits = QuotaBook(s).limits_for(s, user)
    if limits is None:
        return
    need = spec.gpus * spec.nodes
    if limits.concurrent_gpus is not None and need > limits.concurrent_gpus:
        raise PolicyViolation(
            RULE,
            Msg(
                "the job asks for {need} GPU(s), but {user}'s quota ({set_for}) allows {concurrent_gpus} at once, so "
                "it could never start. To fix: ask for at most {concurrent_gpus} GPU(s), or ask an admin to raise "
                "concurrent_gpus ({how}).",
                need=need,
                user=user,
                set_for=limits.set_for,
                concurrent_gpus=limits.concurrent_gpus,
                how=_raise_it(limits),
            ),
        )
    if limits.gpu_hours_month is None:
        return
    used = gpu_hours_of(s, user, month_start(now), now, now)
    worst = need * spec.timeout_minutes / 60 if spec.timeout_minutes else 0.0
    if used < limits.gpu_hours_month and used + worst <= limits.gpu_hours_month:
        return
    resets = _when(next_month_start(now))
    left = max(0.0, limits.gpu_hours_month - used)
    what: Msg
    if used >= limits.gpu_hours_month:
        what = Msg("the month's GPU-hours are spent")
        fix = Msg("wait for the reset on {resets}", resets=resets)
    else:
        what = Msg(
            "this job may use up to {worst:.2f} more ({need} GPU(s) x timeout_minutes={timeout_minutes:g}), "
            "and {left:.2f} are left",
            worst=worst,
            need=need,
            timeout_minutes=spec.timeout_minutes,
            left=left,
        )
        fix = Msg(
            "submit it with a shorter timeout_minutes or on fewer GPUs, or wait for the reset on {resets}",
            resets=resets,
        )
    raise PolicyViolation(
        RULE,
        Msg(
            "{user} has used {used:.2f} of {gpu_hours_month:g} GPU-hours this month ({set_for}): {what}. The quota "
            "resets on {resets}. To fix: {fix}, or ask an admin to raise it ({how}).",
            user=user,
            used=used,
            gpu_hours_month=limits.gpu_hours_month,
            set_for=limits.set_for,
            what=what,
            resets=resets,
            fix=fix,
            how=_raise_it(limits),
        ),
    )


def all_quotas(s: Session) -> list[Quota]:
    """Every quota, roles' then users', by name."""
    return list(s.scalars(select(Quota).order_by(Quota.kind, Quota.name)))


def set_quota(
    s: Session, kind: str, name: str, gpu_hours_month: float | None, concurrent_gpus: int | None, by: str
) -> Quota:
    """Create or replace the quota of user or role `name` (both limits None: the row is removed, no quota)."""
    row = s.scalar(select(Quota).where(Quota.kind == kind, Quota.name == name))
    if gpu_hours_month is None and concurrent_gpus is None:
        if row is not None:
            s.delete(row)
        return Quota(kind=kind, name=name, set_by=by, set_at=time.time())
    if row is None:
        row = Quota(kind=kind, name=name, set_by=by)
        s.add(row)
    row.gpu_hours_month, row.concurrent_gpus = gpu_hours_month, concurrent_gpus
    row.set_by, row.set_at = by, time.time()
    s.flush()
    return row


def blocker(s: Session, now: float) -> QuotaBlock | None:
    """The scheduler's `quota_block` for one pass (treino.server.scheduler, rule 5): `quota_block` of each job it is
    about to start, counting the GPUs of the owner's jobs this pass already starts. None when nobody has a quota."""
    book = QuotaBook(s)
    if book.empty:
        return None
    needs: dict[int, tuple[str, int]] = {}  # job id -> (owner, GPUs), of the jobs asked about in this pass

    def blocked(queued: Queued, starting: Sequence[Queued]) -> str | None:
        owner = s.scalar(select(Job.owner).where(Job.id == queued.id))  # the owner only: a spec may be megabytes
        if owner is None:
            return None
        needs[queued.id] = (owner, queued.devices_needed)
        theirs = sum(gpus for who, gpus in (needs.get(q.id, ("", 0)) for q in starting) if who == owner)
        return _block(s, owner, queued.devices_needed, theirs, now, book)

    return blocked
