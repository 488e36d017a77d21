"""Who is calling: API tokens (stored as SHA-256 only) to principals, with a short cache; the dashboard's sessions;
job tokens; the first start's admin token; the failure budget of each client address.

Tokens arrive as `Authorization: Bearer <token>` (treino.server.api.deps.bearer_token) or once, typed at the
dashboard's login, which opens a session: a random id in the cookie, stored as a hash in the `tokens` table (a row
named "session:<id of the API token>", expiring after Settings.session_max_age_s). A session id is hashed in its
own domain (`session_hash`), so it never authenticates as a Bearer token nor a token as a session; it lives only
while its API token does (revoked, expired, user disabled or role changed: the session is dead too).

A user token names a user and so a role (treino.govern.access); a job token (TREINO_JOB_TOKEN) is minted for each
attempt, lets that attempt's processes write its metrics and checkpoints and read its pinned datasets, and dies
when the attempt ends.
"""

from __future__ import annotations

import hashlib
import math
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable

from sqlalchemy import delete, or_, select
from sqlalchemy.orm import Session, sessionmaker

from treino.errors import Forbidden, TooManyRequests, Unauthenticated
from treino.govern.access import PERMISSIONS, Principal, allowed
from treino.govern.audit import AuditLog
from treino.govern.models import Role, User
from treino.i18n import Msg
from treino.server.db import Job, Token
from treino.server.settings import (
    ADMIN_TOKEN_FILE,
    AUTH_CACHE_S,
    AUTH_FAILURE_ADDRESSES_MAX,
    AUTH_FAILURE_WINDOW_S,
    AUTH_FAILURES_MAX,
    Settings,
)

USER_TOKEN_PREFIX = "trn_"
JOB_TOKEN_PREFIX = "trj_"
SESSION_PREFIX = "session:"  # a session's row name: "session:<id of its API token>"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def session_hash(session_id: str) -> str:
    """A session id's hash, in its own domain: the cookie's id sent as a Bearer token hashes to no row."""
    return hashlib.sha256((SESSION_PREFIX + session_id).encode()).hexdigest()


def new_user_token() -> str:
    return USER_TOKEN_PREFIX + secrets.token_urlsafe(32)


def new_job_token() -> str:
    return JOB_TOKEN_PREFIX + secrets.token_urlsafe(24)


def dead_token_hash() -> str:
    """The hash of a token nobody holds: what a job's token hash becomes when its attempt ends."""
    return token_hash(secrets.token_urlsafe(24))


def require(who: Principal, permission: str) -> None:
    """Forbidden unless `who`'s role holds `permission` (treino.govern.access.PERMISSIONS)."""
    if not allowed(who.role, permission):
        roles = ", ".join(sorted(r.value for r in PERMISSIONS[permission]))
        raise Forbidden(
            Msg(
                "Role {role} may not {permission}. To fix: use a token of a user with role {roles}.",
                role=who.role,
                permission=permission,
                roles=roles,
            )
        )


class FailureBudget:
    """Failed authentications per client address, in memory: at most `max_failures` distinct bad tokens within
    `window_s`, then `check` raises TooManyRequests (429, Retry-After) until the oldest leaves the window. Distinct:
    the same bad token presented again (a stale token in a script's retries) counts once, a guess each time.
    Bounded: `addresses_max` addresses (the least recently failed forgotten first), `max_failures` tokens each."""

    def __init__(
        self,
        max_failures: int = AUTH_FAILURES_MAX,
        window_s: float = AUTH_FAILURE_WINDOW_S,
        addresses_max: int = AUTH_FAILURE_ADDRESSES_MAX,
    ) -> None:
        self.max_failures, self.window_s, self.addresses_max = max_failures, window_s, addresses_max
        # address -> {hash of a bad token: when it last failed, monotonic s}, the least recently failed address first
        self._failed: OrderedDict[str, dict[str, float]] = OrderedDict()
        self._lock = threading.Lock()
        self.failures_total = 0  # tokens refused since the server started (/metrics treino_auth_failures_total)

    def retry_after_s(self, address: str) -> int:
        """0 while `address` may still try; else the whole seconds until one of its failures leaves the window."""
        now = time.monotonic()
        with self._lock:
            recent = self._recent(address, now)
            if len(recent) < self.max_failures:
                return 0
            return max(1, math.ceil(min(recent.values()) + self.window_s - now))

    def check(self, address: str) -> None:
        wait_s = self.retry_after_s(address)
        if wait_s:
            raise TooManyRequests(
                Msg(
                    "Too many failed authentications from {address}: {max_failures} bad tokens in {window_s:g} s. To "
                    "fix: check the token (treino tokens list), and retry in {wait_s} s.",
                    address=address,
                    max_failures=self.max_failures,
                    window_s=self.window_s,
                    wait_s=wait_s,
                ),
                wait_s,
            )

    def fail(self, address: str, digest: str) -> None:
        """Record that `address` presented the token hashed `digest`, and it was refused."""
        now = time.monotonic()
        with self._lock:
            self.failures_total += 1
            recent = self._recent(address, now)
            recent[digest] = now
            while len(recent) > self.max_failures:  # only the newest count: a full budget refuses before recording
                del recent[min(recent, key=recent.__getitem__)]
            self._failed[address] = recent
            self._failed.move_to_end(address)
            while len(self._failed) > self.addresses_max:
                self._failed.popitem(last=False)

    def _recent(self, address: str, now: float) -> dict[str, float]:
        """`address`'s failures within the window (older ones dropped); the caller holds the lock."""
        failed = self._failed.get(address)
        if not failed:
            return {}
        recent = {d: at for d, at in failed.items() if now - at < self.window_s}
        if recent:
            self._failed[address] = recent
        else:
            del self._failed[address]
        return recent


class Authenticator:
    """Token -> Principal, and session id -> Principal. A checked token is trusted for AUTH_CACHE_S without a query,
    so a hot endpoint costs no database read; `forget()` (on any revocation) makes the next use of every token check
    again. `failures` is the failure budget of each client address (the API's and the login page's)."""

    def __init__(self, sessions: sessionmaker[Session], failures: FailureBudget | None = None) -> None:
        self.sessions = sessions
        self.failures = failures or FailureBudget()
        # (lookup, token or session hash) -> (checked at, monotonic s; who)
        self._cache: dict[tuple[str, str], tuple[float, Principal]] = {}
        self._lock = threading.Lock()

    def principal(self, token: str) -> Principal:
        """The token's principal, or Unauthenticated."""
        return self._cached(
            token_hash(token), self._lookup, Msg("Invalid, expired or revoked token. To fix: use a valid API token.")
        )

    def session(self, session_id: str) -> Principal:
        """The principal of a dashboard session (its API token's), or Unauthenticated."""
        return self._cached(
            session_hash(session_id),
            self._lookup_session,
            Msg("Session expired or logged out. To fix: log in at /login."),
        )

    def open_session(self, token: str, max_age_s: float) -> str:
        """A new session for the holder of `token` (Unauthenticated if it is not valid): its id, shown once. Expired
        and revoked sessions are deleted on the way, so the table holds about one row per live session."""
        who = self.principal(token)
        session_id, now = secrets.token_urlsafe(32), time.time()
        with self.sessions.begin() as s:
            s.execute(
                delete(Token).where(
                    Token.name.startswith(SESSION_PREFIX, autoescape=True),
                    or_(Token.expires_at < now, Token.revoked_at.is_not(None)),
                )
            )
            s.add(
                Token(
                    name=f"{SESSION_PREFIX}{who.token_id}",
                    role=who.role.value,
                    token_hash=session_hash(session_id),
                    user_id=who.user_id,
                    created_at=now,
                    expires_at=now + max_age_s,
                )
            )
        return session_id

    def close_session(self, session_id: str) -> None:
        """Logout: the session's row is deleted, and no cache vouches for it any longer."""
        with self.sessions.begin() as s:
            s.execute(
                delete(Token).where(
                    Token.token_hash == session_hash(session_id), Token.name.startswith(SESSION_PREFIX, autoescape=True)
                )
            )
        self.forget()

    def _cached(self, digest: str, lookup: Callable[[str], Principal | None], refusal: str) -> Principal:
        # keyed by what was looked up too: "session:" + a cookie's id, sent as a Bearer token, has its session's digest
        key, now = (lookup.__name__, digest), time.monotonic()
        with self._lock:
            hit = self._cache.get(key)
        if hit is not None and now - hit[0] < AUTH_CACHE_S:
            return hit[1]
        who = lookup(digest)
        with self._lock:
            if who is None:
                self._cache.pop(key, None)
            else:
                if len(self._cache) > 10_000:  # bounded: one entry per live token is the normal size
                    self._cache.clear()
                self._cache[key] = (now, who)
        if who is None:
            raise Unauthenticated(refusal)
        return who

    def job_token_ok(self, job_id: int, token: str) -> bool:
        """Whether `token` is job `job_id`'s own (its running attempt's TREINO_JOB_TOKEN): one primary-key read."""
        with self.sessions() as s:
            stored = s.scalar(select(Job.job_token_hash).where(Job.id == job_id))
        return stored is not None and is_job_token(stored, token)

    def forget(self) -> None:
        with self._lock:
            self._cache.clear()

    def _lookup(self, digest: str) -> Principal | None:
        with self.sessions() as s:
            token = s.scalar(select(Token).where(Token.token_hash == digest))
            if token is not None and token.name.startswith(SESSION_PREFIX):
                return None  # "session:" + a cookie's id hashes to its session's row: never a Bearer token
            return _valid(s, token)

    def _lookup_session(self, digest: str) -> Principal | None:
        with self.sessions() as s:
            row = s.scalar(select(Token).where(Token.token_hash == digest))
            if row is None or not row.name.startswith(SESSION_PREFIX) or _valid(s, row) is None:
                return None
            parent_id = row.name.removeprefix(SESSION_PREFIX)
            who = _valid(s, s.get(Token, int(parent_id))) if parent_id.isdigit() else None
            if who is None or who.user_id != row.user_id or who.role.value != row.role:
                return None  # its API token revoked or expired, the user disabled, or the role changed since login
            return who


def _valid(s: Session, token: Token | None) -> Principal | None:
    """The principal of a tokens row that is neither revoked, expired nor its user disabled."""
    if token is None or token.revoked_at is not None or (token.expires_at and token.expires_at < time.time()):
        return None
    user = s.get(User, token.user_id) if token.user_id else None
    if user is not None and user.disabled_at is not None:
        return None
    if user is None:
        return Principal(token.name, Role(token.role), token.id, None)
    return Principal(user.name, Role(user.role), token.id, user.id)


def is_job_token(job_token_hash: str, token: str) -> bool:
    return secrets.compare_digest(job_token_hash, token_hash(token))


def create_admin_token(settings: Settings, sessions: sessionmaker[Session], audit: AuditLog) -> str | None:
    """The first start's admin user and token: stored as a hash, written once to DATA_DIR/admin-token (mode 0600).
    None when the database already holds a token."""
    with sessions.begin() as s:
        if s.scalar(select(Token).limit(1)) is not None:
            return None
        admin = User(name="admin", role=Role.ADMIN)
        s.add(admin)
        s.flush()
        token = new_user_token()
        s.add(Token(name="admin", role="admin", token_hash=token_hash(token), user_id=admin.id, created_at=time.time()))
        audit.append(
            s, actor="server", action="user.create", detail={"user": "admin", "role": "admin", "first_start": True}
        )
    path = settings.data_dir / ADMIN_TOKEN_FILE
    path.touch(mode=0o600, exist_ok=True)
    path.chmod(0o600)
    path.write_text(token + "\n")
    return token
