"""The dashboard's routes: server-rendered pages (Jinja2) with the API's tokens and permissions.

GET  /login, POST /login (form: token)      opens a session: its id in the HttpOnly cookie; POST /logout ends it
GET  /                                      overview: devices and their jobs, queue, running jobs with ETA
GET  /overview.json                         what the overview's script polls every 2 s
GET  /jobs/{id}, GET /jobs/{id}/live.json   a job: spec, attempts, log tail, loss and steps/s curves, checkpoints
GET  /jobs/{id}/metrics.json?key=&key=      its metric keys and those keys' series: every key charted, overlaid with
                                            other jobs' (?compare=ID in the page's URL; each fetched and checked alone)
POST /jobs/{id}/cancel, /jobs/{id}/resubmit jobs.cancel (engineers: own jobs) / jobs.submit (own jobs; a new job
                                            continuing from the last checkpoint, from_scratch=1: from step 0); CSRF
GET  /plan?model=&gpu=&gpus=...             the planner: memory, verdict and advice, scaling, cost
GET  /data?actor=&action=&dataset=          datasets, lineage, erasures, audit search: audit.read (dpo, admin)
GET  /static/...                            CSS, the page script and uPlot (vendored: no CDN)

The cookie holds a session id, never the API token (treino.server.auth.Authenticator.open_session): it expires
with Settings.session_max_age_s, dies at logout or with its API token, and is no Bearer token. Form posts carry an
HMAC of the session id under the server key, so another site cannot post on the user's behalf. Failed logins spend
the address's failure budget (429 with Retry-After once spent). Errors are treino's (treino.errors), answered as
pages by `error_page`; a 401 sends the browser to /login.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, quote

import yaml
from fastapi import APIRouter, Depends, FastAPI, Request
from fastapi import Path as PathParam
from fastapi.concurrency import run_in_threadpool
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape

from treino.errors import Forbidden, TooLarge, TooManyRequests, TreinoError, Unauthenticated
from treino.govern.access import PERMISSIONS, Principal, allowed, may_read_logs
from treino.govern.models import Role
from treino.i18n import N_, message_of
from treino.server.api.deps import Ctx, job_or_404
from treino.server.api.routes.usage import usage_out
from treino.server.auth import token_hash
from treino.server.context import ServerContext
from treino.server.db import FINAL_STATES, JobState
from treino.server.quotas import all_quotas
from treino.server.resubmission import may_resubmit
from treino.server.resubmission import resubmit as resubmit_job
from treino.server.schemas import may_see_env, visible_spec
from treino.server.settings import COOKIE, FORM_BYTES_MAX, INT_MAX, METRIC_SERIES_KEYS_MAX, POLL_MS
from treino.server.usage import By
from treino.server.web import plan_view, views
from treino.server.web.i18n import Locale, Msg, negotiate

HERE = Path(__file__).parent
router = APIRouter(include_in_schema=False)  # pages, not API: /openapi.json documents the API only
JOB_STATES = [s.value for s in JobState]
PageJobId = Annotated[int, PathParam(ge=1, le=INT_MAX)]


@functools.cache
def templates() -> Environment:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
    env.globals["POLL_MS"] = POLL_MS
    return env


def mount(app: FastAPI) -> None:
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    app.include_router(router)


@dataclass(frozen=True)
class Visitor:
    who: Principal
    session: str  # the cookie's session id: what the CSRF token is derived from


def visitor_of(request: Request) -> Visitor | None:
    raw = request.cookies.get(COOKIE)
    if not raw:
        return None
    ctx: ServerContext = request.app.state.ctx
    try:
        return Visitor(ctx.auth.session(raw), raw)
    except Unauthenticated:
        return None


def logged_in(request: Request) -> Visitor:
    visitor = visitor_of(request)
    if visitor is None:
        raise Unauthenticated(Msg("Not logged in. To fix: log in at /login."))
    return visitor


def allowed_to(permission: str, what: str = "") -> Any:
    """A page's permission: the visitor, or a 403 page saying which role may (`what`: the permission in words)."""

    def check(visitor: Annotated[Visitor, Depends(logged_in)]) -> Visitor:
        if not allowed(visitor.who.role, permission):
            roles = ", ".join(sorted(r.value for r in PERMISSIONS[permission]))
            raise Forbidden(
                Msg(
                    "Role {role} may not {action}. To fix: use a token of a user with role {roles}.",
                    role=visitor.who.role,
                    action=Msg(what or permission),
                    roles=roles,
                )
            )
        return visitor

    return Depends(check)


Reader = Annotated[Visitor, allowed_to("jobs.read")]
MetricsReader = Annotated[Visitor, allowed_to("metrics.read", "read job metrics")]
Canceller = Annotated[Visitor, allowed_to("jobs.cancel")]
Submitter = Annotated[Visitor, allowed_to("jobs.submit")]
Auditor = Annotated[Visitor, allowed_to("audit.read", "read the audit log")]


def csrf_of(ctx: ServerContext, session_id: str) -> str:
    return hmac.new(ctx.settings.key, b"csrf:" + session_id.encode(), hashlib.sha256).hexdigest()


def render(request: Request, name: str, status: int = 200, **page: Any) -> HTMLResponse:
    ctx: ServerContext = request.app.state.ctx
    loc = negotiate(request.headers.get("accept-language"))
    visitor = visitor_of(request)
    who = visitor.who if visitor else None
    body = (
        templates()
        .get_template(name)
        .render(
            t=loc.t,
            fmt=lambda template, **fields: loc.msg(Msg(template, **fields)),
            states_json=json.dumps({state: loc.t(state) for state in JOB_STATES}),  # for the live state's script
            loc=loc,
            who=who,
            csrf=csrf_of(ctx, visitor.session) if visitor else "",
            can_audit=who is not None and allowed(who.role, "audit.read"),
            path=request.url.path,
            **loc.filters(),
            **page,
        )
    )
    return HTMLResponse(body, status_code=status, headers={"Content-Language": loc.code})


def error_page(request: Request, status: int, message: str) -> Response:
    """A treino error on a page: to /login when not logged in; JSON for the pages' own .json polls."""
    if status == 401:
        return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)
    loc = negotiate(request.headers.get("accept-language"))
    title = {403: N_("Forbidden"), 404: N_("Not found")}.get(status, N_("Error"))
    return render(request, "error.html", status, title=loc.t(title), message=loc.msg(message))


async def form_of(request: Request, visitor: Visitor | None = None) -> dict[str, str]:
    """The url-encoded body (no python-multipart needed); with a `visitor`, its CSRF token must match."""
    body = await request.body()
    if len(body) > FORM_BYTES_MAX:
        raise TooLarge(Msg("Form too large."))
    form = {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}
    if visitor is not None:
        ctx: ServerContext = request.app.state.ctx
        if not hmac.compare_digest(form.get("csrf", ""), csrf_of(ctx, visitor.session)):
            raise Forbidden(Msg("Missing or wrong CSRF token. To fix: reload the page and try again."))
    return form


def back_to_job(job_id: int, message: str, loc: Locale) -> RedirectResponse:
    """To the job's page, with `message` (translated here: the flash is shown as it is) above it."""
    return RedirectResponse(f"/jobs/{job_id}?msg={quote(loc.msg(message)[:300])}", status_code=303)


# --- login ---------------------------------------------------------------------------------------------------------
@router.get("/login", response_class=HTMLResponse)
def login_page(request: Request, next: str = "/") -> HTMLResponse:
    return render(request, "login.html", next=_safe_next(next), failed=False)


@router.post("/login")
async def login(request: Request, ctx: Ctx) -> Response:
    address = request.client.host if request.client else "(unknown)"
    try:
        ctx.auth.failures.check(address)  # before the form is read: a spent budget costs no lookup
    except TooManyRequests as exc:
        page = render(
            request, "login.html", 429, next=_safe_next(request.query_params.get("next", "/")), wait_s=exc.retry_after_s
        )
        page.headers["Retry-After"] = str(exc.retry_after_s)
        return page
    form = await form_of(request)
    raw = form.get("token", "").strip()
    target = _safe_next(form.get("next", "/"))
    try:
        session_id = ctx.auth.open_session(raw, ctx.settings.session_max_age_s)
    except Unauthenticated:
        if raw:  # an empty form is no guess
            ctx.auth.failures.fail(address, token_hash(raw))
        return render(request, "login.html", 401, next=target, failed=True)
    response = RedirectResponse(target, status_code=303)
    response.set_cookie(
        COOKIE,
        session_id,
        max_age=int(ctx.settings.session_max_age_s),
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
        path="/",
    )
    return response


@router.post("/logout")
async def logout(request: Request, ctx: Ctx) -> Response:
    visitor = visitor_of(request)
    if visitor is not None:
        await form_of(request, visitor)
        ctx.auth.close_session(visitor.session)
    response = RedirectResponse("/login", status_code=303)
    response.delete_cookie(COOKIE, path="/")
    return response


# --- overview ------------------------------------------------------------------------------------------------------
def overview_data(ctx: ServerContext) -> dict[str, Any]:
    telemetry = ctx.backend.telemetry()
    with ctx.sessions() as s:
        return views.overview(ctx, s, telemetry)


@router.get("/", response_class=HTMLResponse)
def overview(request: Request, ctx: Ctx, _visitor: Reader, fragment: int = 0) -> HTMLResponse:
    return render(request, "_overview_body.html" if fragment else "overview.html", o=overview_data(ctx))


@router.get("/overview.json")
def overview_json(ctx: Ctx, _visitor: Reader) -> JSONResponse:
    return JSONResponse(overview_data(ctx))


# --- one job -------------------------------------------------------------------------------------------------------
@router.get("/jobs/{job_id}", response_class=HTMLResponse)
def job_page(request: Request, job_id: PageJobId, ctx: Ctx, visitor: Reader, msg: str = "") -> HTMLResponse:
    who, readers = visitor.who, ctx.settings.logs_visible_to
    with ctx.sessions() as s:
        job = job_or_404(s, job_id)
        data = views.job_page(ctx, s, job, show_log=may_read_logs(who, job.owner, readers))
    return render(
        request,
        "job.html",
        d=data,
        spec_yaml=yaml.safe_dump(visible_spec(job.spec, may_see_env(who, job)), sort_keys=False, allow_unicode=True),
        curves_json=_script_json(data["curves"]),
        metric_keys_json=_script_json(data["metric_keys"]),
        may_cancel=views.may_cancel(who, job),
        may_resubmit=allowed(who.role, "jobs.submit") and may_resubmit(who, job),
        log_readers=", ".join(sorted(readers)),
        msg=msg[:300],
    )


@router.get("/jobs/{job_id}/live.json")
def job_live(job_id: PageJobId, ctx: Ctx, visitor: Reader) -> JSONResponse:
    with ctx.sessions() as s:
        job = job_or_404(s, job_id)
        show_log = may_read_logs(visitor.who, job.owner, ctx.settings.logs_visible_to)
        return JSONResponse(views.live(ctx, s, job, show_log))


@router.get("/jobs/{job_id}/metrics.json")
def job_metrics(
    request: Request, job_id: PageJobId, ctx: Ctx, _visitor: Reader, _metrics: MetricsReader
) -> JSONResponse:
    """The metric charts' data (views.metrics): one request per job shown, the page's own or a compared one, each
    checked as the job's own page is."""
    wanted = request.query_params.getlist("key")[:METRIC_SERIES_KEYS_MAX]
    with ctx.sessions() as s:
        return JSONResponse(views.metrics(s, job_or_404(s, job_id), wanted))


@router.post("/jobs/{job_id}/cancel")
async def cancel(request: Request, job_id: PageJobId, ctx: Ctx, visitor: Canceller) -> Response:
    await form_of(request, visitor)
    loc = negotiate(request.headers.get("accept-language"))
    return await run_in_threadpool(_cancel, job_id, ctx, visitor, loc)  # transactions and signals: off the event loop


def _cancel(job_id: int, ctx: ServerContext, visitor: Visitor, loc: Locale) -> Response:
    with ctx.sessions() as s:
        job = job_or_404(s, job_id)
        if not views.may_cancel(visitor.who, job) and job.state not in FINAL_STATES:
            raise Forbidden(
                Msg(
                    "Job {job_id} belongs to {owner}. To fix: ask them or an admin to cancel it.",
                    job_id=job_id,
                    owner=job.owner,
                )
            )
    try:
        done = ctx.engine.cancel(job_id)
    except TreinoError as exc:  # already finished: said on the page
        return back_to_job(job_id, message_of(exc), loc)
    ctx.job_lists.clear()
    return back_to_job(job_id, "Job cancelled." if done.state == "cancelled" else "Cancellation requested.", loc)


@router.post("/jobs/{job_id}/resubmit")
async def resubmit(request: Request, job_id: PageJobId, ctx: Ctx, visitor: Submitter) -> Response:
    """A new job continuing from this one's last checkpoint; with the form's from_scratch=1, from step 0."""
    form = await form_of(request, visitor)
    # The submit path checks the trackers (a subprocess, up to TRACKER_CHECK_TIMEOUT_S), scans the checkpoint folder
    # and writes transactions: in a worker thread, so that the event loop goes on answering every other request.
    loc = negotiate(request.headers.get("accept-language"))
    return await run_in_threadpool(_resubmit, job_id, ctx, visitor, form.get("from_scratch") == "1", loc)


def _resubmit(job_id: int, ctx: ServerContext, visitor: Visitor, from_scratch: bool, loc: Locale) -> Response:
    with ctx.sessions() as s:
        original = job_or_404(s, job_id)
    if not may_resubmit(visitor.who, original):
        # the spec's env may hold its owner's secrets: only they (or an admin) may run it again
        raise Forbidden(
            Msg(
                "Job {job_id} belongs to {owner}: only they or an admin may resubmit it.",
                job_id=job_id,
                owner=original.owner,
            )
        )
    try:
        job = resubmit_job(ctx.submissions, job_id, visitor.who, from_scratch=from_scratch)
    except TreinoError as exc:  # refused as the API would refuse it: the reason on the original's page
        return back_to_job(job_id, message_of(exc), loc)
    ctx.job_lists.clear()
    how = (
        Msg("continues job {job_id} from step {step}", job_id=job_id, step=job.continues_from_step)
        if job.continues_from
        else Msg("from step 0")
    )
    return back_to_job(job.id, Msg("resubmitted from job {job_id}: {how}", job_id=job_id, how=how), loc)


# --- plan ----------------------------------------------------------------------------------------------------------
@router.get("/plan", response_class=HTMLResponse)
def plan(request: Request, _visitor: Reader) -> HTMLResponse:
    form, errors = plan_view.PlanForm.from_query(dict(request.query_params))
    result = plan_view.compute(form) if not errors else plan_view.compute(plan_view.PlanForm())
    result.errors = errors + result.errors
    return render(
        request,
        "plan.html",
        422 if result.errors else 200,
        r=result,
        scale_json=_script_json(plan_view.scale_series(result.scale)),
    )


# --- usage and quotas ----------------------------------------------------------------------------------------------
@router.get("/usage", response_class=HTMLResponse)
def usage_page(request: Request, ctx: Ctx, visitor: Reader, since: str = "", by: str = "user") -> HTMLResponse:
    """GPU-hours and their cost: an admin's of everyone, with the quotas; anyone else's of their own."""
    group: By = by if by in ("purpose", "job") else "user"  # type: ignore[assignment]
    u = usage_out(ctx, visitor.who, _clean(since, 40) or None, group, None)
    admin = visitor.who.role == Role.ADMIN
    quotas = None
    if admin:
        with ctx.sessions() as s:
            quotas = all_quotas(s)
    return render(request, "usage.html", u=u, since=_clean(since, 40), quotas=quotas)


# --- data and audit ------------------------------------------------------------------------------------------------
@router.get("/data", response_class=HTMLResponse)
def data(
    request: Request, ctx: Ctx, visitor: Auditor, actor: str = "", action: str = "", dataset: str = ""
) -> HTMLResponse:
    detail = {"permission": "audit.read", "path": "/data", "token": visitor.who.token_id}
    with ctx.sessions.begin() as s:  # a sensitive read is itself audited, as the API's permission check does
        ctx.audit.append(s, actor=visitor.who.name, action="token.use", detail=detail)
    with ctx.sessions() as s:
        d = views.data_audit(ctx, s, _clean(actor, 100), _clean(action, 40), _clean(dataset, 100))
    return render(request, "data.html", d=d)


def _clean(text: str, max_chars: int) -> str:
    return text.replace("\x00", "").strip()[:max_chars]


_SCRIPT_ESCAPES = str.maketrans(
    {"<": "\\u003c", ">": "\\u003e", "&": "\\u0026", "\u2028": "\\u2028", "\u2029": "\\u2029"}
)


def _script_json(data: Any) -> str:
    """JSON to inline in a <script type="application/json"> element: no <, > or & at all (each as its \\u escape,
    the same string to JSON.parse), so neither '</script>' nor '<!--<script>' in a metric key can end or bend it."""
    return json.dumps(data).translate(_SCRIPT_ESCAPES)


def _safe_next(target: str) -> str:
    """Only a path on this server: '/jobs/3', never '//evil.example' or 'https://...'."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"
