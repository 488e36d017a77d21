"""The dashboard's routes: server-rendered pages (Jinja2) with the API's tokens and permissions.

GET  /login, POST /login (form: token)      sets the HttpOnly session cookie; POST /logout clears it
GET  /                                      overview: devices and their jobs, queue, running jobs with ETA
GET  /overview.json                         what the overview's script polls every 2 s
GET  /jobs/{id}, GET /jobs/{id}/live.json   a job: spec, attempts, log tail, loss and steps/s curves, checkpoints
POST /jobs/{id}/cancel, /jobs/{id}/resubmit jobs.cancel (engineers: own jobs) / jobs.submit; CSRF token required
GET  /plan?model=&gpu=&gpus=...             the planner: memory, verdict and advice, scaling, cost
GET  /data?actor=&action=&dataset=          datasets, lineage, erasures, audit search: audit.read (dpo, admin)
GET  /static/...                            CSS, the page script and uPlot (vendored: no CDN)

The cookie holds the API token itself and is checked like an Authorization header (same hash lookup, same cache).
Form posts carry an HMAC of that token under the server key, so another site cannot post on the user's behalf.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, quote

from fastapi import FastAPI, HTTPException, Request
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from fastapi.staticfiles import StaticFiles
from jinja2 import Environment, FileSystemLoader, select_autoescape
from sqlalchemy.orm import Session

from treino.errors import JobError, PolicyViolation, TreinoError
from treino.govern.access import Principal, allowed
from treino.govern.models import Role
from treino.server.db import FINAL_STATES, Job
from treino.server.service import Service, token_hash, visible_spec
from treino.server.spec import JobSpec
from treino.server.web import plan_view, views
from treino.server.web.i18n import negotiate

HERE = Path(__file__).parent
COOKIE = "treino_session"
COOKIE_MAX_AGE_S = 12 * 3600
AUTH_CACHE_S = 2.0  # as the API's (treino.server.api.AUTH_CACHE_S): revocation takes effect within this
POLL_MS = 2000  # the overview's and job page's refresh period
FORM_BYTES_MAX = 16 * 1024


def add_web_routes(
    app: FastAPI,
    service: Service,
    principal_of: Callable[[str], Principal | None],
    admission: Any = None,
) -> None:
    env = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
    env.globals["POLL_MS"] = POLL_MS
    app.mount("/static", StaticFiles(directory=HERE / "static"), name="static")
    cache = service.token_cache

    def who_is(request: Request) -> tuple[Principal, str] | None:
        raw = request.cookies.get(COOKIE)
        if not raw:
            return None
        digest, now = token_hash(raw), time.time()
        hit = cache.get(digest)
        if hit and now - hit[0] < AUTH_CACHE_S:
            return hit[1], raw
        principal = principal_of(digest)
        if principal is None:
            cache.pop(digest, None)
            return None
        cache[digest] = (now, principal)
        return principal, raw

    def csrf_of(raw: str) -> str:
        return hmac.new(service.audit_log.key, b"csrf:" + raw.encode(), hashlib.sha256).hexdigest()

    def render(request: Request, name: str, status: int = 200, **ctx: Any) -> HTMLResponse:
        loc = negotiate(request.headers.get("accept-language"))
        tpl = env.get_template(name)
        auth = who_is(request)
        who = auth[0] if auth else None
        body = tpl.render(
            t=loc.t,
            loc=loc,
            who=who,
            csrf=csrf_of(auth[1]) if auth else "",
            can_audit=who is not None and allowed(who.role, "audit.read"),
            path=request.url.path,
            **loc.filters(),
            **ctx,
        )
        return HTMLResponse(body, status_code=status, headers={"Content-Language": loc.code})

    class LoginNeeded(Exception):
        pass

    class PageError(Exception):
        def __init__(self, status: int, message: str) -> None:
            super().__init__(message)
            self.status = status

    @app.exception_handler(PageError)
    async def _page_error(request: Request, exc: PageError) -> Response:
        if request.url.path.endswith(".json"):
            return JSONResponse({"detail": str(exc)}, status_code=exc.status)
        return error_page(request, HTTPException(exc.status, str(exc)))

    @app.exception_handler(LoginNeeded)
    async def _to_login(request: Request, _exc: LoginNeeded) -> Response:
        if request.url.path.endswith(".json"):
            return JSONResponse({"detail": "Not logged in. To fix: log in at /login."}, status_code=401)
        return RedirectResponse(f"/login?next={quote(request.url.path)}", status_code=303)

    def page_user(request: Request, permission: str = "jobs.read") -> tuple[Principal, str]:
        auth = who_is(request)
        if auth is None:
            raise LoginNeeded()
        if not allowed(auth[0].role, permission):
            raise PageError(403, f"Role {auth[0].role} may not {permission}.")
        return auth

    async def form_of(request: Request, raw: str | None = None) -> dict[str, str]:
        """The url-encoded body (no python-multipart needed); with `raw`, its CSRF token must match."""
        body = await request.body()
        if len(body) > FORM_BYTES_MAX:
            raise PageError(413, "Form too large.")
        form = {k: v[0] for k, v in parse_qs(body.decode(errors="replace")).items()}
        if raw is not None and not hmac.compare_digest(form.get("csrf", ""), csrf_of(raw)):
            raise PageError(403, "Missing or wrong CSRF token. To fix: reload the page and try again.")
        return form

    def error_page(request: Request, exc: HTTPException) -> HTMLResponse:
        loc = negotiate(request.headers.get("accept-language"))
        title = {403: "Forbidden", 404: "Not found"}.get(exc.status_code, "Error")
        return render(request, "error.html", exc.status_code, title=loc.t(title), message=str(exc.detail))

    # --- login -----------------------------------------------------------------------------------------------
    @app.get("/login", response_class=HTMLResponse)
    def login_page(request: Request, next: str = "/") -> HTMLResponse:
        return render(request, "login.html", next=_safe_next(next), failed=False)

    @app.post("/login")
    async def login(request: Request) -> Response:
        form = await form_of(request)
        raw = form.get("token", "").strip()
        target = _safe_next(form.get("next", "/"))
        if not raw or principal_of(token_hash(raw)) is None:
            return render(request, "login.html", 401, next=target, failed=True)
        response = RedirectResponse(target, status_code=303)
        response.set_cookie(
            COOKIE,
            raw,
            max_age=COOKIE_MAX_AGE_S,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path="/",
        )
        return response

    @app.post("/logout")
    async def logout(request: Request) -> Response:
        auth = who_is(request)
        if auth is not None:
            await form_of(request, auth[1])
        response = RedirectResponse("/login", status_code=303)
        response.delete_cookie(COOKIE, path="/")
        return response

    # --- overview --------------------------------------------------------------------------------------------
    def overview_data() -> dict[str, Any]:
        telemetry = service.backend.telemetry()
        with service.sessions() as s:
            return views.overview(service, s, telemetry)

    @app.get("/", response_class=HTMLResponse)
    def overview(request: Request, fragment: int = 0) -> HTMLResponse:
        page_user(request)
        return render(request, "_overview_body.html" if fragment else "overview.html", o=overview_data())

    @app.get("/overview.json")
    def overview_json(request: Request) -> JSONResponse:
        page_user(request)
        return JSONResponse(overview_data())

    # --- one job ---------------------------------------------------------------------------------------------
    def job_or_404(s: Session, job_id: int) -> Job:
        job = s.get(Job, job_id)
        if job is None:
            raise PageError(404, f"No job {job_id}.")
        return job

    @app.get("/jobs/{job_id}", response_class=HTMLResponse)
    def job_page(request: Request, job_id: int, msg: str = "") -> HTMLResponse:
        who, _raw = page_user(request)
        with service.sessions() as s:
            data = views.job_page(service, s, job_or_404(s, job_id))
        import yaml

        return render(
            request,
            "job.html",
            d=data,
            spec_yaml=yaml.safe_dump(
                visible_spec(data["full"].spec, who.role == Role.ADMIN or who.name == data["full"].owner),
                sort_keys=False,
                allow_unicode=True,
            ),
            curves_json=_script_json(data["curves"]),
            may_cancel=views.may_cancel(who, data["full"]),
            may_resubmit=allowed(who.role, "jobs.submit")
            and (who.role == Role.ADMIN or who.name == data["full"].owner),
            msg=msg[:300],
        )

    @app.get("/jobs/{job_id}/live.json")
    def job_live(request: Request, job_id: int) -> JSONResponse:
        page_user(request)
        with service.sessions() as s:
            return JSONResponse(views.live(service, s, job_or_404(s, job_id)))

    @app.post("/jobs/{job_id}/cancel")
    async def cancel(request: Request, job_id: int) -> Response:
        who, raw = page_user(request, "jobs.cancel")
        await form_of(request, raw)
        with service.sessions() as s:
            job = job_or_404(s, job_id)
            if not views.may_cancel(who, job) and job.state not in FINAL_STATES:
                raise PageError(403, f"Job {job_id} belongs to {job.owner}. To fix: ask them or an admin to cancel it.")
        try:
            done = service.cancel(job_id)
            msg = "Job cancelled." if done.state == "cancelled" else "Cancellation requested."
        except JobError as exc:
            msg = str(exc)
        return RedirectResponse(f"/jobs/{job_id}?msg={quote(msg)}", status_code=303)

    @app.post("/jobs/{job_id}/resubmit")
    async def resubmit(request: Request, job_id: int) -> Response:
        who, raw = page_user(request, "jobs.submit")
        await form_of(request, raw)
        with service.sessions() as s:
            original = job_or_404(s, job_id)
            spec = JobSpec.model_validate(original.spec)
        if who.role != Role.ADMIN and who.name != original.owner:
            # the spec's env may hold its owner's secrets: only they (or an admin) may run it again
            raise HTTPException(
                403, f"Job {job_id} belongs to {original.owner}: only they or an admin may resubmit it."
            )
        try:
            if admission is not None and spec.plan is not None:
                admission(spec)
            job, _token = service.submit(spec, who)
        except (PolicyViolation, TreinoError) as exc:
            return RedirectResponse(f"/jobs/{job_id}?msg={quote(str(exc)[:300])}", status_code=303)
        return RedirectResponse(f"/jobs/{job.id}?msg={quote(f'resubmitted from job {job_id}')}", status_code=303)

    # --- plan ------------------------------------------------------------------------------------------------
    @app.get("/plan", response_class=HTMLResponse)
    def plan(request: Request) -> HTMLResponse:
        page_user(request)
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

    # --- data and audit --------------------------------------------------------------------------------------
    @app.get("/data", response_class=HTMLResponse)
    def data(request: Request, actor: str = "", action: str = "", dataset: str = "") -> HTMLResponse:
        auth = who_is(request)
        if auth is None:
            raise LoginNeeded()
        if not allowed(auth[0].role, "audit.read"):
            raise PageError(403, f"Role {auth[0].role} may not read the audit log. To fix: use a dpo or admin token.")
        with service.sessions.begin() as s:  # a sensitive read is itself audited, as the API's need() does
            service.audit(
                s,
                auth[0].name,
                "token.use",
                detail={"permission": "audit.read", "path": "/data", "token": auth[0].token_id},
            )
        with service.sessions() as s:
            d = views.data_audit(service, s, actor.strip()[:100], action.strip()[:40], dataset.strip()[:100])
        return render(request, "data.html", d=d)


def _script_json(data: Any) -> str:
    """JSON to inline in a <script type="application/json"> element: no '</' can close it early."""
    return json.dumps(data).replace("</", "<\\/")


def _safe_next(target: str) -> str:
    """Only a path on this server: '/jobs/3', never '//evil.example' or 'https://...'."""
    return target if target.startswith("/") and not target.startswith("//") and "\\" not in target else "/"
