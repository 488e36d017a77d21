"""What every request passes before a route: the failure budget of its client address, and the security headers
of every answer.

    AuthThrottle      a request to the API carrying a token, from an address that presented AUTH_FAILURES_MAX bad
                      ones within the window: 429 {"detail": "... To fix: ..."} with Retry-After, before its body is
                      read or its token checked; any 401 to a request that carried a token is a failure of its address
                      (job tokens, trj_..., are outside the budget: see AuthThrottle.__call__)
    SecurityHeaders   CSP (scripts and styles from /static only, no framing), nosniff, Referrer-Policy, X-Frame-Options

The dashboard's login counts its failures in the same budget (treino.server.web.pages.login). The address is the
TCP peer's, or what a proxy of `treino server --trusted-proxies` says in X-Forwarded-For.
"""

from __future__ import annotations

from fastapi.responses import JSONResponse
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from treino.errors import TooManyRequests
from treino.server.api.errors import error_body
from treino.server.auth import JOB_TOKEN_PREFIX, FailureBudget, token_hash

# The dashboard's pages load scripts, styles and uPlot from /static and fetch their own .json; nothing inline but
# style attributes (bar widths and colours drawn by the server), nothing from elsewhere, never in a frame.
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'self'; style-src 'self'; style-src-attr 'unsafe-inline'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
)
SECURITY_HEADERS = (
    (b"content-security-policy", CONTENT_SECURITY_POLICY.encode()),
    (b"x-frame-options", b"DENY"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)


def needs_token(path: str) -> bool:
    """The paths whose routes check a token (and so document 401 and 429 in /openapi.json)."""
    return path.startswith("/api/") or path == "/metrics"


class AuthThrottle:
    def __init__(self, app: ASGIApp, failures: FailureBudget) -> None:
        self.app = app
        self.failures = failures

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not needs_token(scope["path"]):
            await self.app(scope, receive, send)
            return
        token = dict(scope["headers"]).get(b"authorization", b"").strip()
        credential = token.partition(b" ")[2].strip()
        if not token or credential.startswith(JOB_TOKEN_PREFIX.encode()):
            # No token is no guess: a plain 401. A job token is outside the budget: a guess of one can match no user
            # token, its 192 random bits are out of reach anyway, and the attempts that end on a node must not lock
            # that node's address out by retrying their reports with their dead tokens.
            await self.app(scope, receive, send)
            return
        address = scope["client"][0] if scope.get("client") else "(unknown)"
        try:
            self.failures.check(address)
        except TooManyRequests as exc:
            headers = {"Retry-After": str(exc.retry_after_s)}
            await JSONResponse(error_body(exc), status_code=exc.http_status, headers=headers)(scope, receive, send)
            return
        status = 0

        async def watch(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        await self.app(scope, receive, watch)
        if status == 401:
            self.failures.fail(address, token_hash(token.decode(errors="replace")))


class SecurityHeaders:
    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def add_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {name.lower() for name, _ in message.get("headers", ())}
                extra = [(name, value) for name, value in SECURITY_HEADERS if name not in present]
                message = {**message, "headers": [*message.get("headers", ()), *extra]}
            await send(message)

        await self.app(scope, receive, add_headers)
