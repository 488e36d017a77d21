"""What a DPO does with a model an erasure marked (its training data held the erased subject; models memorise):

    quarantine   the model stays on disk but is no longer served: GET /api/v1/models/{id}/file answers 403 (rule
                 "quarantine") with who quarantined it, when, and which erasure marked it
    delete       its files are removed from disk, and with them the checkpoint folder of the job that produced it
                 (every checkpoint of that job: they hold the same data); each model whose files lived there becomes
                 a tombstone (deleted_at, deleted_by), never a dangling path. Its file then answers 410.

    lift         the quarantine ends and the file is served again: LGPD's *bloqueio* (Art. 5 XIII, the temporary
                 suspension a quarantine is) ends in elimination (`delete`) or in a documented decision to resume.
                 Always with a reason. Refused (409) while the erasure that marked the model has not been carried
                 through to it (`retraining`: its job was not retrained by that erasure, or the retraining has not
                 succeeded), unless a legal basis is named under which the law keeps the data despite the erasure
                 (Art. 16 I-IV, which Art. 18 VI defers to); docs/govern.md says why.

Only a marked model (`erasure_id` set) may be quarantined or deleted: these are an erasure's consequences, not a
general way to drop lineage. A model of a job still running may not be deleted (its files are still being written).
Each is audited (model.quarantine, model.delete, model.lift) in the transaction that sets it; the files are removed
after the commit, so a crash in between leaves a tombstone whose files a second `delete` removes. A lift is kept in
the chain only (no column of its own): `last_lift` reads it back through the erasure's subject pseudonym, which the
lift record carries, so the subject's records tell the whole story.
"""

from __future__ import annotations

import os
import shutil
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from treino.errors import Conflict, Forbidden, Gone, NotFound, PolicyViolation
from treino.govern.access import Principal
from treino.govern.audit import Action
from treino.govern.models import AuditRecord, Erasure, Model, Role
from treino.i18n import Msg
from treino.server.context import ServerContext
from treino.server.db import ACTIVE_STATES, FINAL_STATES, Job, JobState
from treino.server.schemas import QuarantineLift
from treino.server.settings import MODEL_READ_CHUNK_BYTES

# In an erasure's report: {old job id (a string: JSON keys): its retraining job's id}, written at the retraining's
# submit (treino.server.governance._retraining). A report from before it has only `retrain_jobs`: matched by name.
RETRAINED_KEY = "retrained"


def marked_model(s: Session, model_id: int) -> Model:
    m = s.get(Model, model_id)
    if m is None:
        raise NotFound(Msg("No model {model_id}. To fix: see 'treino lineage models'.", model_id=model_id))
    if m.erasure_id is None:
        raise Conflict(
            Msg(
                "Model {model_id} is not marked by an erasure: quarantine and deletion are for models trained on an "
                "erased subject's data. To fix: see 'treino lineage model ID' for which models an erasure marked.",
                model_id=model_id,
            )
        )
    return m


def quarantine(ctx: ServerContext, model_id: int, actor: str) -> None:
    with ctx.sessions.begin() as s:
        m = marked_model(s, model_id)
        if m.quarantined_at is None:
            m.quarantined_at, m.quarantined_by = time.time(), actor
            detail = {"model": m.id, "erasure": m.erasure_id}
            ctx.audit.append(s, actor=actor, action=Action.MODEL_QUARANTINE, job_id=m.job_id, detail=detail)


def delete(ctx: ServerContext, model_id: int, actor: str) -> None:
    with ctx.sessions.begin() as s:
        m = marked_model(s, model_id)
        job = s.get(Job, m.job_id)
        if job is not None and job.state in ACTIVE_STATES:
            raise Conflict(
                Msg(
                    "Model {model_id} comes from job {job_id}, which is {state}: its checkpoints are still being "
                    "written. To fix: cancel it first (treino cancel {job_id}).",
                    model_id=model_id,
                    job_id=m.job_id,
                    state=job.state,
                )
            )
        heir = s.scalar(
            select(Job.id).where(Job.continues_from == m.job_id, Job.state.not_in(list(FINAL_STATES))).limit(1)
        )
        if heir is not None:  # e.g. an erasure's SISA retraining, about to start from these checkpoints
            raise Conflict(
                Msg(
                    "Model {model_id}'s checkpoints are where job {heir} continues from, and it has not ended. To "
                    "fix: wait for job {heir} to end (or cancel it: treino cancel {heir}), then delete the model.",
                    model_id=model_id,
                    heir=heir,
                )
            )
        checkpoints = ctx.engine.checkpoint_dir(m.job_id)
        others = s.scalars(select(Model).where(Model.job_id == m.job_id, Model.id != m.id, Model.deleted_at.is_(None)))
        now = time.time()
        for o in [m, *(o for o in others if _inside(Path(o.path), checkpoints))]:
            first = o.deleted_at is None  # a second delete removes what a crash left, and records nothing new
            o.deleted_at, o.deleted_by = o.deleted_at or now, o.deleted_by or actor
            o.quarantined_at, o.quarantined_by = o.quarantined_at or now, o.quarantined_by or actor
            detail: dict[str, Any] = {"model": o.id, "erasure": o.erasure_id, "paths": [o.path]}
            detail.update({"checkpoint_dir": str(checkpoints)} if o is m else {"with": m.id})
            if first:
                ctx.audit.append(s, actor=actor, action=Action.MODEL_DELETE, job_id=o.job_id, detail=detail)
        own = Path(m.path)
    _remove(own if _inside(own, checkpoints) else None)
    _remove(checkpoints)


def _inside(path: Path, folder: Path) -> bool:
    try:
        return path.resolve().is_relative_to(folder.resolve())
    except (OSError, ValueError):
        return False


def _remove(path: Path | None) -> None:
    """A file, or a folder and everything in it (no symbolic link followed: the folder is the job's)."""
    if path is None:
        return
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if stat.S_ISDIR(st.st_mode):
        shutil.rmtree(path)
    else:
        path.unlink(missing_ok=True)


def open_file(ctx: ServerContext, s: Session, model_id: int, who: Principal) -> tuple[Iterator[bytes], str]:
    """The model's file as chunks, and its name: 410 when deleted, 403 (rule "quarantine") when quarantined, 403 for
    anyone but its job's owner and admins, 409 for a folder checkpoint. Only a regular file directly in its job's
    checkpoint folder is opened (no symbolic link followed: the folder is the job's)."""
    m = s.get(Model, model_id)
    if m is None:
        raise NotFound(Msg("No model {model_id}. To fix: see 'treino lineage models'.", model_id=model_id))
    if m.deleted_at is not None:
        raise Gone(
            Msg(
                "Model {model_id} was deleted by {deleted_by} (erasure #{erasure_id}): its files are gone.",
                model_id=model_id,
                deleted_by=m.deleted_by,
                erasure_id=m.erasure_id,
            )
        )
    if m.quarantined_at is not None:
        raise PolicyViolation(
            "quarantine",
            Msg(
                "model {model_id} is quarantined since {since} by {quarantined_by}: it was trained on data of a "
                "subject erased by erasure #{erasure_id} (LGPD Art. 18 VI). To fix: use the retrained model of that "
                "erasure (treino lineage models).",
                model_id=model_id,
                since=time.strftime("%Y-%m-%d", time.gmtime(m.quarantined_at)),
                quarantined_by=m.quarantined_by,
                erasure_id=m.erasure_id,
            ),
        )
    job = s.get(Job, m.job_id)
    if who.role != Role.ADMIN and (job is None or job.owner != who.name):
        raise Forbidden(
            Msg(
                "Model {model_id}'s file is its job owner's and admins' only, not {name}'s.",
                model_id=model_id,
                name=who.name,
            )
        )
    folder, path = ctx.engine.checkpoint_dir(m.job_id), Path(m.path)
    if path.parent != folder:
        raise Conflict(
            Msg(
                "Model {model_id} is not a file in its job's checkpoint folder. To fix: read it on the server.",
                model_id=model_id,
            )
        )
    try:
        dir_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
        try:
            fd = os.open(path.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        raise Gone(
            Msg(
                "Model {model_id}'s file {path} is no longer on disk ({strerror}).",
                model_id=model_id,
                path=path,
                strerror=exc.strerror,
            )
        ) from exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise Conflict(
            Msg(
                "Model {model_id} is a folder checkpoint, not one file. To fix: read it on the server.",
                model_id=model_id,
            )
        )

    def chunks() -> Iterator[bytes]:
        with os.fdopen(fd, "rb") as f:
            while data := f.read(MODEL_READ_CHUNK_BYTES):
                yield data

    return chunks(), path.name


# --- lifting a quarantine ------------------------------------------------------------------------------------------
def retraining(s: Session, erasure: Erasure, job_id: int) -> Job | None:
    """The job that retrained job `job_id` for `erasure` (`erasure --retrain`), or None: not retrained by it (no
    retraining asked for, the job refused at submit, or a retention erasure, which never retrains)."""
    report = erasure.report or {}
    mapped = (report.get(RETRAINED_KEY) or {}).get(str(job_id))
    if isinstance(mapped, int):
        return s.get(Job, mapped)
    old = s.get(Job, job_id)
    queued = [j for j in report.get("retrain_jobs", []) if isinstance(j, int)]
    if old is None or not queued:
        return None
    name = f"{old.name}-retrain-e{erasure.id}"[:100]  # the name governance._retrain gives it
    same = list(s.scalars(select(Job).where(Job.id.in_(queued), Job.name == name)))
    return same[0] if len(same) == 1 else None  # two affected jobs of one name: which is which is not known


def lift(ctx: ServerContext, model_id: int, actor: str, reason: str, legal_basis: str = "") -> None:
    """Lift model `model_id`'s quarantine: its file is served again, audited (model.lift) with the reason, the legal
    basis and the retraining that carried the erasure through. Conflict when it is deleted, not quarantined, or
    still holds data of an erasure not carried through to it and no legal basis is named."""
    with ctx.sessions.begin() as s:
        m = s.get(Model, model_id)
        if m is None:
            raise NotFound(Msg("No model {model_id}. To fix: see 'treino lineage models'.", model_id=model_id))
        if m.deleted_at is not None:
            raise Conflict(
                Msg(
                    "Model {model_id} was deleted by {by}: its files are gone, so there is no quarantine to lift. "
                    "To fix: use the retrained model of erasure #{erasure} (treino lineage models).",
                    model_id=model_id,
                    by=m.deleted_by,
                    erasure=m.erasure_id,
                )
            )
        if m.quarantined_at is None or m.erasure_id is None:
            raise Conflict(
                Msg(
                    "Model {model_id} is not quarantined: there is nothing to lift. To fix: see 'treino lineage "
                    "model {model_id}' for its state.",
                    model_id=model_id,
                )
            )
        erasure = s.get(Erasure, m.erasure_id)
        assert erasure is not None  # a foreign key
        again = retraining(s, erasure, m.job_id)
        carried = again is not None and again.state == JobState.SUCCEEDED
        if not carried and not legal_basis.strip():
            raise Conflict(_not_carried_through(m, erasure, again))
        detail = {
            "model": m.id,
            "erasure": erasure.id,
            "reason": reason,
            "legal_basis": legal_basis.strip(),
            "retraining": again.id if carried and again is not None else None,
            "quarantined_at": m.quarantined_at,
            "quarantined_by": m.quarantined_by,
        }
        m.quarantined_at, m.quarantined_by = None, None
        ctx.audit.append(
            s, actor=actor, action=Action.MODEL_LIFT, subject=erasure.subject_pseudonym, job_id=m.job_id, detail=detail
        )


def _not_carried_through(m: Model, erasure: Erasure, again: Job | None) -> Msg:
    if again is None:
        why = Msg("its job {job} was not retrained by that erasure", job=m.job_id)
        fix = Msg(
            "retrain it (treino resubmit {job} --from-scratch) and use the new model, or delete this one (treino "
            "lineage delete {model_id})",
            job=m.job_id,
            model_id=m.id,
        )
    else:
        why = Msg("its retraining, job {job}, is {state}", job=again.id, state=Msg(again.state))
        fix = (
            Msg("wait for job {job} to succeed, then lift it", job=again.id)
            if again.state not in FINAL_STATES
            else Msg(
                "retrain it (treino resubmit {job} --from-scratch) and use the new model, or delete this one "
                "(treino lineage delete {model_id})",
                job=m.job_id,
                model_id=m.id,
            )
        )
    return Msg(
        "Model {model_id} still holds data of erasure #{erasure}, which has not been carried through to it: {why}. "
        "Lifting its quarantine would put the erased subject's data back in use (LGPD Art. 18 VI). To fix: {fix}; "
        "or, where the law requires keeping this model in use despite the erasure (LGPD Art. 16), name that basis "
        "with --legal-basis.",
        model_id=m.id,
        erasure=erasure.id,
        why=why,
        fix=fix,
    )


def last_lift(s: Session, m: Model) -> QuarantineLift | None:
    """The last model.lift record of `m` in the audit chain, or None (never lifted). Read through the erasure's
    subject pseudonym (an indexed column: a model's lifts are among that subject's few records)."""
    if m.erasure_id is None:
        return None
    subject = s.scalar(select(Erasure.subject_pseudonym).where(Erasure.id == m.erasure_id))
    records = s.scalars(
        select(AuditRecord)
        .where(AuditRecord.subject == subject, AuditRecord.action == Action.MODEL_LIFT)
        .order_by(AuditRecord.seq.desc())
    )
    for r in records:
        d = r.detail
        if d.get("model") == m.id:
            return QuarantineLift(
                at=r.time,
                by=r.actor,
                reason=str(d.get("reason", "")),
                legal_basis=str(d.get("legal_basis", "")),
                erasure=d.get("erasure"),
                retraining=d.get("retraining"),
                seq=r.seq,
            )
    return None


def state(s: Session, m: Model) -> str:
    """What became of a model an erasure marked: "deleted", "quarantined", "lifted" (its quarantine lifted),
    "marked" (still in use), or "" when no erasure marked it."""
    if m.erasure_id is None:
        return ""
    if m.deleted_at is not None:
        return "deleted"
    if m.quarantined_at is not None:
        return "quarantined"
    return "lifted" if last_lift(s, m) is not None else "marked"
