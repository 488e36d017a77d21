"""The pure parts of usage and quotas: the price per GPU-hour from an offer, `--since`, the scheduler's quota hold
(rule 5), and Slurm accounting's `sacct --parsable2` output read into GPU-hours, with the fallback when sacct fails.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from treino.catalog.offers import fx_rate, offer
from treino.cli.usage import quota_line
from treino.errors import SpecError, UsageError
from treino.govern.models import User
from treino.server.db import Attempt, Job, make_engine, make_sessionmaker, migrate, sqlite_url
from treino.server.inventory import Device
from treino.server.quotas import quota_block, set_quota
from treino.server.scheduler import Queued, Running, schedule
from treino.server.slurm import SlurmError
from treino.server.usage import (
    KNOWN_SLACK_S,
    SACCT_ENV,
    KnownAttempt,
    alloc_gpus,
    known_slurm_attempts,
    parse_sacct,
    parse_since,
    price_from_offer,
    report,
    sacct_argv,
    server_price,
)

NOW = dt.datetime(2026, 12, 2, 10, 0).timestamp()


def test_price_per_gpu_hour_of_a_monthly_brl_offer_and_an_hourly_usd_one() -> None:
    # R$ 26.500 a month for 2 H100s: 26500 / (2 x 730 h) = R$ 18,150684... per GPU-hour (offers.csv, 2026-11-29)
    price = price_from_offer(offer("example-eveo-pr1-2x-h100"), None)
    assert math.isclose(price.brl_per_gpu_hour, 26500 / (2 * 730))
    assert "26500 BRL/month / (2 GPU(s) x 730 h)" in price.basis and "R$ 18,15 per GPU-hour" in price.basis
    assert "price of 2026-11-29" in price.basis
    # AWS p5.48xlarge: 55.06 USD an hour for 8 H100s, at the catalog's 5.2359 BRL/USD (PTAX of 2026-02-04)
    fx = fx_rate()
    aws = price_from_offer(offer("aws-p5-48xlarge"), fx)
    assert math.isclose(aws.brl_per_gpu_hour, 55.06 / 8 * 5.2359)
    assert "at 5.2359 BRL/USD of 2026-02-04" in aws.basis
    assert server_price("", None) is None
    assert server_price("", 12.5) is not None and server_price("", 12.5).brl_per_gpu_hour == 12.5  # type: ignore[union-attr]
    with pytest.raises(UsageError, match="not both"):
        server_price("aws-p5-48xlarge", 12.5)
    with pytest.raises(SpecError):
        server_price("", 0.0)


def test_since_is_this_month_a_date_or_a_duration() -> None:
    assert parse_since(None, NOW) == dt.datetime(2026, 12, 1).timestamp()
    assert parse_since("30d", NOW) == NOW - 30 * 86400
    assert parse_since("12h", NOW) == NOW - 12 * 3600
    assert parse_since("2026-11-15", NOW) == dt.datetime(2026, 11, 15).timestamp()
    with pytest.raises(SpecError, match="neither a date nor a duration"):
        parse_since("last tuesday", NOW)
    # a window no clock can show (a 500 on the usage page once) or one that starts in the future
    for far in ("9" * 39 + "w", "1969-12-01", "2027-01-01"):
        with pytest.raises(SpecError, match="before 1970 or in the future"):
            parse_since(far, NOW)


def devices(n: int) -> list[Device]:
    return [Device(i, "gpu", "H100", 80 * 2**30, 0) for i in range(n)]


def test_a_job_a_quota_holds_waits_without_blocking_or_preempting_and_sees_the_starts_so_far() -> None:
    asked: list[tuple[int, list[int]]] = []

    def blocked(job: Queued, starting: Sequence[Queued]) -> str | None:
        asked.append((job.id, [q.id for q in starting]))
        return "quota: over" if job.id == 2 else None

    # Job 2 has the highest priority and would preempt job 9 (priority -1): held, it neither starts nor preempts,
    # and job 3 behind it takes the free device.
    running = [Running(9, -1, (0, 1), 0.0, None)]
    d = schedule(
        devices(3), [Queued(2, 5, 3, 1.0, None), Queued(3, 0, 1, 2.0, None)], running, NOW, quota_block=blocked
    )
    assert d.start == ((3, (2,)),) and d.preempt == () and d.head is None
    assert d.quota_blocked == ((2, "quota: over"),)
    assert asked == [(2, []), (3, [])]
    # Without the hold, job 2 is the head and preempts job 9.
    assert schedule(devices(3), [Queued(2, 5, 3, 1.0, None)], running, NOW).preempt == (9,)
    # The second job of a pass is asked with the first's start.
    asked.clear()
    schedule(devices(2), [Queued(3, 0, 1, 1.0, None), Queued(4, 0, 1, 2.0, None)], [], NOW, quota_block=blocked)
    assert asked == [(3, []), (4, [3])]


# `sacct --allusers --allocations --parsable2 --format=JobIDRaw,JobName,AllocTRES,Start,End,State`, as Slurm's
# sacct(1) documents --parsable2 ("|"-delimited, no trailing "|", a header line): two of this server's attempts
# (one running), another treino server's job, a user's own job and a job that never started.
SACCT = """JobIDRaw|JobName|AllocTRES|Start|End|State
101|treino-ab12cd34-7-1|billing=2,cpu=2,gres/gpu=2,mem=8G,node=1|2026-12-02T06:00:00|2026-12-02T08:00:00|COMPLETED
102|treino-ab12cd34-8-2|billing=1,cpu=1,gres/gpu:h100=1,mem=4G,node=1|2026-12-02T09:30:00|Unknown|RUNNING
103|treino-ffffffff-7-1|cpu=1,gres/gpu=4,node=1|2026-12-02T06:00:00|2026-12-02T08:00:00|COMPLETED
104|bash|cpu=1,gres/gpu=1,node=1|2026-12-02T06:00:00|2026-12-02T07:00:00|COMPLETED
105|treino-ab12cd34-9-1||Unknown|Unknown|PENDING
"""


def test_sacct_parsable2_output_to_treino_attempts() -> None:
    uses = parse_sacct(SACCT, "ab12cd34")
    assert [(u.slurm_job_id, u.job_id, u.attempt, u.gpus) for u in uses] == [(101, 7, 1, 2), (102, 8, 2, 1)]
    assert uses[0].start == dt.datetime(2026, 12, 2, 6).timestamp() and uses[1].end is None
    assert alloc_gpus("cpu=4,gres/gpu=2,gres/gpu:a100=2,node=1") == 2  # the untyped total, not twice
    assert alloc_gpus("cpu=4,gres/gpu:a100=2,gres/gpu:l4=1") == 3
    assert alloc_gpus("cpu=4,node=1") == 0
    assert parse_sacct("", "ab12cd34") == []


# What a real Slurm 22.05 with slurmdbd printed (scripts/local_slurm.py up --accounting) for sacct_argv's command,
# run with SACCT_ENV (Start/End as Unix seconds): job 1 ran 2 s on 2 GPUs; job 2 ran 7 s on 1 GPU, was requeued
# (`scontrol requeue`, --duplicates: one record per run) and ran 30 s more; job 3 was cancelled while pending (Start =
# End = the cancel time, no AllocTRES).
REAL_SACCT = """JobIDRaw|JobName|AllocTRES|Start|End|State
1|treino-abc-1-1|billing=1,cpu=1,gres/gpu=2,node=1|1796194942|1796194944|COMPLETED
2|treino-abc-2-1|billing=1,cpu=1,gres/gpu=1,node=1|1796194945|1796194952|REQUEUED
3|treino-abc-3-1||1796194952|1796194952|CANCELLED by 0
2|treino-abc-2-1|billing=1,cpu=1,gres/gpu=1,node=1|1796194953|1796194983|COMPLETED
"""


def test_real_sacct_output_one_record_per_run_and_a_cancelled_pending_job_left_out() -> None:
    uses = parse_sacct(REAL_SACCT, "abc")
    assert [(u.slurm_job_id, u.job_id, u.gpus, u.end - u.start) for u in uses if u.end] == [
        (1, 1, 2, 2.0),
        (2, 2, 1, 7.0),
        (2, 2, 1, 30.0),
    ]
    assert uses[0].start == 1796194942.0  # Unix seconds as printed: no time zone to guess
    argv = sacct_argv(dt.datetime(2026, 12, 2, 7, tzinfo=dt.UTC).timestamp(), 1796194990.0)
    assert "--duplicates" in argv and "--allocations" in argv
    assert "--starttime=2026-12-02T07:00:00" in argv and "--endtime=2026-12-02T07:03:10" in argv  # UTC, as TZ says
    assert SACCT_ENV == {"SLURM_TIME_FORMAT": "%s", "TZ": "UTC"}


# What a real Slurm 22.05 with slurmdbd printed once for the requeued job of tests/cluster/test_slurm_accounting.py
# (the CI run of 2026-12-02): the run after `scontrol requeue` recorded under slurmdbd's placeholder name, the first
# run under treino's. Below it, a user's own salloc (named `allocation` too) and a job never started.
NAMELESS_RUN = """JobIDRaw|JobName|AllocTRES|Start|End|State
7|treino-ef23c0d4-1-1|billing=1,cpu=1,gres/gpu=2,node=1|1796194942|1796194945|REQUEUED
7|allocation|billing=1,cpu=1,gres/gpu=2,node=1|1796194950|1796194954|COMPLETED
8|allocation|billing=1,cpu=1,gres/gpu=1,node=1|1796194950|1796194990|COMPLETED
9|allocation||Unknown|Unknown|PENDING
"""


def test_a_run_slurmdbd_recorded_without_its_name_is_counted_by_its_slurm_job_id() -> None:
    uses = parse_sacct(NAMELESS_RUN, "ef23c0d4")
    assert [(u.slurm_job_id, u.job_id, u.attempt, u.gpus, u.end - u.start) for u in uses if u.end] == [
        (7, 1, 1, 2, 3.0),
        (7, 1, 1, 2, 4.0),
    ]
    # No record of the answer names job 8: the server's own record of the Slurm job ids it launched decides, and
    # only for a run that started within that attempt's lifetime (a Slurm id alone is reused after a cold start).
    started = 1796194950.0
    ours = {8: KnownAttempt(job_id=3, attempt=2, started_at=started - 5, ended_at=started + 45)}
    assert [(u.slurm_job_id, u.job_id, u.attempt) for u in parse_sacct(NAMELESS_RUN, "ef23c0d4", ours)][-1] == (8, 3, 2)
    for stale in (
        KnownAttempt(3, 2, started - 2 * KNOWN_SLACK_S - 86400, started - 86400),  # ended a day before
        KnownAttempt(3, 2, started + KNOWN_SLACK_S + 1, None),  # began after the run started
    ):
        assert [u.slurm_job_id for u in parse_sacct(NAMELESS_RUN, "ef23c0d4", {8: stale})] == [7, 7]
    # Another server's name, or a user's own name, is never taken for treino's by the id alone
    renamed = NAMELESS_RUN.replace("8|allocation|", "8|treino-ffffffff-3-2|").replace("7|allocation|", "7|bash|")
    assert [u.slurm_job_id for u in parse_sacct(renamed, "ef23c0d4", ours)] == [7]


def test_usage_from_slurm_accounting_and_the_fallback_to_the_servers_records(tmp_path: Path) -> None:
    engine = make_engine(sqlite_url(tmp_path))
    migrate(engine)
    sessions = make_sessionmaker(engine)
    with sessions.begin() as s:
        for job_id, owner in ((7, "ana"), (8, "bia")):
            s.add(Job(id=job_id, name=f"j{job_id}", spec={"purpose": "p"}, owner=owner, gpus=1, job_token_hash="-"))
        s.flush()
        # The server's own record of job 7: 1 GPU for 1 h (Slurm's says 2 GPUs for 2 h)
        s.add(Attempt(job_id=7, number=1, devices=[0], handle={}, started_at=NOW - 4 * 3600, ended_at=NOW - 3 * 3600))
    since = dt.datetime(2026, 12, 2).timestamp()
    with sessions() as s:
        slurm = report(s, since, NOW, "user", slurm_tag="ab12cd34", sacct=lambda argv: SACCT, now=NOW)
        assert slurm.source == "slurm"
        hours = {r.key: r.gpu_hours for r in slurm.rows}
        assert hours == {"ana": 4.0, "bia": 0.5}  # 2 GPUs x 2 h; 1 GPU x 30 min up to now
        assert report(s, since, NOW, "user", "bia", "ab12cd34", lambda argv: SACCT, NOW).rows[0].key == "bia"
        # sacct -S/-E also lists jobs that only waited in the window: bia's job starts after 09:00, not in it
        nine = dt.datetime(2026, 12, 2, 9).timestamp()
        early = report(s, since, nine, "user", None, "ab12cd34", lambda argv: SACCT, NOW)
        assert [(r.key, r.jobs) for r in early.rows] == [("ana", 1)]

        # A run slurmdbd recorded as `allocation`: counted by the Slurm job id the server's attempt recorded
        s.add(
            Attempt(job_id=8, number=2, devices=[0], handle={"slurm_job_id": 106}, started_at=NOW - 1800, ended_at=None)
        )
        s.add(
            Attempt(
                job_id=8,
                number=1,
                devices=[0],
                handle={"slurm_job_id": "107"},
                started_at=NOW - 30 * 3600,
                ended_at=NOW - 29 * 3600,
            )
        )
        s.flush()
        assert known_slurm_attempts(s, since, NOW, NOW) == {106: KnownAttempt(8, 2, NOW - 1800, None)}  # 107: before
        nameless = SACCT + "106|allocation|cpu=1,gres/gpu=4,node=1|2026-12-02T09:40:00|2026-12-02T09:50:00|COMPLETED\n"
        with_it = report(s, since, NOW, "user", slurm_tag="ab12cd34", sacct=lambda argv: nameless, now=NOW)
        assert {r.key: r.gpu_hours for r in with_it.rows} == pytest.approx({"ana": 4.0, "bia": 0.5 + 4 * 10 / 60})
        s.rollback()

        def no_accounting(argv: Sequence[str]) -> str:
            assert argv[0] == "sacct" and "--parsable2" in argv
            raise SlurmError("sacct: error: Slurm accounting storage is disabled")

        fallback = report(s, since, NOW, "user", slurm_tag="ab12cd34", sacct=no_accounting, now=NOW)
        assert fallback.source == "treino" and "accounting storage is disabled" in fallback.source_note
        assert [(r.key, r.gpu_hours) for r in fallback.rows] == [("ana", 1.0)]
    engine.dispose()


def test_quota_block_a_users_own_quota_wins_over_their_roles(tmp_path: Path) -> None:
    engine = make_engine(sqlite_url(tmp_path))
    migrate(engine)
    sessions = make_sessionmaker(engine)
    with sessions.begin() as s:
        s.add(User(name="ana", role="engineer"))
        running = Job(name="r", spec={}, owner="ana", gpus=1, state="running", job_token_hash="-")
        queued = Job(name="q", spec={"nodes": 1}, owner="ana", gpus=1, job_token_hash="-")
        s.add_all([running, queued])
        s.flush()
        s.add(Attempt(job_id=running.id, number=1, devices=[0], handle={}, started_at=NOW - 2 * 3600))
        set_quota(s, "role", "engineer", None, 1, "admin")
    with sessions() as s:
        job = s.get(Job, queued.id)
        assert job is not None
        why = quota_block(s, job, now=NOW)
        assert why is not None and why.startswith("quota: ana's jobs hold 1 of the 1 GPU(s)")
    with sessions.begin() as s:
        set_quota(s, "user", "ana", 1.5, None, "admin")  # hers wins: no concurrent limit, 1.5 GPU-hours a month
    with sessions() as s:
        job = s.get(Job, queued.id)
        assert job is not None
        why = quota_block(s, job, now=NOW)  # the running job has used 2 GPU-hours this month
        assert why is not None and "ana's 1.5 GPU-hours of this month are spent (user ana)" in why
        assert "2.00" not in why  # anyone who lists jobs reads it: not how much ana used
        assert "resets, 2027-01-01 00:00" in why
    with sessions.begin() as s:
        set_quota(s, "user", "ana", None, None, "admin")  # removed: the role's applies again
        set_quota(s, "role", "engineer", None, 2, "admin")
    with sessions() as s:
        job = s.get(Job, queued.id)
        assert job is not None and quota_block(s, job, now=NOW) is None
        assert quota_block(s, job, starting_gpus=1, now=NOW) is not None  # one more starting in the same pass
    engine.dispose()


def test_the_cli_says_where_a_user_stands_against_their_quota() -> None:
    resets = dt.datetime(2027, 1, 1).timestamp()
    q = {"set_for": "role engineer", "gpu_hours_month": 500.0, "concurrent_gpus": 4}
    line = quota_line({**q, "used_gpu_hours_month": 3.2, "gpus_running": 1, "resets_at": resets})
    assert line == (
        "Quota (role engineer): 3.20 of 500 GPU-hours this month (resets 2027-01-01 00:00); 1 of 4 GPUs held at once."
    )
