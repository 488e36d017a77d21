"""Grants (who may use which dataset, for which purposes) and transfer mechanisms (Art. 33).

POST /api/v1/grants               {user, dataset, purposes}                  grants.manage
GET  /api/v1/grants?limit=&before_id=                                        grants.manage (newest first)
POST /api/v1/grants/{id}/revoke                                              grants.manage
POST /api/v1/transfers            {site, mechanism, reference, signed_on}    transfers.manage
GET  /api/v1/transfers?limit=&before_id=                                     transfers.manage (likewise)
"""

from __future__ import annotations

import time
from typing import Annotated

from fastapi import APIRouter, Path
from sqlalchemy import select

from treino.errors import NotFound, PolicyViolation, SpecError, TreinoError
from treino.govern.access import site
from treino.govern.models import Grant, Transfer, User
from treino.i18n import Msg, message_of
from treino.server.api.deps import BeforeId, Ctx, ManageGrants, ManageTransfers, PageLimit, SessionDep, keyset_page
from treino.server.api.routes.users import user_named
from treino.server.governance import dataset_named
from treino.server.schemas import (
    GrantIn,
    GrantList,
    GrantOut,
    Revoked,
    TransferIn,
    TransferList,
    TransferOut,
    responses,
)
from treino.server.settings import INT_MAX, PAGE_DEFAULT

router = APIRouter(prefix="/api/v1", tags=["grants"], responses=responses(401, 403, 422))
GrantId = Annotated[int, Path(ge=1, le=INT_MAX)]


def _grant_out(g: Grant, user: str) -> GrantOut:
    return GrantOut(
        id=g.id,
        user=user,
        dataset=g.dataset,
        purposes=g.purposes,
        granted_by=g.granted_by,
        created_at=g.created_at,
        revoked_at=g.revoked_at,
    )


@router.post("/grants", status_code=201, response_model=GrantOut, responses=responses(404, 413))
def add_grant(body: GrantIn, ctx: Ctx, who: ManageGrants) -> GrantOut:
    with ctx.sessions.begin() as s:
        user = user_named(s, body.user)
        dataset = dataset_named(s, body.dataset)
        outside = [p for p in body.purposes if p not in dataset.purposes]
        if outside:
            raise PolicyViolation(
                "purpose",
                Msg(
                    "dataset {name} allows {allowed}, not {asked} (LGPD Art. 6 I). To fix: grant one of the dataset's "
                    "purposes.",
                    name=dataset.name,
                    allowed=", ".join(dataset.purposes),
                    asked=", ".join(outside),
                ),
            )
        grant = Grant(user_id=user.id, dataset=dataset.name, purposes=body.purposes, granted_by=who.name)
        s.add(grant)
        s.flush()
        detail = {"grant": grant.id, "user": user.name, "purposes": body.purposes}
        ctx.audit.append(s, actor=who.name, action="grant.create", dataset=dataset.name, detail=detail)
        return _grant_out(grant, user.name)


@router.get("/grants", response_model=GrantList)
def grants(s: SessionDep, _who: ManageGrants, limit: PageLimit = PAGE_DEFAULT, before_id: BeforeId = None) -> GrantList:
    query = select(Grant, User.name).join(User, Grant.user_id == User.id)
    rows, after = keyset_page(s, query, Grant.id, limit, before_id, id_of=lambda row: int(row[0].id))
    return GrantList(grants=[_grant_out(g, name) for g, name in rows], next=after)


@router.post("/grants/{grant_id}/revoke", response_model=Revoked, responses=responses(404))
def revoke_grant(grant_id: GrantId, ctx: Ctx, who: ManageGrants) -> Revoked:
    with ctx.sessions.begin() as s:
        grant = s.get(Grant, grant_id)
        if grant is None:
            raise NotFound(Msg("No grant {grant_id}. To fix: see 'treino grants'.", grant_id=grant_id))
        grant.revoked_at = grant.revoked_at or time.time()
        ctx.audit.append(s, actor=who.name, action="grant.revoke", dataset=grant.dataset, detail={"grant": grant_id})
        return Revoked(id=grant_id, revoked_at=grant.revoked_at)


def _transfer_out(t: Transfer) -> TransferOut:
    return TransferOut.model_validate(t, from_attributes=True)


@router.post("/transfers", status_code=201, response_model=TransferOut, responses=responses(413))
def add_transfer(body: TransferIn, ctx: Ctx, who: ManageTransfers) -> TransferOut:
    try:
        where = site(body.site)
    except TreinoError as exc:
        raise SpecError("site", message_of(exc)) from exc  # a Msg stays one
    with ctx.sessions.begin() as s:
        transfer = Transfer(
            site=where.name,
            mechanism=body.mechanism,
            reference=body.reference,
            signed_on=body.signed_on,
            created_by=who.name,
        )
        s.add(transfer)
        s.flush()
        detail = {"transfer": transfer.id, **body.model_dump()}
        ctx.audit.append(s, actor=who.name, action="transfer.record", detail=detail)
        return _transfer_out(transfer)


@router.get("/transfers", response_model=TransferList)
def transfers(
    s: SessionDep, _who: ManageTransfers, limit: PageLimit = PAGE_DEFAULT, before_id: BeforeId = None
) -> TransferList:
    rows, after = keyset_page(s, select(Transfer), Transfer.id, limit, before_id)
    return TransferList(transfers=[_transfer_out(t) for t in rows], next=after)
