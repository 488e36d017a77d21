"""The one way a job enters the queue, for the API, the dashboard's resubmit and an erasure's retraining alike.

`submit` refuses, before anything is stored, a spec this server could never run (capacity), a plan the planner says
does not fit (`PlanCheck`, treino.server.admission), and datasets the submitter may not use: each must exist, the
submitter must hold a grant for the spec's purpose, and the server's site (on Slurm: each partition's) must satisfy
its residency. The latest version of each dataset is pinned to the job. Admissions and denials, naming their rule,
go into the audit chain either way.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from treino.errors import PolicyViolation
from treino.govern.access import Principal, Site, check_grant, check_residency
from treino.govern.audit import AuditLog
from treino.govern.models import Dataset, DatasetVersion, JobDataset, User
from treino.server.db import Job
from treino.server.service import Service
from treino.server.settings import Settings
from treino.server.spec import JobSpec

PlanCheck = Callable[[JobSpec], str]  # the planner's verdict on a spec's `plan`; raises SpecError when it won't fit
Pin = tuple[Dataset, DatasetVersion, str]  # a dataset, the version pinned, and why its residency allows this site


class Submissions:
    def __init__(
        self,
        settings: Settings,
        sessions: sessionmaker[Session],
        engine: Service,
        audit: AuditLog,
        plan_check: PlanCheck | None = None,
    ) -> None:
        self.settings = settings
        self.sessions = sessions
        self.engine = engine
        self.audit = audit
        self.plan_check = plan_check

    def submit(self, spec: JobSpec, who: Principal) -> Job:
        """A queued job, or a TreinoError: SpecError (422) for capacity or plan, PolicyViolation (403) for data."""
        refusal = self.engine.capacity_error(spec)
        if refusal is not None:
            raise refusal
        if self.plan_check is not None and spec.plan is not None:
            self.plan_check(spec)
        try:
            with self.sessions.begin() as s:  # not under the engine's lock: a submit never waits for a tick
                pins, partitions = self._admit_datasets(s, spec, who)
                self.engine.check_partitions(spec, partitions)
                job = self.engine.enqueue(s, spec, who.name, partitions)
                for dataset, version, reason in pins:
                    s.add(JobDataset(job_id=job.id, version_id=version.id, purpose=spec.purpose or ""))
                    detail = {
                        "version": version.number,
                        "sha256": version.sha256,
                        "purpose": spec.purpose,
                        **self._where(partitions),
                        "residency": reason,
                    }
                    self.audit.append(
                        s, actor=who.name, action="job.admit", dataset=dataset.name, job_id=job.id, detail=detail
                    )
        except PolicyViolation as exc:
            with self.sessions.begin() as s:
                detail = {"job": spec.name, "rule": exc.rule, "reason": str(exc), "datasets": spec.datasets}
                self.audit.append(s, actor=who.name, action="job.deny", detail=detail)
            raise
        self.engine.wake()
        return job

    def _admit_datasets(self, s: Session, spec: JobSpec, who: Principal) -> tuple[list[Pin], list[str] | None]:
        """The dataset versions to pin, and the Slurm partitions the job may run on (None: any, or no Slurm)."""
        pins = []
        partitions = sorted(self.settings.partition_sites) or None
        for name in spec.datasets:
            dataset = s.scalar(select(Dataset).where(Dataset.name == name))
            if dataset is None:
                raise PolicyViolation("dataset", f"unknown dataset {name!r}. To fix: see 'treino data list'.")
            user = s.get(User, who.user_id) if who.user_id else None
            if user is None:
                raise PolicyViolation("grant", f"the submitter has no user record to hold a grant on {name}.")
            check_grant(s, user, dataset, spec.purpose)
            reason, partitions = self._check_residency(s, dataset, partitions)
            version = s.scalar(
                select(DatasetVersion)
                .where(DatasetVersion.dataset_id == dataset.id, DatasetVersion.purged_at.is_(None))
                .order_by(DatasetVersion.number.desc())
                .limit(1)
            )
            if version is None:
                raise PolicyViolation("dataset", f"dataset {name} has no version with its bytes present.")
            pins.append((dataset, version, reason))
        return pins, partitions

    def _check_residency(
        self, s: Session, dataset: Dataset, partitions: list[str] | None
    ) -> tuple[str, list[str] | None]:
        """On one machine: the server's site. On Slurm: every partition the job could still run on is checked
        against its own site; the job keeps those that pass, and is refused (with the first refusal's reason,
        which names the rule and the fix) when none does."""
        if partitions is None:
            return check_residency(s, dataset, self.settings.site), None
        kept, reasons, refusals = [], [], []
        for partition in partitions:
            try:
                reasons.append(f"{partition}: {check_residency(s, dataset, self.settings.partition_sites[partition])}")
                kept.append(partition)
            except PolicyViolation as exc:
                refusals.append(exc)
        if not kept:
            raise PolicyViolation(
                refusals[0].rule, f"no partition of this cluster may process it: {refusals[0].detail}"
            )
        return "; ".join(reasons), kept

    def _where(self, partitions: list[str] | None) -> dict[str, Any]:
        """Where a job's data may be processed, for audit records."""
        if partitions is None:
            return {"site": self.settings.site.name if self.settings.site else None}
        sites = self.settings.partition_sites
        return {"partitions": {p: (site.name if (site := sites.get(p)) else None) for p in partitions}}


def job_site(settings: Settings, engine: Service, s: Session, job: Job) -> Site | None:
    """The site a job's processes are at now: its partition's on Slurm, else this server's."""
    if not settings.partition_sites:
        return settings.site
    attempt = engine.latest_attempt(s, job)
    partition = attempt.handle.get("partition") if attempt is not None else None
    return settings.partition_sites.get(partition) if isinstance(partition, str) else None
