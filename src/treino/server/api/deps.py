"""What routes depend on, as `Annotated` types (the FastAPI project template's `deps.py`):

Ctx             the running server (treino.server.context.ServerContext)
SessionDep      a database session for the request
CurrentUser     the caller's Principal, from `Authorization: Bearer <token>` (401 without a valid one)
ReadJobs, ...   the caller, if its role holds that permission (403 otherwise); sensitive reads are audited
JobWriter       the job of the path, when the caller is that job's running attempt (its token) or an admin
"""

from __future__ import annotations

import logging
import operator
from collections.abc import Callable, Coroutine, Iterator
from typing import Annotated, Any

from fastapi import Depends, Path, Query, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import Select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from treino.errors import Conflict, NotFound, Unauthenticated
from treino.govern.access import SENSITIVE_PERMISSIONS, Principal
from treino.govern.models import Role
from treino.i18n import Msg
from treino.server.auth import is_job_token, require
from treino.server.context import ServerContext
from treino.server.db import ACTIVE_STATES, Job
from treino.server.disk import storage_fault
from treino.server.settings import INT_MAX, PAGE_MAX

log = logging.getLogger("treino.server")


async def context(request: Request) -> ServerContext:
    ctx: ServerContext = request.app.state.ctx
    return ctx


Ctx = Annotated[ServerContext, Depends(context)]


def session(ctx: Ctx) -> Iterator[Session]:
    with ctx.sessions() as s:
        yield s


SessionDep = Annotated[Session, Depends(session)]
_scheme = HTTPBearer(auto_error=False, description="A user's API token, or a job attempt's TREINO_JOB_TOKEN.")


Credentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_scheme)]


def token_of(credentials: HTTPAuthorizationCredentials | None) -> str:
    """The token of `Authorization: Bearer <token>` (401 without one)."""
    if credentials is None or not credentials.credentials.strip():
        raise Unauthenticated(Msg("Missing token. To fix: send 'Authorization: Bearer <token>' (treino --token)."))
    return credentials.credentials.strip()


async def bearer_token(credentials: Credentials) -> str:
    return token_of(credentials)


BearerToken = Annotated[str, Depends(bearer_token)]
JobId = Annotated[int, Path(ge=1, le=INT_MAX)]


async def current_user(ctx: Ctx, token: BearerToken) -> Principal:
    # async: a hot endpoint authenticates from the cache without a thread hop (treino.server.auth.Authenticator)
    return ctx.auth.principal(token)


CurrentUser = Annotated[Principal, Depends(current_user)]


def need(permission: str, *, unrecorded_ok: bool = False) -> Callable[..., Coroutine[Any, Any, Principal]]:
    """A dependency: the caller, if its role holds `permission` (access.PERMISSIONS), else 403. Uses of sensitive
    permissions are recorded in the audit chain (token.use); when that record cannot be written for want of disk
    or for a corrupt database, the request fails (507, 503), unless `unrecorded_ok`: then it goes on and
    `request.state.unrecorded` says why it was not recorded (audit verify: a verdict must not need a write)."""

    # One dependency on the scheme, not a chain of context -> token -> user: FastAPI introspects every node of the
    # graph on every request, and the job list's p99 under load is mostly that (benchmarks/server_bench.py).
    async def check(request: Request, credentials: Credentials) -> Principal:
        ctx: ServerContext = request.app.state.ctx
        who = ctx.auth.principal(token_of(credentials))
        require(who, permission)
        if permission in SENSITIVE_PERMISSIONS:
            detail = {"permission": permission, "path": request.url.path, "token": who.token_id}
            try:
                with ctx.sessions.begin() as s:
                    ctx.audit.append(s, actor=who.name, action="token.use", detail=detail)
            except (OSError, DBAPIError) as exc:
                fault = storage_fault(exc)
                if not unrecorded_ok or fault is None:
                    raise
                request.state.unrecorded = "the disk is full" if fault == "full" else "the database is corrupt"
                log.warning(
                    "%s by %s not recorded in the audit chain: %s", permission, who.name, getattr(exc, "orig", exc)
                )
        return who

    check.records_use = permission in SENSITIVE_PERMISSIONS and not unrecorded_ok  # type: ignore[attr-defined]
    return check


# One alias per permission of treino.govern.access.PERMISSIONS: `who: SubmitJobs` in a route's signature.
ReadInventory = Annotated[Principal, Depends(need("inventory.read"))]
ReadJobs = Annotated[Principal, Depends(need("jobs.read"))]
ReadMetrics = Annotated[Principal, Depends(need("metrics.read"))]
SubmitJobs = Annotated[Principal, Depends(need("jobs.submit"))]
CancelJobs = Annotated[Principal, Depends(need("jobs.cancel"))]
ManageUsers = Annotated[Principal, Depends(need("users.manage"))]
ManageTokens = Annotated[Principal, Depends(need("tokens.manage"))]
ManageGrants = Annotated[Principal, Depends(need("grants.manage"))]
ManageTransfers = Annotated[Principal, Depends(need("transfers.manage"))]
RegisterDatasets = Annotated[Principal, Depends(need("datasets.register"))]
ReadDatasets = Annotated[Principal, Depends(need("datasets.read"))]
ReadLineage = Annotated[Principal, Depends(need("lineage.read"))]
ReadAudit = Annotated[Principal, Depends(need("audit.read"))]
VerifyAudit = Annotated[Principal, Depends(need("audit.read", unrecorded_ok=True))]  # answers on a full disk too
RunErasure = Annotated[Principal, Depends(need("erasure.run"))]
ReportSubject = Annotated[Principal, Depends(need("subject.report"))]


PageLimit = Annotated[int, Query(ge=1, le=PAGE_MAX, description="At most this many, newest first.")]
BeforeId = Annotated[int | None, Query(ge=1, le=INT_MAX, description="The `next` of the page before.")]


def keyset_page(
    s: Session,
    query: Select[*tuple[Any, ...]],
    id_column: Any,
    limit: int,
    before_id: int | None,
    id_of: Callable[[Any], int] = operator.attrgetter("id"),
) -> tuple[list[Any], int | None]:
    """A page of `query`'s rows (its entities when it selects one), newest (highest id) first, those below
    `before_id` only, and the next page's `before_id` (None on the last page). A keyset, not an offset: a page costs
    the same however deep it is, and rows added meanwhile do not shift it."""
    if before_id is not None:
        query = query.where(id_column < before_id)
    query = query.order_by(id_column.desc()).limit(limit + 1)
    rows = [row[0] if len(row) == 1 else row for row in s.execute(query)]  # select(Model): the entities
    more = len(rows) > limit
    rows = rows[:limit]
    return rows, (int(id_of(rows[-1])) if more else None)


def job_or_404(s: Session, job_id: int) -> Job:
    job = s.get(Job, job_id)
    if job is None:
        raise NotFound(Msg("No job {job_id}. To fix: list jobs with 'treino jobs'.", job_id=job_id))
    return job


def job_writer(job_id: JobId, s: SessionDep, ctx: Ctx, token: BearerToken) -> Job:
    """The job itself (its attempt's token) or an admin may write its metrics and checkpoints."""
    job = job_or_404(s, job_id)
    if is_job_token(job.job_token_hash, token):
        if job.state not in ACTIVE_STATES:
            raise Conflict(
                Msg("Job {job_id} is {state}: its processes may no longer write to it.", job_id=job_id, state=job.state)
            )
        return job
    try:
        who = ctx.auth.principal(token)
    except Unauthenticated:
        who = None
    if who is None or who.role != Role.ADMIN:
        raise Unauthenticated(Msg("Only the job's own token (TREINO_JOB_TOKEN) or an admin may write this."))
    return job


JobWriter = Annotated[Job, Depends(job_writer)]
