"""The server's periodic work: one task per concern, each on its own thread with its own interval (the way dstack's
scheduled_tasks are), so a slow audit checkpoint never delays scheduling and no task keeps another's timestamps.

    schedule        settings.TICK_S              the job engine's tick; woken at once by submits and cancels
    audit-checkpoint settings.AUDIT_CHECKPOINT_S a signed checkpoint of the audit chain's head
    sweep           settings.SWEEP_S             the backend's hygiene (GPU processes no running job owns)
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from sqlalchemy.orm import Session, sessionmaker

from treino.govern.audit import AuditLog
from treino.server.service import Service
from treino.server.settings import AUDIT_CHECKPOINT_S, SWEEP_S, TASK_STOP_S, TICK_S

log = logging.getLogger("treino.server")


class PeriodicTask:
    """`run()` every `interval_s` on a thread of its own, or at once when `wakeup` is set; sooner when `run` returns
    the seconds until it is next due. An exception is logged with its traceback and the task goes on: one bad run
    must not stop the server's scheduling."""

    def __init__(
        self, name: str, interval_s: float, run: Callable[[], float | None], wakeup: threading.Event | None = None
    ) -> None:
        self.name = name
        self.interval_s = interval_s
        self.run = run
        self.wakeup = wakeup or threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name=f"treino-{self.name}", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self.wakeup.set()
        if self._thread is not None:
            self._thread.join(timeout=TASK_STOP_S)

    def _loop(self) -> None:
        wait_s = self.interval_s
        while not self._stop.is_set():
            self.wakeup.wait(wait_s)
            self.wakeup.clear()
            if self._stop.is_set():
                return
            wait_s = self.interval_s
            try:
                due_s = self.run()
            except Exception:  # logged with its traceback; the next run may succeed (a locked database, say)
                log.exception("periodic task %s failed", self.name)
            else:
                if due_s is not None:
                    wait_s = min(max(due_s, 0.0), self.interval_s)


def server_tasks(engine: Service, sessions: sessionmaker[Session], audit: AuditLog) -> list[PeriodicTask]:
    def sign_audit() -> None:
        with sessions.begin() as s:
            audit.checkpoint(s)

    def sweep() -> None:
        with engine.lock:  # no attempt starts in between: its processes would look like orphans
            engine.backend.sweep(engine.active_handles())

    return [
        PeriodicTask("schedule", TICK_S, engine.tick, wakeup=engine.wakeup),
        PeriodicTask("audit-checkpoint", AUDIT_CHECKPOINT_S, sign_audit),
        PeriodicTask("sweep", SWEEP_S, sweep),
    ]
