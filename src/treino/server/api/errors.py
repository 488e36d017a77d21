"""One mapping from treino's errors to HTTP answers (each error class carries its status: treino.errors), and the
gate on request bodies (a valid token before a byte of one is read, then each route's ceiling). Web pages get the
same statuses as an HTML page (treino.server.web.pages.error_page).

    401 404 409 410 413   {"detail": "what is wrong. To fix: ..."}                  Problem
    403                   {"detail": {"rule": "residency", "message": "..."}}       Refusal ("role" for roles)
    422                   {"detail": [{"field": "gpus", "message": "..."}]}          Invalid
    507 503               {"detail": "..."}: a write on a full disk; a corrupt database  Problem

A message the server composed as a `Msg` travels as data too, beside its English text, for a client to word in its
own language (treino.i18n.to_data, from_data): `detail_msg` beside a string `detail`, `message_msg` beside a
`message`. The English fields are as they were, so English clients and older CLIs read the same answers.

A full disk or a corrupt database surfaces as whatever the filesystem or the database driver raises; `storage_error`
turns those into InsufficientStorage (507; `document_insufficient_storage` puts it in the OpenAPI document of every
operation that writes) and DatabaseBroken (503), so that reads go on while writes are refused with a clear message,
never a 500.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio.to_thread
from fastapi import APIRouter, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from fastapi.routing import APIRoute
from sqlalchemy.exc import DBAPIError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from treino.errors import (
    DatabaseBroken,
    InsufficientStorage,
    PolicyViolation,
    TooLarge,
    TreinoError,
    Unauthenticated,
)
from treino.i18n import Joined, Msg, message_of, to_data
from treino.server.auth import JOB_TOKEN_PREFIX
from treino.server.disk import space_text, storage_fault
from treino.server.settings import API_BODY_BYTES_MAX, FORM_BYTES_MAX, INT_MAX, METRICS_BYTES_MAX, SPEC_BYTES_MAX
from treino.server.spec import validation_message

if TYPE_CHECKING:
    from treino.server.context import ServerContext

PageRenderer = Callable[[Request, int, str], Response]  # (request, status, message) -> an HTML page


def error_body(exc: TreinoError) -> dict[str, Any]:
    """The answer's body, in the shapes above; the message as data too (`*_msg`) when it is a Msg."""
    status = exc.http_status
    text = message_of(exc)
    data = to_data(text) if isinstance(text, Msg | Joined) else None

    def also(name: str) -> dict[str, Any]:
        return {name: data} if data is not None else {}

    if status == 422:
        return {"detail": [{"field": exc.field, "message": str(exc), **also("message_msg")}]}
    if status == 403:
        rule = exc.rule if isinstance(exc, PolicyViolation) else "role"
        return {"detail": {"rule": rule, "message": str(exc), **also("message_msg")}}
    return {"detail": str(exc), **also("detail_msg")}


def storage_error(exc: BaseException, data_dir: Path, database: str | None) -> TreinoError | None:
    """The 507 or 503 of a full disk or a corrupt database (`database`: the SQLite file, None for PostgreSQL),
    or None for any other error."""
    fault = storage_fault(exc)
    if fault == "corrupt":
        where = database or Msg("the PostgreSQL database")
        return DatabaseBroken(
            Msg(
                "The database is corrupt: {error}. To fix: stop the server and restore {where} from a backup "
                "('treino server' checks it at start and says how).",
                error=str(getattr(exc, "orig", exc)),
                where=where,
            )
        )
    if fault is None:
        return None
    if isinstance(exc, DBAPIError):
        place = space_text(Path(database).parent) if database else Msg("PostgreSQL's data directory")
        what = Msg("the database could not write ({error})", error=str(exc.orig))
    else:
        filename = getattr(exc, "filename", None)
        place = space_text(Path(filename) if filename else data_dir)
        what = Msg("a write failed ({error})", error=str(exc))
    return InsufficientStorage(
        Msg(
            "The server's disk is full: {what}; the request was not done. Free now: {place}. To fix: free space on "
            "that disk (old checkpoints and logs of finished jobs in {jobs}), then retry. Reads still work.",
            what=what,
            place=place,
            jobs=str(data_dir / "jobs"),
        )
    )


def field_of(loc: tuple[Any, ...]) -> str:
    """A validation error's place: 'gpus', 'plan.seq_len', 'points.0.step', or '(body)' for the whole body."""
    inside = loc[1:] if loc and loc[0] in ("body", "query", "path", "header", "cookie") else loc  # not a field named so
    return ".".join(str(p) for p in inside) or "(body)"


def install(app: FastAPI, page: PageRenderer | None = None) -> None:
    """Every TreinoError, validation error and HTTP error answered in the shapes above; web pages (paths outside
    /api/ that are not .json) as HTML through `page`."""

    def wants_html(request: Request) -> bool:
        path = request.url.path
        api = path.startswith("/api/") or path.endswith(".json") or path in ("/metrics", "/healthz")
        return page is not None and not api

    @app.exception_handler(TreinoError)
    async def _treino(request: Request, exc: TreinoError) -> Response:
        if wants_html(request):
            assert page is not None
            return page(request, exc.http_status, message_of(exc))  # a Msg: translated on the page
        return JSONResponse(error_body(exc), status_code=exc.http_status)

    async def _storage(request: Request, exc: Exception) -> Response:
        ctx = request.app.state.ctx
        bind = ctx.sessions.kw["bind"]
        database = bind.url.database if bind.dialect.name == "sqlite" else None
        problem = storage_error(exc, ctx.settings.data_dir, database)
        if problem is None:
            raise exc  # an internal error: a 500, with its traceback in the server's log
        return await _treino(request, problem)

    app.add_exception_handler(OSError, _storage)
    app.add_exception_handler(DBAPIError, _storage)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError) -> Response:
        body = getattr(getattr(request.scope.get("route"), "body_field", None), "field_info", None)
        model = getattr(body, "annotation", None)  # the route's body model: its keys, for an unknown key's message
        fields, messages = [], []
        for e in exc.errors():
            loc = tuple(e["loc"])
            fields.append("(body)" if e["type"] == "json_invalid" else field_of(loc))
            in_body = loc[:1] == ("body",)  # then the rest of loc is the path into the body's model
            messages.append(validation_message({**e, "loc": loc[1:]}, model) if in_body else validation_message(e))
        errors = [
            {
                "field": field,
                "message": str(message),
                **({"message_msg": to_data(message)} if isinstance(message, Msg) else {}),
            }
            for field, message in zip(fields, messages, strict=True)
        ]
        if wants_html(request):
            assert page is not None
            lines = [Msg("{field}: {message}", field=f, message=m) for f, m in zip(fields, messages, strict=True)]
            return page(request, 422, Joined("; ", lines))  # in the visitor's language
        return JSONResponse({"detail": errors}, status_code=422)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> Response:
        # Starlette's own (an unknown path, a wrong method, a body that is not JSON): our shapes, never bare text
        if exc.status_code == 400:  # FastAPI's "There was an error parsing the body"
            return JSONResponse({"detail": [{"field": "(body)", "message": str(exc.detail)}]}, status_code=422)
        headers = dict(exc.headers or {})
        if exc.status_code == 405:  # every method of the path, not only those of the first route that matched it
            headers["Allow"] = ", ".join(allowed_methods(request))
        if wants_html(request):
            assert page is not None
            response = page(request, exc.status_code, str(exc.detail))
            response.headers.update(headers)
            return response
        return JSONResponse({"detail": str(exc.detail)}, status_code=exc.status_code, headers=headers)

    app.add_middleware(BodyGate)


HTTP_METHODS = ("DELETE", "GET", "HEAD", "PATCH", "POST", "PUT")
WRITE_METHODS = frozenset({"delete", "patch", "post", "put"})


def document_insufficient_storage(app: FastAPI, routers: Iterable[APIRouter]) -> None:
    """507 in the OpenAPI document of every operation that writes: those that change something, and the reads of
    `routers` recorded in the audit chain (token.use), which need a write before they answer."""
    plain = app.openapi
    audited = {
        (route.path, method.lower())
        for router in routers
        for route in router.routes
        if isinstance(route, APIRoute) and _records_use(route)
        for method in route.methods or ()
    }

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is not None:
            return app.openapi_schema
        schema = plain()
        problem = {"application/json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
        for path, operations in schema.get("paths", {}).items():
            for method, operation in operations.items():
                if method in WRITE_METHODS or (path, method) in audited:
                    operation["responses"].setdefault(
                        "507", {"description": "Insufficient Storage", "content": problem}
                    )
        return schema

    app.openapi = openapi  # type: ignore[method-assign]


def _records_use(route: APIRoute) -> bool:
    """Does a dependency of `route` write a token.use record before it answers (treino.server.api.deps.need)?"""
    pending = list(route.dependant.dependencies)
    while pending:
        dependency = pending.pop()
        if getattr(dependency.call, "records_use", False):
            return True
        pending.extend(dependency.dependencies)
    return False


def allowed_methods(request: Request) -> list[str]:
    """The methods some route of the app answers on this request's path (the 405's Allow header, RFC 9110): each
    method is tried against the routes as the router would, since a path may have one route per method."""
    routes = request.app.router.routes
    return [m for m in HTTP_METHODS if any(r.matches({**request.scope, "method": m})[0] == Match.FULL for r in routes)]


JOB_PATH = re.compile(r"^/api/v1/jobs/(\d{1,19})/")  # where a job's own token may write
METRICS_PATH = re.compile(r"^/api/v1/jobs/[^/]+/metrics$")


def body_limit(path: str) -> int:
    """The most bytes of body the route at `path` takes (settings.py): a JobSpec, a batch of metric points, any other
    API body, or a dashboard form."""
    if path == "/api/v1/jobs":
        return SPEC_BYTES_MAX
    if METRICS_PATH.match(path):
        return METRICS_BYTES_MAX
    if path.startswith("/api/"):
        return API_BODY_BYTES_MAX
    return FORM_BYTES_MAX


class BodyGate:
    """Before a byte of a request body is read: an API request that carries one must hold a valid token (a user's,
    or on /api/v1/jobs/{id}/... that job's own), else 401 at once; then a body over its route's ceiling
    (`body_limit`) is 413, by its Content-Length, or as soon as a chunked one passes it. So no client without a
    token makes the server buffer anything, and none with one makes it hold more than its route takes. The routes'
    own dependencies (api/deps.py) check the token again, with its permissions."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = dict(scope["headers"])
        declared = headers.get(b"content-length")
        has_body = (declared is not None and declared != b"0") or b"transfer-encoding" in headers
        if not has_body:
            await self.app(scope, receive, send)
            return
        path: str = scope["path"]
        if path.startswith("/api/"):
            refusal = await _refusal(scope, headers.get(b"authorization", b""), path)
            if refusal is not None:
                await JSONResponse(error_body(Unauthenticated(refusal)), status_code=401)(scope, receive, send)
                return
        max_bytes = body_limit(path)
        if declared is not None:
            if not declared.isdigit() or int(declared) > max_bytes:
                await _too_large(max_bytes)(scope, receive, send)
                return
            await self.app(scope, receive, send)  # the HTTP server reads no more than the declared length
            return
        chunks, seen, more = [], 0, True
        while more:
            message = await receive()
            if message["type"] != "http.request":  # the client went away
                return
            chunks.append(message.get("body", b""))
            seen += len(chunks[-1])
            more = message.get("more_body", False)
            if seen > max_bytes:
                await _too_large(max_bytes)(scope, receive, send)
                return
        body = b"".join(chunks)
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()  # http.disconnect, when it comes
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


async def _refusal(scope: Scope, authorization: bytes, path: str) -> str | None:
    """Why the request's token is refused (the 401's detail), or None when it is a valid one."""
    scheme, _, token = authorization.decode("latin-1").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        return Msg("Missing token. To fix: send 'Authorization: Bearer <token>' (treino --token).")
    ctx: ServerContext = scope["app"].state.ctx
    job = JOB_PATH.match(path)
    if job is not None and token.startswith(JOB_TOKEN_PREFIX):
        job_id = int(job.group(1))  # past INT_MAX no job has it, and PostgreSQL would refuse to compare it
        if job_id <= INT_MAX and await anyio.to_thread.run_sync(ctx.auth.job_token_ok, job_id, token):
            return None
        return Msg("Not this job's token. To fix: post with the job's own TREINO_JOB_TOKEN, or an admin's token.")
    try:
        ctx.auth.principal(token)  # from the cache for AUTH_CACHE_S after a check, as api/deps.py's current_user
    except Unauthenticated as exc:
        return message_of(exc)  # a Msg: sent as data too
    except (OSError, DBAPIError):  # a full or corrupt database: the route's own check answers it (503, 507)
        pass
    return None


def _too_large_text(max_bytes: int) -> str:
    size = f"{max_bytes // 1024**2} MiB" if max_bytes >= 1024**2 else f"{max_bytes // 1024} KiB"
    return Msg("The request body is over {size}. To fix: send less per request.", size=size)


def _too_large(max_bytes: int) -> Callable[[Scope, Receive, Send], Awaitable[None]]:
    return JSONResponse(error_body(TooLarge(_too_large_text(max_bytes))), status_code=413)
