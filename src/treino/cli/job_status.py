"""How `treino jobs` and `treino show` say where a job stands, from the fields the server computed (its `wait`,
`total_steps`, `eta_at`, `queue_wait_s`, `duration_s`: treino.server.waits, treino.server.progress). No logic:
the reasons are the scheduler's, the numbers the server's; these only word them.

A wait's sentence (`wait_detail`) is worded here from the wait's fields, in the CLI's language: in English it is the
server's own `detail` (treino.server.waits.Wait.detail; tests/cli/test_cli_i18n.py compares them), which an older
server or another client reads as before. A quota's note comes as data too (`note_msg`), and is worded likewise."""

from __future__ import annotations

import time
from typing import Any

from treino.i18n import N_, Msg, current, from_server, tr

# The scheduler's reasons (treino.server.waits.WaitReason), as `treino jobs` words them in the CLI's language
REASONS = (N_("resources"), N_("priority"), N_("queue"), N_("backfill"), N_("quota"), N_("slurm"))
BLOCKERS_NAMED_MAX = 3  # jobs a wait's sentence names (treino.server.waits.BLOCKERS_NAMED_MAX)


def span(seconds: float | None) -> str:
    """'45s', '12m', '3h05m', '2d04h': two units at most; '-' when unknown."""
    if seconds is None:
        return "-"
    s = max(0, round(seconds))
    days, s = divmod(s, 86400)
    hours, s = divmod(s, 3600)
    minutes, s = divmod(s, 60)
    if days:
        return f"{days}d{hours:02d}h"
    if hours:
        return f"{hours}h{minutes:02d}m"
    if minutes:
        return f"{minutes}m{s:02d}s" if minutes < 10 else f"{minutes}m"
    return f"{s}s"


def clock(unix_s: float) -> str:
    """'14:05' today, '12-03 14:05' on another day (local time)."""
    fmt = "%H:%M" if time.localtime(unix_s)[:3] == time.localtime()[:3] else "%m-%d %H:%M"
    return time.strftime(fmt, time.localtime(unix_s))


def devices_short(job: dict[str, Any]) -> str:
    """'2 [0,1]', '8 [0-7]', '3 [0,4-5]': the GPUs a job asks for and, while it holds them, which (runs shortened)."""
    held = sorted(int(i) for i in job.get("devices") or [])
    if not held:
        return str(job["gpus"])
    runs: list[list[int]] = []
    for i in held:
        if runs and i == runs[-1][-1] + 1:
            runs[-1].append(i)
        else:
            runs.append([i])
    parts = [str(r[0]) if len(r) == 1 else f"{r[0]},{r[1]}" if len(r) == 2 else f"{r[0]}-{r[-1]}" for r in runs]
    return f"{job['gpus']} [{','.join(parts)}]"


def _jobs(ids: list[int]) -> str:
    listed = ",".join(map(str, ids[:3])) + ("…" if len(ids) > 3 else "")
    return tr("job {ids}", ids=listed) if len(ids) == 1 else tr("jobs {ids}", ids=listed)


def wait_short(wait: dict[str, Any] | None) -> str:
    """A queued job's place and reason in a few words, for the table: '#1 resources (job 3)'."""
    if not wait:
        return tr("waiting")
    place = f"#{wait['position']} " if wait.get("position") else ""
    reason, blockers, until = wait["reason"], wait.get("blocked_by") or [], wait.get("until")
    if reason == "resources" and wait.get("preempting"):
        return place + tr("preempting {jobs}", jobs=_jobs(blockers))
    if reason == "backfill":
        if until:
            return place + tr("backfill ({jobs} at {clock})", jobs=_jobs(blockers), clock=clock(until))
        return place + tr("backfill ({jobs})", jobs=_jobs(blockers))
    if reason in ("resources", "priority", "queue") and blockers:
        return place + tr("{reason} ({jobs})", reason=Msg(reason), jobs=_jobs(blockers))
    if reason == "slurm":
        return f"Slurm: {wait.get('note') or tr('pending')}"
    return place + tr(reason)


def _named(ids: list[int]) -> str:
    """'job 3', 'jobs 3, 4, 5 and 2 more'."""
    named = ", ".join(str(i) for i in ids[:BLOCKERS_NAMED_MAX])
    if len(ids) > BLOCKERS_NAMED_MAX:
        named += tr(" and {n} more", n=len(ids) - BLOCKERS_NAMED_MAX)
    return tr("jobs {ids}", ids=named) if len(ids) > 1 else tr("job {ids}", ids=named)


def _note(wait: dict[str, Any]) -> str:
    """The wait's note in the CLI's language when the server sent it as data (a quota's), else as the server wrote
    it (Slurm's own reason)."""
    return from_server(str(wait.get("note") or ""), wait.get("note_msg"))


def wait_detail(wait: dict[str, Any]) -> str:
    """Why a job waits, in one sentence in the CLI's language, from the wait's fields (`treino show`)."""
    reason, blockers = wait["reason"], list(wait.get("blocked_by") or [])
    need = tr("needs {n} device(s), {free} free", n=wait.get("gpus_needed"), free=wait.get("gpus_free"))
    until = wait.get("until")
    at = time.strftime("%d/%m/%Y %H:%M" if current().pt else "%Y-%m-%d %H:%M", time.localtime(until)) if until else ""
    head = _named(blockers[:1])
    if reason == "quota":
        return tr("held by a quota: {note}", note=_note(wait))
    if reason == "resources" and wait.get("preempting"):
        return tr("{need}; preempting {jobs} to free them", need=need, jobs=_named(blockers))
    if reason == "resources" and not blockers and wait.get("gpus_free") is None:
        return tr(
            "needs {n} device(s): the machines it may use cannot seat it now (nodes down)", n=wait.get("gpus_needed")
        )
    if reason == "resources" and not blockers:
        return need
    if reason == "resources":
        if at:
            return tr("{need}; held by {jobs}, expected free at {at}", need=need, jobs=_named(blockers), at=at)
        return tr("{need}; held by {jobs}, free time unknown (they have no timeout)", need=need, jobs=_named(blockers))
    if reason == "backfill":
        if not at:
            return tr("fits now, but {head} waits first and its start time is unknown (no timeout)", head=head)
        return tr(
            "fits now, but would delay {head}, due to start at {at}; a timeout_minutes ending sooner lets it in",
            head=head,
            at=at,
        )
    if reason == "priority":
        return tr("{head}, of higher priority, goes first; {need}", head=head, need=need)
    if reason == "queue":
        return tr("{head}, submitted earlier, goes first; {need}", head=head, need=need)
    if reason == "slurm":
        return tr("pending in Slurm: {note}", note=_note(wait) or tr("no reason given"))
    if reason == "backend":
        note = _note(wait)
        return tr("the backend cannot be reached: {note}", note=note) if note else tr("the backend cannot be reached")
    return tr(reason)


def progress(job: dict[str, Any]) -> str:
    """Steps done / total: '120/1000', '120' without a total, '-' before the first logged step."""
    step, total = job.get("last_step"), job.get("total_steps")
    if step is None:
        return "-" if total is None else f"0/{total}"
    return f"{step}/{total}" if total is not None else str(step)


def status(job: dict[str, Any], now: float) -> str:
    """The table's last column: why a queued job waits, a running job's ETA, how long a finished one took."""
    state = job["state"]
    if state == "queued":
        return wait_short(job.get("wait"))
    if state in ("running", "stopping"):
        if job.get("wait"):  # pending in the backend (Slurm)
            return wait_short(job["wait"])
        eta_at = job.get("eta_at")
        if eta_at is not None:
            return tr("ETA {span}", span=span(eta_at - now))
        return tr("ran {span}", span=span(now - job["started_at"])) if job.get("started_at") else "-"
    took = job.get("duration_s")
    return tr("took {span}", span=span(took)) if took is not None else "-"


def show_fields(job: dict[str, Any], now: float) -> list[tuple[str, str]]:
    """`treino show`'s lines on waiting, ETA and times (those that apply to the job's state); labels for tr()."""
    rows: list[tuple[str, str]] = []
    wait = job.get("wait")
    if wait:
        place = tr("#{position} in the queue; ", position=wait["position"]) if wait.get("position") else ""
        rows.append((N_("waiting"), f"{place}{tr(wait['reason'])}: {wait_detail(wait)}"))
    elif job["state"] == "queued":
        rows.append((N_("waiting"), tr("not yet considered by the scheduler (just submitted)")))
    if job.get("eta_at") is not None and job["state"] == "running":
        eta = tr(
            "{span} (at {clock}, at the last measured steps/s)",
            span=span(job["eta_at"] - now),
            clock=clock(job["eta_at"]),
        )
        rows.append((N_("ETA"), eta))
    if job.get("queue_wait_s") is not None:
        rows.append((N_("queue wait"), span(job["queue_wait_s"])))
    elif job["state"] == "queued":
        rows.append((N_("queue wait"), tr("{span} so far", span=span(now - job["submitted_at"]))))
    if job.get("duration_s") is not None:
        took = tr("{span} (first start to end, requeues included)", span=span(job["duration_s"]))
        rows.append((N_("duration"), took))
    return rows


def failure_detail(job: dict[str, Any]) -> str:
    """A job's failure detail (as the API sends it) in the CLI's language where treino worded it (the signal, the
    exit code, the timeout: treino.server.failures); the job's own output, quoted in it, as it is."""
    from treino.server.failures import worded

    msg = worded(job)
    return current().msg(msg) if msg is not None else str(job.get("failure_detail") or "")
