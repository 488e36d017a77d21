"""GPU usage in GPU-hours and BRL, and the quotas that limit it (treino.server.usage, treino.server.quotas).

GET /api/v1/usage?since=&by=user|purpose|job&user=   jobs.read: an admin sees everyone's (or `user`'s), anyone else
                                                     only their own (another `user`: 403)
GET /api/v1/quotas                                   users.manage
PUT /api/v1/quotas   {user | role, gpu_hours_month?, concurrent_gpus?}   users.manage (both limits null: removed)
"""

from __future__ import annotations

import time
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from sqlalchemy import select

from treino.errors import Forbidden, SpecError
from treino.govern.access import Principal
from treino.govern.models import Role
from treino.i18n import Msg, to_data
from treino.server import quotas
from treino.server.api.deps import Ctx, ManageUsers, ReadJobs, SessionDep
from treino.server.context import ServerContext
from treino.server.db import Job, JobState, Quota
from treino.server.schemas import (
    HeldJob,
    QuotaIn,
    QuotaList,
    QuotaOut,
    QuotaStanding,
    UsageOut,
    UsageRowOut,
    responses,
)
from treino.server.settings import NAME_PATTERN
from treino.server.usage import By, parse_since, report, run_sacct

router = APIRouter(prefix="/api/v1", tags=["usage"], responses=responses(401, 403, 422))
Since = Annotated[
    str | None,
    Query(max_length=40, pattern=r"^[^\x00]*$", description="A date (2026-11-01), or a duration back (30d, 12h)."),
]
UserFilter = Annotated[str | None, Query(pattern=NAME_PATTERN, description="One user's usage (admins).")]


def usage_out(ctx: ServerContext, who: Principal, since: str | None, by: By, user: str | None) -> UsageOut:
    """The usage `who` may see: an admin everyone's (or `user`'s), anyone else their own only."""
    if who.role != Role.ADMIN:
        if user is not None and user != who.name:
            raise Forbidden(
                Msg("Only admins see other users' usage. To fix: leave out user, or use {name!r}.", name=who.name)
            )
        user = who.name
    now = time.time()
    start = parse_since(since, now)
    slurm = ctx.backend.name == "slurm"
    sacct = run_sacct if slurm else None
    with ctx.sessions() as s:
        found = report(s, start, now, by, user, getattr(ctx.backend, "tag", None) if slurm else None, sacct, now)
        waits = ctx.engine.quota_holds
        # the last pass's reasons, of the jobs still queued (one cancelled since may be in them)
        queued = select(Job.id, Job.owner).where(Job.id.in_(list(waits)), Job.state == JobState.QUEUED)
        owners = {i: o for i, o in s.execute(queued)}
        held_by = quotas.standing(s, user, now) if user is not None else None
    price = ctx.settings.gpu_hour_price
    rows = [
        UsageRowOut(
            key=r.key,
            user=r.user,
            purpose=r.purpose,
            job_id=r.job_id,
            job_name=r.job_name,
            jobs=r.jobs,
            gpu_hours=r.gpu_hours,
            cost_brl=price.cost_brl(r.gpu_hours) if price else None,
        )
        for r in found.rows
    ]
    return UsageOut(
        since=found.since,
        until=found.until,
        by=by,
        scope=user or "everyone",
        source=found.source,
        source_note=found.source_note,
        brl_per_gpu_hour=price.brl_per_gpu_hour if price else None,
        price_basis=price.basis if price else None,
        price_basis_msg=to_data(price.basis) if price and isinstance(price.basis, Msg) else None,
        rows=rows,
        gpu_hours=found.gpu_hours,
        cost_brl=price.cost_brl(found.gpu_hours) if price else None,
        held=[
            HeldJob(job_id=i, owner=owners[i], reason=why, reason_msg=to_data(why) if isinstance(why, Msg) else None)
            for i, why in sorted(waits.items())
            if i in owners and (user is None or owners[i] == user)
        ],
        quota=None
        if held_by is None
        else QuotaStanding(
            set_for=held_by[0].set_for,
            gpu_hours_month=held_by[0].gpu_hours_month,
            concurrent_gpus=held_by[0].concurrent_gpus,
            used_gpu_hours_month=held_by[1],
            gpus_running=held_by[2],
            resets_at=held_by[3],
        ),
    )


@router.get("/usage", response_model=UsageOut)
def usage(
    ctx: Ctx,
    who: ReadJobs,
    since: Since = None,
    by: Literal["user", "purpose", "job"] = "user",
    user: UserFilter = None,
) -> UsageOut:
    return usage_out(ctx, who, since, by, user)


def _out(q: Quota) -> QuotaOut:
    return QuotaOut(
        kind=q.kind,
        name=q.name,
        gpu_hours_month=q.gpu_hours_month,
        concurrent_gpus=q.concurrent_gpus,
        set_by=q.set_by,
        set_at=q.set_at,
    )


@router.get("/quotas", response_model=QuotaList)
def quota_list(s: SessionDep, _who: ManageUsers) -> QuotaList:
    return QuotaList(quotas=[_out(q) for q in quotas.all_quotas(s)])


@router.put("/quotas", response_model=QuotaOut, responses=responses(413))
def quota_set(body: QuotaIn, ctx: Ctx, who: ManageUsers) -> QuotaOut:
    if (body.user is None) == (body.role is None):
        raise SpecError("user", Msg('give exactly one of user and role. To fix: e.g. {{"user": "ana"}}.'))
    kind, name = ("user", body.user) if body.user is not None else ("role", str(body.role))
    with ctx.sessions.begin() as s:
        row = quotas.set_quota(s, kind, name, body.gpu_hours_month, body.concurrent_gpus, who.name)
        detail = {kind: name, "gpu_hours_month": body.gpu_hours_month, "concurrent_gpus": body.concurrent_gpus}
        ctx.audit.append(s, actor=who.name, action="quota.set", detail=detail)
        out = _out(row)
    ctx.engine.quotas_changed()  # a raised limit may let a held job start now
    return out
