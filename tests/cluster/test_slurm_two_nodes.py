"""Cluster mode across two Slurm nodes, each slurmd in its own network namespace with its own address and
hostname: a 2-node torchrun (gloo) through treino, and a node failure in the middle of a 2-node job."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.cluster.conftest import (
    JOB_WAIT_S,
    SCRIPT,
    Cluster,
    api,
    bring_up_allowed,
    job,
    logs,
    one_at_a_time,
    wait_final,
    wait_for,
)
from tests.server.conftest import ServerProcess, Servers
from tests.server.people import ROOT
from treino.server.slurm_launch import STEP_START_S

SAVE_EVERY = 10  # steps between checkpoints in the node-failure test


def cluster_server(cluster: Cluster, servers: Servers) -> ServerProcess:
    """A server the nodes can reach: listening on the link to the nodes' namespaces, TREINO_URL on it."""
    from tests.server.conftest import free_port

    port = free_port()
    url = f"http://{cluster.info['host_addr']}:{port}"
    return servers.start(
        extra_args=["--backend", "slurm", "--host", "0.0.0.0", "--public-url", url],
        port=port,
        job_user=None,  # --job-user is the local backend's: Slurm runs jobs as the submitting user
    )


def spec(cluster: Cluster, **extra: Any) -> dict[str, Any]:
    env = {"OMP_NUM_THREADS": "1"}
    if cluster.info.get("ifname"):
        env["GLOO_SOCKET_IFNAME"] = cluster.info["ifname"]  # the nodes' link, as on a real cluster's fabric
    return {"workdir": str(ROOT / "examples"), "nodes": 2, "gpus": 1, "env": env, **extra}


def test_names_left_by_an_abandoned_cluster_are_reclaimed_but_a_live_clusters_are_refused(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """A test run killed before `down` leaves namespaces, veths and the bridge behind with no process in them: the
    next `up` must remove them, not refuse (that refusal once failed a whole CI run). A namespace that still holds a
    process belongs to a running cluster: `up` refuses and leaves it alone. Runs before this file's cluster starts."""
    bring_up_allowed()
    tmp_path = tmp_path_factory.mktemp("reclaim")  # short: slurmd's socket paths must fit (not tmp_path, per test)
    nsenter = ["nsenter", "--net=/run/netns/treino-node2", "sleep", "300"]

    def up() -> subprocess.CompletedProcess[str]:
        argv = [sys.executable, str(SCRIPT), "up", "--dir", str(tmp_path), "--mode", "netns", "--json", "--gpus", "1"]
        return subprocess.run(argv, capture_output=True, text=True)

    def down() -> None:
        subprocess.run([sys.executable, str(SCRIPT), "down", "--dir", str(tmp_path)], capture_output=True)

    with one_at_a_time():
        subprocess.run(["ip", "netns", "add", "treino-node2"], check=False, capture_output=True)
        live = subprocess.Popen(nsenter)
        try:
            refused = up()
            assert refused.returncode != 0, refused.stdout
            assert "treino-node2" in refused.stderr and "already exist" in refused.stderr
            assert Path("/run/netns/treino-node2").exists()  # a live cluster's namespace is never touched
        finally:
            live.kill()
            live.wait()
        subprocess.run(["ip", "link", "add", "treinobr0", "type", "bridge"], check=False, capture_output=True)
        try:
            reclaimed = up()
            assert reclaimed.returncode == 0, reclaimed.stderr
            assert "left by a cluster no process runs in" in reclaimed.stderr
            assert len(json.loads(reclaimed.stdout)["nodes"]) == 2
        finally:
            down()
        assert not Path("/run/netns/treino-node2").exists()
        assert not Path("/sys/class/net/treinobr0").exists()


def test_a_two_node_torchrun_job_completes_and_both_nodes_logs_reach_treino(
    slurm_two_nodes: Cluster, servers: Servers
) -> None:
    server = cluster_server(slurm_two_nodes, servers)
    r = api(server, "POST", "/api/v1/jobs", json=spec(slurm_two_nodes, name="allreduce", script="allreduce_check.py"))
    assert r.status_code == 201, r.text
    final = wait_final(server, r.json()["id"])
    text = logs(server, final["id"])
    assert final["state"] == "succeeded", text
    lines = re.findall(r"^(\d): rank=(\d) world_size=(\d) host=(\S+) allreduce=(\S+) expected=\S+ ok$", text, re.M)
    assert sorted((rank, world, total) for _, rank, world, _, total in lines) == [("0", "2", "3"), ("1", "2", "3")], (
        text
    )
    assert sorted(task for task, *_ in lines) == ["0", "1"]  # one line from each node's task (srun --label)
    hosts = {n["name"] for n in slurm_two_nodes.info["nodes"]}
    assert {host for _, _, _, host, _ in lines} == hosts  # each rank on its own node, under its own hostname
    assert final["history"][0]["placement"]["placement"]["nodes"] == sorted(hosts)


def test_a_node_failure_requeues_and_the_job_resumes_from_its_last_checkpoint(
    slurm_two_nodes: Cluster, servers: Servers
) -> None:
    server = cluster_server(slurm_two_nodes, servers)
    args = ["--steps", "150", "--save-every", str(SAVE_EVERY), "--sleep", "0.1"]
    r = api(server, "POST", "/api/v1/jobs", json=spec(slurm_two_nodes, name="ddp2", script="ddp_train.py", args=args))
    assert r.status_code == 201, r.text
    job_id = r.json()["id"]
    wait_for("two checkpoints", lambda: (job(server, job_id)["checkpoint_step"] or 0) >= 2 * SAVE_EVERY, server=server)
    second = slurm_two_nodes.info["nodes"][1]["name"]
    slurm_two_nodes.slurm("scontrol", "update", f"nodename={second}", "state=down", "reason=treino-test")
    reached = job(server, job_id)["last_step"]
    wait_for(
        "Slurm to requeue it",
        lambda: job(server, job_id)["history"][0]["placement"].get("slurm_restarts", 0) >= 1,
        timeout_s=60,
        server=server,
    )
    # ReturnToService=2: its slurmd still answers, so the node comes back by itself and the job runs again
    final = wait_final(server, job_id, timeout_s=2 * JOB_WAIT_S)
    text = logs(server, job_id)
    assert final["state"] == "succeeded", text
    first = final["history"][0]
    if final["attempts"] == 2:
        # The node's earlier step outlived the 20-s hold (a loaded machine): Slurm took the node from the new run,
        # srun gave up after STEP_START_S, and treino submitted the attempt again as a new Slurm job, for free.
        assert first["outcome"] == "node_fault" and final["restarts"] == 0, final
        assert f"did not start its step on them within {STEP_START_S} s" in server.log(), server.log()
    else:
        assert final["attempts"] == 1  # Slurm's requeue, not a treino restart: one attempt, the same job token
    resumed = [int(s) for s in re.findall(r"resumed from step=(\d+)", text)]
    assert len(resumed) == 1, text
    assert reached - resumed[0] <= SAVE_EVERY + 5  # at most one checkpoint interval lost (+ steps in flight)
    assert "done step=150" in text


def test_a_node_whose_slurmd_dies_for_good_sends_its_job_to_the_other_node(
    slurm_two_nodes: Cluster, servers: Servers
) -> None:
    server = cluster_server(slurm_two_nodes, servers)
    first, second = (n["name"] for n in slurm_two_nodes.info["nodes"])
    go = server.data_dir.parent / "go"
    code = (
        f"import os,socket,time\nprint('on', socket.gethostname(), flush=True)\n"
        f"while not os.path.exists({str(go)!r}): time.sleep(0.1)\n"
    )
    # Fill the first node so the job lands on the second; then free the first and crash the second.
    blocker = api(server, "POST", "/api/v1/jobs", json={"name": "blocker", "command": ["sleep", "600"]}).json()["id"]
    wait_for("the blocker on Slurm", lambda: job(server, blocker)["state"] == "running", server=server)
    r = api(server, "POST", "/api/v1/jobs", json={"name": "moved", "command": ["python3", "-c", code]})
    job_id = r.json()["id"]
    wait_for("the job on the second node", lambda: f"on {second}" in logs(server, job_id), server=server)
    api(server, "POST", f"/api/v1/jobs/{blocker}/cancel")
    slurm_two_nodes.script("node-stop", second)  # slurmd and the job's processes killed, as a crash would
    try:
        wait_for(
            "the job running again on the first node",
            lambda: f"on {first}" in logs(server, job_id, attempt=2) if job(server, job_id)["attempts"] == 2 else False,
            timeout_s=240,
            server=server,
        )
        go.touch()
        final = wait_final(server, job_id)
        assert final["state"] == "succeeded", final
        first_attempt = final["history"][0]
        assert first_attempt["outcome"] == "node_fault" and first_attempt["placement"]["slurm_restarts"] >= 1
        assert f"its nodes ({second}) stayed unusable for 60 s" in server.log() and final["restarts"] == 0
    finally:
        slurm_two_nodes.script("node-restart", second)
