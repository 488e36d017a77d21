"""How `treino jobs` words a job's place, reason, progress and times (treino.cli.job_status), at a fixed clock."""

import pytest

from treino.cli.job_status import devices_short, progress, span, status, wait_short

NOW = 1_800_000_000.0


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (None, "-"),
        (-3, "0s"),
        (42.4, "42s"),
        (125, "2m05s"),
        (754, "12m"),
        (3 * 3600 + 5 * 60, "3h05m"),
        (2 * 86400 + 4 * 3600, "2d04h"),
    ],
)
def test_span(seconds: float | None, text: str) -> None:
    assert span(seconds) == text


def test_devices_and_progress() -> None:
    assert devices_short({"gpus": 8, "devices": list(range(8))}) == "8 [0-7]"
    assert devices_short({"gpus": 3, "devices": [5, 0, 4]}) == "3 [0,4,5]"
    assert devices_short({"gpus": 2, "devices": None}) == "2"
    assert [progress({"last_step": s, "total_steps": t}) for s, t in ((None, None), (None, 9), (3, None), (3, 9))] == [
        "-",
        "0/9",
        "3",
        "3/9",
    ]


def test_status_by_state() -> None:
    wait = {"reason": "priority", "position": 2, "blocked_by": [7], "until": None, "preempting": False, "note": None}
    assert status({"state": "queued", "wait": wait}, NOW) == "#2 priority (job 7)"
    assert status({"state": "queued", "wait": None}, NOW) == "waiting"
    held = {**wait, "reason": "resources", "position": 1, "blocked_by": [3, 4, 5, 6], "preempting": True}
    assert wait_short(held) == "#1 preempting jobs 3,4,5…"
    assert wait_short({**wait, "reason": "quota", "position": 1}) == "#1 quota"
    slurm = {"reason": "slurm", "position": None, "note": "Priority"}
    assert status({"state": "running", "wait": slurm, "started_at": NOW}, NOW) == "Slurm: Priority"
    assert status({"state": "running", "wait": None, "eta_at": NOW + 754}, NOW) == "ETA 12m"
    assert status({"state": "running", "wait": None, "eta_at": None, "started_at": NOW - 65}, NOW) == "ran 1m05s"
    assert status({"state": "failed", "duration_s": 3725.0}, NOW) == "took 1h02m"
    assert status({"state": "cancelled", "duration_s": None}, NOW) == "-"
