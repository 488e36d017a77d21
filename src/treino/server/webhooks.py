"""Notifications: HMAC-signed webhooks on job end and on erasure deadlines approaching (`treino server --webhook URL`).

    job.ended          a job reached succeeded, failed or cancelled (seen on Job.state as its session commits)
    retention.expired  a dataset past its retention period, once (treino.server.retention)
    erasure.deadline   an open erasure request (Art. 18 VI) within --erasure-warn-days of its Art. 19 deadline,
                       once per request per threshold (checked at start and every ERASURE_WARN_CHECK_S)

Each delivery is one POST of a JSON body to one URL, with `X-Treino-Event`, `X-Treino-Delivery` (a unique id, the
same on every retry) and `X-Treino-Signature: sha256=<hex HMAC-SHA256 of the body with the webhook secret>` (the
scheme GitHub uses). No answer, 5xx or 429 is retried with exponential backoff and jitter, WEBHOOK_TRIES in all;
then it is logged as dropped. Any other answer ends the delivery.

The engine never waits on a receiver: events go into a bounded in-memory inbox (full: logged and dropped), and one
sender thread does the rest. The sender keeps pending deliveries in DATA_DIR/webhooks.jsonl (each added and each
finished delivery appended and fsynced; compacted when finished ones pile up) and replays them at start, so a
delivery survives a restart. A clean stop writes what is still in the inbox; an event in it when the server is
killed is lost.

Payloads hold nothing secret: no tokens, no subject ids or pseudonyms, no job output (a failure's reason, not the
log line behind it).
"""

from __future__ import annotations

import hashlib
import heapq
import hmac
import json
import logging
import os
import queue
import random
import secrets
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
from sqlalchemy import event, select
from sqlalchemy.orm import Session, sessionmaker

from treino.errors import TreinoError
from treino.govern.models import Erasure
from treino.server.db import Job, JobState
from treino.server.settings import (
    ERASURE_WARN_CHECK_S,
    TASK_STOP_S,
    WEBHOOK_BACKOFF_MAX_S,
    WEBHOOK_BACKOFF_S,
    WEBHOOK_COMPACT_DONE,
    WEBHOOK_INBOX_MAX,
    WEBHOOK_PENDING_MAX,
    WEBHOOK_QUEUE_FILE,
    WEBHOOK_SECRET_FILE,
    WEBHOOK_TIMEOUT_S,
    WEBHOOK_TRIES,
)
from treino.server.tasks import PeriodicTask

log = logging.getLogger("treino.server.webhooks")

ENDED_STATES = frozenset({JobState.SUCCEEDED, JobState.FAILED, JobState.CANCELLED})
DAY_S = 86400.0
_ENDED_KEY = "treino.webhooks.ended"  # Session.info: the jobs that reached an end state in this transaction


def check_url(url: str) -> str:
    """A webhook URL, or TreinoError: only http(s) with a host."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise TreinoError(
            f"--webhook {url!r} is not an http(s) URL. To fix: give a URL such as https://hooks.example.com/treino."
        )
    return url


def load_or_create_secret(data_dir: Path, secret_file: Path | None) -> bytes:
    """The HMAC secret: the file given (--webhook-secret-file, its bytes stripped of surrounding whitespace), else
    DATA_DIR/webhook-secret (64 hex characters, mode 0600), created on the first start."""
    if secret_file is not None:
        try:
            secret = secret_file.expanduser().read_bytes().strip()
        except OSError as exc:
            raise TreinoError(
                f"Cannot read --webhook-secret-file {secret_file}: {exc.strerror}. To fix: name a readable file."
            ) from exc
        if len(secret) < 16:
            raise TreinoError(
                f"--webhook-secret-file {secret_file} holds {len(secret)} bytes; at least 16 are needed. "
                "To fix: write a longer secret there, e.g. `python -c 'import secrets; print(secrets.token_hex(32))'`."
            )
        return secret
    path = data_dir / WEBHOOK_SECRET_FILE
    if not path.exists():
        path.touch(mode=0o600)
        path.chmod(0o600)
        path.write_text(secrets.token_hex(32))
    return path.read_bytes().strip()


def signature(secret: bytes, body: bytes) -> str:
    """The X-Treino-Signature header's value for `body`."""
    return "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()


def job_ended_payload(job: Job) -> dict[str, Any]:
    duration_s = job.ended_at - job.started_at if job.ended_at is not None and job.started_at is not None else None
    return {
        "event": "job.ended",
        "job": job.id,
        "name": job.name,
        "owner": job.owner,
        "state": str(JobState(job.state).value),
        "reason": job.failure_reason,  # a failure's class (oom, timeout, crash, ...); None when it succeeded
        "ended_at": job.ended_at,
        "duration_s": duration_s,  # from its first attempt's start; None when it never started
        "attempts": job.attempts,
        "checkpoint_step": job.checkpoint_step,  # its last checkpoint's step; None without one
    }


@dataclass(order=True)
class _Delivery:
    due: float  # time.monotonic() of its next try
    id: str = field(compare=False)
    url: str = field(compare=False)
    event: str = field(compare=False)
    body: str = field(compare=False)
    tries: int = field(default=0, compare=False)


class Webhooks:
    """The sender (module docstring). `start()` replays the queue file and starts the sender thread; `stop()` ends
    it, leaving what is pending in the file for the next start."""

    def __init__(
        self,
        urls: tuple[str, ...],
        secret: bytes,
        data_dir: Path,
        sessions: sessionmaker[Session],
        erasure_warn_days: float,
        queue_file: str = WEBHOOK_QUEUE_FILE,
    ) -> None:
        self.urls = urls
        self.secret = secret
        self.sessions = sessions
        self.erasure_warn_days = erasure_warn_days
        self.path = data_dir / queue_file
        self._inbox: queue.Queue[tuple[str, dict[str, Any], str | None]] = queue.Queue(WEBHOOK_INBOX_MAX)
        self._pending: list[_Delivery] = []  # a heap by due time; the sender thread's only
        self._marks: set[str] = set()  # "erasure ID:DAYS" already notified
        self._marks_lock = threading.Lock()
        self._done_since_compact = 0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._client = httpx.Client(timeout=WEBHOOK_TIMEOUT_S, follow_redirects=False)

    # --- what the rest of the server calls ------------------------------------------------------------------------
    def notify(self, event_name: str, payload: dict[str, Any], mark: str | None = None) -> None:
        """Queue `payload` for every URL; never blocks (a full inbox drops it, logged)."""
        try:
            self._inbox.put_nowait((event_name, payload, mark))
        except queue.Full:
            log.warning("webhook inbox full (%d events): %s dropped", WEBHOOK_INBOX_MAX, event_name)

    def notify_once(self, event_name: str, payload: dict[str, Any], mark: str) -> bool:
        """`notify`, unless an event with this mark was queued before (this run or, from the queue file, an earlier
        one); True when it was queued now."""
        with self._marks_lock:
            if mark in self._marks:
                return False
            self._marks.add(mark)
        self.notify(event_name, payload, mark)
        return True

    def watch_jobs(self) -> None:
        """job.ended for each job whose state becomes an end state, once its transaction commits."""
        event.listen(Job.state, "set", _noted_state)
        event.listen(self.sessions, "before_commit", _read_ended)
        event.listen(self.sessions, "after_commit", self._committed)
        event.listen(self.sessions, "after_soft_rollback", _forget_ended)

    def check_erasures(self) -> None:
        """erasure.deadline for each open erasure within erasure_warn_days of its deadline, once per threshold. Open:
        its report never filled (interrupted), or a retraining job it queued has not ended yet."""
        now = time.time()
        horizon = now + self.erasure_warn_days * DAY_S
        notified = 0
        with self.sessions() as s:
            erasures = s.scalars(select(Erasure).where(Erasure.deadline_at <= horizon)).all()
            for e in erasures:
                mark = f"{e.id}:{self.erasure_warn_days:g}"
                with self._marks_lock:
                    if mark in self._marks:
                        continue
                if not _open(s, e):
                    continue
                with self._marks_lock:
                    self._marks.add(mark)
                payload = {
                    "event": "erasure.deadline",
                    "erasure": e.id,
                    "dataset": e.dataset,  # None: every dataset
                    "requested_at": e.requested_at,
                    "deadline_at": e.deadline_at,
                    "days_left": round((e.deadline_at - now) / DAY_S, 3),  # negative: overdue
                    "threshold_days": self.erasure_warn_days,
                }
                self.notify("erasure.deadline", payload, mark)
                notified += 1
        log.info("erasure deadlines checked: %d newly notified (within %g days)", notified, self.erasure_warn_days)

    def erasure_task(self) -> PeriodicTask:
        """check_erasures at once, then every ERASURE_WARN_CHECK_S."""
        first = threading.Event()
        first.set()
        return PeriodicTask("erasure-deadlines", ERASURE_WARN_CHECK_S, self.check_erasures, wakeup=first)

    def start(self) -> None:
        self._replay()
        self._thread = threading.Thread(target=self._loop, name="treino-webhooks", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=TASK_STOP_S)
            if not self._thread.is_alive():  # events not yet accepted go to the file, for the next start
                while True:
                    try:
                        self._accept(self._inbox.get_nowait())
                    except queue.Empty:
                        break
        if event.contains(Job.state, "set", _noted_state):
            event.remove(Job.state, "set", _noted_state)
        for name, fn in (("before_commit", _read_ended), ("after_commit", self._committed)):
            if event.contains(self.sessions, name, fn):
                event.remove(self.sessions, name, fn)
        if event.contains(self.sessions, "after_soft_rollback", _forget_ended):
            event.remove(self.sessions, "after_soft_rollback", _forget_ended)
        self._client.close()

    def idle(self) -> bool:
        """Nothing waiting in the inbox nor for a (re)try."""
        return self._inbox.empty() and not self._pending

    def _committed(self, s: Session) -> None:
        for payload in s.info.pop(_ENDED_KEY + ".payloads", ()):
            self.notify("job.ended", payload)

    # --- the sender thread --------------------------------------------------------------------------------------
    def _loop(self) -> None:
        while not self._stop.is_set():
            wait_s = max(0.0, min(1.0, self._pending[0].due - time.monotonic())) if self._pending else 1.0
            try:
                first = self._inbox.get(timeout=wait_s) if wait_s > 0 else self._inbox.get_nowait()
            except queue.Empty:
                first = None
            if first is not None:
                self._accept(first)
                while True:
                    try:
                        self._accept(self._inbox.get_nowait())
                    except queue.Empty:
                        break
            now = time.monotonic()
            while self._pending and self._pending[0].due <= now and not self._stop.is_set():
                self._try(heapq.heappop(self._pending))

    def _accept(self, item: tuple[str, dict[str, Any], str | None]) -> None:
        event_name, payload, mark = item
        body = json.dumps(payload, separators=(",", ":"), sort_keys=True)
        records: list[dict[str, Any]] = [{"op": "mark", "key": mark}] if mark else []
        for url in self.urls:
            if len(self._pending) >= WEBHOOK_PENDING_MAX:
                log.warning("webhook %s to %s dropped: %d deliveries pending", event_name, url, WEBHOOK_PENDING_MAX)
                continue
            d = _Delivery(time.monotonic(), uuid.uuid4().hex, url, event_name, body)
            heapq.heappush(self._pending, d)
            records.append({"op": "add", "id": d.id, "url": url, "event": event_name, "body": body})
        self._append(records)

    def _try(self, d: _Delivery) -> None:
        d.tries += 1
        content = d.body.encode()
        headers = {
            "Content-Type": "application/json",
            "User-Agent": "treino-webhooks",
            "X-Treino-Event": d.event,
            "X-Treino-Delivery": d.id,
            "X-Treino-Signature": signature(self.secret, content),
        }
        try:
            status: int | None = self._client.post(d.url, content=content, headers=headers).status_code
        except httpx.HTTPError as exc:  # no answer: refused, reset, timed out
            status, why = None, f"{type(exc).__name__}: {exc}"
        else:
            why = f"HTTP {status}"
        if status is not None and not (status >= 500 or status == 429):
            if status >= 400:
                log.warning("webhook %s %s to %s refused with %s; not retried", d.event, d.id, d.url, why)
            self._finish(d)
            return
        if d.tries >= WEBHOOK_TRIES:
            log.warning("webhook %s %s to %s dropped after %d tries (last: %s)", d.event, d.id, d.url, d.tries, why)
            self._finish(d)
            return
        backoff_s = min(WEBHOOK_BACKOFF_MAX_S, WEBHOOK_BACKOFF_S * 2 ** (d.tries - 1))
        d.due = time.monotonic() + backoff_s / 2 + random.uniform(0, backoff_s / 2)  # "equal jitter"
        log.info(
            "webhook %s %s to %s: %s; try %d in %.1f s",
            d.event,
            d.id,
            d.url,
            why,
            d.tries + 1,
            d.due - time.monotonic(),
        )
        heapq.heappush(self._pending, d)

    def _finish(self, d: _Delivery) -> None:
        self._append([{"op": "done", "id": d.id}])
        self._done_since_compact += 1
        if self._done_since_compact >= WEBHOOK_COMPACT_DONE:
            self._compact()

    # --- the queue file -----------------------------------------------------------------------------------------
    def _append(self, records: list[dict[str, Any]]) -> None:
        if not records:
            return
        try:
            with self.path.open("a") as f:
                f.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records))
                f.flush()
                os.fsync(f.fileno())
        except OSError as exc:  # a full disk: the delivery still goes out, it only would not survive a restart
            log.warning("webhook queue %s not written: %s", self.path, exc)

    def _compact(self) -> None:
        """Rewrite the file with the pending deliveries and the marks only (a new file, fsynced, renamed over)."""
        with self._marks_lock:
            marks = sorted(self._marks)
        lines = [{"op": "mark", "key": m} for m in marks]
        lines += [{"op": "add", "id": d.id, "url": d.url, "event": d.event, "body": d.body} for d in self._pending]
        tmp = self.path.with_suffix(".tmp")
        try:
            with tmp.open("w") as f:
                f.write("".join(json.dumps(r, separators=(",", ":")) + "\n" for r in lines))
                f.flush()
                os.fsync(f.fileno())
            tmp.chmod(0o600)
            tmp.replace(self.path)
        except OSError as exc:
            log.warning("webhook queue %s not compacted: %s", self.path, exc)
            return
        self._done_since_compact = 0

    def _replay(self) -> None:
        """The pending deliveries and marks of the file, from the last run (a torn last line is skipped)."""
        if not self.path.exists():
            self.path.touch(mode=0o600)
            return
        adds: dict[str, dict[str, Any]] = {}
        for line in self.path.read_text(errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if record.get("op") == "add":
                adds[record["id"]] = record
            elif record.get("op") == "done":
                adds.pop(record.get("id"), None)
            elif record.get("op") == "mark":
                self._marks.add(str(record.get("key")))
        for r in adds.values():
            if r["url"] in self.urls:  # a URL since removed from --webhook is not called again
                heapq.heappush(self._pending, _Delivery(time.monotonic(), r["id"], r["url"], r["event"], r["body"]))
        if adds:
            log.info("webhooks: %d pending deliveries from the last run", len(self._pending))
        self._compact()


def _noted_state(target: Job, value: Any, oldvalue: Any, _initiator: Any) -> Any:
    if value in ENDED_STATES and value != oldvalue:
        from sqlalchemy.orm import object_session

        s = object_session(target)
        if s is not None:
            s.info.setdefault(_ENDED_KEY, []).append(target)
    return value


def _read_ended(s: Session) -> None:
    """Before the commit (the rows are still loaded): each ended job's payload, sent after the commit."""
    jobs: list[Job] = s.info.pop(_ENDED_KEY, [])
    if jobs:
        s.info.setdefault(_ENDED_KEY + ".payloads", []).extend(
            job_ended_payload(j) for j in {id(j): j for j in jobs}.values()
        )


def _forget_ended(s: Session, _transaction: Any) -> None:
    s.info.pop(_ENDED_KEY, None)
    s.info.pop(_ENDED_KEY + ".payloads", None)


def _open(s: Session, e: Erasure) -> bool:
    if not e.report:
        return True  # the request was recorded, its erasure never finished
    retrain = [int(j) for j in e.report.get("retrain_jobs", [])]
    if not retrain:
        return False
    states = s.scalars(select(Job.state).where(Job.id.in_(retrain))).all()
    return any(JobState(state) not in ENDED_STATES for state in states)
