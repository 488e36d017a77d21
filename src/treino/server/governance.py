"""The server's governance actions: each one does the work (treino.govern.*) and writes its audit records in the
same transaction, so the chain never says less than what happened."""

from __future__ import annotations

import time
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from treino.errors import PolicyViolation
from treino.govern import datasets as store_ops
from treino.govern.access import Principal
from treino.govern.audit import pseudonym
from treino.govern.models import AuditRecord, Dataset, DatasetVersion, Erasure, Grant, JobDataset, Model, Role, User
from treino.server.db import Job
from treino.server.service import Service
from treino.server.spec import JobSpec

ERASURE_DEADLINE_DAYS = 15  # LGPD Art. 19 II: a complete answer within 15 days of the request


def register_dataset(service: Service, body: dict[str, Any], actor: str) -> dict[str, Any]:
    if not service.settings.import_roots:
        raise PolicyViolation(
            "import roots",
            "this server accepts no dataset imports. To fix: start it with --import-root DIR (the folders datasets "
            "may be registered from).",
        )
    with service.sessions.begin() as s:
        done = store_ops.register_dataset(
            s,
            service.settings.store,
            name=body["name"],
            path=body["path"],
            allowed_roots=list(service.settings.import_roots),
            legal_basis=body["legal_basis"],
            purposes=body["purposes"],
            personal_data=body["personal_data"],
            sensitive=body["sensitive"],
            residency=body["residency"],
            retention_days=body["retention_days"],
            subject_column=body["subject_column"],
            actor=actor,
        )
        v = done.version
        service.audit(
            s,
            actor,
            "dataset.register",
            dataset=done.dataset.name,
            detail={
                "version": v.number,
                "sha256": v.sha256,
                "rows": v.rows,
                "legal_basis": done.dataset.legal_basis,
                "purposes": done.dataset.purposes,
                "personal_data": done.dataset.personal_data,
                "sensitive": done.dataset.sensitive,
                "residency": done.dataset.residency,
                "cpf_columns": [f.column for f in done.cpf_findings],
                "warnings": done.warnings,
            },
        )
        return {**dataset_json(service, s, done.dataset), "warnings": done.warnings}


def dataset_json(service: Service, s: Session, d: Dataset) -> dict[str, Any]:
    versions = s.scalars(
        select(DatasetVersion).where(DatasetVersion.dataset_id == d.id).order_by(DatasetVersion.number)
    )
    return {
        "name": d.name,
        "format": d.format,
        "legal_basis": d.legal_basis,
        "purposes": d.purposes,
        "personal_data": d.personal_data,
        "sensitive": d.sensitive,
        "residency": d.residency,
        "retention_days": d.retention_days,
        "subject_column": d.subject_column,
        "created_by": d.created_by,
        "created_at": d.created_at,
        "versions": [
            {
                "number": v.number,
                "sha256": v.sha256,
                "rows": v.rows,
                "bytes": v.bytes,
                "reason": v.reason,
                "created_at": v.created_at,
                "purged_at": v.purged_at,
            }
            for v in versions
        ],
    }


def model_json(service: Service, s: Session, m: Model) -> dict[str, Any]:
    reads = s.execute(
        select(Dataset.name, DatasetVersion.number, DatasetVersion.sha256, DatasetVersion.purged_at, JobDataset.purpose)
        .join(DatasetVersion, DatasetVersion.dataset_id == Dataset.id)
        .join(JobDataset, JobDataset.version_id == DatasetVersion.id)
        .where(JobDataset.job_id == m.job_id)
    ).all()
    job = s.get(Job, m.job_id)
    return {
        "id": m.id,
        "job": m.job_id,
        "job_name": job.name if job else None,
        "kind": m.kind,
        "step": m.step,
        "path": m.path,
        "personal_data": m.personal_data,
        "sensitive": m.sensitive,
        "residency": m.residency,
        "created_at": m.created_at,
        "affected_by_erasure": m.erasure_id,
        "erasure_note": m.erasure_note,
        "trained_on": [
            {"dataset": n, "version": v, "sha256": sha, "erased": purged is not None, "purpose": purpose}
            for n, v, sha, purged, purpose in reads
        ],
    }


def dataset_lineage(service: Service, s: Session, d: Dataset) -> dict[str, Any]:
    """Each version of `d`, the jobs that read it, and the models those jobs produced."""
    out = dataset_json(service, s, d)
    for version in out["versions"]:
        v = s.scalar(
            select(DatasetVersion).where(DatasetVersion.dataset_id == d.id, DatasetVersion.number == version["number"])
        )
        assert v is not None
        job_ids = list(s.scalars(select(JobDataset.job_id).where(JobDataset.version_id == v.id)))
        version["jobs"] = job_ids
        version["models"] = [
            {"id": m.id, "job": m.job_id, "kind": m.kind, "step": m.step, "affected_by_erasure": m.erasure_id}
            for m in s.scalars(select(Model).where(Model.job_id.in_(job_ids)).order_by(Model.id))
        ]
    out["reads"] = s.scalar(
        select(func.count())
        .select_from(AuditRecord)
        .where(AuditRecord.dataset == d.name, AuditRecord.action == "dataset.read")
    )
    return out


def erase(service: Service, subject: str, dataset: str | None, retrain: bool, actor: str) -> dict[str, Any]:
    """Art. 18 VI: new versions without the subject, old bytes purged, derived models marked, optional retraining,
    and a report with the Art. 19 deadline. The subject id is never stored: only its keyed pseudonym."""
    subject_pseudonym = pseudonym(service.audit_log.key, subject)
    with service.sessions.begin() as s:
        if dataset is not None and s.scalar(select(Dataset).where(Dataset.name == dataset)) is None:
            raise PolicyViolation("dataset", f"unknown dataset {dataset!r}. To fix: see 'treino data list'.")
        erasure = store_ops.open_erasure(s, subject_pseudonym=subject_pseudonym, dataset=dataset, requested_by=actor)
        s.flush()
        service.audit(
            s,
            actor,
            "erasure.request",
            subject=subject_pseudonym,
            dataset=dataset,
            detail={"erasure": erasure.id, "deadline_at": erasure.deadline_at, "retrain": retrain},
        )
        result = store_ops.erase_subject(
            s,
            service.settings.store,
            subject_id=subject,
            dataset=dataset,
            actor=actor,
            erasure_id=erasure.id,
            delete_files=False,  # deleted below, once the new versions and the purge marks are committed
        )
        for d in result.datasets:
            service.audit(
                s,
                actor,
                "dataset.version",
                dataset=d.dataset,
                subject=subject_pseudonym,
                detail={
                    "erasure": erasure.id,
                    "new_version": d.new_version,
                    "new_sha256": d.new_sha256,
                    "purged": [{"version": p.number, "sha256": p.sha256} for p in d.purged],
                    "rows_removed": d.rows_removed,
                },
            )
        for model_id in result.model_ids:
            service.audit(
                s, actor, "model.mark", subject=subject_pseudonym, detail={"erasure": erasure.id, "model": model_id}
            )
        report = result.report()
    for rel in result.deleted_files:
        (service.settings.store / rel).unlink(missing_ok=True)
    retrained: list[int] = []
    retrain_refused: list[dict[str, Any]] = []
    if retrain:
        retrained, retrain_refused = _retrain(service, result.job_ids, erasure.id)
    with service.sessions.begin() as s:
        row = s.get(Erasure, erasure.id)
        assert row is not None
        row.report = {**report, "retrain_jobs": retrained, "retrain_refused": retrain_refused}
        service.audit(
            s,
            actor,
            "erasure.complete",
            subject=subject_pseudonym,
            detail={
                "erasure": erasure.id,
                "rows_removed": result.rows_removed,
                "models": result.model_ids,
                "retrain_jobs": retrained,
                "found": result.found,
            },
        )
    return {
        "erasure": erasure.id,
        "subject_pseudonym": subject_pseudonym,
        "requested_at": erasure.requested_at,
        "deadline_at": erasure.deadline_at,
        "deadline_days": ERASURE_DEADLINE_DAYS,
        **report,
        "retrain_jobs": retrained,
        "retrain_refused": retrain_refused,
    }


def _retrain(service: Service, job_ids: list[int], erasure_id: int) -> tuple[list[int], list[dict[str, Any]]]:
    """Each affected job again, same spec and owner, admitted anew: it gets the versions without the subject. A job
    that is no longer admitted is listed with its rule, never fails the erasure already done."""
    queued: list[int] = []
    refused: list[dict[str, Any]] = []
    for job_id in sorted(set(job_ids)):
        with service.sessions() as s:
            job = s.get(Job, job_id)
            if job is None:
                continue
            owner = s.scalar(select(User).where(User.name == job.owner))
            spec = JobSpec.model_validate({**job.spec, "name": f"{job.name}-retrain-e{erasure_id}"[:100]})
        who = Principal(owner.name, Role(owner.role), 0, owner.id) if owner else job.owner
        try:
            new, _ = service.submit(spec, who)
        except PolicyViolation as exc:  # e.g. the owner's grant was revoked since: said in the report (and audited)
            refused.append({"job": job_id, "rule": exc.rule, "reason": str(exc)})
            continue
        queued.append(new.id)
    return queued, refused


def subject_report(service: Service, subject: str, actor: str) -> dict[str, Any]:
    """Art. 18 II: which datasets and versions hold the subject, and which models used them. Recorded in the audit
    (subject.report) even when nothing matches."""
    subject_pseudonym = pseudonym(service.audit_log.key, subject)
    with service.sessions.begin() as s:
        report = store_ops.subject_report(s, service.settings.store, subject)
        service.audit(
            s,
            actor,
            "subject.report",
            subject=subject_pseudonym,
            detail={
                "found": report.found,
                "datasets": sorted({h.dataset for h in report.holdings}),
                "models": [m.model_id for m in report.models],
            },
        )
        erasures = s.scalars(select(Erasure).where(Erasure.subject_pseudonym == subject_pseudonym))
        grants = {
            d: [
                u
                for (u,) in s.execute(
                    select(User.name)
                    .join(Grant, Grant.user_id == User.id)
                    .where(Grant.dataset == d, Grant.revoked_at.is_(None))
                )
            ]
            for d in sorted({h.dataset for h in report.holdings})
        }
        return {
            "subject_pseudonym": subject_pseudonym,
            "found": report.found,
            "text": report.text(),
            "holdings": [
                {
                    "dataset": h.dataset,
                    "version": h.version,
                    "sha256": h.sha256,
                    "rows": h.rows,
                    "legal_basis": h.legal_basis,
                    "purposes": h.purposes,
                    "residency": h.residency,
                    "granted_to": grants.get(h.dataset, []),
                }
                for h in report.holdings
            ],
            "models": [{"id": m.model_id, "job": m.job_id, "kind": m.kind} for m in report.models],
            "jobs": report.job_ids,
            "erasures": [{"id": e.id, "requested_at": e.requested_at, "deadline_at": e.deadline_at} for e in erasures],
            "generated_at": time.time(),
        }
