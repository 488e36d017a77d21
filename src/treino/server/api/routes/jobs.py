"""Jobs: submit, list, show, cancel, logs, metrics and checkpoints.

POST /api/v1/jobs                          a JobSpec -> 201 JobPublic; 422 field errors, too many GPUs, or a plan
                                           that does not fit (with the planner's advice); 403 a dataset refused;
                                           with an Idempotency-Key: 200 and the first job on a repeat, 409 if the
                                           key came with another spec
GET  /api/v1/jobs?state=&limit=&before_id=  summaries (no spec), newest first; `next` is the next page's before_id;
                                           a queued job's `wait` (why, its position) from the scheduler's last pass,
                                           progress and times (treino.server.waits, treino.server.progress)
GET  /api/v1/jobs/{id}                     one job, its attempts and checkpoints
POST /api/v1/jobs/{id}/cancel
POST /api/v1/jobs/{id}/resubmit            {"from_scratch": false} -> 201 JobPublic: a new job continuing from the
                                           job's last checkpoint (treino.server.resubmission); 409 not finished or
                                           no checkpoint; 403 not the owner nor an admin, or erased data
GET  /api/v1/jobs/{id}/logs?attempt=&offset=   a chunk of the attempt's output, and the next offset (--logs-visible-to)
GET  /api/v1/jobs/{id}/metrics?since_step=
POST /api/v1/jobs/{id}/metrics             the job's own token (TREINO_JOB_TOKEN) or an admin's
POST /api/v1/jobs/{id}/checkpoints         likewise
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

from fastapi import APIRouter, Header, Query, Response
from sqlalchemy import insert, select
from starlette.types import ASGIApp, Receive, Scope, Send

from treino.errors import Forbidden, SpecError, TreinoError
from treino.govern.access import may_read_logs, require_log_reader
from treino.govern.models import Role
from treino.i18n import Msg
from treino.server import failures, metric_series
from treino.server.api.deps import (
    CancelJobs,
    Ctx,
    JobId,
    JobWriter,
    ReadJobs,
    ReadMetrics,
    SessionDep,
    SubmitJobs,
    job_or_404,
    keyset_page,
)
from treino.server.auth import require
from treino.server.context import PageKey, ServerContext
from treino.server.db import Attempt, Checkpoint, Job, JobState, MetricPoint
from treino.server.lineage import record_checkpoint
from treino.server.resubmission import resubmit as resubmit_job
from treino.server.schemas import (
    SUMMARY_COLUMNS,
    AttemptOut,
    CheckpointAck,
    CheckpointIn,
    CheckpointOut,
    JobDetail,
    JobList,
    JobPublic,
    JobSummary,
    LogChunk,
    MetricOut,
    MetricsIn,
    MetricsOut,
    ResubmitIn,
    computed_fields,
    may_see_env,
    path_exists,
    responses,
)
from treino.server.settings import (
    IDEMPOTENCY_KEY_PATTERN,
    INT_MAX,
    JOBS_CACHE_S,
    JOBS_PAGE_DEFAULT,
    JOBS_PAGE_MAX,
    LOG_CHUNK_BYTES_MAX,
    METRIC_POINTS_MAX,
)
from treino.server.spec import JobSpec

router = APIRouter(prefix="/api/v1/jobs", tags=["jobs"], responses=responses(401, 422))
Step = Annotated[int, Query(ge=-1, le=INT_MAX)]
FINISHED = (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)


IdempotencyKey = Annotated[
    str | None,
    Header(
        pattern=IDEMPOTENCY_KEY_PATTERN,
        description="Any 1-200 printable ASCII characters, new for each job: the same key with the same spec within "
        "24 h returns the first job (200) instead of a second one; with another spec it is a 409.",
    ),
]
REPLAYED: dict[int | str, dict[str, Any]] = {
    200: {"model": JobPublic, "description": "The job first submitted with this Idempotency-Key."}
}

HIDDEN_DETAIL = failures.HIDDEN_DETAIL


@router.post("", status_code=201, response_model=JobPublic, responses={**responses(403, 409, 413), **REPLAYED})
def submit(
    spec: JobSpec, ctx: Ctx, who: SubmitJobs, response: Response, idempotency_key: IdempotencyKey = None
) -> JobPublic:
    job, created = ctx.submissions.submit_once(spec, who, idempotency_key)
    if created:
        ctx.job_lists.clear()  # a submitter's next listing shows the job
    else:
        response.status_code = 200
    return JobPublic.of(job, show_env=True)


@router.get("", response_model=JobList, responses=responses(403))
async def jobs(
    ctx: Ctx,
    _who: ReadJobs,
    state: JobState | None = None,
    limit: Annotated[int, Query(ge=1, le=JOBS_PAGE_MAX)] = JOBS_PAGE_DEFAULT,
    before_id: Annotated[int | None, Query(ge=1, le=INT_MAX)] = None,
) -> Response:
    # Served from a cache at most JOBS_CACHE_S old, as bytes, and read off the event loop: a list of 1,000 jobs
    # polled by 50 clients must not be read and validated 50 times a second, nor stop the others' answers while it
    # is (benchmarks/server_bench.py).
    def read() -> bytes:
        # The summary's columns, not the spec: of it only the two values progress reads (treino.server.progress).
        extra = (Job.last_metric_at, Job.spec["total_steps"], Job.spec["args"])
        query = select(*(getattr(Job, f) for f in SUMMARY_COLUMNS), *extra)
        if state:
            query = query.where(Job.state == state)  # ix_jobs_state_id
        waits = ctx.engine.waits()  # the scheduler's last pass, once per page: no query per row
        with ctx.sessions() as s:
            rows, after = keyset_page(s, query, Job.id, limit, before_id)
            summaries = []
            for r in rows:
                columns = dict(zip(SUMMARY_COLUMNS, r, strict=False))
                last_metric_at, total, args = r[-3:]
                computed = computed_fields(columns, total, args, last_metric_at, waits.of(r.id, r.state))
                summaries.append(JobSummary.model_validate(columns | computed))
            page = JobList(jobs=summaries, next=after)
        return page.model_dump_json().encode()

    body = await ctx.job_lists.page((state.value if state else None, limit, before_id), JOBS_CACHE_S, read)
    return Response(body, media_type="application/json")


LIST_PATH = router.prefix
STATES = frozenset(s.value for s in JobState)


def page_key(query: bytes) -> PageKey | None:
    """The page a list query asks for, when it is spelled plainly (`state=queued&limit=50&before_id=7`, each at most
    once, numbers without signs or leading zeros, in range), else None: FastAPI then parses and validates it."""
    state, limit, before_id = None, JOBS_PAGE_DEFAULT, None
    seen = set()
    for pair in query.split(b"&") if query else ():
        name, _, value = pair.partition(b"=")
        if name in seen or not value.isalnum():  # bytes: ASCII letters and digits only, never empty
            return None
        seen.add(name)
        if name == b"state" and value.decode() in STATES:
            state = value.decode()
        elif name in (b"limit", b"before_id") and value.isdigit() and value[0] != ord("0") and len(value) <= 19:
            number = int(value)
            if name == b"limit" and number <= JOBS_PAGE_MAX:
                limit = number
            elif name == b"before_id" and number <= INT_MAX:
                before_id = number
            else:
                return None
        else:
            return None
    return state, limit, before_id


class CachedJobList:
    """GET /api/v1/jobs answered straight from the page cache (ServerContext.job_lists) when it holds a fresh page
    and the token is one the authenticator knows: no routing, no dependency graph, no validation, which are most of
    a cached page's cost (benchmarks/server_bench.py: 50 clients polling the list). Everything else (a page to read,
    a query spelled otherwise, a cookie, an unknown, refused or rate-limited token) goes on to the route, which
    decides: the answer is the route's own page, byte for byte, with the same headers.

    It sits inside AuthThrottle and SecurityHeaders (api/__init__.py): a throttled address is refused before it,
    and its answers carry the security headers."""

    def __init__(self, app: ASGIApp, ctx: ServerContext) -> None:
        self.app = app
        self.ctx = ctx

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        body = self.cached(scope) if scope["type"] == "http" and scope["path"] == LIST_PATH else None
        if body is None:
            await self.app(scope, receive, send)
            return
        headers = [(b"content-length", str(len(body)).encode()), (b"content-type", b"application/json")]
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        await send({"type": "http.response.body", "body": body})

    def cached(self, scope: Scope) -> bytes | None:
        if scope["method"] != "GET":
            return None
        key = page_key(scope["query_string"])
        page = None if key is None else self.ctx.job_lists.ready(key, JOBS_CACHE_S)
        if page is None:
            return None
        # The first Authorization header, as the route's HTTPBearer reads it (a second one is not a second chance).
        authorization = next((v for k, v in scope["headers"] if k == b"authorization"), b"").decode("latin-1")
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        try:
            require(self.ctx.auth.principal(token.strip()), "jobs.read")  # the route's own check: ReadJobs
        except TreinoError:
            return None  # the route answers it (401, 403), and AuthThrottle counts a 401
        return page


@router.get("/{job_id}", response_model=JobDetail, responses=responses(403, 404))
def job(job_id: JobId, ctx: Ctx, s: SessionDep, who: ReadJobs) -> JobDetail:
    j = job_or_404(s, job_id)
    public = JobPublic.of(j, may_see_env(who, j), ctx.engine.waits().of(j.id, j.state))
    if public.failure_detail and not may_read_logs(who, j.owner, ctx.settings.logs_visible_to):
        public.failure_detail = HIDDEN_DETAIL  # it quotes the job's output, which this reader may not see
    attempts = s.scalars(select(Attempt).where(Attempt.job_id == job_id).order_by(Attempt.number))
    checkpoints = s.scalars(select(Checkpoint).where(Checkpoint.job_id == job_id).order_by(Checkpoint.step))
    where = ("placement", "slurm_job_id", "partition", "slurm_restarts")
    return JobDetail(
        **public.model_dump(),
        history=[
            AttemptOut(
                number=a.number,
                devices=a.devices,
                started_at=a.started_at,
                ended_at=a.ended_at,
                exit_code=a.exit_code,
                outcome=a.outcome,
                placement={k: a.handle[k] for k in where if k in a.handle},
            )
            for a in attempts
        ],
        checkpoints=[
            CheckpointOut(
                step=c.step,
                path=c.path,
                bytes=c.bytes,
                attempt=c.attempt,
                created_at=c.created_at,
                exists=path_exists(c.path),
            )
            for c in checkpoints
        ],
    )


@router.post("/{job_id}/cancel", response_model=JobPublic, responses=responses(403, 404, 409))
def cancel(job_id: JobId, ctx: Ctx, s: SessionDep, who: CancelJobs) -> JobPublic:
    j = job_or_404(s, job_id)
    if who.role != Role.ADMIN and j.owner != who.name:
        raise Forbidden(
            Msg(
                "Job {job_id} belongs to {owner}. To fix: ask them or an admin to cancel it.",
                job_id=job_id,
                owner=j.owner,
            )
        )
    done = ctx.engine.cancel(job_id)
    ctx.job_lists.clear()
    return JobPublic.of(done, may_see_env(who, done))


@router.post("/{job_id}/resubmit", status_code=201, response_model=JobPublic, responses=responses(403, 404, 409, 413))
def resubmit(job_id: JobId, body: ResubmitIn, ctx: Ctx, who: SubmitJobs) -> JobPublic:
    job = resubmit_job(ctx.submissions, job_id, who, body.from_scratch)
    ctx.job_lists.clear()
    return JobPublic.of(job, show_env=True)


@router.get("/{job_id}/logs", response_model=LogChunk, responses=responses(403, 404))
def logs(
    job_id: JobId,
    ctx: Ctx,
    s: SessionDep,
    who: ReadJobs,
    attempt: Annotated[int | None, Query(ge=1, le=INT_MAX)] = None,
    offset: Annotated[int, Query(ge=0, le=INT_MAX)] = 0,
) -> LogChunk:
    j = job_or_404(s, job_id)
    require_log_reader(who, job_id, j.owner, ctx.settings.logs_visible_to)  # the owner, admins, DPOs by default
    number = attempt or j.attempts
    if number < 1:
        return LogChunk(attempt=0, attempts=0, text="", offset=0, final=j.state == JobState.CANCELLED)
    text, next_offset = read_chunk(ctx.engine.job_dir(job_id) / f"attempt-{number}" / "output.log", offset)
    final = number < j.attempts or j.state in FINISHED
    return LogChunk(attempt=number, attempts=j.attempts, text=text, offset=next_offset, final=final)


@router.get("/{job_id}/metrics", response_model=MetricsOut, responses=responses(403, 404))
def metrics_of(job_id: JobId, s: SessionDep, _who: ReadMetrics, since_step: Step = -1) -> MetricsOut:
    job_or_404(s, job_id)
    rows = s.scalars(
        select(MetricPoint)
        .where(MetricPoint.job_id == job_id, MetricPoint.step > since_step)
        .order_by(MetricPoint.step, MetricPoint.id)
        .limit(METRIC_POINTS_MAX)
    )
    return MetricsOut(points=[MetricOut(step=m.step, time=m.time, values=m.values) for m in rows])


@router.post("/{job_id}/metrics", status_code=204, responses=responses(404, 409, 413))
def post_metrics(job_id: JobId, body: MetricsIn, ctx: Ctx, _job: JobWriter) -> Response:
    if body.points:
        with ctx.sessions.begin() as s:
            # A replay of points stored before (their answer was lost) stores none twice: a point is its (step, time).
            steps = [p.step for p in body.points]
            stored = set(
                s.execute(
                    select(MetricPoint.step, MetricPoint.time).where(
                        MetricPoint.job_id == job_id, MetricPoint.step.between(min(steps), max(steps))
                    )
                ).tuples()
            )
            metric_series.admit_keys(s, job_id, {k for p in body.points for k in p.values})
            # Repeats within the body too (the first is kept); one executemany, not an ORM object per point: a full
            # body of 10,000 points took more than 30 s on a loaded 2-core machine that way.
            fresh: dict[tuple[int, float], dict[str, Any]] = {}
            for p in body.points:
                if (p.step, p.time) not in stored:
                    fresh.setdefault(
                        (p.step, p.time), {"job_id": job_id, "step": p.step, "time": p.time, "values": p.values}
                    )
            if fresh:
                s.execute(insert(MetricPoint), list(fresh.values()))
            j = s.get(Job, job_id)
            assert j is not None
            last = max(body.points, key=lambda p: p.step)
            first = min(body.points, key=lambda p: p.step)
            if last.time > first.time:
                j.steps_per_s = (last.step - first.step) / (last.time - first.time)
            elif j.last_step is not None and j.last_metric_at and last.time > j.last_metric_at:
                j.steps_per_s = (last.step - j.last_step) / (last.time - j.last_metric_at)
            j.last_step, j.last_metric_at = last.step, last.time
            if last.values.get("loss") is not None:
                j.last_loss = last.values["loss"]
    return Response(status_code=204)


@router.post("/{job_id}/checkpoints", status_code=201, response_model=CheckpointAck, responses=responses(404, 409, 413))
def post_checkpoint(job_id: JobId, body: CheckpointIn, ctx: Ctx, _job: JobWriter) -> CheckpointAck:
    checkpoints = (ctx.engine.job_dir(job_id) / "checkpoints").resolve()
    try:
        inside = Path(body.path).resolve().is_relative_to(checkpoints)
    except (OSError, ValueError):  # a path the filesystem cannot resolve (too long, a loop)
        inside = False
    if not inside:
        raise SpecError(
            "path",
            Msg("a checkpoint of job {job_id} must be under {checkpoints}", job_id=job_id, checkpoints=checkpoints),
        )
    with ctx.sessions.begin() as s:  # a replayed report (the SDK retries until answered) records nothing new
        j = s.get(Job, job_id)
        assert j is not None
        record_checkpoint(s, ctx.audit, j, body.step, body.path, body.bytes)
    return CheckpointAck(job=job_id, step=body.step)


def read_chunk(path: Path, offset: int) -> tuple[str, int]:
    """Up to LOG_CHUNK_BYTES_MAX of `path` from `offset`, and the offset after it."""
    try:
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read(LOG_CHUNK_BYTES_MAX)
    except (OSError, OverflowError):
        return "", offset
    # Do not split a UTF-8 character across chunks: drop at most 3 bytes of a partial one; the next read gets them.
    for back in range(min(4, len(data))):
        try:
            return data[: len(data) - back].decode(), offset + len(data) - back
        except UnicodeDecodeError:
            continue
    return data.decode(errors="replace"), offset + len(data)
