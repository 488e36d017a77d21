"""The server's request and response models: the OpenAPI document (/openapi.json) is the contract, and every route
answers with one of these (`response_model`), errors included (`Problem`, `Refusal`, `Invalid`).

Integers are bounded by what a database column holds (settings.INT_MAX) and strings refuse NUL bytes, so no input
reaches the database or the filesystem in a form they reject with a 500.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from treino.govern.access import Principal
from treino.govern.models import Role
from treino.i18n import Msg, to_data
from treino.server import progress
from treino.server.db import Job
from treino.server.inventory import Device, Node
from treino.server.settings import (
    INT_MAX,
    LIFT_LEGAL_BASIS_CHARS_MAX,
    LIFT_REASON_CHARS_MAX,
    METRIC_KEY_CHARS_MAX,
    METRIC_POINTS_PER_POST_MAX,
    NAME_PATTERN,
)
from treino.server.spec import FsPath, no_nul
from treino.server.waits import Wait, WaitReason

Text = Annotated[str, AfterValidator(no_nul)]


def not_blank(value: str) -> str:
    """Refuse a text of spaces only where a person must say something (a reason)."""
    if not value.strip():
        raise ValueError(Msg("may not be blank: write it out"))
    return value


Count = Annotated[int, Field(ge=0, le=INT_MAX)]
Id = Annotated[int, Field(ge=1, le=INT_MAX)]
Name = Annotated[str, Field(pattern=NAME_PATTERN)]
Purpose = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(no_nul)]


class Schema(BaseModel):
    """A request body: unknown fields refused, and no type coercion ("1" is not 1, 0 is not false)."""

    model_config = ConfigDict(extra="forbid", strict=True)


# --- errors ---------------------------------------------------------------------------------------------------------
class Problem(BaseModel):
    """401, 404, 409, 410, 413, 429: what went wrong and how to fix it."""

    detail: str
    detail_msg: dict[str, Any] | None = None  # the detail as data, for a client's language (treino.i18n.from_data)


class RuleDetail(BaseModel):
    rule: str  # the governance rule (purpose, grant, residency, dataset, ...) or "role"
    message: str
    message_msg: dict[str, Any] | None = None  # the message as data, for a client's language (treino.i18n)


class Refusal(BaseModel):
    """403: a governance rule or the caller's role refused the action."""

    detail: RuleDetail


class FieldError(BaseModel):
    field: str  # dotted path into the request ("plan.seq_len", "gpus"), or "(body)"
    message: str
    message_msg: dict[str, Any] | None = None  # the message as data, for a client's language (treino.i18n)


class Invalid(BaseModel):
    """422: the fields at fault."""

    detail: list[FieldError]


def responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The documented error answers of a route (FastAPI's `responses=`). A route that checks a token (401) may also
    answer 429: its caller's address presented too many bad tokens (treino.server.api.guard.AuthThrottle)."""
    models: dict[int, type[BaseModel]] = {403: Refusal, 422: Invalid}
    documented: dict[int | str, dict[str, Any]] = {code: {"model": models.get(code, Problem)} for code in statuses}
    if 401 in statuses:
        retry_after = {"description": "Seconds until the address may try again.", "schema": {"type": "integer"}}
        documented[429] = {"model": Problem, "headers": {"Retry-After": retry_after}}
    return documented


# --- system ---------------------------------------------------------------------------------------------------------
class Health(BaseModel):
    ok: bool
    devices: str


class InventoryOut(BaseModel):
    kind: str
    description: str
    devices: list[Device]
    nodes: list[Node]


# --- jobs -----------------------------------------------------------------------------------------------------------
class WaitOut(BaseModel):
    """Why a job waits (treino.server.waits), from the scheduler's last pass."""

    reason: WaitReason  # quota, resources, backfill, priority, queue, slurm (pending in Slurm), backend
    detail: str  # the reason in one English sentence
    position: int | None  # in the queue, 1 = next; None for a job pending in Slurm
    blocked_by: list[int]  # resources: the jobs holding the devices; backfill, priority, queue: the job ahead
    gpus_needed: int | None
    gpus_free: int | None
    until: float | None  # resources, backfill: when the job ahead is expected to start (None: unknown)
    preempting: bool  # resources: `blocked_by` are being stopped for it
    note: str | None  # the quota's message, or Slurm's reason (squeue %r)
    # the note as {"template", "params"} when treino wrote it (a quota's), for a client that words it in its own
    # language (treino.i18n.from_data); None for Slurm's own text
    note_msg: dict[str, Any] | None = None

    @staticmethod
    def fields(wait: Wait | None) -> dict[str, Any] | None:
        """`wait` as this model's fields (validated with the summary that holds it: one validation per row)."""
        if wait is None:
            return None
        return {
            "reason": wait.reason.value,
            "detail": wait.detail(),
            "position": wait.position,
            "blocked_by": list(wait.blocked_by),
            "gpus_needed": wait.gpus_needed,
            "gpus_free": wait.gpus_free,
            "until": wait.until,
            "preempting": wait.preempting,
            "note": wait.note,
            "note_msg": to_data(wait.note) if isinstance(wait.note, Msg) else None,
        }


class JobSummary(BaseModel):
    """A job as a list shows it: never its spec (which may hold megabytes), read from its columns alone."""

    id: int
    name: str
    owner: str
    state: str
    priority: int
    gpus: int
    devices: list[int] | None
    submitted_at: float
    started_at: float | None
    ended_at: float | None
    attempts: int
    restarts: int
    preemptions: int
    stop_request: str | None
    exit_code: int | None
    failure_reason: str | None
    checkpoint_step: int | None
    last_step: int | None
    last_loss: float | None
    steps_per_s: float | None
    continues_from: int | None  # a resubmit: the job whose checkpoint this one started from, ...
    continues_from_step: int | None  # ... and that checkpoint's step (None: not a continuation)
    # Computed, not columns (treino.server.progress, treino.server.waits):
    wait: WaitOut | None = None  # why a queued job (or one pending in Slurm) waits; None otherwise, or not yet known
    total_steps: int | None = None  # the spec's total_steps, else `--steps N` in its args
    eta_at: float | None = None  # a running job's expected end at its measured steps/s (unix s)
    queue_wait_s: float | None = None  # submit to first start
    duration_s: float | None = None  # first start to end (time requeued between attempts included)


COMPUTED_FIELDS = frozenset({"wait", "total_steps", "eta_at", "queue_wait_s", "duration_s"})
SUMMARY_COLUMNS = tuple(f for f in JobSummary.model_fields if f not in COMPUTED_FIELDS)  # read from the jobs table


def computed_fields(
    columns: dict[str, Any], spec_total: Any, args: Any, last_metric_at: float | None, wait: Wait | None
) -> dict[str, Any]:
    """A job's computed summary fields (treino.server.progress, treino.server.waits) from its columns, the spec's
    `total_steps` and `args`, and its last metric's time."""
    total = progress.total_steps(spec_total, args)
    state, started, ended = columns["state"], columns["started_at"], columns["ended_at"]
    return {
        "wait": WaitOut.fields(wait),
        "total_steps": total,
        "eta_at": progress.eta_at(state, total, columns["last_step"], last_metric_at, columns["steps_per_s"]),
        "queue_wait_s": progress.queue_wait_s(columns["submitted_at"], started),
        "duration_s": progress.duration_s(started, ended),
    }


class ResubmitIn(Schema):
    """POST /api/v1/jobs/{id}/resubmit: continue from the job's last checkpoint, or start again from step 0."""

    from_scratch: bool = False


class JobPublic(JobSummary):
    """A job whole: its summary, the failure's detail, and its spec."""

    failure_detail: str | None
    spec: dict[str, Any]  # as submitted (JobSpec), env values hidden from all but the owner and admins

    @classmethod
    def of(cls, job: Job, show_env: bool = False, wait: Wait | None = None) -> JobPublic:
        columns = {n: getattr(job, n) for n in cls.model_fields if n != "spec" and n not in COMPUTED_FIELDS}
        spec = job.spec or {}
        computed = computed_fields(columns, spec.get("total_steps"), spec.get("args"), job.last_metric_at, wait)
        return cls(**columns, **computed, spec=visible_spec(spec, show_env))


def visible_spec(spec: dict[str, Any], show_env: bool) -> dict[str, Any]:
    """The spec as a reader may see it: env values (often secrets: HF_TOKEN, ...) only for its owner and admins."""
    if show_env or not spec.get("env"):
        return spec
    return {**spec, "env": {k: "(hidden)" for k in spec["env"]}}


def path_exists(path: str) -> bool:
    """Whether a recorded path exists; False for one the filesystem cannot even look up (a name over NAME_MAX, a
    NUL byte: rows stored before the API refused them), so that no such row can make a page fail."""
    try:
        return Path(path).exists()
    except (OSError, ValueError):
        return False


def may_see_env(who: Principal, job: Job) -> bool:
    return who.role == Role.ADMIN or who.name == job.owner


class JobList(BaseModel):
    jobs: list[JobSummary]  # newest first
    next: int | None  # the next page's `before_id`; None on the last page


class AttemptOut(BaseModel):
    number: int
    devices: list[int]
    started_at: float
    ended_at: float | None
    exit_code: int | None
    outcome: str | None
    placement: dict[str, Any]  # where it ran: the machines, and on Slurm its job id, partition and requeues


class CheckpointOut(BaseModel):
    step: int
    path: str
    bytes: int
    attempt: int
    created_at: float
    exists: bool  # the SDK keeps the last K; older ones are deleted


class JobDetail(JobPublic):
    history: list[AttemptOut]
    checkpoints: list[CheckpointOut]


class LogChunk(BaseModel):
    attempt: int
    attempts: int
    text: str
    offset: int  # where the next chunk starts
    final: bool  # this attempt's output will not grow


MetricKeyName = Annotated[str, Field(max_length=METRIC_KEY_CHARS_MAX), AfterValidator(no_nul)]


class MetricIn(Schema):
    step: Count
    time: float = Field(allow_inf_nan=False)
    values: dict[MetricKeyName, float | None]  # NaN and inf arrive as null from the SDK; others' are stored as null

    @field_validator("values")
    @classmethod
    def _finite(cls, values: dict[str, float | None]) -> dict[str, float | None]:
        return {k: (v if v is None or math.isfinite(v) else None) for k, v in values.items()}


class MetricsIn(Schema):
    points: list[MetricIn] = Field(max_length=METRIC_POINTS_PER_POST_MAX)


class MetricOut(BaseModel):
    step: int
    time: float
    values: dict[str, float | None]


class MetricsOut(BaseModel):
    points: list[MetricOut]


class MetricKey(BaseModel):
    """One key a job logged (treino.server.metric_series): each step counted once, min and max over finite values."""

    key: str
    points: int
    first_step: int | None
    last_step: int | None
    last: float | None  # null: the last value was NaN or inf
    min: float | None
    max: float | None


class MetricKeys(BaseModel):
    job: int
    keys: list[MetricKey]


class MetricSeries(MetricKey):
    step: list[int]
    value: list[float | None]
    downsampled: bool  # `points` were more than max_points: these are the first, last, and each run's min and max


class MetricSeriesList(BaseModel):
    job: int
    series: list[MetricSeries]


class CheckpointIn(Schema):
    step: Count
    path: FsPath
    bytes: Count


class CheckpointAck(BaseModel):
    job: int
    step: int


class DatasetPin(BaseModel):
    """What `run.dataset(NAME)` gets: the version pinned at submit, and where its bytes are."""

    dataset: str
    version: int
    sha256: str
    path: str
    rows: int
    format: str
    subject_column: str | None


# --- people and tokens ----------------------------------------------------------------------------------------------
class UserIn(Schema):
    name: Name
    role: Role = Field(strict=False)  # JSON has no enums: the role arrives as its name


class UserOut(BaseModel):
    id: int
    name: str
    role: Role
    disabled: bool


class UserList(BaseModel):
    users: list[UserOut]  # newest first
    next: int | None  # the next page's `before_id`; None on the last page


class TokenIn(Schema):
    user: Text
    name: Annotated[str, Field(max_length=100), AfterValidator(no_nul)] = ""
    expires_days: float | None = Field(None, gt=0, le=3650)


class TokenOut(BaseModel):
    id: int
    name: str
    user: str
    role: Role
    created_at: float
    expires_at: float | None
    revoked_at: float | None


class NewToken(BaseModel):
    id: int
    user: str
    role: Role
    expires_at: float | None
    token: str  # shown once: only its hash is stored


class TokenList(BaseModel):
    tokens: list[TokenOut]  # newest first
    next: int | None  # the next page's `before_id`; None on the last page


class Revoked(BaseModel):
    id: int
    revoked_at: float


# --- usage and quotas (treino.server.usage, treino.server.quotas) ---------------------------------------------------
class UsageRowOut(BaseModel):
    key: str  # the user, the purpose or the job's id
    user: str | None
    purpose: str | None
    job_id: int | None
    job_name: str | None
    jobs: int
    gpu_hours: float
    cost_brl: float | None  # None: the server has no price (treino server --offer or --gpu-hour-brl)


class HeldJob(BaseModel):
    job_id: int
    owner: str
    reason: str  # why a quota keeps it queued
    reason_msg: dict[str, Any] | None = None  # the reason as data, for a client's language (treino.i18n.from_data)


class QuotaStanding(BaseModel):
    """One user's quota and where they stand against it."""

    set_for: str  # "user ana" or "role engineer": whose quota applies
    gpu_hours_month: float | None
    concurrent_gpus: int | None
    used_gpu_hours_month: float  # this calendar month, up to now
    gpus_running: int
    resets_at: float  # the next month's first instant (unix seconds)


class UsageOut(BaseModel):
    since: float  # unix seconds
    until: float
    by: str  # user, purpose or job
    scope: str  # "everyone" (an admin's view) or the one user it covers
    source: str  # "treino" (the server's records) or "slurm" (Slurm's accounting)
    source_note: str
    brl_per_gpu_hour: float | None
    price_basis: str | None  # the formula, the offer's price date and source; None: no price is set
    price_basis_msg: dict[str, Any] | None = None  # the basis as data, for a client's language (treino.i18n)
    rows: list[UsageRowOut]  # most GPU-hours first
    gpu_hours: float
    cost_brl: float | None
    held: list[HeldJob]  # queued jobs a quota holds back now
    quota: QuotaStanding | None  # the one user's quota (a report of one user); None: none applies, or everyone's


class QuotaIn(Schema):
    """Exactly one of `user` and `role`; a limit left out (null) is no limit, and both null remove the quota."""

    user: Name | None = None
    role: Role | None = Field(None, strict=False)
    gpu_hours_month: float | None = Field(None, ge=0, le=1e9)
    concurrent_gpus: Count | None = None


class QuotaOut(BaseModel):
    kind: str  # user or role
    name: str
    gpu_hours_month: float | None
    concurrent_gpus: int | None
    set_by: str
    set_at: float


class QuotaList(BaseModel):
    quotas: list[QuotaOut]


# --- grants and transfers -------------------------------------------------------------------------------------------
class GrantIn(Schema):
    user: Text
    dataset: Text
    purposes: list[Purpose] = Field(min_length=1, max_length=100)


class GrantOut(BaseModel):
    id: int
    user: str
    dataset: str
    purposes: list[str]
    granted_by: str
    created_at: float
    revoked_at: float | None


class GrantList(BaseModel):
    grants: list[GrantOut]  # newest first
    next: int | None  # the next page's `before_id`; None on the last page


class TransferIn(Schema):
    site: Text
    mechanism: str = Field(pattern=r"^(anpd-scc|adequacy|specific-clauses|bcr|consent|other)$")
    reference: Annotated[str, Field(min_length=1, max_length=200), AfterValidator(no_nul)]
    signed_on: str = Field(pattern=r"^\d{4}-\d{2}-\d{2}$")


class TransferOut(BaseModel):
    id: int
    site: str
    mechanism: str
    reference: str
    signed_on: str
    revoked_at: float | None


class TransferList(BaseModel):
    transfers: list[TransferOut]  # newest first
    next: int | None  # the next page's `before_id`; None on the last page


# --- datasets -------------------------------------------------------------------------------------------------------
class DatasetIn(Schema):
    name: Name
    path: FsPath
    legal_basis: Annotated[str, Field(max_length=40), AfterValidator(no_nul)] = ""
    purposes: list[Purpose] = Field(default_factory=list, max_length=100)
    personal_data: bool
    sensitive: bool = False
    residency: str = Field("BR", pattern=r"^([A-Z]{2}|any)$")
    retention_days: int | None = Field(None, gt=0, le=365_000)
    subject_column: Annotated[str, Field(min_length=1, max_length=100), AfterValidator(no_nul)] | None = None
    # When the data was collected (unix s), if before now: its retention period runs from then.
    collected_at: float | None = Field(None, ge=0, allow_inf_nan=False)
    # Rows of subjects erased earlier: stripped (counted in the answer) by default, or the import refused.
    strict: bool = False


class RetentionIn(Schema):
    """Extend a dataset's retention period (days from now, on a documented legal basis), or erase the dataset."""

    days: int | None = Field(None, gt=0, le=365_000)
    legal_basis: Annotated[str, Field(max_length=200), AfterValidator(no_nul)] = ""
    reason: Annotated[str, Field(max_length=1000), AfterValidator(no_nul)] = ""
    erase: bool = False


class RetentionOut(BaseModel):
    dataset: str
    expires_at: float | None
    expired: bool
    erasure: int | None = None  # the erasure that purged the dataset (erase)
    purged_versions: list[int] = Field(default_factory=list)


class VersionOut(BaseModel):
    number: int
    sha256: str
    rows: int
    bytes: int
    reason: str
    created_at: float
    purged_at: float | None


class DatasetOut(BaseModel):
    name: str
    format: str
    legal_basis: str
    purposes: list[str]
    personal_data: bool
    sensitive: bool
    residency: str
    retention_days: int | None
    subject_column: str | None
    created_by: str
    created_at: float
    versions: list[VersionOut]
    expires_at: float | None = None  # the end of its retention period (treino.govern.retention)
    expired: bool = False  # past it: reads and new jobs are refused


class DatasetRegistered(DatasetOut):
    warnings: list[str]  # e.g. CPFs found in a column not flagged as the subject column
    warnings_msg: list[Any] = []  # each warning as data, for a client's language (treino.i18n.from_data)
    erased_rows_stripped: int = 0  # rows of subjects erased earlier, taken out of the import (tombstones)


class DatasetList(BaseModel):
    datasets: list[DatasetOut]  # newest first
    next: int | None  # the next page's `before_id`; None on the last page


class ModelRef(BaseModel):
    id: int
    job: int
    kind: str
    step: int | None
    affected_by_erasure: int | None
    quarantine: str = ""  # "quarantined", "lifted" (its quarantine lifted), "deleted", or "" (treino.server.quarantine)


class VersionLineage(VersionOut):
    jobs: list[int]  # the jobs that read this version
    models: list[ModelRef]  # what those jobs produced


class DatasetLineage(DatasetOut):
    versions: list[VersionLineage]  # type: ignore[assignment]  # each version with its jobs and models
    reads: int  # dataset.read records in the audit


# --- audit ----------------------------------------------------------------------------------------------------------
class VerifyOut(BaseModel):
    ok: bool
    records: int
    first_bad_seq: int | None
    reason: str
    reason_msg: dict[str, Any] | None = None  # the reason as data, intact chain or broken (treino.i18n)
    checkpoints: int
    last_hash: str | None  # the head of an intact chain: publish it to an outside witness


# --- lineage --------------------------------------------------------------------------------------------------------
class TrainedOn(BaseModel):
    dataset: str
    version: int
    sha256: str
    erased: bool
    purpose: str


class QuarantineLift(BaseModel):
    """A quarantine lifted (audit action model.lift): who, when, why, on which legal basis, and the erasure's
    retraining of the model's job that carried the erasure through (None: lifted on a legal basis instead)."""

    at: float
    by: str
    reason: str
    legal_basis: str
    erasure: int | None
    retraining: int | None
    seq: int  # its audit record


class ModelOut(BaseModel):
    id: int
    job: int
    job_name: str | None
    kind: str
    step: int | None
    path: str
    personal_data: bool
    sensitive: bool
    residency: str
    created_at: float
    affected_by_erasure: int | None
    erasure_note: str | None
    trained_on: list[TrainedOn]
    quarantined_at: float | None = None  # its file is no longer served (treino models quarantine)
    quarantined_by: str | None = None
    deleted_at: float | None = None  # its files are gone from disk; the row is a tombstone (treino models delete)
    deleted_by: str | None = None
    quarantine_lifted: QuarantineLift | None = None  # the last lift of its quarantine (treino lineage lift)


LiftReason = Annotated[
    str, Field(min_length=1, max_length=LIFT_REASON_CHARS_MAX), AfterValidator(no_nul), AfterValidator(not_blank)
]


class LiftIn(Schema):
    """Lift a model's quarantine: why (always), and the legal basis (LGPD Art. 16) when the erasure that marked it
    has not been carried through to it (treino.server.quarantine.lift)."""

    reason: LiftReason
    legal_basis: Annotated[str, Field(max_length=LIFT_LEGAL_BASIS_CHARS_MAX), AfterValidator(no_nul)] = ""


class ModelList(BaseModel):
    models: list[ModelOut]  # newest first
    next: int | None  # the next page's `before_id`; None on the last page


# --- data subjects --------------------------------------------------------------------------------------------------
SubjectId = Annotated[str, Field(min_length=1, max_length=100), AfterValidator(no_nul)]


class ErasureIn(Schema):
    subject: SubjectId
    dataset: Text | None = None
    retrain: bool = False


class SubjectIn(Schema):
    subject: SubjectId


class PurgedVersion(BaseModel):
    version: int
    sha256: str
    rows: int  # the subject's rows in it


class ErasedDataset(BaseModel):
    dataset: str
    purged: list[PurgedVersion]
    new_version: int | None
    new_sha256: str | None
    rows_removed: int


class RetrainRefused(BaseModel):
    job: int
    rule: str
    reason: str


class ErasureOut(BaseModel):
    erasure: int
    subject_pseudonym: str  # never the subject id
    requested_at: float
    deadline_at: float  # LGPD Art. 19 II
    deadline_days: int
    found: bool
    rows_removed: int
    datasets: list[ErasedDataset]
    models: list[int]  # marked as affected
    jobs: list[int]  # the jobs that read the erased versions
    searched: list[str]
    unsearched: list[str]  # personal data with no subject column: not searchable
    text: str
    retrain_jobs: list[int]
    retrain_refused: list[RetrainRefused]


class Holding(BaseModel):
    dataset: str
    version: int
    sha256: str
    rows: int
    legal_basis: str
    purposes: list[str]
    residency: str
    granted_to: list[str]


class SubjectModel(BaseModel):
    id: int
    job: int
    kind: str


class MarkedModel(BaseModel):
    """A model an erasure marked, and what became of it: "marked" (still in use), "quarantined", "lifted" (its
    quarantine lifted: `lift` says by whom, when and why) or "deleted"."""

    id: int
    job: int
    kind: str
    state: str
    lift: QuarantineLift | None = None


class ErasureRef(BaseModel):
    id: int
    requested_at: float
    deadline_at: float
    # After a retraining: each retraining job's memorisation check (treino.server.unlearning), what it proves included
    memorisation: list[dict[str, Any]] = []
    models: list[MarkedModel] = []  # the models it marked, and their quarantine's story


class SubjectReportOut(BaseModel):
    subject_pseudonym: str
    found: bool
    text: str
    text_msg: dict[str, Any] | None = None  # the text as data, for a client's language (treino.i18n.from_data)
    holdings: list[Holding]
    models: list[SubjectModel]
    jobs: list[int]
    erasures: list[ErasureRef]
    generated_at: float
    audit_records: int = 0  # audit records about the subject, under any pseudonym it had (treino.govern.aliases)
