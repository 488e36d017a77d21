"""Resubmit: a finished job again, as a NEW job that continues from the old job's last checkpoint (or, with
`from_scratch`, from step 0). The API (POST /api/v1/jobs/{id}/resubmit), `treino resubmit ID` and the dashboard's
buttons all come here; the job itself enters through the one submit path (treino.server.submission), so it is
admitted anew: capacity, plan, grants and residency as at any submit, its datasets' latest versions pinned.

A continuation records the old job and the step it continues from (`jobs.continues_from`, `continues_from_step`).
The old job's newest complete checkpoint on disk is that step: a `step-*.pt` file or a sharded `step-*/` folder.
Before its first attempt the engine places it in the new job's checkpoint folder (treino.server.seed), so the
training script's `run.restore()` loads it, and records it as the new job's first checkpoint (job.continue).

Lineage: the new job's models derive from the old job's checkpoint, so from every dataset version the old job's
models derive from. Those versions are linked to the new job too, in the same transaction (job_datasets rows with
`inherited_from` = the old job; never readable through `run.dataset`). Every lineage query follows them: the new
job's models inherit their classification and residency, and an erasure that reaches a version the old job read
marks the new job's models as well (and lists the new job for retraining, which starts from scratch). A job whose
versions were erased already cannot be continued: its checkpoint carries the erased subject (403, rule "erasure").

Who may: the old job's owner, or an admin (the spec's env may hold its owner's secrets), with jobs.submit.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from treino.errors import Conflict, Forbidden, NotFound, PolicyViolation
from treino.govern.access import Principal
from treino.govern.models import Dataset, DatasetVersion, JobDataset, Role
from treino.i18n import Msg
from treino.server.db import FINAL_STATES, Job
from treino.server.seed import newest_checkpoint
from treino.server.spec import JobSpec
from treino.server.submission import Submissions


def may_resubmit(who: Principal, job: Job) -> bool:
    """The owner or an admin: a resubmit runs the job's spec, env (often secrets) included, again."""
    return who.role == Role.ADMIN or who.name == job.owner


def resubmit(submissions: Submissions, job_id: int, who: Principal, from_scratch: bool = False) -> Job:
    """The new, queued job: continuing job `job_id` from its last checkpoint, or from step 0 with `from_scratch`.
    NotFound, Forbidden (not the owner nor an admin), Conflict (not finished, or no checkpoint to continue from),
    PolicyViolation (its datasets' erased versions, or as any submit), SpecError (as any submit)."""
    with submissions.sessions() as s:
        old = s.get(Job, job_id)
        if old is None:
            raise NotFound(Msg("No job {job_id}. To fix: list jobs with 'treino jobs'.", job_id=job_id))
        if not may_resubmit(who, old):
            raise Forbidden(
                Msg(
                    "Job {job_id} belongs to {owner}: only they or an admin may resubmit it.",
                    job_id=job_id,
                    owner=old.owner,
                )
            )
        spec = JobSpec.model_validate(old.spec)
        state = old.state
    if from_scratch:
        return submissions.submit(spec, who)
    if state not in FINAL_STATES:
        raise Conflict(
            Msg(
                "Job {job_id} is {state}: its checkpoints may still change. To fix: wait for it to end (or cancel "
                "it), or resubmit it with --from-scratch.",
                job_id=job_id,
                state=state,
            )
        )
    newest = newest_checkpoint(submissions.engine.checkpoint_dir(job_id))
    if newest is None:
        raise Conflict(
            Msg(
                "Job {job_id} left no checkpoint to continue from. To fix: resubmit it with --from-scratch (treino "
                "resubmit {job_id} --from-scratch).",
                job_id=job_id,
            )
        )
    step = newest[0]

    def continue_from(s: Session, job: Job) -> None:
        job.continues_from, job.continues_from_step = job_id, step
        inherit_lineage(s, job, job_id)

    return submissions.submit(spec, who, continue_from)


def inherit_lineage(s: Session, job: Job, old_id: int) -> None:
    """Link `job` to every dataset version job `old_id` is linked to (its own pins and what it inherited), except
    those `job` pinned itself: inherited edges, not readable. Refused when one of them was erased."""
    rows = s.execute(
        select(JobDataset.version_id, JobDataset.purpose, Dataset.name, DatasetVersion.number, DatasetVersion.purged_at)
        .join(DatasetVersion, JobDataset.version_id == DatasetVersion.id)
        .join(Dataset, DatasetVersion.dataset_id == Dataset.id)
        .where(JobDataset.job_id == old_id)
        .order_by(JobDataset.id)
    ).all()
    erased = sorted({f"{name} v{number}" for _, _, name, number, purged in rows if purged is not None})
    if erased:
        raise PolicyViolation(
            "erasure",
            Msg(
                "job {old_id}'s checkpoints were trained on {erased}, erased since (Art. 18 VI): continuing would "
                "carry the erased data into a new model. To fix: treino resubmit {old_id} --from-scratch.",
                old_id=old_id,
                erased=", ".join(erased),
            ),
        )
    s.flush()  # the job's own pins, to leave out
    own = set(s.scalars(select(JobDataset.version_id).where(JobDataset.job_id == job.id)))
    for version_id, purpose, *_ in rows:
        if version_id not in own:
            own.add(version_id)
            s.add(JobDataset(job_id=job.id, version_id=version_id, purpose=purpose, inherited_from=old_id))
