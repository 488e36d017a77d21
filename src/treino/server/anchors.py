"""The server's audit anchors (treino.govern.anchors): the chain's head, signed, written outside the data dir every
`--audit-anchor-interval-s` (when the head moved) and at shutdown.

    --audit-anchor FILE      one JSON line per anchor, appended (the file opened with O_APPEND for each anchor, the
                             line written in one write and fsynced); refused inside the data dir or the shared dir,
                             which whoever holds the database also holds
    --audit-anchor-url URL   an `audit.anchor` webhook per anchor: the anchor as the JSON body, signed and retried
                             as treino.server.webhooks does (its pending deliveries in DATA_DIR/audit-anchors.jsonl)

A failed write is logged and the server goes on (the next anchor tries again): an anchor is evidence, not a
condition of service.
"""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from treino.errors import TreinoError
from treino.govern.anchors import make_anchor
from treino.govern.models import AuditRecord
from treino.server.settings import AUDIT_ANCHOR_FLUSH_S, AUDIT_ANCHOR_QUEUE_FILE, Settings
from treino.server.tasks import PeriodicTask
from treino.server.webhooks import Webhooks

log = logging.getLogger("treino.server.anchors")
ANCHOR_FILE_MODE = 0o640  # hashes and HMACs only: nothing secret, but no reason for the world to read it


def check_anchor_path(path: Path, data_dir: Path, shared_dir: Path | None) -> Path:
    """The anchor file's absolute path, or TreinoError when it lies inside the data dir (or shared dir), or its
    folder is missing."""
    resolved = path.expanduser().resolve()
    for inside, what in ((data_dir, "data dir"), (shared_dir, "shared dir")):
        if inside is not None and resolved.is_relative_to(inside.expanduser().resolve()):
            raise TreinoError(
                f"--audit-anchor {path} is inside the server's {what} ({inside}): whoever can rewrite the database "
                "there can rewrite the anchors too, so they would prove nothing. To fix: name a file outside it, "
                "best on write-once or remote storage (a WORM mount, another machine's share)."
            )
    if not resolved.parent.is_dir():
        raise TreinoError(f"--audit-anchor {path}: folder {resolved.parent} does not exist. To fix: create it.")
    return resolved


class Anchors:
    """Writes anchors of the audit head to the file and/or the URLs of `settings`."""

    def __init__(self, settings: Settings, sessions: sessionmaker[Session]) -> None:
        self.settings = settings
        self.sessions = sessions
        self.path = settings.audit_anchor_file
        self.webhooks = (
            Webhooks(
                settings.audit_anchor_urls,
                settings.webhook_secret,
                settings.data_dir,
                sessions,
                settings.erasure_warn_days,
                queue_file=AUDIT_ANCHOR_QUEUE_FILE,
            )
            if settings.audit_anchor_urls
            else None
        )
        self._last: tuple[int, str] | None = None  # the head anchored last

    def task(self) -> PeriodicTask:
        def run() -> None:
            self.anchor("interval")

        return PeriodicTask("audit-anchor", self.settings.audit_anchor_interval_s, run)

    def start(self) -> None:
        if self.path is not None:  # fail at start, not five minutes later, when it cannot be written
            os.close(os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, ANCHOR_FILE_MODE))
        if self.webhooks is not None:
            self.webhooks.start()

    def stop(self) -> None:
        """The shutdown anchor, delivered if the URLs answer within AUDIT_ANCHOR_FLUSH_S; then the sender stopped
        (what it could not deliver stays queued for the next start)."""
        try:
            self.anchor("shutdown")
        finally:
            if self.webhooks is not None:
                deadline = time.monotonic() + AUDIT_ANCHOR_FLUSH_S
                while not self.webhooks.idle() and time.monotonic() < deadline:
                    time.sleep(0.05)
                self.webhooks.stop()

    def anchor(self, reason: str) -> dict[str, object] | None:
        """Anchor the committed head now (at an interval only when it moved since the last anchor); None when the
        log is empty or nothing moved."""
        with self.sessions() as s:
            row = s.execute(
                select(AuditRecord.seq, AuditRecord.hash).order_by(AuditRecord.seq.desc()).limit(1)
            ).one_or_none()
        if row is None or (reason == "interval" and self._last == (row.seq, row.hash)):
            return None
        anchor = make_anchor(self.settings.key, row.seq, row.hash, time.time(), reason)
        if self.path is not None:
            line = (json.dumps(anchor, separators=(",", ":")) + "\n").encode()
            try:
                fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, ANCHOR_FILE_MODE)
                try:
                    os.write(fd, line)  # one write of a short line: appended whole, never interleaved
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except OSError as exc:
                log.warning("audit anchor of record %d not written to %s: %s", row.seq, self.path, exc)
        if self.webhooks is not None:
            self.webhooks.notify("audit.anchor", {"event": "audit.anchor", **anchor})
        self._last = (row.seq, row.hash)
        log.info("audit anchor (%s): record %d", reason, row.seq)
        return anchor
