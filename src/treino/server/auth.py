"""Who is calling: API tokens (stored as SHA-256 only) to principals, with a short cache; job tokens; the first
start's admin token.

Tokens arrive as `Authorization: Bearer <token>` (treino.server.api.deps.bearer_token) or as the dashboard's
cookie. A user token names a user and so a role (treino.govern.access); a job token (TREINO_JOB_TOKEN) is minted
for each attempt, lets that attempt's processes write its metrics and checkpoints and read its pinned datasets,
and dies when the attempt ends.
"""

from __future__ import annotations

import hashlib
import secrets
import threading
import time

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from treino.errors import Forbidden, Unauthenticated
from treino.govern.access import PERMISSIONS, Principal, allowed
from treino.govern.audit import AuditLog
from treino.govern.models import Role, User
from treino.server.db import Job, Token
from treino.server.settings import ADMIN_TOKEN_FILE, AUTH_CACHE_S, Settings

USER_TOKEN_PREFIX = "trn_"
JOB_TOKEN_PREFIX = "trj_"


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


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
        raise Forbidden(f"Role {who.role} may not {permission}. To fix: use a token of a user with role {roles}.")


class Authenticator:
    """Token -> Principal. A checked token is trusted for AUTH_CACHE_S without a query, so a hot endpoint costs no
    database read; `forget()` (on any revocation) makes the next use of every token check again."""

    def __init__(self, sessions: sessionmaker[Session]) -> None:
        self.sessions = sessions
        self._cache: dict[str, tuple[float, Principal]] = {}  # token hash -> (checked at, monotonic s; who)
        self._lock = threading.Lock()

    def principal(self, token: str) -> Principal:
        """The token's principal, or Unauthenticated."""
        digest, now = token_hash(token), time.monotonic()
        with self._lock:
            hit = self._cache.get(digest)
        if hit is not None and now - hit[0] < AUTH_CACHE_S:
            return hit[1]
        who = self._lookup(digest)
        with self._lock:
            if who is None:
                self._cache.pop(digest, None)
            else:
                if len(self._cache) > 10_000:  # bounded: one entry per live token is the normal size
                    self._cache.clear()
                self._cache[digest] = (now, who)
        if who is None:
            raise Unauthenticated("Invalid, expired or revoked token. To fix: use a valid API token.")
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
