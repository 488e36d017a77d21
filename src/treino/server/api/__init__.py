"""The HTTP API (FastAPI) and the dashboard, on one app. Every route but /healthz and the login page needs a token:
`Authorization: Bearer <token>` for the API, the session cookie for the pages.

    api/deps.py          the session, the caller and permissions, as Annotated dependencies
    api/errors.py        treino's errors -> HTTP statuses, in one place; the body size limit
    api/guard.py         before any route: the failure budget of the client's address (429), the security headers
    api/routes/*.py      one router per resource: system, jobs, metrics (a job's, by key), datasets, users, grants,
                         audit, lineage, models (a model's file, quarantine, delete), subjects, usage (GPU-hours in
                         BRL, quotas)
    web/pages.py         the dashboard's routes (server-rendered HTML)
The request and response models are treino.server.schemas: the OpenAPI document at /openapi.json is the contract.
"""

from __future__ import annotations

from fastapi import FastAPI

from treino.server.api import errors
from treino.server.api.guard import AuthThrottle, SecurityHeaders
from treino.server.api.routes import (
    audit,
    datasets,
    grants,
    jobs,
    lineage,
    metrics,
    models,
    subjects,
    system,
    usage,
    users,
)
from treino.server.context import ServerContext


def build_app(ctx: ServerContext) -> FastAPI:
    from treino.server.web import pages

    app = FastAPI(title="treino", version="1", docs_url=None, redoc_url=None)
    app.state.ctx = ctx
    routes = (system, jobs, metrics, datasets, users, grants, audit, lineage, models, subjects, usage)
    routers = [m.router for m in routes]
    for router in routers:
        app.include_router(router)
    pages.mount(app)
    errors.install(app, pages.error_page)
    errors.document_insufficient_storage(app, routers)
    app.add_middleware(jobs.CachedJobList, ctx=ctx)  # the list's cached pages, inside the throttle and the headers
    app.add_middleware(AuthThrottle, failures=ctx.auth.failures)  # outside the body limit: before a byte is read
    app.add_middleware(SecurityHeaders)  # outermost: on every answer, a 413 or 429 included
    return app


__all__ = ["build_app"]
