"""Governance routes (LGPD): people and tokens, grants, transfers, datasets, the audit chain, lineage, erasure.

    POST /api/v1/users                {name, role}                        users.manage
    GET  /api/v1/users                                                    users.manage
    POST /api/v1/tokens               {user, name?, expires_days?}        tokens.manage   (the token is shown once)
    GET  /api/v1/tokens                                                   tokens.manage   (never the secret)
    POST /api/v1/tokens/{id}/revoke                                       tokens.manage
    POST /api/v1/grants               {user, dataset, purposes}           grants.manage
    GET  /api/v1/grants                                                   grants.manage
    POST /api/v1/grants/{id}/revoke                                       grants.manage
    POST /api/v1/transfers            {site, mechanism, reference, signed_on}   transfers.manage
    GET  /api/v1/transfers                                                transfers.manage
    POST /api/v1/datasets             {name, path, legal_basis, purposes, personal_data, sensitive, residency,
                                       retention_days?, subject_column?}  datasets.register
    GET  /api/v1/datasets, /api/v1/datasets/{name}                        datasets.read
    GET  /api/v1/jobs/{id}/datasets/{name}    the job's own token: the pinned version (and the read is audited)
    GET  /api/v1/audit/verify | /audit/export?fmt=&dataset=&actor=&subject=&since=&until= | /audit/records
                                                                          audit.read
    GET  /api/v1/lineage/datasets/{name}, /api/v1/lineage/models/{id}, /api/v1/models       lineage.read
    POST /api/v1/erasures             {subject, dataset?, retrain}        erasure.run
    POST /api/v1/subjects/report      {subject}                           subject.report
Subject ids travel in request bodies, never in URLs (which end up in access logs); the audit holds pseudonyms.
"""

import io
import secrets
import time
from collections.abc import Callable
from typing import Annotated, Any

from fastapi import FastAPI, Header, HTTPException, Response
from pydantic import BaseModel, Field
from sqlalchemy import select
from sqlalchemy.orm import Session

from treino.errors import PolicyViolation, TreinoError
from treino.govern.access import Principal, check_grant, check_residency
from treino.govern.datasets import version_path as store_path
from treino.govern.models import (
    Dataset,
    DatasetVersion,
    Grant,
    JobDataset,
    Model,
    Role,
    Transfer,
    User,
)
from treino.server import governance
from treino.server.db import ACTIVE_STATES, Job, Token
from treino.server.service import Service, token_hash

NAME = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"


class UserIn(BaseModel):
    name: str = Field(pattern=NAME)
    role: Role


class TokenIn(BaseModel):
    user: str
    name: str = Field("", max_length=100)
    expires_days: float | None = Field(None, gt=0, le=3650)


class GrantIn(BaseModel):
    user: str
    dataset: str
    purposes: list[str] = Field(min_length=1)


class TransferIn(BaseModel):
    site: str
    mechanism: str = Field(pattern=r"^(anpd-scc|adequacy|specific-clauses|bcr|consent|other)$")
    reference: str = Field(min_length=1, max_length=200)
    signed_on: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")


class DatasetIn(BaseModel):
    name: str = Field(pattern=NAME)
    path: str
    legal_basis: str = ""
    purposes: list[str] = Field(default_factory=list)
    personal_data: bool
    sensitive: bool = False
    residency: str = Field("BR", pattern=r"^([A-Z]{2}|any)$")
    retention_days: int | None = Field(None, gt=0)
    subject_column: str | None = None


class ErasureIn(BaseModel):
    subject: str = Field(min_length=1, max_length=100)
    dataset: str | None = None
    retrain: bool = False


class SubjectIn(BaseModel):
    subject: str = Field(min_length=1, max_length=100)


def _forbidden(exc: PolicyViolation) -> HTTPException:
    return HTTPException(403, {"rule": exc.rule, "message": str(exc)})


def add_govern_routes(
    app: FastAPI,
    service: Service,
    need: Callable[[str], Any],
    bearer: Callable[[str | None], str],
    job_or_404: Callable[[Session, int], Job],
    session: Callable[[], Any],
) -> None:
    def user_named(s: Session, name: str) -> User:
        user = s.scalar(select(User).where(User.name == name))
        if user is None:
            raise HTTPException(404, f"No user {name!r}. To fix: create it with 'treino users add {name} --role ...'.")
        return user

    # --- people and tokens -----------------------------------------------------------------------------------
    @app.post("/api/v1/users", status_code=201)
    def add_user(body: UserIn, who: Annotated[Principal, need("users.manage")]) -> dict[str, Any]:
        with service.sessions.begin() as s:
            if s.scalar(select(User).where(User.name == body.name)) is not None:
                raise HTTPException(409, f"User {body.name!r} exists.")
            user = User(name=body.name, role=body.role)
            s.add(user)
            service.audit(s, who.name, "user.create", detail={"user": body.name, "role": body.role})
        return {"id": user.id, "name": user.name, "role": user.role}

    @app.get("/api/v1/users")
    def users(_who: Annotated[Principal, need("users.manage")]) -> dict[str, Any]:
        with service.sessions() as s:
            rows = s.scalars(select(User).order_by(User.id))
            return {
                "users": [{"id": u.id, "name": u.name, "role": u.role, "disabled": bool(u.disabled_at)} for u in rows]
            }

    @app.post("/api/v1/tokens", status_code=201)
    def add_token(body: TokenIn, who: Annotated[Principal, need("tokens.manage")]) -> dict[str, Any]:
        raw = "trn_" + secrets.token_urlsafe(32)
        with service.sessions.begin() as s:
            user = user_named(s, body.user)
            expires = time.time() + body.expires_days * 86400 if body.expires_days else None
            token = Token(
                name=body.name or body.user,
                role=user.role,
                token_hash=token_hash(raw),
                user_id=user.id,
                expires_at=expires,
            )
            s.add(token)
            s.flush()
            service.audit(
                s, who.name, "token.create", detail={"token": token.id, "user": user.name, "expires_at": expires}
            )
        return {"id": token.id, "user": user.name, "role": user.role, "expires_at": expires, "token": raw}

    @app.get("/api/v1/tokens")
    def tokens(_who: Annotated[Principal, need("tokens.manage")]) -> dict[str, Any]:
        with service.sessions() as s:
            rows = s.execute(select(Token, User).join(User, Token.user_id == User.id, isouter=True).order_by(Token.id))
            return {
                "tokens": [
                    {
                        "id": t.id,
                        "name": t.name,
                        "user": u.name if u else t.name,
                        "role": u.role if u else t.role,
                        "created_at": t.created_at,
                        "expires_at": t.expires_at,
                        "revoked_at": t.revoked_at,
                    }
                    for t, u in rows
                ]
            }

    @app.post("/api/v1/tokens/{token_id}/revoke")
    def revoke_token(token_id: int, who: Annotated[Principal, need("tokens.manage")]) -> dict[str, Any]:
        with service.sessions.begin() as s:
            token = s.get(Token, token_id)
            if token is None:
                raise HTTPException(404, f"No token {token_id}.")
            token.revoked_at = token.revoked_at or time.time()
            service.audit(s, who.name, "token.revoke", detail={"token": token_id})
        service.forget_tokens()
        return {"id": token_id, "revoked_at": token.revoked_at}

    # --- grants and transfers --------------------------------------------------------------------------------
    @app.post("/api/v1/grants", status_code=201)
    def add_grant(body: GrantIn, who: Annotated[Principal, need("grants.manage")]) -> dict[str, Any]:
        with service.sessions.begin() as s:
            user = user_named(s, body.user)
            dataset = s.scalar(select(Dataset).where(Dataset.name == body.dataset))
            if dataset is None:
                raise HTTPException(404, f"No dataset {body.dataset!r}. To fix: see 'treino data list'.")
            outside = [p for p in body.purposes if p not in dataset.purposes]
            if outside:
                raise _forbidden(
                    PolicyViolation(
                        "purpose",
                        f"dataset {dataset.name} allows {', '.join(dataset.purposes)}, not {', '.join(outside)} "
                        "(LGPD Art. 6 I). To fix: grant one of the dataset's purposes.",
                    )
                )
            grant = Grant(user_id=user.id, dataset=dataset.name, purposes=body.purposes, granted_by=who.name)
            s.add(grant)
            s.flush()
            service.audit(
                s,
                who.name,
                "grant.create",
                dataset=dataset.name,
                detail={"grant": grant.id, "user": user.name, "purposes": body.purposes},
            )
        return {"id": grant.id, "user": user.name, "dataset": dataset.name, "purposes": body.purposes}

    @app.get("/api/v1/grants")
    def grants(_who: Annotated[Principal, need("grants.manage")]) -> dict[str, Any]:
        with service.sessions() as s:
            rows = s.execute(select(Grant, User).join(User, Grant.user_id == User.id).order_by(Grant.id))
            return {
                "grants": [
                    {
                        "id": g.id,
                        "user": u.name,
                        "dataset": g.dataset,
                        "purposes": g.purposes,
                        "granted_by": g.granted_by,
                        "created_at": g.created_at,
                        "revoked_at": g.revoked_at,
                    }
                    for g, u in rows
                ]
            }

    @app.post("/api/v1/grants/{grant_id}/revoke")
    def revoke_grant(grant_id: int, who: Annotated[Principal, need("grants.manage")]) -> dict[str, Any]:
        with service.sessions.begin() as s:
            grant = s.get(Grant, grant_id)
            if grant is None:
                raise HTTPException(404, f"No grant {grant_id}.")
            grant.revoked_at = grant.revoked_at or time.time()
            service.audit(s, who.name, "grant.revoke", dataset=grant.dataset, detail={"grant": grant_id})
        return {"id": grant_id, "revoked_at": grant.revoked_at}

    @app.post("/api/v1/transfers", status_code=201)
    def add_transfer(body: TransferIn, who: Annotated[Principal, need("transfers.manage")]) -> dict[str, Any]:
        from treino.govern.access import site

        try:
            where = site(body.site)
        except TreinoError as exc:
            raise HTTPException(422, [{"field": "site", "message": str(exc)}]) from exc
        with service.sessions.begin() as s:
            transfer = Transfer(
                site=where.name,
                mechanism=body.mechanism,
                reference=body.reference,
                signed_on=body.signed_on,
                created_by=who.name,
            )
            s.add(transfer)
            s.flush()
            service.audit(s, who.name, "transfer.record", detail={"transfer": transfer.id, **body.model_dump()})
        return {"id": transfer.id, **body.model_dump()}

    @app.get("/api/v1/transfers")
    def transfers(_who: Annotated[Principal, need("transfers.manage")]) -> dict[str, Any]:
        with service.sessions() as s:
            rows = s.scalars(select(Transfer).order_by(Transfer.id))
            return {
                "transfers": [
                    {
                        "id": t.id,
                        "site": t.site,
                        "mechanism": t.mechanism,
                        "reference": t.reference,
                        "signed_on": t.signed_on,
                        "revoked_at": t.revoked_at,
                    }
                    for t in rows
                ]
            }

    # --- datasets --------------------------------------------------------------------------------------------
    @app.post("/api/v1/datasets", status_code=201)
    def add_dataset(body: DatasetIn, who: Annotated[Principal, need("datasets.register")]) -> dict[str, Any]:
        try:
            return governance.register_dataset(service, body.model_dump(), who.name)
        except PolicyViolation as exc:
            raise _forbidden(exc) from exc
        except TreinoError as exc:
            raise HTTPException(422, [{"field": "dataset", "message": str(exc)}]) from exc

    @app.get("/api/v1/datasets")
    def datasets(_who: Annotated[Principal, need("datasets.read")]) -> dict[str, Any]:
        with service.sessions() as s:
            return {
                "datasets": [
                    governance.dataset_json(service, s, d) for d in s.scalars(select(Dataset).order_by(Dataset.id))
                ]
            }

    @app.get("/api/v1/datasets/{name}")
    def dataset(name: str, _who: Annotated[Principal, need("datasets.read")]) -> dict[str, Any]:
        with service.sessions() as s:
            d = s.scalar(select(Dataset).where(Dataset.name == name))
            if d is None:
                raise HTTPException(404, f"No dataset {name!r}. To fix: see 'treino data list'.")
            return governance.dataset_json(service, s, d)

    @app.get("/api/v1/jobs/{job_id}/datasets/{name}")
    def job_dataset(job_id: int, name: str, authorization: Annotated[str | None, Header()] = None) -> dict[str, Any]:
        """What `run.dataset(NAME)` asks: the version pinned at submit. Only the job's own token may ask, and the
        read is recorded (dataset.read) with the job, its owner and the version's hash."""
        raw = bearer(authorization)
        with service.sessions.begin() as s:
            job = job_or_404(s, job_id)
            if not secrets.compare_digest(job.job_token_hash, token_hash(raw)):
                raise HTTPException(401, "Only the job's own token (TREINO_JOB_TOKEN) may read its datasets.")
            row = s.execute(
                select(JobDataset, DatasetVersion, Dataset)
                .join(DatasetVersion, JobDataset.version_id == DatasetVersion.id)
                .join(Dataset, DatasetVersion.dataset_id == Dataset.id)
                .where(JobDataset.job_id == job_id, Dataset.name == name)
            ).first()
            if row is None:
                raise HTTPException(
                    403,
                    {
                        "rule": "dataset",
                        "message": f"job {job_id} did not declare dataset {name!r} at submit. "
                        "To fix: list it under 'datasets:' in the job spec.",
                    },
                )
            pin, version, d = row
            if job.state not in ACTIVE_STATES:
                raise HTTPException(409, f"Job {job_id} is {job.state}: only a running job reads its datasets.")
            owner = s.scalar(select(User).where(User.name == job.owner))
            try:  # checked again at read time: a grant, a user or a transfer may have been revoked since submit
                if owner is None or owner.disabled_at is not None:
                    raise PolicyViolation("grant", f"the job's owner {job.owner} is no longer an active user.")
                check_grant(s, owner, d, pin.purpose)
                site_now = service.job_site(s, job)
                check_residency(s, d, site_now)
            except PolicyViolation as exc:
                with service.sessions.begin() as denial:  # recorded even though this request fails
                    service.audit(
                        denial,
                        job.owner,
                        "job.deny",
                        dataset=name,
                        job_id=job_id,
                        detail={"rule": exc.rule, "reason": str(exc), "at": "read"},
                    )
                raise _forbidden(exc) from exc
            if version.purged_at is not None:
                raise HTTPException(
                    410,
                    f"Version {version.number} of {name} was erased (Art. 18 VI) after this job was admitted. "
                    "To fix: resubmit the job; it will get the current version.",
                )
            pin.first_read_at = pin.first_read_at or time.time()
            service.audit(
                s,
                job.owner,
                "dataset.read",
                dataset=name,
                job_id=job_id,
                detail={
                    "version": version.number,
                    "sha256": version.sha256,
                    "purpose": pin.purpose,
                    "site": site_now.name if site_now else None,
                },
            )
            return {
                "dataset": name,
                "version": version.number,
                "sha256": version.sha256,
                "path": str(store_path(service.settings.store, version)),
                "rows": version.rows,
                "format": "parquet",
                "subject_column": d.subject_column,
            }

    # --- audit -----------------------------------------------------------------------------------------------
    @app.get("/api/v1/audit/verify")
    def audit_verify(_who: Annotated[Principal, need("audit.read")]) -> dict[str, Any]:
        from treino.govern.audit import verify

        with service.sessions() as s:
            result = verify(s, service.audit_log.key, checkpoint_every=service.audit_log.checkpoint_every)
        return {
            "ok": result.ok,
            "records": result.records,
            "first_bad_seq": result.first_bad_seq,
            "reason": result.reason,
            "checkpoints": result.checkpoints,
            "last_hash": result.last_hash,  # the head of an intact chain: publish it to an outside witness
        }

    @app.get("/api/v1/audit/export")
    def audit_export(
        _who: Annotated[Principal, need("audit.read")],
        fmt: str = "jsonl",
        dataset: str | None = None,
        actor: str | None = None,
        subject: str | None = None,
        since: float | None = None,
        until: float | None = None,
    ) -> Response:
        from treino.govern.audit import export

        if fmt not in ("jsonl", "csv"):
            raise HTTPException(422, [{"field": "fmt", "message": "jsonl or csv"}])
        out = io.StringIO()
        with service.sessions() as s:
            export(s, out, fmt=fmt, dataset=dataset, actor=actor, subject=subject, since=since, until=until)
        return Response(out.getvalue(), media_type="text/csv" if fmt == "csv" else "application/x-ndjson")

    @app.get("/api/v1/audit/records")
    def audit_records(_who: Annotated[Principal, need("audit.read")]) -> Response:
        from treino.govern.audit import processing_records, render_processing_records

        with service.sessions() as s:
            text = render_processing_records(processing_records(s, controller=service.settings.controller))
        return Response(text, media_type="text/markdown")

    # --- lineage ---------------------------------------------------------------------------------------------
    @app.get("/api/v1/models")
    def models(_who: Annotated[Principal, need("lineage.read")]) -> dict[str, Any]:
        with service.sessions() as s:
            return {
                "models": [governance.model_json(service, s, m) for m in s.scalars(select(Model).order_by(Model.id))]
            }

    @app.get("/api/v1/lineage/models/{model_id}")
    def lineage_model(model_id: int, _who: Annotated[Principal, need("lineage.read")]) -> dict[str, Any]:
        with service.sessions() as s:
            m = s.get(Model, model_id)
            if m is None:
                raise HTTPException(404, f"No model {model_id}. To fix: see 'treino lineage models'.")
            return governance.model_json(service, s, m)

    @app.get("/api/v1/lineage/datasets/{name}")
    def lineage_dataset(name: str, _who: Annotated[Principal, need("lineage.read")]) -> dict[str, Any]:
        with service.sessions() as s:
            d = s.scalar(select(Dataset).where(Dataset.name == name))
            if d is None:
                raise HTTPException(404, f"No dataset {name!r}. To fix: see 'treino data list'.")
            return governance.dataset_lineage(service, s, d)

    # --- data subjects ---------------------------------------------------------------------------------------
    @app.post("/api/v1/erasures", status_code=201)
    def erase(body: ErasureIn, who: Annotated[Principal, need("erasure.run")]) -> dict[str, Any]:
        try:
            return governance.erase(service, body.subject, body.dataset, body.retrain, who.name)
        except PolicyViolation as exc:
            raise _forbidden(exc) from exc

    @app.post("/api/v1/subjects/report")
    def subject_report(body: SubjectIn, who: Annotated[Principal, need("subject.report")]) -> dict[str, Any]:
        return governance.subject_report(service, body.subject, who.name)
