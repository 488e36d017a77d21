"""`treino submit --wait | --follow`: block until a job ends (optionally printing its output as it comes), then say
how it ended. The command exits 0 when the job succeeded and 1 (EXIT_FAILURE) when it failed or was cancelled."""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING, Any

from treino.cli.job_status import failure_detail
from treino.errors import EXIT_FAILURE, EXIT_OK
from treino.i18n import Msg, tr

if TYPE_CHECKING:
    from treino.cli.client import ServerClient

WAIT_POLL_S = 1.0  # how often to ask the server for the job's state (and, with --follow, its new output)
FINISHED_STATES = frozenset({"succeeded", "failed", "cancelled"})  # treino.server.db.JobState's final states


class _LogCursor:
    """Where the printed output has got to: an attempt and a byte offset in its log; attempts in order."""

    def __init__(self) -> None:
        self.attempt = 0  # 0: no attempt has started yet
        self.offset = 0

    def drain(self, client: ServerClient, job_id: int) -> None:
        """Print every byte of output the server has now, attempt after attempt."""
        while True:
            chunk = client.logs(job_id, self.attempt or None, self.offset)
            attempts = int(chunk.get("attempts", 0))
            if self.attempt == 0:
                if attempts == 0:
                    return
                self.attempt, self.offset = 1, 0  # read from the first attempt, whichever is the latest
                continue
            if chunk["text"]:
                sys.stdout.write(chunk["text"])
                sys.stdout.flush()
                self.offset = chunk["offset"]
                continue  # the server sends its output a piece at a time: ask again at once
            if chunk["final"] and attempts > self.attempt:
                self.attempt, self.offset = self.attempt + 1, 0  # the job restarted: its next attempt's output
                sys.stdout.write(tr("--- attempt {n} ---", n=self.attempt) + "\n")
                continue
            return


def wait_for(client: ServerClient, job_id: int, follow: bool) -> dict[str, Any]:
    """The job once it has ended; with `follow`, its output printed to stdout on the way."""
    cursor = _LogCursor() if follow else None
    while True:
        job: dict[str, Any] = client.job(job_id)
        if cursor is not None:
            cursor.drain(client, job_id)  # after reading the state: output written before the end is all there
        if job["state"] in FINISHED_STATES:
            return job
        time.sleep(WAIT_POLL_S)


def outcome(job: dict[str, Any]) -> tuple[str, int]:
    """The line that says how the job ended, and the exit code it means."""
    line = tr("Job {id} ({name}) {state}", id=job["id"], name=job["name"], state=Msg(job["state"]))
    if job["state"] == "succeeded":
        return line + ".", EXIT_OK
    if job.get("failure_reason"):
        line += f": {tr(job['failure_reason'])}" + (f": {failure_detail(job)}" if job.get("failure_detail") else "")
    if job.get("exit_code") is not None:
        line += " " + tr("(exit code {code})", code=job["exit_code"])
    return line + ".", EXIT_FAILURE
