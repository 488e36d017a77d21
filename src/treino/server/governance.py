"""The server's governance actions: each one does the work (treino.govern.*) and writes its audit records in the
same transaction, so the chain never says less than what happened. They answer with the API's models
(treino.server.schemas), which the dashboard reads too."""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no py.typed marker
from sqlalchemy import func, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session

from treino.errors import Conflict, Gone, NotFound, PolicyViolation, TreinoError, Unauthenticated
from treino.govern import datasets as store_ops
from treino.govern import retention
from treino.govern.access import Principal, Site, check_grant, check_residency
from treino.govern.aliases import subject_pseudonyms
from treino.govern.audit import Action, pseudonym
from treino.govern.models import AuditRecord, Dataset, DatasetVersion, Erasure, Grant, JobDataset, Model, Role, User
from treino.govern.tombstones import ErasedSubjectsRefused, KeepOut, bury
from treino.i18n import Msg, to_data
from treino.server import quarantine, unlearning
from treino.server.auth import is_job_token
from treino.server.context import ServerContext
from treino.server.db import ACTIVE_STATES, Job
from treino.server.isolation import drop_dataset_copies, give_dataset
from treino.server.schemas import (
    DatasetIn,
    DatasetLineage,
    DatasetOut,
    DatasetPin,
    DatasetRegistered,
    ErasureOut,
    ErasureRef,
    Holding,
    MarkedModel,
    ModelOut,
    ModelRef,
    RetrainRefused,
    SubjectModel,
    SubjectReportOut,
    TrainedOn,
    VersionLineage,
    VersionOut,
)
from treino.server.settings import ERASURE_DEADLINE_DAYS
from treino.server.spec import JobSpec
from treino.server.submission import JobHook, job_site

log = logging.getLogger("treino.server")


def dataset_named(s: Session, name: str) -> Dataset:
    d = s.scalar(select(Dataset).where(Dataset.name == name))
    if d is None:
        raise NotFound(Msg("No dataset {name!r}. To fix: see 'treino data list'.", name=name))
    return d


def register_dataset(ctx: ServerContext, body: DatasetIn, actor: str) -> DatasetRegistered:
    if not ctx.settings.import_roots:
        raise PolicyViolation(
            "import roots",
            Msg(
                "this server accepts no dataset imports. To fix: start it with --import-root DIR (the folders "
                "datasets may be registered from)."
            ),
        )
    if body.collected_at is not None and body.collected_at > time.time():
        raise TreinoError(
            Msg(
                "collected_at is in the future: retention runs from when the data was collected. To fix: give the "
                "collection date, or leave it out (retention then runs from the registration)."
            )
        )
    try:
        registered = _register(ctx, body, actor)
        ctx.retention_changed.set()  # its period may end before the retention check's next run
        return registered
    except ErasedSubjectsRefused as exc:
        with ctx.sessions.begin() as s:  # the refusal is audited; the request fails
            detail = {"rows": exc.rows, "subjects": exc.subjects, "strict": True}
            ctx.audit.append(s, actor=actor, action=Action.ERASED_ROWS_STRIPPED, dataset=body.name, detail=detail)
        raise


def _register(ctx: ServerContext, body: DatasetIn, actor: str) -> DatasetRegistered:
    with ctx.sessions.begin() as s:
        keep_out = KeepOut(s, ctx.audit.key, strict=body.strict)
        done = store_ops.register_dataset(
            s,
            ctx.settings.store,
            name=body.name,
            path=Path(body.path),
            allowed_roots=list(ctx.settings.import_roots),
            legal_basis=body.legal_basis,
            purposes=body.purposes,
            personal_data=body.personal_data,
            sensitive=body.sensitive,
            residency=body.residency,
            retention_days=body.retention_days,
            subject_column=body.subject_column,
            actor=actor,
            keep_out=keep_out,
        )
        v, d = done.version, done.dataset
        d.retention_from = body.collected_at
        if keep_out.rows:
            done.warnings.append(
                Msg(
                    "{rows} row(s) of {subjects} subject(s) erased earlier were stripped from this import (Art. 18 "
                    "VI: erased stays erased).",
                    rows=keep_out.rows,
                    subjects=keep_out.subjects,
                )
            )
        detail: dict[str, Any] = {
            "version": v.number,
            "sha256": v.sha256,
            "rows": v.rows,
            "legal_basis": d.legal_basis,
            "purposes": d.purposes,
            "personal_data": d.personal_data,
            "sensitive": d.sensitive,
            "residency": d.residency,
            "cpf_columns": [f.column for f in done.cpf_findings],
            "warnings": done.warnings,
            "erased_rows_stripped": keep_out.rows,
        }
        ctx.audit.append(s, actor=actor, action="dataset.register", dataset=d.name, detail=detail)
        if keep_out.rows:
            detail = {"version": v.number, "rows": keep_out.rows, "subjects": keep_out.subjects, "strict": False}
            ctx.audit.append(s, actor=actor, action=Action.ERASED_ROWS_STRIPPED, dataset=d.name, detail=detail)
        return DatasetRegistered(
            **dataset_out(s, d).model_dump(),
            warnings=done.warnings,
            warnings_msg=[to_data(w) for w in done.warnings],
            erased_rows_stripped=keep_out.rows,
        )


def _versions(s: Session, d: Dataset) -> list[DatasetVersion]:
    return list(
        s.scalars(select(DatasetVersion).where(DatasetVersion.dataset_id == d.id).order_by(DatasetVersion.number))
    )


def _version_out(v: DatasetVersion) -> VersionOut:
    return VersionOut.model_validate(v, from_attributes=True)


def dataset_out(s: Session, d: Dataset) -> DatasetOut:
    return DatasetOut(
        name=d.name,
        format=d.format,
        legal_basis=d.legal_basis,
        purposes=d.purposes,
        personal_data=d.personal_data,
        sensitive=d.sensitive,
        residency=d.residency,
        retention_days=d.retention_days,
        subject_column=d.subject_column,
        created_by=d.created_by,
        created_at=d.created_at,
        versions=[_version_out(v) for v in _versions(s, d)],
        expires_at=retention.expires_at(d),
        expired=retention.expired(d),
    )


def model_out(s: Session, m: Model) -> ModelOut:
    reads = s.execute(
        select(Dataset.name, DatasetVersion.number, DatasetVersion.sha256, DatasetVersion.purged_at, JobDataset.purpose)
        .join(DatasetVersion, DatasetVersion.dataset_id == Dataset.id)
        .join(JobDataset, JobDataset.version_id == DatasetVersion.id)
        .where(JobDataset.job_id == m.job_id)
    ).all()
    job = s.get(Job, m.job_id)
    return ModelOut(
        id=m.id,
        job=m.job_id,
        job_name=job.name if job else None,
        kind=m.kind,
        step=m.step,
        path=m.path,
        personal_data=m.personal_data,
        sensitive=m.sensitive,
        residency=m.residency,
        created_at=m.created_at,
        affected_by_erasure=m.erasure_id,
        erasure_note=m.erasure_note,
        quarantined_at=m.quarantined_at,
        quarantined_by=m.quarantined_by,
        deleted_at=m.deleted_at,
        deleted_by=m.deleted_by,
        quarantine_lifted=quarantine.last_lift(s, m),
        trained_on=[
            TrainedOn(dataset=n, version=v, sha256=sha, erased=purged is not None, purpose=purpose)
            for n, v, sha, purged, purpose in reads
        ],
    )


def dataset_lineage(s: Session, d: Dataset) -> DatasetLineage:
    """Each version of `d`, the jobs that read it, and the models those jobs produced."""
    versions = []
    for v in _versions(s, d):
        job_ids = list(s.scalars(select(JobDataset.job_id).where(JobDataset.version_id == v.id)))
        models = s.scalars(select(Model).where(Model.job_id.in_(job_ids)).order_by(Model.id))
        versions.append(
            VersionLineage(
                **_version_out(v).model_dump(),
                jobs=job_ids,
                models=[
                    ModelRef(
                        id=m.id,
                        job=m.job_id,
                        kind=m.kind,
                        step=m.step,
                        affected_by_erasure=m.erasure_id,
                        quarantine=quarantine.state(s, m),
                    )
                    for m in models
                ],
            )
        )
    reads = s.scalar(
        select(func.count())
        .select_from(AuditRecord)
        .where(AuditRecord.dataset == d.name, AuditRecord.action == "dataset.read")
    )
    return DatasetLineage(**{**dataset_out(s, d).model_dump(), "versions": versions}, reads=reads or 0)


def read_pinned_dataset(ctx: ServerContext, job_id: int, name: str, token: str) -> DatasetPin:
    """What `run.dataset(NAME)` asks for: the version pinned at submit, for the job's own running attempt (its
    token) only. Grants, the owner's account and residency are checked again, since any may have been revoked
    after submit; the read (dataset.read), or its denial, goes into the audit chain."""
    with ctx.sessions.begin() as s:
        job = s.get(Job, job_id)
        if job is None:
            raise NotFound(Msg("No job {job_id}. To fix: list jobs with 'treino jobs'.", job_id=job_id))
        if not is_job_token(job.job_token_hash, token):
            raise Unauthenticated(Msg("Only the job's own token (TREINO_JOB_TOKEN) may read its datasets."))
        row = s.execute(
            select(JobDataset, DatasetVersion, Dataset)
            .join(DatasetVersion, JobDataset.version_id == DatasetVersion.id)
            .join(Dataset, DatasetVersion.dataset_id == Dataset.id)
            .where(JobDataset.job_id == job_id, Dataset.name == name, JobDataset.inherited_from.is_(None))
        ).first()
        if row is None:
            raise PolicyViolation(
                "dataset",
                Msg(
                    "job {job_id} did not declare dataset {name!r} at submit. To fix: list it under 'datasets:' in "
                    "the job spec.",
                    job_id=job_id,
                    name=name,
                ),
            )
        pin, version, d = row
        if job.state not in ACTIVE_STATES:
            raise Conflict(
                Msg("Job {job_id} is {state}: only a running job reads its datasets.", job_id=job_id, state=job.state)
            )
        site_now = _recheck(ctx, s, job, d, pin.purpose)
        if version.purged_at is not None:
            raise Gone(
                Msg(
                    "Version {number} of {name} was erased (Art. 18 VI) after this job was admitted. To fix: resubmit "
                    "the job; it will get the current version.",
                    number=version.number,
                    name=name,
                )
            )
        pin.first_read_at = pin.first_read_at or time.time()
        detail: dict[str, Any] = {
            "version": version.number,
            "sha256": version.sha256,
            "purpose": pin.purpose,
            "site": site_now.name if site_now else None,
        }
        ctx.audit.append(s, actor=job.owner, action="dataset.read", dataset=name, job_id=job_id, detail=detail)
        stored = store_ops.version_path(ctx.settings.store, version)
        answer = DatasetPin(
            dataset=name,
            version=version.number,
            sha256=version.sha256,
            path=str(stored),
            rows=version.rows,
            format="parquet",
            subject_column=d.subject_column,
        )
    # A job that runs as the job user cannot open the store: it reads a copy in its own folder (made after the
    # commit, so a large copy holds no database lock).
    given = give_dataset(stored, ctx.engine.job_dir(job_id), ctx.settings.job_user)
    return answer.model_copy(update={"path": str(given)})


def _recheck(ctx: ServerContext, s: Session, job: Job, d: Dataset, purpose: str) -> Site | None:
    """The owner still active and granted, and the job's site still allowed; a denial is audited in its own
    transaction (the request fails, the record stays)."""
    owner = s.scalar(select(User).where(User.name == job.owner))
    try:
        if owner is None or owner.disabled_at is not None:
            raise PolicyViolation("grant", Msg("the job's owner {owner} is no longer an active user.", owner=job.owner))
        check_grant(s, owner, d, purpose)
        retention.check_retention(d)
        site_now = job_site(ctx.settings, ctx.engine, s, job)
        check_residency(s, d, site_now)
    except PolicyViolation as exc:
        with ctx.sessions.begin() as denial:
            detail = {"rule": exc.rule, "reason": str(exc), "at": "read"}
            ctx.audit.append(denial, actor=job.owner, action="job.deny", dataset=d.name, job_id=job.id, detail=detail)
        raise
    return site_now


def erase(ctx: ServerContext, subject: str, dataset: str | None, retrain: bool, actor: str) -> ErasureOut:
    """Art. 18 VI: new versions without the subject, old bytes purged, derived models marked, optional retraining,
    and a report with the Art. 19 deadline. The subject id is never stored: only its keyed pseudonym."""
    subject_pseudonym = pseudonym(ctx.audit.key, subject)
    with ctx.sessions() as s:  # the reading and writing of Parquet, before the transaction (scan_erasure)
        if dataset is not None:
            dataset_named(s, dataset)
        scan = store_ops.scan_erasure(s, ctx.settings.store, subject_id=subject, dataset=dataset)
    try:
        erasure, result, report = _erase_recorded(ctx, subject, subject_pseudonym, dataset, retrain, actor, scan)
    finally:  # a new version no committed version points to (the transaction failed, or one came in between)
        _drop_unused_files(ctx, scan)
    rows: dict[str, pa.Table] = {}
    if retrain and result.job_ids:  # for the retraining's memorisation check, read before the bytes go
        with ctx.sessions() as s:
            specs = s.scalars(select(Job.spec).where(Job.id.in_(result.job_ids)))
            if any(spec.get("sisa") or spec.get("memorisation_check") for spec in specs):
                rows = unlearning.erased_rows(s, ctx.settings.store, result, subject)
    for rel in result.deleted_files:
        (ctx.settings.store / rel).unlink(missing_ok=True)
    drop_dataset_copies(ctx.settings.jobs_dir, {Path(rel).name for rel in result.deleted_files})
    retrained, refused = _retrain(ctx, result.job_ids, erasure.id, rows) if retrain else ([], [])
    with ctx.sessions.begin() as s:
        row = s.get(Erasure, erasure.id)
        assert row is not None
        # A retraining job may have ended (and added its memorisation figures) already.
        row.report = {
            **(row.report or {}),
            **report,
            "retrain_jobs": retrained,
            "retrain_refused": [r.model_dump() for r in refused],
        }
        detail = {
            "erasure": erasure.id,
            "rows_removed": result.rows_removed,
            "models": result.model_ids,
            "retrain_jobs": retrained,
            "found": result.found,
        }
        ctx.audit.append(s, actor=actor, action="erasure.complete", subject=subject_pseudonym, detail=detail)
    return ErasureOut(
        **report,
        erasure=erasure.id,
        subject_pseudonym=subject_pseudonym,
        requested_at=erasure.requested_at,
        deadline_at=erasure.deadline_at,
        deadline_days=ERASURE_DEADLINE_DAYS,
        retrain_jobs=retrained,
        retrain_refused=refused,
    )


def _drop_unused_files(ctx: ServerContext, scan: store_ops.ErasureScan) -> None:
    """store_ops.drop_unused_files, holding the audit chain as erasures do (see there). A failure is logged, not
    raised: it must not hide the erasure's own error, and the files hold no data of the subject."""
    if not any(s.stored for s in scan.values()):
        return
    try:
        with ctx.sessions.begin() as s:
            ctx.audit.hold_chain(s)
            store_ops.drop_unused_files(s, ctx.settings.store, scan)
    except (OSError, DBAPIError):
        log.exception("could not delete an erasure's unused new files; the store keeps them")


def _erase_recorded(
    ctx: ServerContext,
    subject: str,
    subject_pseudonym: str,
    dataset: str | None,
    retrain: bool,
    actor: str,
    scan: store_ops.ErasureScan,
) -> tuple[Erasure, store_ops.ErasureResult, dict[str, Any]]:
    """The erasure's one transaction: its row, the tombstone, the new versions and purge marks, the marked models
    and their audit records (the Parquet work was done before, by scan_erasure)."""
    with ctx.sessions.begin() as s:
        erasure = store_ops.open_erasure(s, subject_pseudonym=subject_pseudonym, dataset=dataset, requested_by=actor)
        bury(s, ctx.audit.key, subject, dataset=dataset, erasure_id=erasure.id)
        detail: dict[str, Any] = {"erasure": erasure.id, "deadline_at": erasure.deadline_at, "retrain": retrain}
        ctx.audit.append(
            s, actor=actor, action="erasure.request", subject=subject_pseudonym, dataset=dataset, detail=detail
        )
        result = store_ops.erase_subject(
            s,
            ctx.settings.store,
            subject_id=subject,
            dataset=dataset,
            actor=actor,
            erasure_id=erasure.id,
            delete_files=False,  # deleted below, once the new versions and the purge marks are committed
            scan=scan,
        )
        for d in result.datasets:
            detail = {
                "erasure": erasure.id,
                "new_version": d.new_version,
                "new_sha256": d.new_sha256,
                "purged": [{"version": p.number, "sha256": p.sha256} for p in d.purged],
                "rows_removed": d.rows_removed,
            }
            ctx.audit.append(
                s, actor=actor, action="dataset.version", dataset=d.dataset, subject=subject_pseudonym, detail=detail
            )
        for model_id in result.model_ids:
            detail = {"erasure": erasure.id, "model": model_id}
            ctx.audit.append(s, actor=actor, action="model.mark", subject=subject_pseudonym, detail=detail)
        report = result.report()
    return erasure, result, report


def _retrain(
    ctx: ServerContext, job_ids: list[int], erasure_id: int, erased: dict[str, pa.Table] | None = None
) -> tuple[list[int], list[RetrainRefused]]:
    """Each affected job again, same spec and owner, through the one submit path: admitted anew, it gets the
    versions without the subject. A job no longer admitted (a revoked grant, a plan that no longer fits) is
    listed with its reason; it never fails the erasure already done. A SISA job continues from its shards' slice
    checkpoints; every job gets the erased rows for its memorisation check (treino.server.unlearning)."""
    queued: list[int] = []
    refused: list[RetrainRefused] = []
    for job_id in sorted(set(job_ids)):
        with ctx.sessions() as s:
            job = s.get(Job, job_id)
            if job is None:
                continue
            owner = s.scalar(select(User).where(User.name == job.owner))
            spec = JobSpec.model_validate({**job.spec, "name": f"{job.name}-retrain-e{erasure_id}"[:100]})
            who = (
                Principal(owner.name, Role(owner.role), 0, owner.id)
                if owner
                else Principal(job.owner, Role.VIEWER, 0, None)
            )
        # only the erased rows of the datasets this job was admitted to read: never another dataset's
        mine = {name: rows for name, rows in (erased or {}).items() if name in spec.datasets}
        checks = spec.sisa is not None or spec.memorisation_check  # the rows go only to code written to check them
        hook = _retraining(ctx, job_id, erasure_id, mine if checks else {}, sisa=spec.sisa is not None)
        try:
            new = ctx.submissions.submit(spec, who, hook)
        except TreinoError as exc:  # PolicyViolation is audited by submit (job.deny)
            rule = exc.rule if isinstance(exc, PolicyViolation) else exc.field
            refused.append(RetrainRefused(job=job_id, rule=rule, reason=str(exc)))
            continue
        queued.append(new.id)
    ctx.job_lists.clear()
    return queued, refused


def _retraining(ctx: ServerContext, job_id: int, erasure_id: int, erased: dict[str, pa.Table], sisa: bool) -> JobHook:
    """The submit hook of job `job_id`'s retraining, run in its submit transaction: given `erased` rows (a SISA job's,
    or one whose spec asks for the memorisation check), it is listed in the erasure's record with the rows placed in
    its folder; a SISA job that left a `sisa/` checkpoint continues from it (else it starts from scratch), and is
    listed as such."""
    step = unlearning.sisa_step(ctx.engine.checkpoint_dir(job_id)) if sisa else None

    def retrain(s: Session, job: Job) -> None:
        if step is not None:
            job.continues_from, job.continues_from_step = job_id, step
        s.flush()
        erasure = s.get(Erasure, erasure_id)
        assert erasure is not None
        report = dict(erasure.report or {})  # which job retrains which (a lift of a quarantine asks)
        report[quarantine.RETRAINED_KEY] = {**report.get(quarantine.RETRAINED_KEY, {}), str(job_id): job.id}
        erasure.report = report
        if step is None and not erased:
            return  # a plain retraining: nothing more to record or give
        key = unlearning.SISA_JOBS_KEY if step is not None else unlearning.CHECKED_JOBS_KEY
        report = dict(erasure.report or {})
        report[key] = [*report.get(key, []), job.id]
        erasure.report = report
        if erased:
            unlearning.place_erased_rows(ctx.engine.job_dir(job.id), erased, ctx.settings.job_user)

    return retrain


def subject_report(ctx: ServerContext, subject: str, actor: str) -> SubjectReportOut:
    """Art. 18 II: which datasets and versions hold the subject, and which models used them. Recorded in the audit
    (subject.report) even when nothing matches."""
    with ctx.sessions.begin() as s:
        # The canonical pseudonym, and those the subject may be recorded under from before canonical ids.
        known_as = subject_pseudonyms(s, ctx.audit.key, subject)
        subject_pseudonym = known_as[0]
        records = s.scalar(select(func.count()).select_from(AuditRecord).where(AuditRecord.subject.in_(known_as)))
        report = store_ops.subject_report(s, ctx.settings.store, subject)
        names = sorted({h.dataset for h in report.holdings})
        detail = {"found": report.found, "datasets": names, "models": [m.model_id for m in report.models]}
        ctx.audit.append(s, actor=actor, action="subject.report", subject=subject_pseudonym, detail=detail)
        erasures = s.scalars(select(Erasure).where(Erasure.subject_pseudonym.in_(known_as)).order_by(Erasure.id)).all()
        grants = {d: _granted_to(s, d) for d in names}
        return SubjectReportOut(
            subject_pseudonym=subject_pseudonym,
            found=report.found,
            text=(text := report.text()),
            text_msg=to_data(text),
            holdings=[
                Holding(
                    dataset=h.dataset,
                    version=h.version,
                    sha256=h.sha256,
                    rows=h.rows,
                    legal_basis=h.legal_basis,
                    purposes=h.purposes,
                    residency=h.residency,
                    granted_to=grants.get(h.dataset, []),
                )
                for h in report.holdings
            ],
            models=[SubjectModel(id=m.model_id, job=m.job_id, kind=m.kind) for m in report.models],
            jobs=report.job_ids,
            erasures=[
                ErasureRef(
                    id=e.id,
                    requested_at=e.requested_at,
                    deadline_at=e.deadline_at,
                    memorisation=(e.report or {}).get("memorisation", []),
                    models=_marked_models(s, e),
                )
                for e in erasures
            ],
            generated_at=time.time(),
            audit_records=records or 0,
        )


def _marked_models(s: Session, erasure: Erasure) -> list[MarkedModel]:
    """The models `erasure` marked, and what became of each (quarantined, lifted and why, deleted)."""
    listed = [i for i in (erasure.report or {}).get("models", []) if isinstance(i, int)]
    rows = s.scalars(
        select(Model).where((Model.erasure_id == erasure.id) | (Model.id.in_(listed))).order_by(Model.id)
    ).all()
    return [
        MarkedModel(id=m.id, job=m.job_id, kind=m.kind, state=quarantine.state(s, m), lift=quarantine.last_lift(s, m))
        for m in rows
    ]


def _granted_to(s: Session, dataset: str) -> list[str]:
    query = select(User.name).join(Grant, Grant.user_id == User.id)
    return list(s.scalars(query.where(Grant.dataset == dataset, Grant.revoked_at.is_(None))))
