"""The Job SDK's report journal and retry backoff, on real files: the bounds of the jittered backoff, the journal's
parsing (a torn last line is skipped), a journal reopened by a later attempt, and dataset reads retried against a
real HTTP server."""

from __future__ import annotations

import http.server
import json
import random
import threading
from pathlib import Path
from typing import Any, ClassVar

import pytest
import torch

from treino import job
from treino.errors import JobError

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


def test_a_long_outage_compacts_the_journal(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(job, "JOURNAL_COMPACT_BYTES", 4096)
    journal = job._Journal(tmp_path / job.JOURNAL_NAME, attempt=1)
    journal.add("checkpoint", [CKPT])  # never acknowledged: stays through every rewrite
    for _ in range(200):  # the server down: points keep coming, the oldest keep being dropped
        journal.add("metrics", [POINTS])
        journal.drop_oldest_metrics(1)
    size = journal.path.stat().st_size
    assert size <= 2 * 4096  # without compaction: 200 entries and 200 done lines, ~30 KB
    assert job.parse_journal(journal.path.read_text()) == journal.pending()
    assert [e.kind for e in journal.pending()] == ["checkpoint"]
    journal.close()


# --- dataset reads against a real HTTP server ----------------------------------------------------------------
class Datasets(http.server.BaseHTTPRequestHandler):
    """GET .../datasets/NAME: 503 to the first FAILURES asks, then the pinned path; 403 for "secret"."""

    FAILURES = 2
    asks: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        self.asks.append(self.path)
        if self.path.endswith("/secret"):
            status, body = 403, {"detail": {"rule": "grant", "message": "no grant"}}
        elif len(self.asks) <= self.FAILURES:
            status, body = 503, {"detail": "starting"}
        else:
            status, body = 200, {"path": "/store/names-v1.parquet"}
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


def test_dataset_reads_retry_what_may_pass_and_not_what_cannot(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Datasets.asks = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Datasets)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    monkeypatch.setenv(job.ENV_URL, f"http://127.0.0.1:{server.server_address[1]}")
    monkeypatch.setenv(job.ENV_JOB_ID, "7")
    monkeypatch.setenv(job.ENV_JOB_TOKEN, "s3cret")
    monkeypatch.setenv(job.ENV_CHECKPOINT_DIR, str(tmp_path))
    monkeypatch.delenv("RANK", raising=False)
    run = job.Run()
    try:
        assert run.dataset("names") == Path("/store/names-v1.parquet")
        assert Datasets.asks == ["/api/v1/jobs/7/datasets/names"] * 3  # two 503s retried
        with pytest.raises(JobError, match=r"refused datasets/secret \(403\): no grant"):
            run.dataset("secret")
        assert len(Datasets.asks) == 4  # a refusal is final: asked once
    finally:
        run.finish()
        server.shutdown()
        server.server_close()


# --- a dead token, then the next attempt ----------------------------------------------------------------------
class Answers(http.server.BaseHTTPRequestHandler):
    """Answers every POST with STATUS and records (path, body)."""

    STATUS = 401
    posts: ClassVar[list[tuple[str, dict[str, Any]]]] = []

    def do_POST(self) -> None:
        self.posts.append((self.path, json.loads(self.rfile.read(int(self.headers["Content-Length"])))))
        self.send_response(self.STATUS)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        pass


def _managed_env(monkeypatch: pytest.MonkeyPatch, port: int, folder: Path, attempt: int) -> None:
    monkeypatch.setenv(job.ENV_URL, f"http://127.0.0.1:{port}")
    monkeypatch.setenv(job.ENV_JOB_ID, "7")
    monkeypatch.setenv(job.ENV_JOB_TOKEN, f"token-of-attempt-{attempt}")
    monkeypatch.setenv(job.ENV_CHECKPOINT_DIR, str(folder))
    monkeypatch.setenv(job.ENV_ATTEMPT, str(attempt))
    monkeypatch.delenv("RANK", raising=False)


def test_a_refused_token_leaves_reports_to_the_next_attempt(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    Answers.posts, Answers.STATUS = [], 401
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Answers)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        _managed_env(monkeypatch, server.server_address[1], tmp_path, attempt=1)
        first = job.init()
        path = first.save({"w": torch.zeros(2)}, step=3)
        first.finish()
        assert [p for p, _ in Answers.posts] == ["/api/v1/jobs/7/checkpoints"]  # a 401 is not retried ...
        (left,) = job.parse_journal((tmp_path / job.JOURNAL_NAME).read_text())  # ... but kept
        assert left.body == {"step": 3, "path": str(path), "bytes": path.stat().st_size}

        Answers.posts, Answers.STATUS = [], 201
        _managed_env(monkeypatch, server.server_address[1], tmp_path, attempt=2)
        second = job.init()
        second.log(step=4, loss=1.0)
        second.finish()
        assert Answers.posts[0] == ("/api/v1/jobs/7/checkpoints", left.body)  # the earlier attempt's, first
        assert [p for p, _ in Answers.posts[1:]] == ["/api/v1/jobs/7/metrics"]
        assert (tmp_path / job.JOURNAL_NAME).read_text() == ""
    finally:
        server.shutdown()
        server.server_close()
