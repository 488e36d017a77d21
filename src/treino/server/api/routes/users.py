"""People and their tokens (admins only).

POST /api/v1/users                {name, role}                    users.manage
GET  /api/v1/users?limit=&before_id=                             users.manage    (newest first, `next` page)
POST /api/v1/users/{name}/disable                                 users.manage    (every token and session of
POST /api/v1/users/{name}/enable                                  users.manage     the user fails at once)
POST /api/v1/tokens               {user, name?, expires_days?}    tokens.manage   (the token is shown once)
GET  /api/v1/tokens?limit=&before_id=                            tokens.manage   (never the secret; dashboard
                                                                                  sessions are "session:<token id>")
POST /api/v1/tokens/{id}/revoke                                   tokens.manage
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Path
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from treino.errors import Conflict, NotFound, SpecError
from treino.govern.models import Role, User
from treino.i18n import Msg
from treino.server.api.deps import BeforeId, Ctx, ManageTokens, ManageUsers, PageLimit, SessionDep, keyset_page
from treino.server.auth import SESSION_PREFIX, new_user_token, token_hash
from treino.server.db import Token
from treino.server.schemas import NewToken, Revoked, TokenIn, TokenList, TokenOut, UserIn, UserList, UserOut, responses
from treino.server.settings import INT_MAX, NAME_PATTERN, PAGE_DEFAULT

router = APIRouter(prefix="/api/v1", tags=["users"], responses=responses(401, 403, 422))
TokenId = Annotated[int, Path(ge=1, le=INT_MAX)]
UserName = Annotated[str, Path(pattern=NAME_PATTERN)]


def user_named(s: Session, name: str) -> User:
    user = s.scalar(select(User).where(User.name == name))
    if user is None:
        raise NotFound(Msg("No user {name!r}. To fix: create it with 'treino users add {name} --role ...'.", name=name))
    return user


@router.post("/users", status_code=201, response_model=UserOut, responses=responses(409, 413))
def add_user(body: UserIn, ctx: Ctx, who: ManageUsers) -> UserOut:
    with ctx.sessions.begin() as s:
        if s.scalar(select(User).where(User.name == body.name)) is not None:
            raise Conflict(
                Msg("User {name!r} exists. To fix: pick another name, or see 'treino users list'.", name=body.name)
            )
        user = User(name=body.name, role=body.role)
        s.add(user)
        s.flush()
        ctx.audit.append(s, actor=who.name, action="user.create", detail={"user": body.name, "role": body.role})
        return UserOut(id=user.id, name=user.name, role=Role(user.role), disabled=False)


@router.get("/users", response_model=UserList)
def users(s: SessionDep, _who: ManageUsers, limit: PageLimit = PAGE_DEFAULT, before_id: BeforeId = None) -> UserList:
    rows, after = keyset_page(s, select(User), User.id, limit, before_id)
    return UserList(
        users=[UserOut(id=u.id, name=u.name, role=Role(u.role), disabled=bool(u.disabled_at)) for u in rows],
        next=after,
    )


@router.post("/users/{name}/disable", response_model=UserOut, responses=responses(404, 409))
def disable_user(name: UserName, ctx: Ctx, who: ManageUsers) -> UserOut:
    """The user's tokens and dashboard sessions stop working at the next request (auth checks `disabled_at`; the
    cache is cleared). Their running jobs go on, but a job of theirs may no longer read a dataset."""
    with ctx.sessions.begin() as s:
        user = user_named(s, name)
        if user.id == who.user_id:
            raise Conflict(
                Msg("{name} is you: an admin may not disable their own account. To fix: ask another admin.", name=name)
            )
        if user.disabled_at is None:
            user.disabled_at = time.time()
            live = s.scalar(
                select(func.count()).where(
                    Token.user_id == user.id,
                    Token.revoked_at.is_(None),
                    ~Token.name.startswith(SESSION_PREFIX, autoescape=True),
                )
            )
            ctx.audit.append(s, actor=who.name, action="user.disable", detail={"user": name, "tokens": live or 0})
        out = UserOut(id=user.id, name=user.name, role=Role(user.role), disabled=True)
    ctx.auth.forget()  # no cached check may vouch for their tokens any longer
    return out


@router.post("/users/{name}/enable", response_model=UserOut, responses=responses(404))
def enable_user(name: UserName, ctx: Ctx, who: ManageUsers) -> UserOut:
    """Their tokens that are neither revoked nor expired work again (dashboard sessions opened before stay dead only
    if they expired meanwhile)."""
    with ctx.sessions.begin() as s:
        user = user_named(s, name)
        if user.disabled_at is not None:
            user.disabled_at = None
            ctx.audit.append(s, actor=who.name, action="user.enable", detail={"user": name})
        out = UserOut(id=user.id, name=user.name, role=Role(user.role), disabled=False)
    ctx.auth.forget()
    return out


@router.post("/tokens", status_code=201, response_model=NewToken, responses=responses(404, 413))
def add_token(body: TokenIn, ctx: Ctx, who: ManageTokens) -> NewToken:
    if body.name.startswith(SESSION_PREFIX):  # the dashboard's sessions' rows (treino.server.auth)
        raise SpecError(
            "name",
            Msg(
                "a token's name may not start with {prefix!r}. To fix: pick another name.",
                prefix=SESSION_PREFIX,
            ),
        )
    raw = new_user_token()
    with ctx.sessions.begin() as s:
        user = user_named(s, body.user)
        expires = time.time() + body.expires_days * 86400 if body.expires_days else None
        token = Token(
            name=body.name or body.user, role=user.role, token_hash=token_hash(raw), user_id=user.id, expires_at=expires
        )
        s.add(token)
        s.flush()
        detail = {"token": token.id, "user": user.name, "expires_at": expires}
        ctx.audit.append(s, actor=who.name, action="token.create", detail=detail)
        return NewToken(id=token.id, user=user.name, role=Role(user.role), expires_at=expires, token=raw)


@router.get("/tokens", response_model=TokenList)
def tokens(s: SessionDep, _who: ManageTokens, limit: PageLimit = PAGE_DEFAULT, before_id: BeforeId = None) -> TokenList:
    query = select(Token, User).join(User, Token.user_id == User.id, isouter=True)
    rows, after = keyset_page(s, query, Token.id, limit, before_id, id_of=lambda row: int(row[0].id))
    return TokenList(
        tokens=[
            TokenOut(
                id=t.id,
                name=t.name,
                user=u.name if u else t.name,
                role=Role(u.role if u else t.role),
                created_at=t.created_at,
                expires_at=t.expires_at,
                revoked_at=t.revoked_at,
            )
            for t, u in rows
        ],
        next=after,
    )


@router.post("/tokens/{token_id}/revoke", response_model=Revoked, responses=responses(404))
def revoke_token(token_id: TokenId, ctx: Ctx, who: ManageTokens) -> Revoked:
    with ctx.sessions.begin() as s:
        token = s.get(Token, token_id)
        if token is None:
            raise NotFound(Msg("No token {token_id}. To fix: see 'treino tokens list'.", token_id=token_id))
        token.revoked_at = token.revoked_at or time.time()
        ctx.audit.append(s, actor=who.name, action="token.revoke", detail={"token": token_id})
        revoked_at = token.revoked_at
    ctx.auth.forget()  # the cache must not vouch for it any longer
    return Revoked(id=token_id, revoked_at=revoked_at)
