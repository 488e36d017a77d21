"""GPU usage: GPU-hours per user, purpose or job over a window, priced in BRL at the server's price per GPU-hour.

What counts: every attempt's time on its GPUs, `(end - start) x GPUs held` (the job's `gpus` per node x `nodes`),
clipped to the window; an attempt still running counts up to now. Read from the server's own records with one SQL
aggregation (attempts joined to jobs, grouped in the database), or, on a Slurm cluster whose accounting works
(`sacct`, slurmdbd), from Slurm's own accounting of treino's jobs: `AllocTRES`'s `gres/gpu` x the time each ran.
`UsageReport.source` says which.

What a real sacct (Slurm 22.05 with slurmdbd, tests/cluster/test_slurm_accounting.py) prints, and how it is read:
  * times in sacct's local time zone by default, and `--starttime` read in it too: sacct runs with
    SLURM_TIME_FORMAT=%s (Unix seconds: no zone, no DST hour twice) and TZ=UTC (for the window's bounds), which also
    overrides a SLURM_TIME_FORMAT (`relative`, ...) of the server's own environment;
  * a job Slurm requeued (node failure) is one record per run only with `--duplicates` (the run before the requeue
    is State REQUEUED, with its own Start and End); without it only the last run counts;
  * a job cancelled while pending has Start = End = the cancel time and an empty AllocTRES: it held nothing;
  * `--allocations` leaves out the steps (`N.batch`, `N.0`), which repeat the job's own GPUs and time;
  * `-S/-E` also select jobs that were only pending in the window: a record counts where it ran in it;
  * a run's record may carry the name `allocation` instead of treino's: slurmdbd writes that placeholder when the
    start message it got had no job name (as_mysql_job.c, `as_mysql_job_start`), as seen once for the run after a
    `scontrol requeue` whose first run kept its name. Such a record is treino's when its Slurm job id is that of
    another record of the same answer named by treino, or that of an attempt the server recorded, started within
    that attempt's lifetime (ids restart after a controller's cold start, so an id alone is never trusted).

The price (`GpuHourPrice`) is `treino server --gpu-hour-brl 12.50`, or an offer of the catalog
(`treino server --offer ID`) spread over its GPUs and the hours of a month:

    BRL per GPU-hour = monthly price / (GPUs x 730 h)      (an hourly offer: hourly price / GPUs)

730 h = 8760 h / 12, treino.plan.cost.HOURS_PER_MONTH; a USD price is converted at the catalog's dated BRL/USD rate
(fx.csv). Without a price, usage is GPU-hours only and says so.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from sqlalchemy import Float, case, cast, distinct, func, literal, select
from sqlalchemy.orm import Session

from treino.errors import SpecError, UsageError
from treino.i18n import N_, Msg
from treino.plan.cost import HOURS_PER_MONTH, FxRate, Offer, format_brl, hourly_brl
from treino.server.db import Attempt, Job

By = Literal["user", "purpose", "job"]
BY_VALUES: tuple[By, ...] = ("user", "purpose", "job")
NO_PURPOSE = "(none)"  # jobs whose spec names no purpose (they read no dataset)
SECONDS_PER_HOUR = 3600.0
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)\s*([hdw])$")
_DURATION_S = {"h": 3600.0, "d": 86400.0, "w": 7 * 86400.0}


# --- the price ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class GpuHourPrice:
    """What one GPU-hour costs on this server, in BRL, and where that figure comes from."""

    brl_per_gpu_hour: float
    basis: str  # how it was reached, in words: the formula with its figures, the offer's price date and source

    def cost_brl(self, gpu_hours: float) -> float:
        return self.brl_per_gpu_hour * gpu_hours


def price_from_offer(offer: Offer, fx: FxRate | None) -> GpuHourPrice:
    """An offer's price per GPU-hour: monthly price / (GPUs x 730 h), or hourly price / GPUs; USD at `fx`."""
    per_gpu_hour = hourly_brl(offer, fx) / offer.gpus
    price = f"{offer.price:g} {offer.currency}/{offer.period}"
    if offer.period == "month":
        formula = f"{price} / ({offer.gpus} GPU(s) x {HOURS_PER_MONTH} h)"
    else:
        formula = f"{price} / {offer.gpus} GPU(s)"
    fx_text = (
        Msg(" at {rate:g} BRL/USD of {date}", rate=fx.brl_per_usd, date=str(fx.date))
        if offer.currency == "USD" and fx
        else ""
    )
    return GpuHourPrice(
        per_gpu_hour,
        Msg(  # a Msg: `treino usage` and the server's start-up line word it in their language
            "offer {offer}: {formula}{fx} = {price} per GPU-hour; price of {as_of}, source: {source}",
            offer=offer.name,
            formula=formula,
            fx=fx_text,
            price=format_brl(per_gpu_hour),
            as_of=str(offer.as_of),
            source=offer.source,
        ),
    )


def price_from_brl(brl_per_gpu_hour: float) -> GpuHourPrice:
    if not brl_per_gpu_hour > 0 or brl_per_gpu_hour == float("inf"):
        raise SpecError(
            "gpu_hour_brl",
            Msg(
                "must be a positive number of BRL, not {brl_per_gpu_hour}. To fix: e.g. 12.50.",
                brl_per_gpu_hour=brl_per_gpu_hour,
            ),
        )
    return GpuHourPrice(
        brl_per_gpu_hour,
        Msg("set by the server's operator: {price} per GPU-hour", price=format_brl(brl_per_gpu_hour)),
    )


def server_price(offer_name: str, brl_per_gpu_hour: float | None) -> GpuHourPrice | None:
    """The price `treino server --offer ID` or `--gpu-hour-brl X` gives (not both); None without either."""
    if offer_name and brl_per_gpu_hour is not None:
        raise UsageError(Msg("Give --offer or --gpu-hour-brl, not both. To fix: drop one of them."))
    if brl_per_gpu_hour is not None:
        return price_from_brl(brl_per_gpu_hour)
    if not offer_name:
        return None
    from treino.catalog.offers import fx_rate, offer

    found = offer(offer_name)
    return price_from_offer(found, fx_rate() if found.currency == "USD" else None)


# --- the window -----------------------------------------------------------------------------------------------------
def month_start(now: float) -> float:
    """The first instant of `now`'s calendar month, in the server's local time (quotas reset then)."""
    day = dt.datetime.fromtimestamp(now)
    return day.replace(day=1, hour=0, minute=0, second=0, microsecond=0).timestamp()


def next_month_start(now: float) -> float:
    day = dt.datetime.fromtimestamp(month_start(now))
    year, month = (day.year + 1, 1) if day.month == 12 else (day.year, day.month + 1)
    return day.replace(year=year, month=month).timestamp()


def parse_since(text: str | None, now: float) -> float:
    """`--since`: a date or time (ISO 8601, local time), a duration back from now (`30d`, `12h`, `2w`), or None:
    the start of the current calendar month."""
    if text is None or not text.strip():
        return month_start(now)
    text = text.strip()
    if m := _DURATION.match(text):
        start = now - float(m.group(1)) * _DURATION_S[m.group(2)]
    else:
        try:
            start = dt.datetime.fromisoformat(text).timestamp()
        except (ValueError, OverflowError, OSError) as exc:  # not a date; a date the platform cannot place
            raise SpecError(
                "since",
                Msg(
                    "{text!r} is neither a date nor a duration. To fix: e.g. 2026-11-01, 2026-11-01T08:00 or 30d.",
                    text=text,
                ),
            ) from exc
    if not 0 <= start <= now:  # before 1970 no clock can show it (and no job ran); a future window is empty
        raise SpecError(
            "since", Msg("{text!r} is before 1970 or in the future. To fix: a past date, or e.g. 30d.", text=text)
        )
    return start


# --- the figures ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class UsageRow:
    key: str  # the user, the purpose, or the job's id
    user: str | None  # by user or job
    purpose: str | None  # by purpose or job
    job_id: int | None  # by job
    job_name: str | None
    jobs: int
    gpu_hours: float


@dataclass(frozen=True)
class UsageReport:
    since: float
    until: float
    by: By
    rows: tuple[UsageRow, ...]
    source: str  # "treino" (the server's records) or "slurm" (sacct)
    source_note: str  # which, in words, and why

    @property
    def gpu_hours(self) -> float:
        return sum(r.gpu_hours for r in self.rows)


def gpus_held() -> Any:
    """A job's GPUs while an attempt runs: `gpus` (per node) x `nodes` (absent from older specs: 1)."""
    return Job.gpus * func.coalesce(Job.spec["nodes"].as_integer(), 1)


def gpu_seconds_in(since: float, until: float, now: float) -> Any:
    """SQL: an attempt's GPU-seconds inside [since, until]; one still running ends now. CASE, not GREATEST/LEAST
    or MAX(a, b): the same expression on SQLite and PostgreSQL."""
    end = func.coalesce(Attempt.ended_at, literal(now))
    start_in = case((Attempt.started_at > since, Attempt.started_at), else_=literal(since))
    end_in = case((end < until, end), else_=literal(until))
    return cast(end_in - start_in, Float) * gpus_held()


def overlaps(since: float, until: float, now: float) -> Any:
    return (Attempt.started_at < until) & (func.coalesce(Attempt.ended_at, literal(now)) > since)


def usage_rows(
    s: Session, since: float, until: float, by: By, owner: str | None = None, now: float | None = None
) -> list[UsageRow]:
    """GPU-hours per `by` in [since, until], largest first: one grouped query (`owner`: that user's jobs only)."""
    now = time.time() if now is None else now
    purpose = func.coalesce(Job.spec["purpose"].as_string(), NO_PURPOSE)
    keys: dict[By, tuple[Any, ...]] = {"user": (Job.owner,), "purpose": (purpose,), "job": (Job.id, Job.name)}
    gpu_s = func.sum(gpu_seconds_in(since, until, now))
    group = keys[by] + ((Job.owner, purpose) if by == "job" else ())
    query = (
        select(*group, func.count(distinct(Job.id)), gpu_s)
        .select_from(Attempt)
        .join(Job, Attempt.job_id == Job.id)
        .where(overlaps(since, until, now))
        .group_by(*group)
    )
    if owner is not None:
        query = query.where(Job.owner == owner)
    rows = []
    for row in s.execute(query):
        *key, jobs, seconds = row
        hours = float(seconds or 0.0) / SECONDS_PER_HOUR
        if by == "user":
            rows.append(UsageRow(str(key[0]), str(key[0]), None, None, None, int(jobs), hours))
        elif by == "purpose":
            rows.append(UsageRow(str(key[0]), None, str(key[0]), None, None, int(jobs), hours))
        else:
            job_id, name, user, why = key
            rows.append(UsageRow(str(job_id), str(user), str(why), int(job_id), str(name), int(jobs), hours))
    return sorted(rows, key=lambda r: (-r.gpu_hours, r.key))


def gpu_hours_of(s: Session, owner: str, since: float, until: float, now: float | None = None) -> float:
    """One user's GPU-hours in [since, until] (their monthly quota's count)."""
    now = time.time() if now is None else now
    seconds = s.scalar(
        select(func.sum(gpu_seconds_in(since, until, now)))
        .select_from(Attempt)
        .join(Job, Attempt.job_id == Job.id)
        .where(overlaps(since, until, now), Job.owner == owner)
    )
    return float(seconds or 0.0) / SECONDS_PER_HOUR


# --- Slurm's accounting ---------------------------------------------------------------------------------------------
SACCT_FIELDS = ("JobIDRaw", "JobName", "AllocTRES", "Start", "End", "State")
SACCT_TIMEOUT_S = 30.0
SACCT_ENV = {"SLURM_TIME_FORMAT": "%s", "TZ": "UTC"}  # Start/End as Unix seconds; the window's bounds in UTC


@dataclass(frozen=True)
class SlurmUse:
    """One of treino's Slurm jobs as accounting saw it: which treino job and attempt, its GPUs and run time."""

    slurm_job_id: int
    job_id: int  # treino's
    attempt: int
    gpus: int
    start: float  # unix seconds
    end: float | None  # None: still running


def alloc_gpus(tres: str) -> int:
    """The GPUs of an `AllocTRES` string (`billing=2,cpu=2,gres/gpu=2,mem=8G,node=1`): `gres/gpu=N`, else the sum
    of the typed `gres/gpu:TYPE=N` entries (Slurm lists both when GPUs have a type)."""
    plain, typed = None, 0
    for item in tres.split(","):
        name, _, value = item.partition("=")
        if not value.isdigit():
            continue
        if name == "gres/gpu":
            plain = int(value)
        elif name.startswith("gres/gpu:"):
            typed += int(value)
    return plain if plain is not None else typed


def _sacct_time(text: str) -> float | None:
    """sacct's time -> unix seconds: `1796194942` (SLURM_TIME_FORMAT=%s, SACCT_ENV), or its default
    `2026-12-01T10:00:00` in the local time zone (sacct's and this process's); `Unknown`, `None`: None."""
    if text.isdigit():
        return float(text)
    try:
        return dt.datetime.fromisoformat(text).timestamp()
    except ValueError:
        return None


SLURMDBD_NO_NAME = "allocation"  # the name slurmdbd records for a run whose start message carried none
KNOWN_SLACK_S = 120.0  # a Slurm run starts after treino recorded its attempt; clocks and polls differ by seconds


@dataclass(frozen=True)
class KnownAttempt:
    """An attempt the server launched on Slurm, as its own records hold it (`known_slurm_attempts`)."""

    job_id: int
    attempt: int
    started_at: float
    ended_at: float | None

    def holds(self, start: float) -> bool:
        """Whether a Slurm run that started at `start` can be this attempt's (not a reused id's)."""
        return self.started_at - KNOWN_SLACK_S <= start and (
            self.ended_at is None or start <= self.ended_at + KNOWN_SLACK_S
        )


def parse_sacct(text: str, tag: str, known: Mapping[int, KnownAttempt] | None = None) -> list[SlurmUse]:
    """`sacct --allocations --parsable2 --format=JobIDRaw,JobName,AllocTRES,Start,End,State` (a header line, then
    `|`-separated records) -> treino's jobs of the server `tag` (job names `treino-TAG-JOB-ATTEMPT`,
    treino.server.slurm.SlurmBackend.job_name) that ran, one per run (`--duplicates`: a requeued job ran more than
    once). A run recorded under slurmdbd's placeholder name (`allocation`) is treino's by its Slurm job id: that of
    a named record of the same answer, else one of `known` (slurm job id -> the server's attempt) started within
    the attempt's lifetime. Other jobs of the cluster, and jobs that never held anything (AllocTRES empty), are
    left out."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = lines[0].split("|")
    name_re = re.compile(rf"^treino-{re.escape(tag)}-(\d+)-(\d+)$")
    records = [dict(zip(header, line.split("|"), strict=False)) for line in lines[1:]]
    named: dict[str, tuple[int, int]] = {}  # Slurm job id -> (treino job, attempt), from the names in the answer
    for record in records:
        if m := name_re.match(record.get("JobName", "")):
            named.setdefault(record.get("JobIDRaw", ""), (int(m.group(1)), int(m.group(2))))
    out = []
    for record in records:
        slurm_id, start = record.get("JobIDRaw", ""), _sacct_time(record.get("Start", ""))
        if start is None or not slurm_id.isdigit() or not record.get("AllocTRES"):
            continue
        m = name_re.match(record.get("JobName", ""))
        owner: tuple[int, int] | None = (int(m.group(1)), int(m.group(2))) if m else None
        if owner is None and record.get("JobName") == SLURMDBD_NO_NAME:
            mine = (known or {}).get(int(slurm_id))
            owner = named.get(slurm_id) or ((mine.job_id, mine.attempt) if mine and mine.holds(start) else None)
        if owner is None:
            continue
        out.append(
            SlurmUse(
                int(slurm_id),
                owner[0],
                owner[1],
                alloc_gpus(record.get("AllocTRES", "")),
                start,
                _sacct_time(record.get("End", "")),
            )
        )
    return out


def known_slurm_attempts(s: Session, since: float, until: float, now: float) -> dict[int, KnownAttempt]:
    """The server's attempts in [since, until] that name their Slurm job id (`Attempt.handle["slurm_job_id"]`)."""
    known = {}
    for job_id, number, handle, started, ended in s.execute(
        select(Attempt.job_id, Attempt.number, Attempt.handle, Attempt.started_at, Attempt.ended_at).where(
            overlaps(since, until, now)
        )
    ):
        slurm_id = (handle or {}).get("slurm_job_id")
        if isinstance(slurm_id, int) or (isinstance(slurm_id, str) and slurm_id.isdigit()):
            known[int(slurm_id)] = KnownAttempt(job_id, number, started, ended)
    return known


def sacct_argv(since: float, until: float) -> list[str]:
    """sacct's arguments for [since, until]: its bounds in UTC, so run it with SACCT_ENV (`run_sacct`)."""
    fmt = "%Y-%m-%dT%H:%M:%S"
    return [
        "sacct",
        "--allusers",
        "--allocations",
        "--duplicates",
        "--parsable2",
        f"--starttime={dt.datetime.fromtimestamp(since, dt.UTC).strftime(fmt)}",
        f"--endtime={dt.datetime.fromtimestamp(until, dt.UTC).strftime(fmt)}",
        f"--format={','.join(SACCT_FIELDS)}",
    ]


def run_sacct(argv: Sequence[str]) -> str:
    """`sacct_argv`'s command through treino.server.slurm.run, with SACCT_ENV."""
    from treino.server.slurm import run

    return run(argv, SACCT_TIMEOUT_S, env=SACCT_ENV)


def slurm_usage_rows(
    s: Session, uses: Sequence[SlurmUse], since: float, until: float, by: By, owner: str | None, now: float
) -> list[UsageRow]:
    """`uses` (Slurm's accounting) grouped like `usage_rows`, each treino job's owner and purpose from its row."""
    ids = sorted({u.job_id for u in uses})
    purpose = func.coalesce(Job.spec["purpose"].as_string(), NO_PURPOSE)
    jobs = {row[0]: row for row in s.execute(select(Job.id, Job.name, Job.owner, purpose).where(Job.id.in_(ids)))}
    grouped: dict[str, UsageRow] = {}
    counted: dict[str, set[int]] = {}  # key -> the treino jobs in its row
    for u in uses:
        if u.job_id not in jobs or (owner is not None and jobs[u.job_id][2] != owner):
            continue
        _, name, user, why = jobs[u.job_id]
        end = u.end if u.end is not None else now
        if not (u.start < until and end > since):  # only pending in the window, or ran outside it
            continue
        seconds = max(0.0, min(end, until) - max(u.start, since))
        key = {"user": user, "purpose": why, "job": str(u.job_id)}[by]
        row = grouped.get(key) or UsageRow(
            key,
            user if by != "purpose" else None,
            why if by != "user" else None,
            u.job_id if by == "job" else None,
            name if by == "job" else None,
            0,
            0.0,
        )
        counted.setdefault(key, set()).add(u.job_id)
        hours = row.gpu_hours + u.gpus * seconds / SECONDS_PER_HOUR
        grouped[key] = dataclasses.replace(row, jobs=len(counted[key]), gpu_hours=hours)
    return sorted(grouped.values(), key=lambda r: (-r.gpu_hours, r.key))


SacctRunner = Callable[[Sequence[str]], str]


def report(
    s: Session,
    since: float,
    until: float,
    by: By,
    owner: str | None = None,
    slurm_tag: str | None = None,
    sacct: SacctRunner | None = None,
    now: float | None = None,
) -> UsageReport:
    """The usage report: from Slurm's accounting when `slurm_tag` (the server runs on Slurm) and `sacct` answers,
    else from the server's records; `source_note` says which, and why."""
    now = time.time() if now is None else now
    until = min(until, now)
    if slurm_tag is not None and sacct is not None:
        from treino.server.backend import BackendUnavailable
        from treino.server.slurm import SlurmError

        try:
            answer = sacct(sacct_argv(since, until))
            if not answer.startswith(SACCT_FIELDS[0] + "|"):  # --parsable2 always prints its header line first
                raise SlurmError(Msg("sacct printed no table of jobs: {answer!r}", answer=answer.strip()[:200]))
            # the server's own record of its Slurm ids is read only when a run lost its name (rare)
            nameless = f"|{SLURMDBD_NO_NAME}|" in answer
            uses = parse_sacct(answer, slurm_tag, known_slurm_attempts(s, since, until, now) if nameless else None)
        except (SlurmError, BackendUnavailable, OSError) as exc:  # no accounting storage, slurmdbd down, ...
            note = f"the server's records: Slurm's accounting did not answer ({str(exc).strip()[:200]})"
        else:
            rows = slurm_usage_rows(s, uses, since, until, by, owner, now)
            return UsageReport(
                since, until, by, tuple(rows), "slurm", N_("Slurm's accounting (sacct: AllocTRES x time)")
            )
    else:
        note = N_("the server's records (attempts' start and end x GPUs held)")  # translated by value
    return UsageReport(since, until, by, tuple(usage_rows(s, since, until, by, owner, now)), "treino", note)
