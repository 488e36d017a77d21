"""The one way a job enters the queue, for the API, the dashboard's resubmit and an erasure's retraining alike.

`submit` refuses, before anything is stored, a spec this server could never run (capacity), a plan the planner says
does not fit (`PlanCheck`, treino.server.admission), and datasets the submitter may not use: each must exist, the
submitter must hold a grant for the spec's purpose, and the server's site (on Slurm: each partition's) must satisfy
its residency; and a job its owner's quota refuses (treino.server.quotas: the month's GPU-hours spent, or more GPUs
than the owner may ever hold at once). The latest version of each dataset is pinned to the job. Admissions and
denials, naming their rule, go into the audit chain either way.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, sessionmaker

from treino.errors import Conflict, PolicyViolation
from treino.govern.access import Principal, Site, check_grant, check_residency
from treino.govern.audit import AuditLog
from treino.govern.models import Dataset, DatasetVersion, JobDataset, User
from treino.govern.retention import check_retention
from treino.i18n import Msg
from treino.server import quotas, trackers
from treino.server.db import Job, SubmitKey
from treino.server.service import Service
from treino.server.settings import IDEMPOTENCY_S, Settings
from treino.server.spec import JobSpec

PlanCheck = Callable[[JobSpec], str]  # the planner's verdict on a spec's `plan`; raises SpecError when it won't fit
# More of a new job, in its own transaction once its datasets are pinned: a resubmit's continuation
# (treino.server.resubmission). A PolicyViolation it raises refuses the job like any other (job.deny).
JobHook = Callable[[Session, Job], None]
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

    def submit(self, spec: JobSpec, who: Principal, hook: JobHook | None = None) -> Job:
        """A queued job, or a TreinoError: SpecError (422) for capacity or plan, PolicyViolation (403) for data."""
        job, _ = self.submit_once(spec, who, None, hook)
        return job

    def submit_once(
        self, spec: JobSpec, who: Principal, key: str | None, hook: JobHook | None = None
    ) -> tuple[Job, bool]:
        """`submit` with an Idempotency-Key: (the job, True) the first time; (that same job, False) when `who` sent
        `key` with this spec within IDEMPOTENCY_S; Conflict (409) when they sent it with another spec. The key is
        stored in the job's own transaction, unique per user: concurrent requests with one key make one job."""
        digest = spec_digest(spec) if key is not None else ""
        if key is not None:
            with self.sessions.begin() as s:
                earlier = self._earlier(s, who, key, digest)
            if earlier is not None:
                return earlier, False
        refusal = self.engine.capacity_error(spec)
        if refusal is not None:
            raise refusal
        if self.plan_check is not None and spec.plan is not None:
            self.plan_check(spec)
        trackers.check(spec, self.settings)  # their packages in the job's Python: 422 now, not a warning mid-run
        try:
            with self.sessions.begin() as s:  # not under the engine's lock: a submit never waits for a tick
                if key is not None:  # again, in the transaction: a concurrent request may have stored it meanwhile
                    earlier = self._earlier(s, who, key, digest)
                    if earlier is not None:
                        return earlier, False
                quotas.check_admission(s, spec, who.name)  # the owner's monthly GPU-hours (403, rule "quota")
                pins, partitions = self._admit_datasets(s, spec, who)
                self.engine.check_partitions(spec, partitions)
                job = self.engine.enqueue(s, spec, who.name, partitions)
                if key is not None:
                    s.add(SubmitKey(owner=who.name, key=key, spec_sha256=digest, job_id=job.id))
                    s.flush()  # IntegrityError here if another transaction stored the key first
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
                if hook is not None:
                    hook(s, job)
        except PolicyViolation as exc:
            with self.sessions.begin() as s:
                detail = {"job": spec.name, "rule": exc.rule, "reason": str(exc), "datasets": spec.datasets}
                self.audit.append(s, actor=who.name, action="job.deny", detail=detail)
            raise
        except IntegrityError:
            if key is None:
                raise
            with self.sessions.begin() as s:  # the other transaction's job, now committed
                earlier = self._earlier(s, who, key, digest)
            if earlier is None:
                raise
            return earlier, False
        self.engine.wake()
        return job, True

    def _earlier(self, s: Session, who: Principal, key: str, digest: str) -> Job | None:
        """The job `who` submitted with `key` within IDEMPOTENCY_S, or None (an older use of the key is dropped)."""
        row = s.scalar(select(SubmitKey).where(SubmitKey.owner == who.name, SubmitKey.key == key))
        if row is None:
            return None
        if row.created_at < time.time() - IDEMPOTENCY_S:
            s.delete(row)
            s.flush()
            return None
        if row.spec_sha256 != digest:
            raise Conflict(
                Msg(
                    "The Idempotency-Key {key!r} was sent with another job spec (job {job_id}) within the last "
                    "{hours} h. To fix: send a new key with each new spec (treino submit does).",
                    key=key,
                    job_id=row.job_id,
                    hours=IDEMPOTENCY_S // 3600,
                )
            )
        job = s.get(Job, row.job_id)
        assert job is not None  # jobs are never deleted
        return job

    def _admit_datasets(self, s: Session, spec: JobSpec, who: Principal) -> tuple[list[Pin], list[str] | None]:
        """The dataset versions to pin, and the Slurm partitions the job may run on (None: any, or no Slurm)."""
        pins = []
        partitions = sorted(self.settings.partition_sites) or None
        for name in spec.datasets:
            dataset = s.scalar(select(Dataset).where(Dataset.name == name))
            if dataset is None:
                raise PolicyViolation(
                    "dataset", Msg("unknown dataset {name!r}. To fix: see 'treino data list'.", name=name)
                )
            user = s.get(User, who.user_id) if who.user_id else None
            if user is None:
                raise PolicyViolation(
                    "grant", Msg("the submitter has no user record to hold a grant on {name}.", name=name)
                )
            check_grant(s, user, dataset, spec.purpose)
            check_retention(dataset)
            reason, partitions = self._check_residency(s, dataset, partitions)
            version = s.scalar(
                select(DatasetVersion)
                .where(DatasetVersion.dataset_id == dataset.id, DatasetVersion.purged_at.is_(None))
                .order_by(DatasetVersion.number.desc())
                .limit(1)
            )
            if version is None:
                raise PolicyViolation(
                    "dataset", Msg("dataset {name} has no version with its bytes present.", name=name)
                )
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
                refusals[0].rule,
                Msg("no partition of this cluster may process it: {detail}", detail=refusals[0].detail),
            )
        return "; ".join(reasons), kept

    def _where(self, partitions: list[str] | None) -> dict[str, Any]:
        """Where a job's data may be processed, for audit records."""
        if partitions is None:
            return {"site": self.settings.site.name if self.settings.site else None}
        sites = self.settings.partition_sites
        return {"partitions": {p: (site.name if (site := sites.get(p)) else None) for p in partitions}}


def spec_digest(spec: JobSpec) -> str:
    """The SHA-256 of a spec's canonical JSON: what an Idempotency-Key's replay must match."""
    canonical = json.dumps(spec.model_dump(mode="json"), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def job_site(settings: Settings, engine: Service, s: Session, job: Job) -> Site | None:
    """The site a job's processes are at now: its partition's on Slurm, else this server's."""
    if not settings.partition_sites:
        return settings.site
    attempt = engine.latest_attempt(s, job)
    partition = attempt.handle.get("partition") if attempt is not None else None
    return settings.partition_sites.get(partition) if isinstance(partition, str) else None
