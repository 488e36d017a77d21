"""The Job SDK: what a training script imports to run under `treino server` (and, unchanged, on a laptop).

    from treino import job

    run = job.init()                        # reads the job's environment; outside the server a local run
    run.config(lr=3e-4, batch=32)           # hyperparameters: config.json and every tracker (treino.trackers)
    state = run.restore()                   # the newest checkpoint that loads, or None
    for step in range((run.checkpoint_step or 0) + 1, steps + 1):
        if run.should_stop:                 # SIGTERM: preemption or cancel. Check it once per step.
            run.save(state, step=step - 1)
            break
        ...
        run.log(step=step, loss=loss)       # batched, sent by a background thread; never blocks the loop
                                            #   (and written to TensorBoard, MLflow, W&B: treino.trackers)
        if step % 100 == 0:
            run.save(state, step=step)      # atomic; rank 0 writes, every rank waits at a barrier
    run.finish()                            # sends what is unsent (also runs at interpreter exit)

Environment the server sets for every process of a job:

    TREINO_URL              the server, e.g. http://127.0.0.1:8765 (reached directly: proxies are ignored)
    TREINO_JOB_ID           the job's id (int); its presence is what makes a run *managed*
    TREINO_JOB_TOKEN        bearer token accepted for this job's metrics and checkpoints
    TREINO_CHECKPOINT_DIR   the job's checkpoint folder; it persists across attempts of the job
    TREINO_ATTEMPT          1 for the first start, 2 after the first restart, ...
    TREINO_TRACKERS_DIR     the job's trackers folder (TensorBoard, MLflow, W&B, config.json; treino.trackers)
    TREINO_TRACKERS         the spec's `trackers`, comma-separated; only when the spec has the field
    RANK, LOCAL_RANK, WORLD_SIZE   set by torchrun; a plain `python script.py` is rank 0 of 1

Outside the server (no TREINO_JOB_ID) the run is *local*: checkpoints go to TREINO_CHECKPOINT_DIR if set,
else to `init(checkpoint_dir=...)`, else to ./checkpoints; metrics stay in memory (`run.metrics`), nothing is
printed and nothing is sent.

HTTP contract (stdlib urllib: treino does not depend on an HTTP client library):

    POST {TREINO_URL}/api/v1/jobs/{id}/metrics       {"points": [{"step": 1, "time": 1.7e9, "values": {"loss": 2.3}}]}
    POST {TREINO_URL}/api/v1/jobs/{id}/checkpoints   {"step": 100, "path": "/abs/step-000000100.pt", "bytes": 123}

both with `Authorization: Bearer {TREINO_JOB_TOKEN}`, sent by rank 0 only, from one background thread: nothing
a report does waits for the server, and a server that is down never stops or crashes the training loop.

Every report is first appended to a journal, `{TREINO_CHECKPOINT_DIR}/.treino-reports.jsonl` (JSON lines, fsynced
before the first send; `{"done": ID}` is appended once the server acknowledged an entry, and the file is emptied
whenever nothing is pending; see _Journal). A checkpoint is journaled by `save()` itself; logged metric points are
journaled by the thread every METRICS_FLUSH_INTERVAL_S or as soon as METRICS_FLUSH_POINTS are waiting, in entries
of at most METRICS_BATCH_POINTS_MAX points. The thread sends pending entries oldest first (consecutive metrics
entries in one POST). A failed send (no answer, 408, 429, 5xx) is retried after a backoff with full jitter:
uniform in [0, min(REPORT_RETRY_MAX_S, REPORT_RETRY_BASE_S * 2**(failures - 1))]. So the journal is replayed:
- by the thread, as soon as the server answers again;
- by `finish()`, for at most FINISH_FLUSH_TIMEOUT_S (the rest stays in the journal, with one warning);
- by the next attempt's `init()`: an attempt sends first what an earlier one left (with its own token).
A 401 or 409 (this attempt's token died: its attempt ended) stops sending and leaves the entries for a later
attempt; another 4xx drops that entry with a warning (retrying cannot fix it), so `log()` skips, with one
warning, a key the server would refuse (over METRIC_KEY_CHARS_MAX characters, or past METRIC_KEYS_MAX distinct
keys in this process): a bad key never costs a batch of good points. Unsent points are bounded: at
most METRICS_BUFFER_POINTS, in memory and journal together; beyond that the oldest are dropped (a journal entry
at a time), with one warning. Non-finite values (nan, inf) are sent as JSON null. The server takes a replay
as often as it comes: a checkpoint is recorded once per (job, path, step), a metric point once per (step, time).
A checkpoint the job never managed to report is still recorded: the server looks for `step-*.pt` files (and
complete checkpoint folders, below) in the checkpoint folder when it adopts a running attempt after a restart and
when an attempt ends.

`run.dataset(name)` (GET {TREINO_URL}/api/v1/jobs/{id}/datasets/{name}) needs the answer, so it waits: no
answer, 408, 429 and 5xx are retried with the same backoff for up to DATASET_RETRY_TIMEOUT_S, then JobError.

Checkpoints are `{dir}/step-{step:09d}.pt`, written as a hidden temp file in the same folder, flushed and
fsynced, renamed over the final name, and the folder fsynced: a kill at any moment leaves either the old set
or the new file, never a torn `step-*.pt`. `restore()` still skips a torn or corrupt file (one that is not a
complete zip archive with matching CRCs: a disk that lied, a file cut while copied) with a warning and falls
back to the previous one; an intact file that fails to load (e.g. refused by weights_only) raises JobError
instead, since skipping it would silently throw progress away. Temp files are never read; the next save
removes them.

Sharded checkpoints (treino.sharded; docs/sdk.md has the contract): `run.save_sharded(state_dict, step=N,
async_save=False)` and `run.restore_sharded(state_dict) -> step | None`, called on every rank, write and load the
folder `{dir}/step-{step:09d}/` with torch.distributed.checkpoint: every rank its own shards, restorable with any
world size, renamed into place once complete (`.metadata` written last); with async_save the write runs in the
background and the next save, restore or finish() waits for it. `run.register_checkpoint(path, step)` makes a
checkpoint a framework wrote itself (a file, or a folder, which gets the marker `.treino-checkpoint`: the
Hugging Face Trainer's `checkpoint-N/`, Lightning's `.ckpt`; see treino.integrations) one of the job's, reported
by rank 0 like save()'s. Folders are reported with the bytes of all their files; sharded ones are kept newest
`keep` like files.

Distributed (torch.distributed initialised, world size > 1): `save` writes on rank 0 and ends with a barrier;
`restore` loads on every rank with map_location="cpu" (the ranks must see the same folder: one node, or a
shared file system); `should_stop` all-reduces the local SIGTERM flag with MAX so that every rank stops at
the same step (a rank that stops alone leaves the others waiting in DDP's all-reduce forever). That costs
one tiny collective (a 4-byte all-reduce, tens of microseconds on NCCL) per check: check it once per step.

Under torchrun the agent forwards SIGTERM to its workers and SIGKILLs them after `--shutdown-timeout`
(default 30 s, or TORCH_ELASTIC_SHUTDOWN_TIMEOUT): a launcher that grants a longer grace period must raise it.
"""

from __future__ import annotations

import atexit
import http.client
import json
import logging
import math
import os
import pickle
import random
import re
import signal
import stat
import sys
import threading
import time
import urllib.error
import urllib.request
import zipfile
from collections import deque
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from treino import trackers as _trackers
from treino.errors import JobError

if TYPE_CHECKING:
    from treino.sharded import ShardedCheckpoints

log = logging.getLogger("treino.job")

# --- every default, interval and limit of the SDK, with its unit -----------------------------------------
ENV_URL = "TREINO_URL"
ENV_JOB_ID = "TREINO_JOB_ID"
ENV_JOB_TOKEN = "TREINO_JOB_TOKEN"
ENV_CHECKPOINT_DIR = "TREINO_CHECKPOINT_DIR"
ENV_ATTEMPT = "TREINO_ATTEMPT"
DEFAULT_LOCAL_CHECKPOINT_DIR = "checkpoints"  # relative to the working directory, for local runs
DEFAULT_KEEP_CHECKPOINTS = 3
METRICS_FLUSH_INTERVAL_S = 1.0  # the background thread journals and sends at least this often
METRICS_FLUSH_POINTS = 100  # ... or as soon as this many points wait
METRICS_BATCH_POINTS_MAX = 1000  # points per POST (and per journal entry) when catching up after failures
METRIC_KEY_CHARS_MAX = 200  # the server's limits on a metric key (treino.server.settings): run.log skips a key
METRIC_KEYS_MAX = 1000  # past them, with one warning, so the server's 422 cannot drop a batch of good points
METRICS_BUFFER_POINTS = 10_000  # unsent points kept (in memory and journal); the oldest are dropped beyond this
REPORT_RETRY_BASE_S = 1.0  # after a failed send the next try waits up to this (full jitter), ...
REPORT_RETRY_MAX_S = 30.0  # ... the bound doubling with each failure in a row up to this
FINISH_FLUSH_TIMEOUT_S = 5.0  # finish() keeps retrying unsent reports for at most this long
FINISH_RETRY_MAX_S = 0.5  # the backoff bound between those retries
DATASET_RETRY_TIMEOUT_S = 600.0  # run.dataset() retries an unreachable or failing server this long, then raises
HTTP_TIMEOUT_S = 5.0  # per request: metrics, checkpoint reports, dataset reads
JOURNAL_NAME = ".treino-reports.jsonl"  # unacknowledged reports, in the checkpoint folder (kept across attempts)
JOURNAL_COMPACT_BYTES = 16 * 1024**2  # past this (and twice its last compacted size) the journal is rewritten
# In a checkpoint folder that register_checkpoint() reported, `{"step": N}`, written last: the server's disk scan
# (treino.server.lineage.FOLDER_CHECKPOINT_MARKER) counts the folder as a complete checkpoint once it is there.
FOLDER_MARKER_NAME = ".treino-checkpoint"

_CHECKPOINT_RE = re.compile(r"^step-(\d{9,})\.pt$")
_TEMP_RE = re.compile(r"^\.step-\d{9,}\.pt\.tmp-\d+$")
_RETRYABLE_HTTP = frozenset({408, 429})


@dataclass(frozen=True)
class MetricPoint:
    """One `log()` call: values are floats, or None where the value was nan or inf."""

    step: int
    time: float  # unix seconds
    values: dict[str, float | None]


# --- HTTP -------------------------------------------------------------------------------------------------
class _Client:
    """POSTs JSON to the job's endpoints; returns the HTTP status, or None when no answer came."""

    def __init__(self, url: str, job_id: int, token: str) -> None:
        self.base = f"{url.rstrip('/')}/api/v1/jobs/{job_id}"
        self._token = token
        # The server runs on the same machine: an http_proxy in the training environment must not reroute it.
        self._opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))

    def post(self, endpoint: str, payload: dict[str, Any]) -> int | None:
        request = urllib.request.Request(
            f"{self.base}/{endpoint}",
            data=json.dumps(payload).encode(),
            method="POST",
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self._token}"},
        )
        try:
            with self._opener.open(request, timeout=HTTP_TIMEOUT_S) as response:
                status: int = response.status
                return status
        except urllib.error.HTTPError as e:  # a 4xx/5xx answer
            return e.code
        except (OSError, http.client.HTTPException) as e:  # refused, reset, timed out, garbled
            log.debug("POST %s/%s failed: %s", self.base, endpoint, e)
            return None

    def get(self, endpoint: str, retry_for_s: float = 0.0) -> dict[str, Any]:
        """GET a JSON answer; JobError with the server's detail when it refuses. No answer, 408, 429 and 5xx are
        retried with backoff for `retry_for_s`."""
        failures = 0
        deadline = time.monotonic() + retry_for_s
        while True:
            request = urllib.request.Request(
                f"{self.base}/{endpoint}", headers={"Authorization": f"Bearer {self._token}"}, method="GET"
            )
            try:
                with self._opener.open(request, timeout=HTTP_TIMEOUT_S) as response:
                    answer: dict[str, Any] = json.loads(response.read())
                    return answer
            except urllib.error.HTTPError as e:
                try:
                    detail = json.loads(e.read()).get("detail")
                except ValueError:
                    detail = e.reason
                message = detail.get("message", detail) if isinstance(detail, dict) else detail
                error = JobError(f"The server refused {endpoint} ({e.code}): {message}")
                error.__cause__ = e
                status: int | None = e.code
            except (OSError, http.client.HTTPException) as e:
                error = JobError(
                    f"The treino server at {self.base} did not answer ({e}). To fix: start it again; the job can "
                    "then be restarted."
                )
                error.__cause__ = e
                status = None
            failures += 1
            remaining_s = deadline - time.monotonic()
            if not _is_retryable(status) or remaining_s <= 0:
                raise error
            if failures == 1:
                log.warning("treino: GET %s failed (HTTP %s); retrying for %.0f s.", endpoint, status, remaining_s)
            time.sleep(min(backoff_s(failures), remaining_s))


def _is_retryable(status: int | None) -> bool:
    return status is None or status in _RETRYABLE_HTTP or status >= 500


def backoff_s(failures: int, cap_s: float = REPORT_RETRY_MAX_S, rng: random.Random | None = None) -> float:
    """Seconds to wait after `failures` (>= 1) failed tries in a row: uniform in [0, min(cap_s, REPORT_RETRY_BASE_S *
    2**(failures - 1))], "full jitter" (M. Brooker, "Exponential Backoff And Jitter", AWS Architecture Blog, 2015):
    the jobs that lost the server together do not all come back at the same instant."""
    bound_s = min(cap_s, REPORT_RETRY_BASE_S * 2.0 ** min(max(failures, 1) - 1, 62))
    return (rng or random).uniform(0.0, bound_s)


# --- the journal of unacknowledged reports -----------------------------------------------------------------
@dataclass(frozen=True)
class JournalEntry:
    """One report: kind "checkpoint" (body {"step", "path", "bytes"}) or "metrics" (body {"points": [...]})."""

    id: str
    kind: str
    body: dict[str, Any]

    @property
    def points(self) -> int:
        return len(self.body["points"]) if self.kind == "metrics" else 0


_JOURNAL_KINDS = {"checkpoint": "checkpoints", "metrics": "metrics"}  # kind -> endpoint


def parse_journal(text: str) -> list[JournalEntry]:
    """The entries of a journal's text not yet marked done, oldest first. A line that is not a whole entry (the torn
    last line of a process killed while appending, or anything unknown) is skipped."""
    pending: dict[str, JournalEntry] = {}
    for line in text.splitlines():
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if not isinstance(record, dict):
            continue
        if isinstance(record.get("done"), str):
            pending.pop(record["done"], None)
            continue
        entry_id, kind, body = record.get("id"), record.get("kind"), record.get("body")
        if not (isinstance(entry_id, str) and kind in _JOURNAL_KINDS and isinstance(body, dict)):
            continue
        if kind == "metrics" and not isinstance(body.get("points"), list):
            continue
        pending[entry_id] = JournalEntry(entry_id, kind, body)
    return list(pending.values())


class _Journal:
    """The reports of a managed run the server has not acknowledged, as JSON lines in the checkpoint folder:

        {"id": "2.4711.1", "kind": "checkpoint", "body": {"step": 100, "path": "...", "bytes": 123}}
        {"id": "2.4711.2", "kind": "metrics", "body": {"points": [...]}}
        {"done": "2.4711.1"}

    An entry is appended and fsynced before its first send; `{"done": ID}` follows once the server acknowledged it
    (or refused it for good). A lost done line only means one more send, which the server ignores (checkpoints are
    recorded once per (job, path, step), metric points once per (step, time)). Opening it keeps the entries not done
    (a previous attempt's, to be sent by this one) and rewrites the file with only those; it is emptied whenever
    nothing is pending, and rewritten likewise once it outgrows JOURNAL_COMPACT_BYTES (a long outage). Only rank 0
    of the job's one running attempt writes it. If it cannot be written (a full or read-only disk) reports are kept
    in memory only, with one warning: training never stops for it."""

    def __init__(self, path: Path, attempt: int) -> None:
        self.path = path
        self._prefix = f"{attempt}.{os.getpid()}."
        self._seq = 0
        self._lock = threading.Lock()
        self._pending: dict[str, JournalEntry] = {}
        self.metric_points = 0  # points in pending metrics entries
        self._fd: int | None = None
        self._warned = False
        self._file_bytes = 0  # the file's size
        self._compacted_bytes = 0  # its size after the last rewrite
        try:
            text = path.read_text(errors="replace") if path.exists() else ""
            for entry in parse_journal(text):
                self._pending[entry.id] = entry
                self.metric_points += entry.points
            self._rewrite()  # keep only what is pending (this also drops a torn last line)
        except OSError as e:
            self._unwritable(e)

    def _rewrite(self) -> None:
        """Replace the file, atomically, by the pending entries alone, and (re)open it for appending."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        data = "".join(_journal_line(e) for e in self._pending.values()).encode()
        temp = self.path.with_name(f"{self.path.name}.tmp-{os.getpid()}")
        with open(temp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, self.path)
        _fsync_dir(self.path.parent)
        self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._file_bytes = self._compacted_bytes = len(data)

    def pending(self) -> list[JournalEntry]:
        with self._lock:
            return list(self._pending.values())

    def add(self, kind: str, bodies: list[dict[str, Any]]) -> None:
        """Append one entry per body, fsynced once, before any is sent."""
        with self._lock:
            entries = []
            for body in bodies:
                self._seq += 1
                entries.append(JournalEntry(f"{self._prefix}{self._seq}", kind, body))
            self._write("".join(_journal_line(e) for e in entries), sync=True)
            for e in entries:
                self._pending[e.id] = e
                self.metric_points += e.points

    def done(self, ids: list[str]) -> None:
        """Mark entries done (not fsynced: see the class docstring); the file is emptied when nothing is pending."""
        with self._lock:
            for entry_id in ids:
                entry = self._pending.pop(entry_id, None)
                if entry is not None:
                    self.metric_points -= entry.points
            if not self._pending:
                if self._fd is not None:
                    try:
                        os.ftruncate(self._fd, 0)
                        self._file_bytes = self._compacted_bytes = 0
                    except OSError as e:
                        self._unwritable(e)
                return
            self._write("".join(json.dumps({"done": i}) + "\n" for i in ids), sync=False)
            if self._fd is not None and self._file_bytes > max(JOURNAL_COMPACT_BYTES, 2 * self._compacted_bytes):
                try:  # a long outage: mostly done lines and dropped points by now
                    self._rewrite()
                except OSError as e:
                    self._unwritable(e)

    def drop_oldest_metrics(self, points: int) -> int:
        """Mark the oldest metrics entries done until at least `points` points are gone; how many were."""
        dropped, ids = 0, []
        with self._lock:
            for entry in self._pending.values():
                if dropped >= points:
                    break
                if entry.kind == "metrics":
                    ids.append(entry.id)
                    dropped += entry.points
        self.done(ids)
        return dropped

    def close(self) -> None:
        with self._lock:
            if self._fd is not None:
                os.close(self._fd)
                self._fd = None

    def _write(self, text: str, sync: bool) -> None:
        if self._fd is None:
            return
        try:
            data = text.encode()
            self._file_bytes += len(data)
            while data:
                data = data[os.write(self._fd, data) :]
            if sync:
                os.fsync(self._fd)
        except OSError as e:
            self._unwritable(e)

    def _unwritable(self, e: OSError) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
        if not self._warned:
            self._warned = True
            log.warning(
                "treino: cannot write the report journal %s (%s): unsent reports are kept in memory only, and a "
                "server restart may lose them (checkpoint files are still found on disk by the server).",
                self.path,
                e,
            )


def _journal_line(entry: JournalEntry) -> str:
    return json.dumps({"id": entry.id, "kind": entry.kind, "body": entry.body}) + "\n"


# --- the reporter ------------------------------------------------------------------------------------------
class _Reporter:
    """A daemon thread that sends a managed run's reports (checkpoints and metric points) to the server, oldest
    first, each journaled before its first send. `add` only appends to a buffer under a lock, and `checkpoint` only
    appends one journal line: neither waits for the server."""

    def __init__(self, client: _Client, journal: _Journal, max_points: int = METRICS_BUFFER_POINTS) -> None:
        self._client = client
        self.journal = journal
        self._max_points = max_points
        self._buffer: deque[MetricPoint] = deque()  # logged, not yet journaled, oldest first
        self._dropped = 0
        self._stopping = False
        self._kick = bool(journal.pending())  # a previous attempt's reports: send them at once
        self._held = False  # this attempt's token was refused (401/409): what is left waits for a later attempt
        self._down_since: float | None = None  # monotonic time of the first failure of the current outage
        self._cond = threading.Condition()
        self._thread = threading.Thread(target=self._loop, name="treino-reports", daemon=True)
        self._thread.start()

    def add(self, point: MetricPoint) -> None:
        with self._cond:
            if len(self._buffer) >= self._max_points:
                self._buffer.popleft()
                self._count_dropped(1)
            self._buffer.append(point)
            if len(self._buffer) >= METRICS_FLUSH_POINTS:
                self._cond.notify()

    def checkpoint(self, step: int, path: Path, size_bytes: int) -> None:
        """Journal a checkpoint report (fsynced) and wake the thread to send it."""
        self.journal.add("checkpoint", [{"step": step, "path": str(path), "bytes": size_bytes}])
        with self._cond:
            self._kick = True
            self._cond.notify()

    def close(self) -> None:
        """Stop the thread after a last flush (bounded by FINISH_FLUSH_TIMEOUT_S); idempotent."""
        with self._cond:
            self._stopping = True
            self._cond.notify()
        self._thread.join(timeout=FINISH_FLUSH_TIMEOUT_S + 2 * HTTP_TIMEOUT_S)
        if not self._thread.is_alive():
            self.journal.close()

    def _count_dropped(self, points: int) -> None:
        if points <= 0:
            return
        self._dropped += points
        if self._dropped == points:
            log.warning(
                "treino: the metrics server is not taking points; %d are kept, dropping the oldest from now on "
                "(this warning is shown once).",
                self._max_points,
            )

    def _loop(self) -> None:
        failures = 0
        retry_at = 0.0  # monotonic; no send before this
        while True:
            now = time.monotonic()
            deadline = now + METRICS_FLUSH_INTERVAL_S
            if retry_at > now:
                deadline = min(deadline, retry_at)
            with self._cond:
                while not self._stopping and not self._kick:
                    remaining_s = deadline - time.monotonic()
                    if remaining_s <= 0 or (failures == 0 and len(self._buffer) >= METRICS_FLUSH_POINTS):
                        break
                    self._cond.wait(remaining_s)
                self._kick = False
                if self._stopping:
                    break
            self._journal_buffered()
            if time.monotonic() < retry_at:
                continue
            if self._send_pending():
                failures, retry_at = 0, 0.0
            else:
                failures = min(failures + 1, 64)
                retry_at = time.monotonic() + backoff_s(failures)
        self._final_flush()

    def _journal_buffered(self) -> None:
        """Move the buffered points into the journal, batches of at most METRICS_BATCH_POINTS_MAX; then keep at
        most max_points unsent, dropping the oldest entries."""
        with self._cond:
            points = [asdict(p) for p in self._buffer]
            self._buffer.clear()
        if not points:
            return
        step = METRICS_BATCH_POINTS_MAX
        self.journal.add("metrics", [{"points": points[i : i + step]} for i in range(0, len(points), step)])
        excess = self.journal.metric_points - self._max_points
        if excess > 0:
            dropped = self.journal.drop_oldest_metrics(excess)
            with self._cond:
                self._count_dropped(dropped)

    def _send_pending(self) -> bool:
        """Send every pending report, oldest first (consecutive metrics entries in one POST); False at the first
        retryable failure (no answer, 408, 429, 5xx)."""
        while not self._held:
            pending = self.journal.pending()
            if not pending:
                break
            group = [pending[0]]
            if group[0].kind == "metrics":
                total = group[0].points
                for entry in pending[1:]:
                    if entry.kind != "metrics" or total + entry.points > METRICS_BATCH_POINTS_MAX:
                        break
                    group.append(entry)
                    total += entry.points
                payload: dict[str, Any] = {"points": [p for e in group for p in e.body["points"]]}
            else:
                payload = group[0].body
            status = self._client.post(_JOURNAL_KINDS[group[0].kind], payload)
            if _is_retryable(status):
                if self._down_since is None:
                    self._down_since = time.monotonic()
                    log.warning(
                        "treino: the server at %s did not take a report (HTTP %s); retrying with backoff, unsent "
                        "reports are kept in %s.",
                        self._client.base,
                        status,
                        self.journal.path,
                    )
                return False
            if status in (401, 409):  # this attempt's token is dead (its attempt ended): a later attempt may send
                self._held = True
                log.warning(
                    "treino: the server no longer takes this attempt's reports (HTTP %s); %d are left in %s.",
                    status,
                    len(pending),
                    self.journal.path,
                )
                break
            if self._down_since is not None:
                log.info("treino: the server answers again after %.1f s.", time.monotonic() - self._down_since)
                self._down_since = None
            if not 200 <= (status or 0) < 300:
                what = f"checkpoint {payload.get('path')}" if group[0].kind == "checkpoint" else "metric points"
                log.warning("treino: the server refused %s with HTTP %s; dropped.", what, status)
            self.journal.done([e.id for e in group])
        return True

    def _final_flush(self) -> None:
        self._journal_buffered()
        deadline = time.monotonic() + FINISH_FLUSH_TIMEOUT_S
        failures = 0
        while not self._send_pending():
            failures += 1
            remaining_s = deadline - time.monotonic()
            if remaining_s <= 0:
                break
            time.sleep(min(backoff_s(failures, cap_s=FINISH_RETRY_MAX_S), remaining_s))
        unsent = self.journal.pending()
        if unsent:
            log.warning(
                "treino: %d report(s) could not be sent to %s; they stay in %s: the job's next attempt sends them, "
                "and the server records the checkpoint files it finds when the attempt ends.",
                len(unsent),
                self._client.base,
                self.journal.path,
            )


# --- torch.distributed, only if the script uses it ---------------------------------------------------------
def _dist_world() -> tuple[int, int] | None:
    """(rank, world size) of an initialised process group with more than one rank, else None.

    Never imports torch itself: a script that has not imported torch.distributed has no process group.
    """
    dist = sys.modules.get("torch.distributed")
    if dist is None or not dist.is_available() or not dist.is_initialized():
        return None
    world_size: int = dist.get_world_size()
    return (dist.get_rank(), world_size) if world_size > 1 else None


def _collective_device() -> Any:
    """The device a collective's tensor must live on: the current CUDA device under NCCL, else the CPU."""
    import torch
    import torch.distributed as dist

    if "nccl" in str(dist.get_backend()).lower():
        return torch.device("cuda", torch.cuda.current_device())
    return torch.device("cpu")


def _env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or raw == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise JobError(f"{name}={raw!r} is not an integer. To fix: set it to a whole number or unset it.") from None


def _is_intact_archive(path: Path) -> bool:
    """True if `path` is a complete zip archive (torch.save's format) whose every member matches its CRC-32."""
    try:
        with zipfile.ZipFile(path) as archive:
            return archive.testzip() is None
    except (zipfile.BadZipFile, OSError, EOFError, ValueError):
        return False


def _size_bytes(path: Path) -> int:
    """Bytes of a regular file, or of every regular file under a folder (symbolic links neither followed nor
    counted); OSError if `path` does not exist."""
    return _tree_size(path)[0]


def _tree_size(path: Path, entries_max: int | None = None) -> tuple[int, int]:
    """(bytes, entries looked at) of a regular file, or of every regular file under a folder; symbolic links are
    neither followed nor counted. With `entries_max`, at most that many entries under the folder are looked at (the
    bytes are those of the files among them). OSError if `path` does not exist; a subfolder that cannot be listed
    counts nothing."""
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode):
        return (st.st_size if stat.S_ISREG(st.st_mode) else 0), 0
    total, seen, folders = 0, 0, [str(path)]
    while folders:
        try:
            with os.scandir(folders.pop()) as entries:
                for entry in entries:
                    if entries_max is not None and seen >= entries_max:
                        return total, seen
                    seen += 1
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif entry.is_file(follow_symlinks=False):
                        total += _entry_bytes(entry)
        except OSError:  # removed meanwhile, or closed to us
            continue
    return total, seen


def _entry_bytes(entry: os.DirEntry[str]) -> int:
    try:
        return entry.stat(follow_symlinks=False).st_size
    except FileNotFoundError:  # removed since it was listed
        return 0


def _write_atomic(path: Path, data: bytes) -> None:
    """`data` as `path`, through a hidden temp file renamed over it: readers see the old file or the whole new one."""
    temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        with open(temp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(temp, path)
    finally:
        temp.unlink(missing_ok=True)


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


# --- the run -----------------------------------------------------------------------------------------------
class Run:
    """One process's view of a job attempt. Create it with `job.init()`."""

    def __init__(
        self,
        checkpoint_dir: str | os.PathLike[str] | None = None,
        keep: int = DEFAULT_KEEP_CHECKPOINTS,
        trackers: Sequence[str] | None = None,
        trackers_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        if keep < 1:
            raise JobError(f"keep={keep}: at least one checkpoint must be kept. To fix: pass keep >= 1.")
        self.keep = keep
        self.job_id: int | None = None
        self._client: _Client | None = None
        raw_job_id = os.environ.get(ENV_JOB_ID, "")
        env_dir = os.environ.get(ENV_CHECKPOINT_DIR, "")
        if raw_job_id:
            missing = [n for n in (ENV_URL, ENV_JOB_TOKEN, ENV_CHECKPOINT_DIR) if not os.environ.get(n)]
            if missing:
                raise JobError(
                    f"{ENV_JOB_ID} is set but {', '.join(missing)} is not. To fix: start the script with "
                    f"'treino server', or unset {ENV_JOB_ID} for a local run."
                )
            self.job_id = _env_int(ENV_JOB_ID, 0)
            self._client = _Client(os.environ[ENV_URL], self.job_id, os.environ[ENV_JOB_TOKEN])
        self.checkpoint_dir = Path(env_dir or checkpoint_dir or DEFAULT_LOCAL_CHECKPOINT_DIR).absolute()
        self.attempt = _env_int(ENV_ATTEMPT, 1)
        self.checkpoint_step: int | None = None  # step of the checkpoint restore() returned
        self._env_rank = _env_int("RANK", 0)
        self._env_world_size = _env_int("WORLD_SIZE", 1)
        self.local_rank = _env_int("LOCAL_RANK", 0)
        self._sigterm = False  # set by the signal handler: this process was asked to stop
        self._stop_agreed = False  # every rank agreed to stop (sticky: all ranks learn it at the same check)
        self._previous_handler: Any = None
        self._handler_installed = False
        self._finished = False
        self._local_points: deque[MetricPoint] = deque(maxlen=METRICS_BUFFER_POINTS)
        self._metric_keys: set[str] = set()  # every key logged, up to METRIC_KEYS_MAX
        self._skipped_keys = False  # warned once
        self._reporter: _Reporter | None = None
        self._sharded_checkpoints: ShardedCheckpoints | None = None  # made by the first sharded save or restore
        if self._client is not None and self._env_rank == 0:
            # A previous attempt's unsent reports are in the journal: the reporter sends them first.
            self._reporter = _Reporter(self._client, _Journal(self.checkpoint_dir / JOURNAL_NAME, self.attempt))
        self.hparams: dict[str, Any] = {}  # what run.config() recorded
        self._trackers: _trackers.Bridge | None = None  # rank 0's TensorBoard, MLflow, W&B (treino.trackers)
        if self._env_rank == 0:
            self._trackers = _trackers.start(trackers, self.job_id is not None, self.job_id, trackers_dir)
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGTERM, self._on_sigterm)
            self._handler_installed = True
        atexit.register(self.finish)

    # -- data
    def dataset(self, name: str, as_table: bool = False) -> Any:
        """The dataset version pinned to this job at submit: its path (Parquet), or a pyarrow Table.

        Under the server, the job must have declared the dataset in its spec, and the server records the read
        in its audit chain (who, which job, which version and hash, for which purpose). Outside the server there is
        no catalog: pass a path instead of a name, and it is returned (or read) as is."""
        if self._client is None:
            path = Path(name)
            if not path.exists():
                raise JobError(
                    f"run.dataset({name!r}) outside the server needs a file path. "
                    "To fix: pass the path of a Parquet file, or run the script through 'treino submit'."
                )
        else:
            path = Path(self._client.get(f"datasets/{name}", retry_for_s=DATASET_RETRY_TIMEOUT_S)["path"])
        if not as_table:
            return path
        import pyarrow.parquet as pq  # type: ignore[import-untyped]  # pyarrow ships no py.typed marker

        return pq.read_table(path)

    # -- identity
    @property
    def is_managed(self) -> bool:
        """True when started by `treino server` (TREINO_JOB_ID is set)."""
        return self.job_id is not None

    @property
    def rank(self) -> int:
        world = _dist_world()
        return world[0] if world else self._env_rank

    @property
    def world_size(self) -> int:
        world = _dist_world()
        return world[1] if world else self._env_world_size

    # -- stopping
    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self._sigterm = True

    @property
    def should_stop(self) -> bool:
        """True once SIGTERM arrived (on any rank, under DDP). One tiny all-reduce per check under DDP."""
        if self._stop_agreed:
            return True
        if _dist_world() is None:
            self._stop_agreed = self._sigterm
            return self._stop_agreed
        import torch
        import torch.distributed as dist

        flag = torch.tensor([int(self._sigterm)], dtype=torch.int32, device=_collective_device())
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        self._stop_agreed = bool(flag.item())
        return self._stop_agreed

    # -- checkpoints
    def checkpoints(self) -> list[tuple[int, Path]]:
        """(step, path) of every `step-*.pt` in the checkpoint folder, oldest first."""
        if not self.checkpoint_dir.is_dir():
            return []
        found = [(int(m.group(1)), p) for p in self.checkpoint_dir.iterdir() if (m := _CHECKPOINT_RE.match(p.name))]
        return sorted(found)

    def restore(self, weights_only: bool = True) -> Any:
        """The state of the newest checkpoint that loads (on the CPU), or None; sets `checkpoint_step`.

        weights_only=True (torch's default) loads tensors, containers and numbers only; pass False for
        checkpoints holding other Python objects you trust.
        """
        import torch

        self.checkpoint_step = None
        for step, path in reversed(self.checkpoints()):
            try:
                state = torch.load(path, map_location="cpu", weights_only=weights_only)
            except (pickle.UnpicklingError, RuntimeError, ValueError, EOFError, OSError, zipfile.BadZipFile) as e:
                if _is_intact_archive(path):  # not torn: skipping it would silently lose progress
                    hint = "call run.restore(weights_only=False) if you trust it" if weights_only else "see the cause"
                    raise JobError(
                        f"{path} is intact but does not load ({type(e).__name__}, the cause above). To fix: {hint}."
                    ) from e
                log.warning("treino: skipping checkpoint %s: torn or corrupt (%s).", path, type(e).__name__)
                continue
            self.checkpoint_step = step
            return state
        return None

    def save(self, state: Any, step: int) -> Path:
        """Write `state` atomically as step `step` (rank 0), keep the newest `keep`, report it; all ranks wait.

        Returns the checkpoint's path (on every rank).
        """
        if step < 0:
            raise JobError(f"step={step}: checkpoint steps are >= 0. To fix: pass the step just completed.")
        path = self.checkpoint_dir / f"step-{step:09d}.pt"
        if self.rank == 0:
            self._write(state, path)
            self._prune(step)
            if self._reporter is not None:  # journaled now, sent by the reporter's thread
                self._reporter.checkpoint(step, path, path.stat().st_size)
        if _dist_world() is not None:
            import torch.distributed as dist

            dist.barrier()
        return path

    def _write(self, state: Any, path: Path) -> None:
        import torch

        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
        try:
            with open(temp, "wb") as f:
                torch.save(state, f)
                f.flush()
                os.fsync(f.fileno())
            os.replace(temp, path)
        finally:
            temp.unlink(missing_ok=True)
        _fsync_dir(path.parent)

    def _prune(self, saved_step: int) -> None:
        """Keep the newest `keep` checkpoints up to the one just saved; delete older ones and temp files left by
        killed writers. Files of later steps (a torn one from a killed attempt) are never counted as kept: they
        could otherwise push out the checkpoint just written."""
        for _, old in [c for c in self.checkpoints() if c[0] <= saved_step][: -self.keep]:
            old.unlink(missing_ok=True)
        for p in self.checkpoint_dir.iterdir():
            if _TEMP_RE.match(p.name):
                p.unlink(missing_ok=True)

    def register_checkpoint(self, path: str | os.PathLike[str], step: int) -> Path:
        """Report a checkpoint that other code wrote (a framework's file or folder: the Hugging Face Trainer's
        `checkpoint-N/`, a Lightning `.ckpt`) as step `step`: journaled and sent like `save()`'s, by rank 0.

        Call it once the checkpoint is complete. It must lie under `checkpoint_dir`, the only folder the server
        records for the job. A folder gets FOLDER_MARKER_NAME (`{"step": N}`), by which the server also finds it on
        disk should the report never arrive; nothing else is written, pruned or waited for: the framework owns the
        checkpoint and resumes from it itself (`restore()` reads `step-*.pt` files only). Other ranks only check the
        path. Returns the absolute path.
        """
        if step < 0:
            raise JobError(f"step={step}: checkpoint steps are >= 0. To fix: pass the step the checkpoint holds.")
        target = Path(path).absolute()
        if not target.resolve().is_relative_to(self.checkpoint_dir.resolve()):
            raise JobError(
                f"{target} is not inside the checkpoint dir {self.checkpoint_dir}: the server records only "
                "checkpoints there. To fix: have the framework write under run.checkpoint_dir (TREINO_CHECKPOINT_DIR)."
            )
        if self.rank != 0:
            return target
        try:
            if target.is_dir():  # the server's disk scan counts a folder as a checkpoint once this marker is in it
                before = target.stat()
                _write_atomic(target / FOLDER_MARKER_NAME, json.dumps({"step": step}).encode())
                # The folder keeps its time: frameworks rotate their checkpoints by it (the Trainer's use_mtime).
                os.utime(target, ns=(before.st_atime_ns, before.st_mtime_ns))
            size = _size_bytes(target)
        except OSError as e:
            raise JobError(
                f"Checkpoint {target} cannot be read ({e}). To fix: register it after the framework has written it."
            ) from e
        if self._reporter is not None:
            self._reporter.checkpoint(step, target, size)
        return target

    # -- sharded checkpoints (treino.sharded; docs/sdk.md)
    def save_sharded(self, state_dict: dict[str, Any], step: int, async_save: bool = False) -> Path:
        """Every rank: write its shard of `state_dict` into the folder `step-{step:09d}/` (torch's distributed
        checkpoint), atomically; keep the newest `keep`; report it once complete. async_save: return once the state
        is copied to CPU memory; the next save, restore or finish() waits for the disk. Returns the folder."""
        return self._sharded().save(state_dict, step, async_save=async_save)

    def restore_sharded(self, state_dict: dict[str, Any]) -> int | None:
        """Every rank: load the newest complete sharded checkpoint into `state_dict` in place (any world size); its
        step (also in `checkpoint_step`), or None when there is none."""
        return self._sharded().restore(state_dict)

    def _sharded(self) -> ShardedCheckpoints:
        if self._sharded_checkpoints is None:
            from treino.sharded import ShardedCheckpoints

            self._sharded_checkpoints = ShardedCheckpoints(self)
        return self._sharded_checkpoints

    # -- metrics
    def log(self, step: int, **values: float) -> None:
        """Record metrics for `step`; returns at once (rank 0 sends them in the background, others ignore them).

        A 0-d tensor is accepted; converting it waits for the GPU, so prefer logging floats you already have.
        """
        if self._finished or self.rank != 0:
            return
        try:
            floats = {name: float(v) for name, v in values.items()}
        except (TypeError, ValueError) as e:
            raise JobError(f"run.log(step={step}): every value must be a number ({e}).") from e
        if not floats.keys() <= self._metric_keys:
            floats = self._known_keys(floats)
        point = MetricPoint(
            step=int(step), time=time.time(), values={k: v if math.isfinite(v) else None for k, v in floats.items()}
        )
        if self._reporter is not None:
            self._reporter.add(point)
        else:
            self._local_points.append(point)
        if self._trackers is not None:
            self._trackers.add(point.step, point.time, point.values)

    def _known_keys(self, floats: dict[str, float]) -> dict[str, float]:
        """`floats` without a key longer than METRIC_KEY_CHARS_MAX or past METRIC_KEYS_MAX distinct keys (the server
        refuses a batch holding one): skipped, with one warning for the run."""
        kept: dict[str, float] = {}
        for k, v in floats.items():
            if k not in self._metric_keys and (
                len(k) > METRIC_KEY_CHARS_MAX or len(self._metric_keys) >= METRIC_KEYS_MAX
            ):
                if not self._skipped_keys:
                    self._skipped_keys = True
                    log.warning(
                        "treino: run.log skips the metric %r (and any other key past %d characters or %d keys): the "
                        "server refuses it. To fix: log fewer, shorter keys.",
                        k[:80],
                        METRIC_KEY_CHARS_MAX,
                        METRIC_KEYS_MAX,
                    )
                continue
            self._metric_keys.add(k)
            kept[k] = v
        return kept

    def config(self, **hparams: Any) -> None:
        """Record hyperparameters (numbers, strings, bools; nested dicts are flattened with '.' for TensorBoard and
        MLflow): merged into `run.hparams`, written by rank 0 to the trackers folder's config.json and to every
        tracker. Call it once at the start; later calls add or change keys."""
        self.hparams.update(hparams)
        if self._trackers is not None and self.rank == 0:
            self._trackers.config(hparams)

    @property
    def metrics(self) -> list[MetricPoint]:
        """The points logged by a local run (the newest METRICS_BUFFER_POINTS); empty for a managed run."""
        return list(self._local_points)

    def finish(self) -> None:
        """Send what is unsent (for at most FINISH_FLUSH_TIMEOUT_S; the rest stays in the journal) and restore the
        previous SIGTERM handler; idempotent, also runs at interpreter exit."""
        if self._finished:
            return
        self._finished = True
        if self._sharded_checkpoints is not None:  # an async save in flight: written and reported before the rest
            self._sharded_checkpoints.close()
        if self._reporter is not None:
            self._reporter.close()
        if self._trackers is not None:
            self._trackers.close()
        if self._handler_installed and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_handler)
            self._handler_installed = False
        atexit.unregister(self.finish)


_current: Run | None = None


def init(
    checkpoint_dir: str | os.PathLike[str] | None = None,
    keep: int = DEFAULT_KEEP_CHECKPOINTS,
    trackers: Sequence[str] | None = None,
    trackers_dir: str | os.PathLike[str] | None = None,
) -> Run:
    """Start this process's run from the job's environment (see the module docstring); finishes a previous one.

    checkpoint_dir is used by local runs only (TREINO_CHECKPOINT_DIR wins when set); keep is how many
    checkpoints `save` keeps, newest first. trackers ("tensorboard", "mlflow", "wandb") and trackers_dir are what
    `log` and `config` also write to when the spec (TREINO_TRACKERS, TREINO_TRACKERS_DIR) does not say: by default
    TensorBoard for a managed run, none for a local one (treino.trackers).
    """
    global _current
    if _current is not None:
        _current.finish()
    _current = Run(checkpoint_dir=checkpoint_dir, keep=keep, trackers=trackers, trackers_dir=trackers_dir)
    return _current
