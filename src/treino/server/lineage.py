"""Lineage: which models (checkpoints and final weights) came from which dataset versions, and what the job engine
tells governance as jobs run.

A model inherits the classification and the strictest residency of the dataset versions its job read, because
models memorise (lgpd-requirements.md §2.3, §3.3); an erasure follows these edges to every model it affects. So
no checkpoint may escape the lineage: the SDK journals and retries its reports (treino.job), the server records
each (job, path, step) once however often it is reported (`record_checkpoint`), and what a job saved but never
reported is found on disk when an attempt is adopted or ends (`GovernanceEvents.reconcile_checkpoints`).
"""

from __future__ import annotations

import json
import logging
import os
import re
import stat
from pathlib import Path

from sqlalchemy import case, func, select, update
from sqlalchemy.orm import Session

from treino.govern.audit import Action, AuditLog
from treino.govern.models import Dataset, DatasetVersion, Erasure, JobDataset, Model
from treino.job import FOLDER_MARKER_NAME, _tree_size
from treino.server import unlearning
from treino.server.backend import Placement
from treino.server.db import Attempt, Checkpoint, Job
from treino.server.settings import CHECKPOINT_SIZE_ENTRIES_MAX, CHECKPOINTS_FOUND_MAX, INT_MAX
from treino.sharded import COMPLETE_MARKER, SHARDED_FOLDER_RE

log = logging.getLogger("treino.server")

# What treino.job.Run.save writes (`step-000000100.pt`), and the folder of a sharded checkpoint
# (torch.distributed.checkpoint, treino.sharded), which counts once its `.metadata`, written last, exists.
# At most 19 digits: a step is a 64-bit integer (INT_MAX has 19), and a longer name is no checkpoint of the SDK's.
CHECKPOINT_FILE_RE = re.compile(r"^step-(\d{9,19})\.(?:pt|ckpt)$")  # .ckpt: treino.integrations.lightning's
SHARDED_CHECKPOINT_RE = SHARDED_FOLDER_RE
SHARDED_COMPLETE_MARKER = COMPLETE_MARKER
# Any other folder the SDK registered as a checkpoint (e.g. a framework's own `checkpoint-500/`) holds this file,
# `{"step": 500}`, written last by treino.job's Run.register_checkpoint: the folder counts once it is there.
FOLDER_CHECKPOINT_MARKER = FOLDER_MARKER_NAME
FOLDER_MARKER_BYTES_MAX = 4096  # a longer marker is no `{"step": N}` of the SDK's: not read past this


def record_checkpoint(
    s: Session, audit: AuditLog, job: Job, step: int, path: str, size_bytes: int, *, found_on_disk: bool = False
) -> bool:
    """Checkpoint `step` at `path` of `job` and its model in the lineage, once: a replayed report (the SDK retries
    until it hears an answer) or a file found on disk records nothing new. In the caller's transaction; True when
    the checkpoint was not known before.

    Its first statement raises the job's checkpoint_step, which also serialises the recorders of one job's
    checkpoints (an SDK replay and the server's reconcile may race): it takes SQLite's write lock, and on
    PostgreSQL the job row's lock, before the look-ups."""
    s.execute(
        update(Job)
        .where(Job.id == job.id)
        .values(
            checkpoint_step=case(
                ((Job.checkpoint_step.is_(None)) | (Job.checkpoint_step < step), step), else_=Job.checkpoint_step
            )
        )
        .execution_options(synchronize_session=False)
    )
    s.expire(job, ["checkpoint_step"])
    known = s.scalar(
        select(Checkpoint.id)
        .where(Checkpoint.job_id == job.id, Checkpoint.path == path, Checkpoint.step == step)
        .limit(1)
    )
    if known is None:
        s.add(Checkpoint(job_id=job.id, attempt=job.attempts, step=step, path=path, bytes=size_bytes))
    model = s.scalar(
        select(Model)
        .where(Model.job_id == job.id, Model.kind == "checkpoint", Model.path == path, Model.step == step)
        .limit(1)
    )
    if model is None:
        model = register_model(s, audit, job, "checkpoint", path, step)
    if found_on_disk and known is None:
        audit.append(
            s,
            actor=job.owner,
            action=Action.CHECKPOINT_FOUND,
            job_id=job.id,
            detail={
                "step": step,
                "path": path,
                "bytes": size_bytes,
                "attempt": job.attempts,
                "model": model.id,
                "source": "found on disk by the server; the job did not report it",
            },
        )
    return known is None


def tree_bytes(path: Path, entries_max: int = CHECKPOINT_SIZE_ENTRIES_MAX) -> int:
    """The bytes of the regular files under `path` (a checkpoint folder), or of `path` itself when it is a file;
    symbolic links are not followed, and at most `entries_max` entries are looked at: the folder is the job's."""
    return _tree_size(path, entries_max)[0]


def marked_step(folder: Path) -> int | None:
    """The step a folder's FOLDER_CHECKPOINT_MARKER names, or None (no marker, or not `{"step": N}`, 0 <= N).

    The folder is the job's, so the marker may be anything: it is read only when it is a regular file (not a
    symbolic link, in a folder that is not one either), opened without waiting (a FIFO would block the open until
    a writer came), and never past FOLDER_MARKER_BYTES_MAX."""
    try:
        folder_fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # gone, a symbolic link, not a folder, closed to the server
        return None
    try:
        fd = os.open(FOLDER_CHECKPOINT_MARKER, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK, dir_fd=folder_fd)
    except OSError:  # no marker, or a symbolic link
        return None
    finally:
        os.close(folder_fd)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        data = os.read(fd, FOLDER_MARKER_BYTES_MAX + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > FOLDER_MARKER_BYTES_MAX:
        return None
    try:
        record = json.loads(data)
    except ValueError:
        return None
    step = record.get("step") if isinstance(record, dict) else None
    return step if type(step) is int and 0 <= step <= INT_MAX else None


def _sharded_complete(folder: Path) -> bool:
    """True when `folder` holds its completion marker as a regular file (a symbolic link does not count)."""
    return stat.S_ISREG(os.lstat(folder / SHARDED_COMPLETE_MARKER).st_mode)


def checkpoints_on_disk(folder: Path) -> list[tuple[int, Path, int]]:
    """(step, path, bytes) of every complete checkpoint in `folder`, by step: `step-*.pt` files (renamed into place
    whole by the SDK, so never torn), sharded checkpoint folders with their completion marker, and any folder with a
    FOLDER_CHECKPOINT_MARKER. A folder's bytes are those of every file in it.

    The folder is the job's: no symbolic link in it is followed (nor counts as a checkpoint), no file is opened but
    a folder's marker (marked_step), and only the newest CHECKPOINTS_FOUND_MAX are sized, walking at most
    CHECKPOINT_SIZE_ENTRIES_MAX entries in all (newest first; past it a folder counts only the files seen)."""
    try:
        with os.scandir(folder) as listing:
            entries = list(listing)
    except FileNotFoundError:
        return []
    except OSError as e:  # unreadable: the job's own reports still stand; say so rather than fail the engine's pass
        log.warning("could not list the checkpoints in %s: %s", folder, e)
        return []
    found: list[tuple[int, Path]] = []
    for entry in entries:
        # The folder is the job's: whatever it holds (a step past 64 bits, an unreadable folder) must never fail the
        # engine's pass, which records every job's exit in one transaction.
        path = Path(entry.path)
        try:
            if (m := CHECKPOINT_FILE_RE.match(entry.name)) and int(m.group(1)) <= INT_MAX:
                if entry.is_file(follow_symlinks=False):
                    found.append((int(m.group(1)), path))
            elif not entry.is_dir(follow_symlinks=False):
                continue
            elif (m := SHARDED_CHECKPOINT_RE.match(entry.name)) and int(m.group(1)) <= INT_MAX:
                if _sharded_complete(path):
                    found.append((int(m.group(1)), path))
            elif not entry.name.startswith(".") and (step := marked_step(path)) is not None:
                found.append((step, path))
        except OSError:  # pruned by the job meanwhile, or closed to the server
            continue
    # The newest only: a job that makes a million files must not make one pass record a million models.
    kept = sorted(found)[-CHECKPOINTS_FOUND_MAX:]
    sized: list[tuple[int, Path, int]] = []
    budget = CHECKPOINT_SIZE_ENTRIES_MAX
    for step, path in reversed(kept):
        try:
            size, seen = _tree_size(path, budget)
        except OSError:  # pruned by the job meanwhile
            continue
        budget -= seen
        sized.append((step, path, size))
    return sized[::-1]


def register_model(s: Session, audit: AuditLog, job: Job, kind: str, path: str, step: int | None) -> Model:
    """A checkpoint or final model of `job` in the lineage, in the caller's transaction (audited when the job read
    datasets). Marked as affected by an erasure from the start when a dataset version linked to the job (its own
    pins, and those its starting checkpoint was trained on) was erased already: the erasure marked the job's models
    of its time, and this one derives from the same data."""
    rows = s.execute(
        select(Dataset, DatasetVersion)
        .join(DatasetVersion, DatasetVersion.dataset_id == Dataset.id)
        .join(JobDataset, JobDataset.version_id == DatasetVersion.id)
        .where(JobDataset.job_id == job.id)
    ).all()
    residencies = sorted({d.residency for d, _ in rows if d.residency not in ("any", "")})
    model = Model(
        job_id=job.id,
        kind=kind,
        step=step,
        path=path,
        personal_data=any(d.personal_data for d, _ in rows),
        sensitive=any(d.sensitive for d, _ in rows),
        residency=residencies[0] if len(residencies) == 1 else ("+".join(residencies) or "any"),
    )
    s.add(model)
    s.flush()
    _mark_if_erased(s, audit, job, model, [(d, v) for d, v in rows if v.purged_at is not None])
    if rows:
        audit.append(
            s,
            actor=job.owner,
            action="model.register",
            job_id=job.id,
            detail={
                "model": model.id,
                "kind": kind,
                "step": step,
                "path": path,
                "versions": [{"dataset": d.name, "version": v.number, "sha256": v.sha256} for d, v in rows],
            },
        )
    return model


def _mark_if_erased(
    s: Session, audit: AuditLog, job: Job, model: Model, erased: list[tuple[Dataset, DatasetVersion]]
) -> None:
    """Mark `model` as affected by the (first) erasure that purged one of the versions `erased`, as the erasure marks
    the models it finds (treino.govern.datasets), with a model.mark audit record."""
    if not erased:
        return
    found = {v.id: _erasure_of(s, d, v) for d, v in erased}
    by = sorted({e.id: e for e in found.values() if e is not None}.values(), key=lambda e: e.id)
    notes = []
    for d, v in erased:
        erasure = found[v.id]
        by_whom = f"erasure #{erasure.id}" if erasure is not None else "an erasure"
        notes.append(f"{by_whom}: trained on {d.name} v{v.number}, which held the erased subject")
    model.erasure_id = by[0].id if by else None
    model.erasure_note = "\n".join(dict.fromkeys(notes))
    for marked_by in by:
        audit.append(
            s,
            actor=job.owner,
            action=Action.MODEL_MARK,
            subject=marked_by.subject_pseudonym,
            job_id=job.id,
            detail={"erasure": marked_by.id, "model": model.id, "source": "registered after the erasure"},
        )


def _erasure_of(s: Session, dataset: Dataset, version: DatasetVersion) -> Erasure | None:
    """The erasure that purged `version` of `dataset`: the one whose report lists it, else (a report not filled)
    the last one requested before the purge."""
    candidates = s.scalars(
        select(Erasure).where((Erasure.dataset == dataset.name) | (Erasure.dataset.is_(None))).order_by(Erasure.id)
    ).all()
    for erasure in candidates:
        for d in (erasure.report or {}).get("datasets", []):
            purged = {p.get("version") for p in d.get("purged", [])}
            if d.get("dataset") == dataset.name and version.number in purged:
                return erasure
    assert version.purged_at is not None
    before = [e for e in candidates if e.requested_at <= version.purged_at]
    return before[-1] if before else None


def erased_inheritance(s: Session, job: Job) -> list[str]:
    """The dataset versions (`name vN`) that `job`'s starting checkpoint was trained on (those the job it continues
    is linked to: what `job` inherited, and what it pinned itself when that was the same version) and that were
    erased since: a continued job with any may not start from that checkpoint."""
    if job.continues_from is None:
        return []
    rows = s.execute(
        select(Dataset.name, DatasetVersion.number)
        .join(DatasetVersion, DatasetVersion.dataset_id == Dataset.id)
        .join(JobDataset, JobDataset.version_id == DatasetVersion.id)
        .where(JobDataset.job_id == job.continues_from, DatasetVersion.purged_at.is_not(None))
    ).all()
    return sorted({f"{name} v{number}" for name, number in rows})


class GovernanceEvents:
    """What governance records as the job engine runs jobs (treino.server.service.JobEvents): where a job that reads
    datasets started (job.start), the checkpoints it saved but did not report, and its final model when it
    succeeds."""

    def __init__(self, audit: AuditLog, backend_name: str, jobs_dir: Path | None = None) -> None:
        self.audit = audit
        self.backend_name = backend_name
        self.jobs_dir = jobs_dir  # where an erasure's retraining job leaves its memorisation figures

    def attempt_started(self, s: Session, job: Job, attempt: Attempt, placement: Placement) -> None:
        if not s.scalar(select(func.count()).select_from(JobDataset).where(JobDataset.job_id == job.id)):
            return
        self.audit.append(
            s,
            actor=job.owner,
            action="job.start",
            job_id=job.id,
            detail={
                "attempt": attempt.number,
                "backend": self.backend_name,
                "nodes": list(placement.nodes),
                **placement.extra,
            },
        )

    def job_succeeded(self, s: Session, job: Job) -> None:
        last = s.scalar(select(Checkpoint).where(Checkpoint.job_id == job.id).order_by(Checkpoint.step.desc()).limit(1))
        if last is not None:
            register_model(s, self.audit, job, "final", last.path, last.step)
        if self.jobs_dir is not None:
            unlearning.record_memorisation(s, self.audit, job, self.jobs_dir / str(job.id))

    def continuation_refusal(self, s: Session, job: Job) -> str | None:
        if unlearning.erasure_of(s, job) is not None:
            return None  # an erasure's SISA retraining: the SDK reuses only slices whose rows are all still there
        erased = erased_inheritance(s, job)
        if not erased:
            return None
        return (
            f"its checkpoint of step {job.continues_from_step} was trained on {', '.join(erased)}, erased since the "
            "resubmit (Art. 18 VI): continuing would carry the erased data into a new model. To fix: treino "
            f"resubmit {job.id} --from-scratch."
        )

    def checkpoint_seeded(self, s: Session, job: Job, step: int, path: Path, size_bytes: int) -> None:
        """A continued job's starting checkpoint (treino.server.seed) as a checkpoint and model of that job, derived
        from the job it continues (whose dataset versions it inherited at resubmit), with a job.continue record."""
        if not record_checkpoint(s, self.audit, job, step, str(path), size_bytes):
            return  # recorded by an earlier tick
        model = s.scalar(
            select(Model.id).where(Model.job_id == job.id, Model.path == str(path), Model.step == step).limit(1)
        )
        self.audit.append(
            s,
            actor=job.owner,
            action=Action.JOB_CONTINUE,
            job_id=job.id,
            detail={
                "from_job": job.continues_from,
                "step": step,
                "path": str(path),
                "bytes": size_bytes,
                "model": model,
            },
        )

    def reconcile_checkpoints(self, s: Session, job: Job, checkpoint_dir: Path) -> None:
        """Record every checkpoint in `checkpoint_dir` the database does not know (saved while the server was down,
        by a job that could not report it), each with a checkpoint.found audit record."""
        on_disk = checkpoints_on_disk(checkpoint_dir)
        if not on_disk:
            return
        known = set(s.execute(select(Checkpoint.path, Checkpoint.step).where(Checkpoint.job_id == job.id)).tuples())
        found = 0
        for step, path, size in on_disk:
            if (str(path), step) not in known:
                found += record_checkpoint(s, self.audit, job, step, str(path), size, found_on_disk=True)
        if found:
            log.info("job %s: %d checkpoint(s) found on disk that the job had not reported", job.id, found)
