"""The Job SDK's report journal and retry backoff, on real files: the bounds of the jittered backoff, the journal's
parsing (a torn last line is skipped), and a journal reopened by a later attempt."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from treino import job

SAMPLES = 2000  # per failure count: enough that the jitter's spread is seen at both ends


@pytest.mark.parametrize("failures", [1, 2, 3, 5, 6, 10, 1000])
def test_backoff_is_full_jitter_within_the_doubling_bound(failures: int) -> None:
    rng = random.Random(failures)
    bound_s = min(job.REPORT_RETRY_MAX_S, job.REPORT_RETRY_BASE_S * 2 ** (failures - 1))
    waits = [job.backoff_s(failures, rng=rng) for _ in range(SAMPLES)]
    assert all(0.0 <= w <= bound_s for w in waits)
    # Full jitter spreads over the whole interval: both ends are reached (not a fixed delay, not "equal jitter").
    assert min(waits) < 0.05 * bound_s and max(waits) > 0.95 * bound_s


def test_backoff_doubles_then_stays_at_the_cap() -> None:
    assert job.REPORT_RETRY_BASE_S * 2**5 > job.REPORT_RETRY_MAX_S  # the cap is reached by the 6th failure
    rng = random.Random(0)
    top = {f: max(job.backoff_s(f, rng=rng) for _ in range(SAMPLES)) for f in (1, 2, 3)}
    assert top[1] <= job.REPORT_RETRY_BASE_S < top[2] <= 2 * job.REPORT_RETRY_BASE_S < top[3]
    assert max(job.backoff_s(40, cap_s=0.5, rng=rng) for _ in range(SAMPLES)) <= 0.5


def _line(**record: object) -> str:
    return json.dumps(record) + "\n"


CKPT = {"step": 5, "path": "/data/jobs/1/checkpoints/step-000000005.pt", "bytes": 10}
POINTS = {"points": [{"step": 1, "time": 1.5, "values": {"loss": 2.0}}]}


def test_parse_journal_keeps_entries_not_done_in_order_and_skips_a_torn_last_line() -> None:
    text = (
        _line(id="1.10.1", kind="metrics", body=POINTS)
        + _line(id="1.10.2", kind="checkpoint", body=CKPT)
        + _line(id="1.10.3", kind="metrics", body=POINTS)
        + _line(done="1.10.1")
        + _line(id="1.10.4", kind="rumours", body={})  # unknown kind: skipped
        + _line(id="1.10.5", kind="metrics", body={"points": "many"})  # malformed: skipped
        + "[1, 2]\n"
        + _line(id="1.10.6", kind="checkpoint", body=CKPT)[:30]  # torn: the writer was killed mid-line
    )
    entries = job.parse_journal(text)
    assert [(e.id, e.kind) for e in entries] == [("1.10.2", "checkpoint"), ("1.10.3", "metrics")]
    assert entries[0].body == CKPT and entries[1].points == 1
    assert job.parse_journal("") == [] and job.parse_journal(_line(done="nothing")) == []


def test_a_later_attempt_reopens_the_journal_with_only_what_is_pending(tmp_path: Path) -> None:
    path = tmp_path / job.JOURNAL_NAME
    path.write_text(
        _line(id="1.10.1", kind="checkpoint", body=CKPT)
        + _line(id="1.10.2", kind="metrics", body=POINTS)
        + _line(done="1.10.1")
        + '{"id": "1.10.3", "kind": "chec'  # torn, and no newline: the next append must not extend it
    )
    journal = job._Journal(path, attempt=2)
    assert [e.id for e in journal.pending()] == ["1.10.2"] and journal.metric_points == 1
    assert path.read_text() == _line(id="1.10.2", kind="metrics", body=POINTS)  # rewritten: pending only
    journal.add("checkpoint", [CKPT])
    (added,) = [e for e in journal.pending() if e.id != "1.10.2"]
    assert added.id.startswith("2.") and added.kind == "checkpoint"
    assert job.parse_journal(path.read_text()) == journal.pending()  # on disk as in memory, before any send
    journal.done(["1.10.2"])
    assert [e.id for e in job.parse_journal(path.read_text())] == [added.id]
    journal.done([added.id])
    assert path.read_text() == "" and journal.pending() == [] and journal.metric_points == 0
    journal.close()


def test_oldest_metrics_are_dropped_first_and_checkpoints_never(tmp_path: Path) -> None:
    journal = job._Journal(tmp_path / job.JOURNAL_NAME, attempt=1)
    journal.add("metrics", [POINTS, {"points": POINTS["points"] * 3}])
    journal.add("checkpoint", [CKPT])
    journal.add("metrics", [POINTS])
    assert journal.metric_points == 5
    assert journal.drop_oldest_metrics(2) == 4  # whole entries, oldest first, until at least 2 points are gone
    assert [(e.kind, e.points) for e in job.parse_journal(journal.path.read_text())] == [
        ("checkpoint", 0),
        ("metrics", 1),
    ]
    journal.close()


def test_an_unwritable_journal_keeps_reports_in_memory(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    missing = tmp_path / "no-such-folder" / job.JOURNAL_NAME
    journal = job._Journal(missing, attempt=1)
    journal.add("checkpoint", [CKPT])
    assert [e.body for e in journal.pending()] == [CKPT] and not missing.exists()
    assert "cannot write the report journal" in caplog.text
    journal.close()
