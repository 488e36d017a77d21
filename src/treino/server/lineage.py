"""Lineage: which models (checkpoints and final weights) came from which dataset versions, and what the job engine
tells governance as jobs run.

A model inherits the classification and the strictest residency of the dataset versions its job read, because
models memorise (lgpd-requirements.md §2.3, §3.3); an erasure follows these edges to every model it affects.
"""

from __future__ import annotations

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from treino.govern.audit import AuditLog
from treino.govern.models import Dataset, DatasetVersion, JobDataset, Model
from treino.server.backend import Placement
from treino.server.db import Attempt, Checkpoint, Job


def register_model(s: Session, audit: AuditLog, job: Job, kind: str, path: str, step: int | None) -> Model:
    """A checkpoint or final model of `job` in the lineage, in the caller's transaction (audited when the job read
    datasets)."""
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


class GovernanceEvents:
    """What governance records as the job engine runs jobs (treino.server.service.JobEvents): where a job that reads
    datasets started (job.start), and its final model when it succeeds."""

    def __init__(self, audit: AuditLog, backend_name: str) -> None:
        self.audit = audit
        self.backend_name = backend_name

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
