"""The server's settings and every interval, limit and default it uses, with their units, in one place.

`Settings` fails closed: a server without a key of at least KEY_MIN_BYTES refuses to start, because the key signs
the audit chain's checkpoints and keys the subject pseudonyms (an ephemeral random key would make both worthless
after a restart). `load_or_create_key` makes the data dir's key on the first start.
"""

from __future__ import annotations

import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from treino.errors import TreinoError

if TYPE_CHECKING:  # this module is imported by the CLI at start: nothing heavy at module level
    from treino.govern.access import Site

# --- where --------------------------------------------------------------------------------------------------------
DEFAULT_DATA_DIR = Path("~/.local/share/treino").expanduser()
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8765
KEY_FILE = "server-key"  # 32 random bytes, mode 0600
ADMIN_TOKEN_FILE = "admin-token"  # the first start's admin token, mode 0600
CONTROLLER_UNSET = "(controller: set with treino server --controller)"  # named in the Art. 37 records

# --- periodic work (treino.server.tasks): one task each ------------------------------------------------------------
TICK_S = 0.2  # the job engine's loop: collect exits, enforce timeouts, schedule; submits and cancels wake it at once
AUDIT_CHECKPOINT_S = 300.0  # a signed checkpoint of the audit head, besides one every AuditLog.checkpoint_every
SWEEP_S = 5.0  # the backend's hygiene (the local backend: NVML's processes vs the running jobs)
TASK_STOP_S = 10.0  # how long shutdown waits for a task's current run

# --- the job engine (treino.server.service) ----------------------------------------------------------------------
BACKEND_RETRY_S = 5.0  # after the backend was unreachable at a launch, how long before the next start
LOST_ATTEMPTS_MAX = 3  # attempts in a row whose supervisor vanished before the job is failed, not requeued
KILL_MARGIN_S = 10.0  # after a stop's grace period, how long the supervisor gets before the server SIGKILLs itself
QUEUE_READ_IDS_MAX = 500  # job ids per query when a tick reads back the jobs submitted since the last one

# --- the HTTP API (treino.server.api) ----------------------------------------------------------------------------
AUTH_CACHE_S = 2.0  # how long a checked token is trusted without a query (a revocation clears the cache)
JOBS_CACHE_S = 0.5  # how stale GET /api/v1/jobs may be (dashboards and `treino jobs -w` poll it)
JOBS_PAGE_MAX = 1000  # jobs per page
METRIC_POINTS_MAX = 100_000  # metric points per GET
METRIC_POINTS_PER_POST_MAX = 10_000
LOG_CHUNK_BYTES_MAX = 1024**2  # of an attempt's output per GET
REQUEST_BYTES_MAX = 16 * 1024**2  # any request body; larger ones get 413 before they are read
INT_MAX = 2**63 - 1  # the largest integer a database column (SQLite, PostgreSQL BIGINT) holds: ids, steps, bytes
NAME_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$"  # users, datasets, jobs

# --- the dashboard (treino.server.web) ---------------------------------------------------------------------------
COOKIE = "treino_session"
COOKIE_MAX_AGE_S = 12 * 3600
POLL_MS = 2000  # the overview's and job page's refresh period
FORM_BYTES_MAX = 16 * 1024

# --- governance -------------------------------------------------------------------------------------------------
ERASURE_DEADLINE_DAYS = 15  # LGPD Art. 19 II: a complete answer within 15 days of the request


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
