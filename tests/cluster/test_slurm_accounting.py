"""Usage from Slurm's own accounting on a real cluster that keeps it (slurmdbd on a private MariaDB, brought up by
scripts/local_slurm.py --accounting): a treino job on the fake-GPU node, requeued by Slurm once, counted by
`GET /api/v1/usage` and `treino usage --json` exactly as `sacct` records it (gres/gpu x the time of each run).

The server runs in America/Sao_Paulo (UTC-3) while Slurm's daemons run in the machine's zone: a sacct time read in
the wrong zone moves a run three hours away, out of the window asked for.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from datetime import datetime
from typing import Any

import pytest

from tests.cluster.conftest import Cluster, api, job, logs, wait_final, wait_for
from tests.server.conftest import ServerProcess, Servers, clean_env
from treino.server.slurm import REQUEUE_SETTLE_S
from treino.server.usage import SLURMDBD_NO_NAME

SP1 = ["--backend", "slurm", "--partition", "gpu-sp1=eveo-sp1"]
FIRST_RUN_S = 2  # the job runs at least this long before the test requeues it
SECOND_RUN_S = 3


def on_slurm(server: ServerProcess, job_id: int) -> dict[str, Any] | None:
    j = job(server, job_id)
    where = j["history"][-1]["placement"] if j["history"] else {}
    return where if j["state"] == "running" and where.get("placement", {}).get("state") == "running" else None


def sacct_runs(cluster: Cluster, slurm_id: str) -> list[dict[str, str]]:
    """Every run of a Slurm job as sacct records it (one record per run with --duplicates)."""
    fields = ["JobName", "AllocTRES", "ElapsedRaw", "State", "Start", "End"]
    out = cluster.slurm(
        "sacct", "--allusers", "--allocations", "--duplicates", "--parsable2", "--noheader",
        f"--jobs={slurm_id}", f"--format={','.join(fields)}",
    )  # fmt: skip
    return [dict(zip(fields, line.split("|"), strict=True)) for line in out.splitlines() if line.strip()]


def gpus_of(tres: str) -> int:
    return int(dict(item.split("=", 1) for item in tres.split(","))["gres/gpu"])


def test_usage_comes_from_sacct_one_record_per_run_of_a_requeued_job(
    slurm_accounting: Cluster, servers: Servers, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert slurm_accounting.info["accounting"]
    # Someone else's job on the cluster: in sacct's answer, never in treino's usage.
    slurm_accounting.slurm(
        "sbatch", "--parsable", "--job-name=someone-else", "--gres=gpu:1", "--output=/dev/null", "--wrap", "sleep 1"
    )
    monkeypatch.setenv("TZ", "America/Sao_Paulo")  # the server (and the CLI) in UTC-3
    server = servers.start(extra_args=[*SP1, "--gpu-hour-brl", "10"], job_user=None)
    ran = server.data_dir.parent / "ran"  # the first run leaves it; the run after the requeue ends soon
    code = (
        f"import os,time; first = not os.path.exists({str(ran)!r}); open({str(ran)!r}, 'a').close(); "
        f"print('run', 'first' if first else 'again', flush=True); time.sleep(300 if first else {SECOND_RUN_S})"
    )
    spec = {"name": "acct", "command": [sys.executable, "-c", code], "gpus": 2, "grace_seconds": 2}
    r = api(server, "POST", "/api/v1/jobs", json=spec)
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    placement = wait_for("the job running on Slurm", lambda: on_slurm(server, job_id), server=server)
    wait_for("its first run", ran.exists, server=server)
    time.sleep(FIRST_RUN_S)
    slurm_id = str(placement["slurm_job_id"])
    slurm_accounting.slurm("scontrol", "requeue", slurm_id)  # as after a node failure: the same Slurm job again
    final = wait_final(server, job_id)
    assert final["state"] == "succeeded" and final["attempts"] == 1, logs(server, job_id)
    assert "run again" in logs(server, job_id)

    runs = sacct_runs(slurm_accounting, slurm_id)
    assert [r["State"] for r in runs] == ["REQUEUED", "COMPLETED"], runs
    # Slurm holds a requeued job 120 s; treino releases its own after REQUEUE_SETTLE_S (sacct's whole seconds)
    held = (datetime.fromisoformat(runs[1]["Start"]) - datetime.fromisoformat(runs[0]["End"])).total_seconds()
    assert REQUEUE_SETTLE_S - 1 <= held < 120, runs
    assert "its BeginTime hold released" in server.log()
    # Each run under treino's name, or under slurmdbd's placeholder for a start message without one (seen once
    # for the run after the requeue): treino counts it by its Slurm job id (treino.server.usage.parse_sacct).
    names = {r["JobName"] for r in runs} - {SLURMDBD_NO_NAME}
    assert len(names) == 1 and names.pop().endswith(f"-{job_id}-1"), runs
    gpu_seconds = sum(gpus_of(r["AllocTRES"]) * int(r["ElapsedRaw"]) for r in runs)
    assert gpus_of(runs[0]["AllocTRES"]) == 2 and int(runs[0]["ElapsedRaw"]) >= FIRST_RUN_S
    expected = gpu_seconds / 3600
    tolerance = 2 * 0.5 / 3600  # sacct's Start, End and ElapsedRaw are whole seconds: the same seconds

    report = api(server, "GET", "/api/v1/usage", params={"since": "2h", "by": "job"}).json()
    assert report["source"] == "slurm", report["source_note"]
    assert [row["job_id"] for row in report["rows"]] == [job_id], report["rows"]
    assert math.isclose(report["rows"][0]["gpu_hours"], expected, abs_tol=tolerance), (report, runs)
    assert math.isclose(report["cost_brl"], report["gpu_hours"] * 10)

    out = subprocess.run(
        [sys.executable, "-m", "treino", "usage", "--json", "--since", "2h", "--url", server.url],
        capture_output=True,
        text=True,
        env=clean_env(TREINO_TOKEN=server.token),
        timeout=60,
    )
    assert out.returncode == 0, out.stderr
    by_user = json.loads(out.stdout)
    assert by_user["source"] == "slurm" and [row["key"] for row in by_user["rows"]] == ["admin"]
    assert math.isclose(by_user["gpu_hours"], expected, abs_tol=tolerance), (by_user, runs)
