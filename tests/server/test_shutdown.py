"""A stop signal shuts the server down cleanly: SIGTERM (systemd, docker, `kill`) as well as SIGINT (Ctrl-C).

Clean means: the process exits 0 after its shutdown code ran, the audit chain's head is signed by a checkpoint
(records after the last checkpoint are not protected against a cut tail), and running jobs are left to their
supervisors, so the next start adopts them instead of restarting them.
"""

from __future__ import annotations

import signal
import sys

import pytest
from sqlalchemy import create_engine, func, select

from tests.server.conftest import ServerProcess, StartServer
from tests.server.test_jobs import Server, final, job_pids
from treino.govern.models import AuditCheckpoint, AuditRecord


def audit_head(process: ServerProcess) -> tuple[int, int]:
    """(seq of the last audit record, seq the newest checkpoint signs), read from the database itself."""
    engine = create_engine(process.database_url)
    try:
        with engine.connect() as c:
            head = c.scalar(select(func.max(AuditRecord.seq))) or 0
            signed = c.scalar(select(AuditCheckpoint.seq).order_by(AuditCheckpoint.id.desc()).limit(1)) or 0
    finally:
        engine.dispose()
    return int(head), int(signed)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["SIGTERM", "SIGINT"])
def test_a_stop_signal_signs_the_audit_head_and_leaves_jobs_for_adoption(
    start_server: StartServer, sig: signal.Signals
) -> None:
    first = Server(start_server())
    job_id = first.submit({"name": "long", "command": [sys.executable, "-c", "import time; time.sleep(30)"]})
    first.wait(job_id, lambda j: j["state"] == "running")
    head_before, _ = audit_head(first.process)
    assert head_before > 0  # the admin token's creation and the job's admission are recorded

    assert first.process.stop(sig) == 0, first.process.log()
    log = first.process.log()
    assert f"Stopped by {sig.name}" in log, log
    assert "Traceback" not in log, log
    head, signed = audit_head(first.process)
    assert signed == head >= head_before, "the shutdown's checkpoint must sign the last audit record"
    assert job_pids(first.url, job_id), "a running job outlives a clean stop"

    again = Server(start_server(data_dir=first.data_dir, port=first.port))
    job = again.job(job_id)
    assert job["state"] == "running" and job["attempts"] == 1  # adopted, not requeued
    again.api("POST", f"/api/v1/jobs/{job_id}/cancel")
    assert again.wait(job_id, final)["state"] == "cancelled"
