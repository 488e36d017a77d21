"""The server's settings and every interval, limit and default it uses, with their units, in one place.

`Settings` fails closed: a server without a key of at least KEY_MIN_BYTES refuses to start, because the key signs
the audit chain's checkpoints and keys the subject pseudonyms (an ephemeral random key would make both worthless
after a restart). `load_or_create_key` makes the data dir's key on the first start.
"""

from __future__ import annotations

import os
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from treino.errors import TreinoError

if TYPE_CHECKING:  # this module is imported by the CLI at start: nothing heavy at module level
    from treino.govern.access import Site
    from treino.server.isolation import JobUser
    from treino.server.usage import GpuHourPrice

# --- where --------------------------------------------------------------------------------------------------------
# A root server runs jobs as an unprivileged user, who must pass through the data dir's parents: /root (0700) would
# shut them out, so root's default is the system's place for a service's state (FHS 3.0 §5.8, /var/lib).
SYSTEM_DATA_DIR = Path("/var/lib/treino")
DEFAULT_DATA_DIR = SYSTEM_DATA_DIR if os.geteuid() == 0 else Path("~/.local/share/treino").expanduser()
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
PORT_SUGGESTIONS_MAX = 20  # ports after a busy --port tried, to suggest a free one
LOCK_FILE = "server.lock"  # in the data dir: flock-ed by the server that runs on it, with its PID
KEY_FILE = "server-key"  # 32 random bytes, mode 0600
ADMIN_TOKEN_FILE = "admin-token"  # the first start's admin token, mode 0600
CONTROLLER_UNSET = "(controller: set with treino server --controller)"  # named in the Art. 37 records
SQLITE_FILE = "treino.db"  # the default database, in the data dir

# --- job isolation (treino.server.isolation, treino.server.cgroups) ----------------------------------------------
DEFAULT_JOB_USER = "treino-job"  # a root server's jobs run as this user (--job-user), created when missing
USERADD_TIMEOUT_S = 30.0
JOB_CHECKPOINTS_DIR = "checkpoints"  # in a job's folder: TREINO_CHECKPOINT_DIR, the job user's
JOB_WORK_DIR = "work"  # in a job's folder: HOME and the default working directory of an isolated job
DATASET_COPIES_DIR = "datasets"  # in a job's folder: its pinned dataset versions, copied out of the store
JOB_TRACKERS_DIR = "trackers"  # in a job's folder: TREINO_TRACKERS_DIR (TensorBoard, MLflow, W&B), the job user's
CGROUP_PARENT = "treino"  # attempts' cgroups are treino/job-ID-attempt-N-KEY8
CGROUP_FREEZE_WAIT_S = 5.0  # a stop freezes the attempt's cgroup first: how long to wait for FROZEN
CGROUP_EMPTY_WAIT_S = 5.0  # after SIGKILL: how long to wait for the cgroup to empty before removing it

# --- periodic work (treino.server.tasks): one task each ------------------------------------------------------------
TICK_S = 0.2  # the job engine's loop: collect exits, enforce timeouts, schedule; submits and cancels wake it at once
AUDIT_CHECKPOINT_S = 300.0  # a signed checkpoint of the audit head, besides one every AuditLog.checkpoint_every
# An anchor of the audit head outside the data dir (treino.server.anchors; `--audit-anchor-interval-s`), when the head
# moved since the last one; and one at shutdown.
AUDIT_ANCHOR_S = 300.0
AUDIT_ANCHOR_FLUSH_S = 5.0  # at shutdown, how long the last anchor's webhook may take before it is left queued
AUDIT_ANCHOR_QUEUE_FILE = "audit-anchors.jsonl"  # in the data dir: --audit-anchor-url deliveries pending a (re)try
SWEEP_S = 5.0  # the backend's hygiene (the local backend: NVML's processes vs the running jobs)
TASK_STOP_S = 10.0  # how long shutdown waits for a task's current run

# --- the job engine (treino.server.service) ----------------------------------------------------------------------
BACKEND_RETRY_S = 5.0  # after the backend was unreachable at a launch, how long before the next start
LOST_ATTEMPTS_MAX = 3  # attempts in a row whose supervisor vanished before the job is failed, not requeued
KILL_MARGIN_S = 10.0  # after a stop's grace period, how long the supervisor gets before the server SIGKILLs itself
# Each attempt's supervisor holds this much disk in its folder while the command runs and frees it to record the
# exit (exit.json): room for that record, and for the server's database to record the end when it shares the disk.
# An attempt that fails with less than this free on its folder's filesystem failed because the disk is full.
EXIT_RESERVE_BYTES = 1024**2
MEMORISATION_FILE_BYTES_MAX = 65_536  # a retraining job's memorisation.json (treino.server.unlearning); past it: unread
CHECKPOINTS_FOUND_MAX = 1000  # checkpoints a job's folder may add to the record in one pass (the newest)
# Files and folders one disk scan of a job's checkpoints walks to size the checkpoint folders it found (newest first):
# a folder past it counts only the files seen. Bounds the scan of a folder the job fills with millions of files.
CHECKPOINT_SIZE_ENTRIES_MAX = 100_000
# A job a quota holds back (treino.server.quotas) is looked at again at least this often, though nothing else changed:
# a spent monthly quota lifts at the month's turn, which no event announces.
QUOTA_RECHECK_S = 60.0
QUEUE_READ_IDS_MAX = 500  # job ids per query when a tick reads back the jobs submitted since the last one
# Bucket bounds of the /metrics histograms (treino.server.meters): a job's wait in the queue before its first attempt,
# and an attempt's run time. From seconds (a free server) to days (a long queue; a long training run).
QUEUE_WAIT_BUCKETS_S = (1.0, 5.0, 15.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 86400.0, 3 * 86400.0)
ATTEMPT_DURATION_BUCKETS_S = (10.0, 60.0, 300.0, 900.0, 3600.0, 4 * 3600.0, 12 * 3600.0, 86400.0, 3 * 86400.0, 604800.0)
# A spec's `trackers` at submit (treino.server.trackers): how long the job's Python may take to say which tracker
# packages it finds; past this the submit is refused (a Python that hangs at start would hang the job too).
TRACKER_CHECK_TIMEOUT_S = 20.0
TRACKER_CHECK_OUTPUT_BYTES_MAX = 64 * 1024  # of its output kept (the answer is one short line)

# --- the HTTP API (treino.server.api) ----------------------------------------------------------------------------
AUTH_CACHE_S = 2.0  # how long a checked token is trusted without a query (a revocation clears the cache)
# Failed authentication (treino.server.auth.FailureBudget): one client address may present this many distinct bad
# tokens (API tokens, job tokens, tokens typed at /login) per window; then its requests that carry a token get 429
# with Retry-After until the oldest failure leaves the window. The same bad token again counts once (a stale token
# retried by a script is not a guess).
AUTH_FAILURES_MAX = 10
AUTH_FAILURE_WINDOW_S = 60.0  # `treino server --auth-failure-window-s`
AUTH_FAILURE_ADDRESSES_MAX = 10_000  # addresses remembered at once (the least recent forgotten first): bounded memory
# Addresses of reverse proxies whose X-Forwarded-For/-Proto are believed (`--trusted-proxies 127.0.0.1`); none by
# default, so that no client names another address to escape its failure budget.
TRUSTED_PROXIES = ""
JOBS_CACHE_S = 0.5  # how stale GET /api/v1/jobs may be (dashboards and `treino jobs -w` poll it)
JOB_LIST_PAGES_MAX = 1000  # cached pages of GET /api/v1/jobs (each (state, limit, before_id)); past it all are dropped
JOBS_PAGE_MAX = 1000  # jobs per page
JOBS_PAGE_DEFAULT = 100  # jobs per page when the query names no limit
PAGE_MAX = 1000  # rows per page of the other lists that grow (datasets, models)
PAGE_DEFAULT = 100
METRIC_POINTS_MAX = 100_000  # metric points per GET
METRIC_POINTS_PER_POST_MAX = 10_000
METRIC_KEY_CHARS_MAX = 200  # a metric key's length (the SDK's run.log skips a longer one: treino.job)
METRIC_KEYS_PER_JOB_MAX = 1000  # distinct metric keys a job may log; a POST adding more is refused (422)
# GET /api/v1/jobs/{id}/metrics/series?key=&max_points=: points per series (a longer run is downsampled to them,
# treino.server.metric_series.downsample), and keys per request
METRIC_SERIES_POINTS_MAX = 10_000
METRIC_SERIES_POINTS_DEFAULT = 1000
METRIC_SERIES_KEYS_MAX = 100
METRIC_STREAM_ROWS = 1000  # metric points fetched at a time while a series is read (a server-side cursor on PostgreSQL)
LOG_CHUNK_BYTES_MAX = 1024**2  # of an attempt's output per GET
MODEL_READ_CHUNK_BYTES = 1024**2  # GET /api/v1/models/{id}/file streams the file in chunks of this size
REQUEST_BYTES_MAX = 16 * 1024**2  # the largest body any route takes; larger ones get 413 before they are read
# Each route's body ceiling (treino.server.api.errors.body_limit), checked after the token and before a byte is read:
SPEC_BYTES_MAX = 1024**2  # POST /api/v1/jobs: a JobSpec
METRICS_BYTES_MAX = REQUEST_BYTES_MAX  # POST /api/v1/jobs/{id}/metrics: up to METRIC_POINTS_PER_POST_MAX points
API_BODY_BYTES_MAX = 64 * 1024  # every other API body: users, tokens, grants, datasets, checkpoints, erasures
IDEMPOTENCY_KEY_PATTERN = r"^[\x21-\x7e]{1,200}$"  # an Idempotency-Key header: 1-200 printable ASCII characters
IDEMPOTENCY_S = 24 * 3600  # how long a submit's Idempotency-Key returns its first job instead of a new one
INT_MAX = 2**63 - 1  # the largest integer a database column (SQLite, PostgreSQL BIGINT) holds: ids, steps, bytes
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"  # users, datasets, jobs

# --- what a job may ask of the kernel (treino.server.spec): refused at submit with 422, not failed at launch ---------
PATH_BYTES_MAX = 4095  # a path in UTF-8: PATH_MAX (4096, linux/limits.h) less the terminating NUL
PATH_COMPONENT_BYTES_MAX = 255  # one name in a path: NAME_MAX (linux/limits.h)
ARG_STRING_BYTES_MAX = 32 * 4096 - 1  # one argv or environment string: MAX_ARG_STRLEN (linux/binfmts.h), less its NUL
# The spec's argv and env together (each string with its NUL, env entries as KEY=VALUE): a quarter of Linux's
# ARG_MAX with the default 8 MiB stack (stack / 4 = 2 MiB, fs/exec.c), the rest left to the server's environment, the
# variables it adds (TREINO_*, CUDA_VISIBLE_DEVICES), the launcher's own arguments (torchrun, Slurm) and smaller stacks.
ARGV_ENV_BYTES_MAX = 512 * 1024
ENV_VARS_MAX = 1024  # entries in a spec's env
DATASETS_PER_JOB_MAX = 100
SPEC_STRING_CHARS_MAX = 1000  # the spec's short strings: dataset names, purpose, the plan's model and options

# --- `treino submit` reading a spec file (treino.server.spec.load_spec_file) -----------------------------------------
SPEC_FILE_BYTES_MAX = SPEC_BYTES_MAX  # larger than the server would take anyway
SPEC_FILE_ALIASES_MAX = 32  # YAML aliases (*name): a "billion laughs" file needs ~80 (9 levels of 9) to explode
SPEC_FILE_NODES_MAX = 100_000  # values the YAML holds with its aliases expanded (a spec holds tens)
SPEC_FILE_DEPTH_MAX = 32  # nested mappings and lists; a spec is 3 deep
SUBMIT_TRIES = 5  # `treino submit`: tries on a connection error or timeout, each with the same Idempotency-Key
SUBMIT_BACKOFF_S = 0.5  # before the second try; doubled before each next one (0.5 + 1 + 2 + 4 s at most)

# --- the dashboard (treino.server.web) ---------------------------------------------------------------------------
COOKIE = "treino_session"  # holds a session id (treino.server.auth.Authenticator.open_session), never a token
COOKIE_MAX_AGE_S = 12 * 3600  # a session's lifetime, server-side too (`treino server --session-max-age-s`)
POLL_MS = 2000  # the overview's and job page's refresh period
FORM_BYTES_MAX = 16 * 1024

# --- who reads what -----------------------------------------------------------------------------------------------
# A job's output (GET /api/v1/jobs/{id}/logs, the job page's log): "owner" and role names, or "all" for every role
# (`treino server --logs-visible-to owner,admin,dpo`). Logs often print data, paths and secrets a viewer should not see.
LOGS_VISIBLE_TO = ("owner", "admin", "dpo")

# --- governance -------------------------------------------------------------------------------------------------
ERASURE_DEADLINE_DAYS = 15  # LGPD Art. 19 II: a complete answer within 15 days of the request
LIFT_REASON_CHARS_MAX = 1000  # why a model's quarantine is lifted (treino lineage lift --reason), kept in the audit
LIFT_LEGAL_BASIS_CHARS_MAX = 200  # the LGPD basis it names (--legal-basis), as a retention extension's

# --- notifications (treino.server.webhooks) -----------------------------------------------------------------------
WEBHOOK_SECRET_FILE = "webhook-secret"  # the HMAC secret, mode 0600, made at the first start (or --webhook-secret-file)
WEBHOOK_QUEUE_FILE = "webhooks.jsonl"  # pending deliveries and the erasure notices sent, replayed at start
WEBHOOK_TRIES = 8  # tries per delivery on no answer, 5xx or 429; then it is logged as dropped
WEBHOOK_BACKOFF_S = 1.0  # before the second try; doubled before each next one, up to WEBHOOK_BACKOFF_MAX_S, jittered
WEBHOOK_BACKOFF_MAX_S = 300.0
WEBHOOK_TIMEOUT_S = 10.0  # per try: connect, send and answer
WEBHOOK_INBOX_MAX = 10_000  # events waiting for the sender thread; past it new ones are logged and dropped
WEBHOOK_PENDING_MAX = 10_000  # deliveries waiting for a (re)try
WEBHOOK_COMPACT_DONE = 1000  # finished deliveries appended to the queue file before it is rewritten without them
# An open erasure request this close to its Art. 19 deadline is notified, once per request per threshold
# (`treino server --erasure-warn-days`); open erasures are looked for at start and every ERASURE_WARN_CHECK_S.
ERASURE_WARN_DAYS = 3.0
ERASURE_WARN_CHECK_S = 3600.0
# Datasets past their retention period are looked for at start, when the next period ends, when a dataset is
# registered or its period extended, and at least every RETENTION_CHECK_S: each is notified once (webhook
# retention.expired) and, with `treino server --retention-erase`, erased (treino.server.retention).
RETENTION_CHECK_S = 3600.0


@dataclass(frozen=True)
class Settings:
    data_dir: Path
    url: str  # how job processes reach this server (TREINO_URL)
    key: bytes  # the server key: audit checkpoints (HMAC), subject pseudonyms, CSRF tokens
    python: str = sys.executable
    site: Site | None = None  # where this server is (sites catalog): residency decisions
    import_roots: tuple[Path, ...] = ()  # where datasets may be registered from
    controller: str = CONTROLLER_UNSET
    # Slurm backend: the site of each partition jobs may run on (--partition NAME=SITE); residency is checked
    # against every one of them, and a job is kept to the partitions its data may be processed in.
    partition_sites: dict[str, Site | None] = field(default_factory=dict)
    # Where job folders (logs, checkpoints) and the dataset store live: on a cluster, a filesystem every node
    # mounts at the same path (--shared-dir); None: the data dir.
    shared_dir: Path | None = None
    auth_failures_max: int = AUTH_FAILURES_MAX
    auth_failure_window_s: float = AUTH_FAILURE_WINDOW_S
    session_max_age_s: float = COOKIE_MAX_AGE_S
    logs_visible_to: frozenset[str] = frozenset(LOGS_VISIBLE_TO)  # treino.govern.access.log_readers
    # The unprivileged user local jobs run as (--job-user; treino.server.isolation); None: the server's own user.
    job_user: JobUser | None = None
    webhooks: tuple[str, ...] = ()  # --webhook URLs (treino.server.webhooks)
    webhook_secret: bytes = b""
    erasure_warn_days: float = ERASURE_WARN_DAYS
    gpu_hour_price: GpuHourPrice | None = None  # --offer or --gpu-hour-brl: usage in BRL (treino.server.usage)
    # Anchors of the audit head (treino.server.anchors): --audit-anchor FILE, --audit-anchor-url URLs (signed with
    # webhook_secret), every audit_anchor_interval_s
    audit_anchor_file: Path | None = None
    audit_anchor_urls: tuple[str, ...] = ()
    audit_anchor_interval_s: float = AUDIT_ANCHOR_S
    retention_erase: bool = False  # --retention-erase: erase datasets past their retention period (off: only block)

    def __post_init__(self) -> None:
        from treino.govern.audit import KEY_MIN_BYTES

        if len(self.key) < KEY_MIN_BYTES:
            raise TreinoError(
                f"The server key has {len(self.key)} bytes; at least {KEY_MIN_BYTES} are needed (it signs the audit "
                f"chain). To fix: let the server create {self.data_dir / KEY_FILE}, or restore it from a backup."
            )

    @property
    def store(self) -> Path:
        return (self.shared_dir or self.data_dir) / "store"

    @property
    def jobs_dir(self) -> Path:
        return (self.shared_dir or self.data_dir) / "jobs"


def load_or_create_key(data_dir: Path) -> bytes:
    """The server's secret (32 random bytes, DATA_DIR/server-key, mode 0600). Lose it and old pseudonyms can no
    longer be matched; leak it and the audit checkpoints can be forged."""
    path = data_dir / KEY_FILE
    if not path.exists():
        path.touch(mode=0o600)
        path.chmod(0o600)
        path.write_bytes(secrets.token_bytes(32))
    return path.read_bytes()
