"""The HTTP API (FastAPI). Every route but /healthz needs `Authorization: Bearer <token>`.

GET  /healthz                              liveness, no token
GET  /api/v1/inventory                     devices the server hands out
POST /api/v1/jobs                          submit a spec -> 201 {job, ...}; 422 field errors, too many GPUs,
                                           or a plan that does not fit (with the planner's advice)
GET  /api/v1/jobs?state=&limit=&offset=    newest first
GET  /api/v1/jobs/{id}                     one job, its attempts and checkpoints
POST /api/v1/jobs/{id}/cancel
GET  /api/v1/jobs/{id}/logs?attempt=&offset=   a chunk of the attempt's output, and the next offset
GET  /api/v1/jobs/{id}/metrics?since_step=
POST /api/v1/jobs/{id}/metrics             the job's own token (TREINO_JOB_TOKEN) or a user token
POST /api/v1/jobs/{id}/checkpoints         likewise
GET  /metrics                              Prometheus text format
"""

import json
import math
import secrets
import time
from pathlib import Path
from typing import Annotated, Any

from fastapi import Depends, FastAPI, Header, HTTPException, Query, Request, Response
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field, ValidationError, field_validator
from sqlalchemy import select
from sqlalchemy.orm import Session

from treino.errors import JobError, PolicyViolation, TreinoError
from treino.govern.access import PERMISSIONS, SENSITIVE_PERMISSIONS, Principal, allowed
from treino.govern.models import Role, User
from treino.server.db import ACTIVE_STATES, Attempt, Checkpoint, Job, JobState, MetricPoint, Token
from treino.server.service import Service, job_json, token_hash
from treino.server.spec import JobSpec, field_errors

LOG_CHUNK_BYTES_MAX = 1024**2
AUTH_CACHE_S = 2.0  # how long a checked token is trusted without a query (and a revocation may lag)
JOBS_CACHE_S = 0.5  # how stale GET /api/v1/jobs may be
JOBS_PAGE_MAX = 1000


class MetricIn(BaseModel):
    step: int = Field(ge=0)
    time: float = Field(allow_inf_nan=False)
    values: dict[str, float | None]  # NaN and inf arrive as null from the SDK; others' are stored as null

    @field_validator("values")
    @classmethod
    def _finite(cls, values: dict[str, float | None]) -> dict[str, float | None]:
        return {k: (v if v is None or math.isfinite(v) else None) for k, v in values.items()}


class MetricsIn(BaseModel):
    points: list[MetricIn] = Field(max_length=10_000)


class CheckpointIn(BaseModel):
    step: int = Field(ge=0)
    path: str
    bytes: int = Field(ge=0)


def create_admin_token(service: Service) -> str | None:
    """The first start's admin user and token: stored as a hash, written once to DATA_DIR/admin-token (mode 0600)."""
    with service.sessions.begin() as s:
        if s.scalar(select(Token).limit(1)) is not None:
            return None
        admin = User(name="admin", role=Role.ADMIN)
        s.add(admin)
        s.flush()
        token = "trn_" + secrets.token_urlsafe(32)
        s.add(Token(name="admin", role="admin", token_hash=token_hash(token), user_id=admin.id, created_at=time.time()))
        service.audit(s, "server", "user.create", detail={"user": "admin", "role": "admin", "first_start": True})
    path = service.settings.data_dir / "admin-token"
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_text(token + "\n")
    return token


def build_app(service: Service, admission: Any = None) -> FastAPI:
    """The app for `service`; `admission(spec) -> None` raises JobError with the planner's verdict."""
    app = FastAPI(title="treino", version="1", docs_url=None, redoc_url=None)

    def session() -> Any:
        with service.sessions() as s:
            yield s

    SessionDep = Annotated[Session, Depends(session)]

    def bearer(authorization: str | None) -> str:
        if not authorization or not authorization.lower().startswith("bearer "):
            raise HTTPException(401, "Missing token. To fix: send 'Authorization: Bearer <token>' (treino --token).")
        return authorization.split(" ", 1)[1].strip()

    token_cache = service.token_cache  # token hash -> (checked at, who): AUTH_CACHE_S; cleared on revocation
    list_cache: dict[tuple[str | None, int, int], tuple[float, bytes]] = {}  # (state, limit, offset): JOBS_CACHE_S

    def principal_of(digest: str) -> Principal | None:
        with service.sessions() as s:
            token = s.scalar(select(Token).where(Token.token_hash == digest))
            now = time.time()
            if token is None or token.revoked_at is not None or (token.expires_at and token.expires_at < now):
                return None
            user = s.get(User, token.user_id) if token.user_id else None
            if user is not None and user.disabled_at is not None:
                return None
            role = Role(user.role if user else token.role)
            return Principal(user.name if user else token.name, role, token.id, user.id if user else None)

    async def user(authorization: Annotated[str | None, Header()] = None) -> Principal:
        # async with a short cache: a hot endpoint authenticates without a thread hop or a query (revocation
        # takes effect within AUTH_CACHE_S).
        digest = token_hash(bearer(authorization))
        now = time.time()
        cached = token_cache.get(digest)
        who = cached[1] if cached and now - cached[0] < AUTH_CACHE_S else principal_of(digest)
        if who is None:
            token_cache.pop(digest, None)
            raise HTTPException(401, "Invalid, expired or revoked token. To fix: use a valid API token.")
        if not cached or now - cached[0] >= AUTH_CACHE_S:
            token_cache[digest] = (now, who)
        return who

    def need(permission: str) -> Any:
        """A dependency: the caller's principal, if its role holds `permission` (access.PERMISSIONS), else 403.
        Uses of sensitive permissions are recorded in the audit chain (token.use)."""

        async def check(request: Request, who: Annotated[Principal, Depends(user)]) -> Principal:
            if not allowed(who.role, permission):
                roles = ", ".join(sorted(r.value for r in PERMISSIONS[permission]))
                raise HTTPException(
                    403, f"Role {who.role} may not {permission}. To fix: use a token of a user with role {roles}."
                )
            if permission in SENSITIVE_PERMISSIONS:
                with service.sessions.begin() as s:
                    service.audit(
                        s,
                        who.name,
                        "token.use",
                        detail={"permission": permission, "path": request.url.path, "token": who.token_id},
                    )
            return who

        return Depends(check)

    UserDep = Annotated[Principal, need("jobs.read")]

    def job_or_404(s: Session, job_id: int) -> Job:
        job = s.get(Job, job_id)
        if job is None:
            raise HTTPException(404, f"No job {job_id}. To fix: list jobs with 'treino jobs'.")
        return job

    def writer(job_id: int, s: SessionDep, authorization: Annotated[str | None, Header()] = None) -> Job:
        """The job itself (its attempt's token) or an admin may write its metrics and checkpoints."""
        raw = bearer(authorization)
        job = job_or_404(s, job_id)
        if secrets.compare_digest(job.job_token_hash, token_hash(raw)):
            if job.state not in ACTIVE_STATES:
                raise HTTPException(409, f"Job {job_id} is {job.state}: its processes may no longer write to it.")
            return job
        who = principal_of(token_hash(raw))
        if who is None or who.role != Role.ADMIN:
            raise HTTPException(401, "Only the job's own token (TREINO_JOB_TOKEN) or an admin may write this.")
        return job

    @app.exception_handler(RequestValidationError)
    async def _invalid(_request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [
            {"field": ".".join(str(p) for p in e["loc"] if p != "body") or "(body)", "message": e["msg"]}
            for e in exc.errors()
        ]
        return JSONResponse({"detail": errors}, status_code=422)

    @app.get("/healthz")
    def healthz() -> dict[str, Any]:
        return {"ok": True, "devices": service.inventory.describe()}

    @app.get("/api/v1/inventory")
    def inventory(_user: Annotated[Principal, need("inventory.read")]) -> dict[str, Any]:
        return service.inventory.to_json()

    @app.post("/api/v1/jobs", status_code=201)
    def submit(body: dict[str, Any], who: Annotated[Principal, need("jobs.submit")]) -> dict[str, Any]:
        try:
            spec = JobSpec.model_validate(body)
        except ValidationError as exc:
            raise HTTPException(422, field_errors(exc)) from exc
        refusal = service.capacity_error(spec)
        if refusal is not None:
            raise HTTPException(422, [{"field": refusal[0], "message": refusal[1]}])
        if admission is not None and spec.plan is not None:
            try:
                admission(spec)
            except TreinoError as exc:
                raise HTTPException(422, [{"field": "plan", "message": str(exc)}]) from exc
        try:
            job, _ = service.submit(spec, who)
        except PolicyViolation as exc:
            raise HTTPException(403, {"rule": exc.rule, "message": str(exc)}) from exc
        except JobError as exc:
            raise HTTPException(422, [{"field": "nodes", "message": str(exc)}]) from exc
        list_cache.clear()  # a submitter's next listing shows the job
        return job_json(job)

    @app.get("/api/v1/jobs")
    async def jobs(
        _user: UserDep,
        state: str | None = None,
        limit: Annotated[int, Query(ge=1, le=JOBS_PAGE_MAX)] = 100,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> Response:
        # The list is served from a cache at most JOBS_CACHE_S old: dashboards and `treino jobs -w` poll it, and
        # 50 clients polling must not each re-read and re-serialise the table (benchmarks/server_bench.py).
        if state and state not in set(JobState):
            raise HTTPException(422, [{"field": "state", "message": f"one of {', '.join(JobState)}"}])
        key, now = (state, limit, offset), time.monotonic()
        hit = list_cache.get(key)
        if hit and now - hit[0] < JOBS_CACHE_S:
            return Response(hit[1], media_type="application/json")
        query = select(Job).order_by(Job.id.desc()).limit(limit).offset(offset)
        if state:
            query = query.where(Job.state == state)
        with service.sessions() as s:
            body = json.dumps({"jobs": [job_json(j) for j in s.scalars(query)]}).encode()
        if len(list_cache) > 1000:
            list_cache.clear()
        list_cache[key] = (now, body)
        return Response(body, media_type="application/json")

    @app.get("/api/v1/jobs/{job_id}")
    def job(job_id: int, s: SessionDep, who: UserDep) -> dict[str, Any]:
        j = job_or_404(s, job_id)
        show_env = who.role == Role.ADMIN or who.name == j.owner
        attempts = s.scalars(select(Attempt).where(Attempt.job_id == job_id).order_by(Attempt.number))
        checkpoints = s.scalars(select(Checkpoint).where(Checkpoint.job_id == job_id).order_by(Checkpoint.step))
        return {
            **job_json(j, show_env),
            "history": [
                {
                    "number": a.number,
                    "devices": a.devices,
                    "started_at": a.started_at,
                    "ended_at": a.ended_at,
                    "exit_code": a.exit_code,
                    "outcome": a.outcome,
                    # where it ran: the machines, and on Slurm its job id, partition and requeues
                    "placement": {
                        k: a.handle[k]
                        for k in ("placement", "slurm_job_id", "partition", "slurm_restarts")
                        if k in a.handle
                    },
                }
                for a in attempts
            ],
            "checkpoints": [
                {
                    "step": c.step,
                    "path": c.path,
                    "bytes": c.bytes,
                    "attempt": c.attempt,
                    "created_at": c.created_at,
                    "exists": Path(c.path).exists(),  # the SDK keeps the last K; older ones are deleted
                }
                for c in checkpoints
            ],
        }

    @app.post("/api/v1/jobs/{job_id}/cancel")
    def cancel(job_id: int, who: Annotated[Principal, need("jobs.cancel")]) -> dict[str, Any]:
        list_cache.clear()
        if who.role != Role.ADMIN:
            with service.sessions() as s:
                owner = s.scalar(select(Job.owner).where(Job.id == job_id))
            if owner is not None and owner != who.name:
                raise HTTPException(403, f"Job {job_id} belongs to {owner}. To fix: ask them or an admin to cancel it.")
        try:
            return job_json(service.cancel(job_id))
        except JobError as exc:
            raise HTTPException(409 if "already" in str(exc) else 404, str(exc)) from exc

    @app.get("/api/v1/jobs/{job_id}/logs")
    def logs(
        job_id: int,
        s: SessionDep,
        _user: UserDep,
        attempt: int | None = None,
        offset: Annotated[int, Query(ge=0)] = 0,
    ) -> dict[str, Any]:
        j = job_or_404(s, job_id)
        number = attempt or j.attempts
        if number < 1:
            return {"attempt": 0, "attempts": 0, "text": "", "offset": 0, "final": j.state == JobState.CANCELLED}
        path = service.job_dir(job_id) / f"attempt-{number}" / "output.log"
        text, next_offset = _read_chunk(path, offset)
        final = number < j.attempts or j.state in (JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED)
        return {"attempt": number, "attempts": j.attempts, "text": text, "offset": next_offset, "final": final}

    @app.get("/api/v1/jobs/{job_id}/metrics")
    def metrics_of(
        job_id: int,
        s: SessionDep,
        _user: Annotated[Principal, need("metrics.read")],
        since_step: Annotated[int, Query(ge=-1)] = -1,
    ) -> dict[str, Any]:
        job_or_404(s, job_id)
        rows = s.scalars(
            select(MetricPoint)
            .where(MetricPoint.job_id == job_id, MetricPoint.step > since_step)
            .order_by(MetricPoint.step, MetricPoint.id)
            .limit(100_000)
        )
        return {"points": [{"step": m.step, "time": m.time, "values": m.values} for m in rows]}

    @app.post("/api/v1/jobs/{job_id}/metrics", status_code=204)
    def post_metrics(job_id: int, body: MetricsIn, job: Annotated[Job, Depends(writer)]) -> Response:
        if not body.points:
            return Response(status_code=204)
        with service.sessions.begin() as s:
            s.add_all(MetricPoint(job_id=job_id, step=p.step, time=p.time, values=p.values) for p in body.points)
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

    @app.post("/api/v1/jobs/{job_id}/checkpoints", status_code=201)
    def post_checkpoint(job_id: int, body: CheckpointIn, job: Annotated[Job, Depends(writer)]) -> dict[str, Any]:
        checkpoints = (service.job_dir(job_id) / "checkpoints").resolve()
        if not Path(body.path).resolve().is_relative_to(checkpoints):
            raise HTTPException(
                422, [{"field": "path", "message": f"a checkpoint of job {job_id} must be under {checkpoints}"}]
            )
        with service.sessions.begin() as s:
            j = s.get(Job, job_id)
            assert j is not None
            s.add(Checkpoint(job_id=job_id, attempt=j.attempts, step=body.step, path=body.path, bytes=body.bytes))
            j.checkpoint_step = max(body.step, j.checkpoint_step or 0)
            service.register_model(s, j, "checkpoint", body.path, body.step)
        return {"job": job_id, "step": body.step}

    from treino.server.govern_api import add_govern_routes

    add_govern_routes(app, service, need, bearer, job_or_404, session)

    @app.get("/metrics")
    def prometheus(_user: Annotated[Principal, need("metrics.read")]) -> Response:
        from treino.server.metrics import render

        body, content_type = render(service)
        return Response(body, media_type=content_type)

    from treino.server.web import add_web_routes

    add_web_routes(app, service, principal_of, admission)

    return app


def _read_chunk(path: Path, offset: int) -> tuple[str, int]:
    try:
        with path.open("rb") as f:
            f.seek(offset)
            data = f.read(LOG_CHUNK_BYTES_MAX)
    except OSError:
        return "", offset
    # Do not split a UTF-8 character across chunks: drop at most 3 bytes of a partial one; the next read gets them.
    for back in range(min(4, len(data))):
        try:
            return data[: len(data) - back].decode(), offset + len(data) - back
        except UnicodeDecodeError:
            continue
    return data.decode(errors="replace"), offset + len(data)
