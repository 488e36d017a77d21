"""Cluster mode on a real single-node Slurm with 2 fake GPUs (character devices, so slurmd sets
CUDA_VISIBLE_DEVICES): jobs placed by Slurm, a third one waiting, cancel, the example DDP job, a server SIGKILL,
residency by partition, and the refusals a user meets first."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import yaml

from tests.cluster.conftest import Cluster, api, job, logs, wait_final, wait_for
from tests.server.conftest import ServerProcess, Servers, clean_env, free_port
from tests.server.people import DATA, ROOT, churn_job, people_and_clientes

SP1 = ["--backend", "slurm", "--partition", "gpu-sp1=eveo-sp1"]


def slurm_server(servers: Servers, *extra: str, **kw: Any) -> ServerProcess:
    # --job-user is the local backend's: Slurm runs jobs as the submitting user
    return servers.start(extra_args=[*(extra or SP1)], job_user=None, **kw)


def sleeper(name: str, marker: str, seconds: int = 120) -> dict[str, Any]:
    code = (
        f"import os,time; print('CVD=' + os.environ['CUDA_VISIBLE_DEVICES'], {marker!r}, flush=True); "
        f"time.sleep({seconds})"
    )
    return {"name": name, "command": [sys.executable, "-c", code], "gpus": 1, "grace_seconds": 2}


def running_on_slurm(server: ServerProcess, job_id: int) -> bool:
    j = job(server, job_id)
    where = j["history"][-1]["placement"] if j["history"] else {}
    return j["state"] == "running" and where.get("placement", {}).get("state") == "running"


def test_two_one_gpu_jobs_share_the_node_a_third_waits_and_cancel_leaves_nothing(
    slurm_single: Cluster, servers: Servers
) -> None:
    server = slurm_server(servers)
    marker = f"treino-test-{uuid.uuid4().hex}"
    ids = []
    for i in range(3):
        r = api(server, "POST", "/api/v1/jobs", json=sleeper(f"s{i}", marker))
        assert r.status_code == 201, r.text
        ids.append(r.json()["id"])
    wait_for("two jobs running on Slurm", lambda: all(running_on_slurm(server, i) for i in ids[:2]), server=server)
    seen = wait_for(
        "both jobs' CUDA_VISIBLE_DEVICES",
        lambda: (
            (cvd := sorted(line.split()[1] for i in ids[:2] for line in logs(server, i).splitlines() if "CVD=" in line))
            and len(cvd) == 2
            and cvd
        ),
        server=server,
    )
    assert seen == ["CVD=0", "CVD=1"]  # Slurm gave each its own GPU of the two
    assert job(server, ids[2])["state"] == "queued"  # no GPU left: it waits in treino's queue
    placement = job(server, ids[0])["history"][0]["placement"]
    assert placement["partition"] == "gpu-sp1" and placement["slurm_job_id"] > 0
    assert slurm_single.slurm("squeue", "-h", "-o", "%j").count("treino-") == 2
    node = slurm_single.info["nodes"][0]["name"]
    state = wait_for(  # the inventory is re-read from Slurm every few seconds: the node shows its two jobs
        "the node busy in /metrics",
        lambda: (
            (
                m := re.search(
                    rf'treino_node_gpus{{node="{node}",partitions="gpu-sp1",state="(\w+)"}} 2.0',
                    api(server, "GET", "/metrics").text,
                )
            )
            and m.group(1) in ("mixed", "allocated")
            and m.group(1)
        ),
        timeout_s=30,
    )
    metrics = api(server, "GET", "/metrics").text
    assert f'treino_node_usable{{node="{node}"}} 1.0' in metrics and "treino_devices_busy 2.0" in metrics
    with httpx.Client(base_url=server.url) as browser:  # the dashboard, logged in with the token
        assert browser.post("/login", data={"token": server.token}).status_code in (200, 303)
        overview = browser.get("/").text
        assert f"<td>{node}</td><td>127.0.0.1</td><td>{state}</td><td>2</td><td>gpu-sp1</td>" in overview
        assert f"GPU 0 · GPU · {node}" in overview
        page = browser.get(f"/jobs/{ids[0]}").text
        assert f"<td>{node} · Slurm job {placement['slurm_job_id']} · gpu-sp1</td>" in page
    for i in ids:
        assert api(server, "POST", f"/api/v1/jobs/{i}/cancel").status_code == 200
    for i in ids:
        assert wait_final(server, i)["state"] == "cancelled"
    wait_for("no process of the jobs left", lambda: not _processes_with(marker), timeout_s=30)
    assert "treino-" not in slurm_single.slurm("squeue", "-h", "-o", "%j")


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if marker.encode() in Path(f"/proc/{entry}/cmdline").read_bytes():
                    found.append(int(entry))
            except OSError:
                continue
    return found


def test_the_example_ddp_job_completes_with_its_checkpoints(slurm_single: Cluster, servers: Servers) -> None:
    server = slurm_server(servers)
    spec = yaml.safe_load((ROOT / "examples" / "job.yaml").read_text())
    spec.update(workdir=str(ROOT / "examples"), args=["--steps", "40", "--save-every", "20"])
    r = api(server, "POST", "/api/v1/jobs", json=spec)
    assert r.status_code == 201, r.text
    final = wait_final(server, r.json()["id"])
    text = logs(server, final["id"])
    assert final["state"] == "succeeded", text
    assert final["attempts"] == 1 and [c["step"] for c in final["checkpoints"]][-1] == 40
    assert "start step=1 world_size=2" in text, text


def test_a_server_killed_during_a_slurm_job_adopts_it_on_restart(slurm_single: Cluster, servers: Servers) -> None:
    server = slurm_server(servers)
    go = server.data_dir.parent / "go"  # the job ends only once the test says so: after the restart
    code = (
        f"import os,time\nwhile not os.path.exists({str(go)!r}): time.sleep(0.1)\n"
        "print('finished after the restart', flush=True)"
    )
    r = api(server, "POST", "/api/v1/jobs", json={"name": "adopt", "command": [sys.executable, "-c", code]})
    job_id = r.json()["id"]
    wait_for("the job running on Slurm", lambda: running_on_slurm(server, job_id), server=server)
    assert server.stop(signal.SIGKILL) == -signal.SIGKILL
    again = slurm_server(servers, data_dir=server.data_dir, port=server.port)
    assert "1 job(s) adopted" in again.log()
    assert job(again, job_id)["state"] == "running"
    go.touch()
    final = wait_final(again, job_id)
    assert final["state"] == "succeeded" and final["attempts"] == 1, final
    assert "finished after the restart" in logs(again, job_id)


def test_residency_by_partition_br_data_refused_in_miami_admitted_in_sp1(
    slurm_single: Cluster, servers: Servers
) -> None:
    both = [
        "--backend",
        "slurm",
        "--partition",
        "gpu-mia=eveo-fl1",
        "--partition",
        "gpu-sp1=eveo-sp1",
        "--import-root",
        str(DATA),
    ]
    server = slurm_server(servers, *both)
    tokens = people_and_clientes(server.url, server.token)
    r = api(server, "POST", "/api/v1/jobs", token=tokens["eng1"], json=churn_job(steps=20))
    assert r.status_code == 201, r.text
    final = wait_final(server, r.json()["id"])
    assert final["state"] == "succeeded", logs(server, final["id"])
    assert final["history"][0]["placement"]["partition"] == "gpu-sp1"  # kept out of the Miami partition
    audit = api(server, "GET", "/api/v1/audit/export").text
    records = [json.loads(line) for line in audit.splitlines() if line.strip()]
    admit = next(r for r in records if r["action"] == "job.admit")
    assert admit["detail"]["partitions"] == {"gpu-sp1": "eveo-sp1"}
    start = next(r for r in records if r["action"] == "job.start")
    slurm_id = final["history"][0]["placement"]["slurm_job_id"]
    assert start["detail"]["slurm_job_id"] == slurm_id and start["detail"]["nodes"] == [
        slurm_single.info["nodes"][0]["name"]
    ]
    assert any(r["action"] == "dataset.read" and r["detail"]["site"] == "eveo-sp1" for r in records)

    miami = slurm_server(servers, "--backend", "slurm", "--partition", "gpu-mia=eveo-fl1", "--import-root", str(DATA))
    tokens = people_and_clientes(miami.url, miami.token)
    r = api(miami, "POST", "/api/v1/jobs", token=tokens["eng1"], json=churn_job())
    assert r.status_code == 403, r.text
    detail = r.json()["detail"]
    assert detail["rule"] == "residency" and "Art. 33" in detail["message"] and "eveo-fl1" in detail["message"]


def test_more_nodes_or_gpus_than_the_cluster_has_are_refused_with_the_fix(
    slurm_single: Cluster, servers: Servers
) -> None:
    server = slurm_server(servers)
    base = {"name": "big", "command": ["true"]}
    r = api(server, "POST", "/api/v1/jobs", json={**base, "nodes": 2})
    assert r.status_code == 422 and "nodes <= 1" in r.text, r.text
    r = api(server, "POST", "/api/v1/jobs", json={**base, "gpus": 3})
    assert r.status_code == 422 and "gpus <= 2" in r.text, r.text
    assert api(server, "GET", "/api/v1/jobs").json()["jobs"] == []  # nothing queued


def run_server(args: list[str], env: dict[str, str], timeout_s: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "treino", "server", *args], capture_output=True, text=True, env=env, timeout=timeout_s
    )


def test_start_up_refusals_are_one_line_with_the_fix(slurm_single: Cluster, tmp_path: Path) -> None:
    env = clean_env(COLUMNS="200")
    base = ["--data-dir", str(tmp_path / "d"), "--port", str(free_port()), "--backend", "slurm"]
    out = run_server([*base, "--partition", "gpu-sp"], env)
    assert out.returncode == 2 and "Unknown Slurm partition 'gpu-sp'. Did you mean 'gpu-sp1'" in out.stderr
    assert "Traceback" not in out.stderr

    no_conf = {k: v for k, v in env.items() if k != "SLURM_CONF"}
    out = run_server(base, no_conf)
    assert out.returncode == 1 and "SLURM_CONF is not set" in out.stderr and "To fix" in out.stderr

    # A slurm.conf whose controller is not running (another port): slurmctld cannot be reached.
    conf = Path(slurm_single.conf).read_text()
    dead = tmp_path / "dead" / "slurm.conf"
    dead.parent.mkdir()
    dead.write_text(
        "\n".join("SlurmctldPort=16999" if line.startswith("SlurmctldPort=") else line for line in conf.splitlines())
    )
    out = run_server(base, {**env, "SLURM_CONF": str(dead)})
    assert out.returncode == 1 and "slurmctld cannot be reached" in out.stderr, out.stderr


def test_a_data_dir_the_nodes_do_not_see_is_refused_at_start(slurm_single: Cluster, tmp_path: Path) -> None:
    # The server sees its data dir on a tmpfs mounted in its own mount namespace only; slurmd (and so every job)
    # sees the empty folder beneath: exactly a data dir that is not on a shared filesystem.
    data = tmp_path / "private"
    data.mkdir()
    argv = [sys.executable, "-m", "treino", "server", "--data-dir", str(data), "--port", str(free_port())]
    inner = f"mount -t tmpfs none {data} && exec {' '.join(argv)} --backend slurm --partition gpu-sp1"
    out = subprocess.run(
        ["unshare", "--mount", "--propagation", "private", "sh", "-c", inner],
        capture_output=True,
        text=True,
        env=clean_env(COLUMNS="200"),
        timeout=120,
    )
    assert out.returncode == 1, out.stderr
    assert f"{data} is not shared with the cluster's nodes" in out.stderr and "To fix" in out.stderr
    assert "Traceback" not in out.stderr


def test_slurmctld_down_loses_nothing_and_foreign_slurm_jobs_are_never_touched(
    slurm_single: Cluster, servers: Servers
) -> None:
    server = slurm_server(servers)
    foreign = slurm_single.slurm(
        "sbatch", "--parsable", "--job-name=someone-else", "--output=/dev/null", "--wrap", "sleep 300"
    ).strip()
    pid = int((slurm_single.dir / "run" / "slurmctld.pid").read_text())
    os.kill(pid, signal.SIGTERM)  # the controller goes away (state saved); the clients now fail to reach it
    wait_for("slurmctld to stop", lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), timeout_s=30)
    code = "print('ran once the controller was back', flush=True)"
    r = api(server, "POST", "/api/v1/jobs", json={"name": "waits", "command": [sys.executable, "-c", code]})
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    wait_for("a launch attempt", lambda: "will retry" in server.log(), timeout_s=60, server=server)
    back = wait_for(  # put back as it was: no attempt spent, nothing lost
        "the job back in the queue", lambda: (j := job(server, job_id))["state"] == "queued" and j, server=server
    )
    assert back["attempts"] == 0, back
    env = {**os.environ, "TREINO_LOCAL_SLURM_DIR": str(slurm_single.dir)}  # so local_slurm.py down finds it
    subprocess.run(["slurmctld"], env=env, check=True)  # without -i: it recovers its saved state
    final = wait_final(server, job_id)
    assert final["state"] == "succeeded" and final["attempts"] == 1, final
    assert "ran once the controller was back" in logs(server, job_id)
    server.stop()  # a treino shutdown and restart never touch a job treino did not start
    again = slurm_server(servers, data_dir=server.data_dir, port=server.port)
    assert api(again, "GET", "/healthz").status_code == 200
    assert slurm_single.slurm("squeue", "-h", "-j", foreign, "-o", "%T").strip() in ("RUNNING", "PENDING")
    slurm_single.slurm("scancel", foreign)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


def test_a_higher_priority_job_preempts_through_slurm_and_the_preempted_ones_requeue(
    slurm_single: Cluster, servers: Servers
) -> None:
    server = slurm_server(servers)
    marker = f"treino-test-{uuid.uuid4().hex}"
    low = [api(server, "POST", "/api/v1/jobs", json=sleeper(f"low{i}", marker)).json()["id"] for i in range(2)]
    wait_for("both low jobs on Slurm", lambda: all(running_on_slurm(server, i) for i in low), server=server)
    code = "print('high ran', flush=True)"
    r = api(
        server,
        "POST",
        "/api/v1/jobs",
        json={"name": "high", "command": [sys.executable, "-c", code], "gpus": 2, "priority": 10},
    )
    high = r.json()["id"]
    final = wait_final(server, high)
    assert final["state"] == "succeeded" and "high ran" in logs(server, high), final
    for i in low:  # SIGTERM through scancel --signal, then back in treino's queue, then run again
        j = job(server, i)
        assert j["preemptions"] == 1 and j["history"][0]["outcome"] == "preempt", j
    wait_for("the low jobs running again", lambda: all(running_on_slurm(server, i) for i in low), server=server)
    for i in low:
        api(server, "POST", f"/api/v1/jobs/{i}/cancel")
    for i in low:
        assert wait_final(server, i)["state"] == "cancelled"


def test_usage_on_slurm_says_its_source_and_counts_the_job(slurm_single: Cluster, servers: Servers) -> None:
    # This cluster keeps no accounting (AccountingStorageType=accounting_storage/none): `sacct` refuses, and usage
    # comes from the server's records, saying so. With slurmdbd it comes from sacct (test_slurm_accounting.py).
    server = slurm_server(servers, *SP1, "--gpu-hour-brl", "10")
    r = api(server, "POST", "/api/v1/jobs", json=sleeper("usage", f"treino-test-{uuid.uuid4().hex}", seconds=3))
    assert r.status_code == 201, r.text
    assert wait_final(server, r.json()["id"])["state"] == "succeeded"
    report = api(server, "GET", "/api/v1/usage", params={"since": "1d"}).json()
    assert report["source"] == "treino" and "Slurm's accounting did not answer" in report["source_note"]
    assert [row["key"] for row in report["rows"]] == ["admin"] and 0 < report["rows"][0]["gpu_hours"] < 0.1
    assert report["cost_brl"] == report["gpu_hours"] * 10


def launch_in_slurm(cluster: Cluster, attempt: Path, argv: list[str], before: str = "") -> dict[str, Any]:
    """treino's launcher in a real allocation, as the server's sbatch starts it, with `before` run first in the
    batch script; returns the handle the server polls it by."""
    attempt.mkdir(parents=True)
    launch = {
        "argv": argv,
        "cwd": str(attempt),
        "env": {},
        "key": "k",
        "grace_s": 1,
        "gpus_per_node": 1,
        "script": None,
        "python": sys.executable,
        "step_start_s": 3,
    }
    (attempt / "launch.json").write_text(json.dumps(launch))
    script = attempt / "launch.sh"
    script.write_text(f"#!/bin/sh\n{before}\nexec {sys.executable} -m treino.server.slurm_launch batch {attempt}\n")
    name = f"treino-test-{attempt.name}"
    out = cluster.slurm(
        "sbatch", "--parsable", f"--job-name={name}", "--nodes=1", "--gres=gpu:1", "--partition=gpu-sp1",
        f"--output={attempt / 'output.log'}", f"--chdir={attempt}", str(script),
    )  # fmt: skip
    return {"name": name, "dir": str(attempt), "nodes": [], "slurm_job_id": int(out.strip().split(";")[0])}


def test_a_step_slurm_will_not_start_ends_the_attempt_as_a_node_fault_not_a_hang(
    slurm_single: Cluster, tmp_path: Path
) -> None:
    """Slurm 22.05 can give a requeued job a node it then refuses the job's step on (slurm_launch's docstring);
    srun would retry "Requested nodes are busy" for ever. Here an earlier step that holds every CPU of the job makes
    the step wait the same way: the launcher gives up after step_start_s, and the server's backend reads a node
    fault (submitted again, no restart spent), not the job's own failure. A step that did start and failed is the
    job's failure, as before."""
    from treino.server.db import FailureReason
    from treino.server.slurm import SlurmBackend

    backend = SlurmBackend(tag="test")
    hog = 'srun --ntasks=1 --cpus-per-task="$SLURM_CPUS_ON_NODE" sleep 30 &\nsleep 2'
    blocked = launch_in_slurm(slurm_single, tmp_path / "blocked", ["true"], before=hog)
    info = wait_for("the blocked attempt to end", lambda: backend.poll(blocked))
    exit_record = json.loads((tmp_path / "blocked" / "exit.json").read_text())
    log = (tmp_path / "blocked" / "output.log").read_text()
    assert exit_record["step_started"] is False and exit_record["returncode"] != 0, log
    assert "Unable to create step" in log, log  # srun's own words, after --immediate=3
    assert info.reason == FailureReason.NODE_FAULT and info.returncode is None, info
    assert "did not start its step on them within 3 s" in info.detail

    failed = launch_in_slurm(slurm_single, tmp_path / "failed", ["sh", "-c", "exit 3"])
    info = wait_for("the failed attempt to end", lambda: backend.poll(failed))
    exit_record = json.loads((tmp_path / "failed" / "exit.json").read_text())
    assert "step_started" not in exit_record and exit_record["returncode"] == 3, exit_record
    assert info.returncode == 3 and info.reason is None, info
