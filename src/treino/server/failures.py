"""The failure details treino itself words (`Job.failure_detail`), as Msgs: the server stores their English text,
and a client words them again in its language from the job's own fields (`worded`), as it does a wait's reason.
A detail that quotes the job's output (its last log line, a backend's error) is the job's text, shown as it is.

Light on purpose: the CLI imports it (no database, no FastAPI).
"""

from __future__ import annotations

from typing import Any

from treino.i18n import Msg

SUPERVISOR_VANISHED = Msg("the attempt's supervisor vanished without an exit status (crash or reboot)")
SUPERVISOR_VANISHED_ON_FULL_DISK = Msg("the attempt's supervisor vanished without an exit status")
# in place of a detail that quotes the job's log, for a reader who may not read it (api/routes/jobs.py)
HIDDEN_DETAIL = Msg("(hidden: it quotes the job's log, which your role may not read)")


def killed_by_signal(signal: int) -> Msg:
    return Msg("killed by signal {signal}", signal=str(signal))


def exit_code(code: int) -> Msg:
    return Msg("exit code {code}", code=str(code))


def timed_out(timeout_minutes: Any) -> Msg:
    return Msg("ran past timeout_minutes={minutes}", minutes=str(timeout_minutes))  # the spec's key, as written


def worded(job: dict[str, Any]) -> str | None:
    """A job's `failure_detail` (as the API sends it) as the Msg treino worded it, rebuilt from the job's fields
    (exit code, the spec's timeout_minutes) and equal to it word for word; None when it is the job's own text."""
    detail = job.get("failure_detail")
    if not detail:
        return None
    code = job.get("exit_code")
    spec = job.get("spec") or {}
    candidates = [SUPERVISOR_VANISHED, SUPERVISOR_VANISHED_ON_FULL_DISK, HIDDEN_DETAIL]
    if isinstance(code, int):
        candidates += [exit_code(code), killed_by_signal(-code)]
    if spec.get("timeout_minutes") is not None:
        candidates.append(timed_out(spec["timeout_minutes"]))
    return next((m for m in candidates if m == detail), None)
