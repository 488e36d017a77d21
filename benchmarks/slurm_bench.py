"""Cluster mode against the issue's targets, on a real Slurm 22.05 brought up on this machine (needs root).

    python benchmarks/slurm_bench.py         (part of make bench; skipped, saying why, without root or Slurm)

1. submit -> running on Slurm, p50 over SUBMITS sequential 1-GPU jobs on a free node (target <= 2 s, Slurm's own
   scheduling included): from the server's submitted_at to the moment squeue reports the Slurm job RUNNING, seen by
   polling the job's placement every POLL_S (so the figure is at most POLL_S late).
2. A 2-node job's throughput under treino vs the same torchrun launched by a bare `sbatch` script (target >= 0.98x):
   examples/ddp_train.py, 1 gloo rank on each of two nodes in their own network namespaces; Slurm's StartTime to
   EndTime of each job (the same clock for both), best of RUNS.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
from rich.console import Console
from rich.table import Table

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "local_slurm.py"
SUBMITS = 20
THROUGHPUT_STEPS = 2000  # long enough that Slurm's 1 s StartTime/EndTime resolution is a few per cent
RUNS = 3
POLL_S = 0.05
JOB_WAIT_S = 300.0
TARGET_SUBMIT_P50_S = 2.0
TARGET_THROUGHPUT_RATIO = 0.98

console = Console()


def cluster(mode: str, where: Path, *extra: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, str(SCRIPT), "up", "--dir", str(where), "--mode", mode, "--json", *extra],
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(out.stdout))


def down(where: Path) -> None:
    subprocess.run([sys.executable, str(SCRIPT), "down", "--dir", str(where)], capture_output=True)


def slurm(conf: str, *argv: str) -> str:
    return subprocess.run(list(argv), capture_output=True, text=True, env={**os.environ, "SLURM_CONF": conf}).stdout


class Server:
    def __init__(self, data_dir: Path, conf: str, host: str = "127.0.0.1") -> None:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = int(s.getsockname()[1])
        self.url = f"http://{host}:{self.port}"
        argv = [sys.executable, "-m", "treino", "server", "--data-dir", str(data_dir), "--port", str(self.port)]
        argv += ["--backend", "slurm", "--host", "0.0.0.0", "--public-url", self.url]
        env = {k: v for k, v in os.environ.items() if not k.startswith("TREINO_")}
        env["SLURM_CONF"] = conf
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"http://127.0.0.1:{self.port}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        self.token = (data_dir / "admin-token").read_text().strip()
        self.client = httpx.Client(
            base_url=f"http://127.0.0.1:{self.port}", headers={"Authorization": f"Bearer {self.token}"}, timeout=30
        )

    def submit(self, spec: dict[str, Any]) -> int:
        r = self.client.post("/api/v1/jobs", json=spec)
        r.raise_for_status()
        return int(r.json()["id"])

    def job(self, job_id: int) -> dict[str, Any]:
        return dict(self.client.get(f"/api/v1/jobs/{job_id}").json())

    def wait(self, job_id: int) -> dict[str, Any]:
        deadline = time.monotonic() + JOB_WAIT_S
        while time.monotonic() < deadline:
            j = self.job(job_id)
            if j["state"] in ("succeeded", "failed", "cancelled"):
                return j
            time.sleep(0.5)
        raise TimeoutError(f"job {job_id} did not end in {JOB_WAIT_S:g} s")

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(20)


def submit_to_running(tmp: Path) -> list[float]:
    info = cluster("single", tmp / "single", "--gpus", "2")
    try:
        server = Server(tmp / "data-single", info["slurm_conf"])
        seconds = []
        for i in range(SUBMITS):
            job_id = server.submit({"name": f"b{i}", "command": ["sleep", "0.5"], "gpus": 1})
            submitted = server.job(job_id)["submitted_at"]
            while True:
                j = server.job(job_id)
                history = j["history"]
                state = history[-1]["placement"].get("placement", {}).get("state") if history else None
                if state == "running" or j["state"] in ("succeeded", "failed"):
                    seconds.append(time.time() - submitted)
                    break
                time.sleep(POLL_S)
            server.wait(job_id)
        server.stop()
        return seconds
    finally:
        down(tmp / "single")


def slurm_seconds(conf: str, slurm_job_id: int) -> float:
    rec = slurm(conf, "scontrol", "-o", "show", "job", str(slurm_job_id))
    start, end = (re.search(rf"\b{k}=(\S+)", rec) for k in ("StartTime", "EndTime"))
    assert start and end, rec
    return (datetime.fromisoformat(end.group(1)) - datetime.fromisoformat(start.group(1))).total_seconds()


def bare_sbatch(info: dict[str, Any], work: Path) -> int:
    """The same 2-node torchrun as treino's, written by hand the way a user's sbatch script would be."""
    python = shlex.quote(sys.executable)
    example = shlex.quote(str(ROOT / "examples" / "ddp_train.py"))
    node_cmd = (
        f"ME=$(scontrol -o show node $SLURMD_NODENAME | sed -E 's/.*NodeAddr=([^ ]+).*/\\1/'); "
        f"exec {python} -m torch.distributed.run --nnodes=2 --nproc-per-node=1 --rdzv-backend=c10d "
        f"--rdzv-endpoint=$HEAD:29777 --rdzv-id=$SLURM_JOB_ID --local-addr=$ME {example} --steps {THROUGHPUT_STEPS}"
    )
    script = work / "bare.sh"
    script.write_text(
        "#!/bin/bash\n"
        "FIRST=$(scontrol show hostnames $SLURM_JOB_NODELIST | head -1)\n"
        "export HEAD=$(scontrol -o show node $FIRST | sed -E 's/.*NodeAddr=([^ ]+).*/\\1/')\n"
        f"srun --ntasks-per-node=1 bash -c {shlex.quote(node_cmd)}\n"
    )
    env = {**os.environ, "SLURM_CONF": info["slurm_conf"], "OMP_NUM_THREADS": "1"}
    env["TREINO_CHECKPOINT_DIR"] = str(work / "ckpt")
    if info.get("ifname"):
        env["GLOO_SOCKET_IFNAME"] = info["ifname"]
    out = subprocess.run(
        ["sbatch", "--parsable", "--wait", "-N2", "--ntasks-per-node=1", "--gres=gpu:1", f"--chdir={work}",
         f"--output={work}/bare-%j.log", str(script)],
        capture_output=True, text=True, env=env, check=True,
    )  # fmt: skip
    return int(out.stdout.strip().split(";")[0])


def throughput(tmp: Path) -> tuple[list[float], list[float]]:
    info = cluster("netns", tmp / "netns", "--gpus", "1")
    try:
        server = Server(tmp / "data-netns", info["slurm_conf"], host=info["host_addr"])
        env = {"OMP_NUM_THREADS": "1", **({"GLOO_SOCKET_IFNAME": info["ifname"]} if info.get("ifname") else {})}
        treino, bare = [], []
        for run in range(RUNS):
            job_id = server.submit(
                {
                    "name": f"tput{run}",
                    "script": str(ROOT / "examples" / "ddp_train.py"),
                    "args": ["--steps", str(THROUGHPUT_STEPS), "--save-every", str(THROUGHPUT_STEPS)],
                    "workdir": str(tmp),
                    "nodes": 2,
                    "gpus": 1,
                    "env": env,
                }
            )
            j = server.wait(job_id)
            assert j["state"] == "succeeded", j
            treino.append(slurm_seconds(info["slurm_conf"], j["history"][-1]["placement"]["slurm_job_id"]))
            work = tmp / f"bare{run}"
            work.mkdir()
            bare.append(slurm_seconds(info["slurm_conf"], bare_sbatch(info, work)))
        server.stop()
        return treino, bare
    finally:
        down(tmp / "netns")


def main() -> int:
    if os.geteuid() != 0 or (shutil.which("slurmctld") is None and not Path("/usr/sbin/slurmctld").exists()):
        console.print("slurm_bench: skipped (needs root and Slurm's packages: scripts/local_slurm.py install)")
        return 0
    with tempfile.TemporaryDirectory(prefix="treino-slurm-bench-") as tmp_name:
        tmp = Path(tmp_name)
        seconds = submit_to_running(tmp)
        treino, bare = throughput(tmp)
    p50 = statistics.median(seconds)
    ratio = min(bare) / min(treino)
    table = Table(title="Cluster mode (Slurm 22.05, this machine)")
    for col in ("measure", "value", "target", "met"):
        table.add_column(col)
    table.add_row(
        f"submit -> RUNNING in Slurm, p50 of {SUBMITS}",
        f"{p50:.2f} s (p90 {sorted(seconds)[int(0.9 * len(seconds)) - 1]:.2f} s)",
        f"<= {TARGET_SUBMIT_P50_S:g} s",
        "yes" if p50 <= TARGET_SUBMIT_P50_S else "NO",
    )
    table.add_row(
        f"2-node ddp_train ({THROUGHPUT_STEPS} steps): bare sbatch / treino",
        f"{ratio:.3f}x ({min(bare):.1f} s / {min(treino):.1f} s, best of {RUNS})",
        f">= {TARGET_THROUGHPUT_RATIO}x",
        "yes" if ratio >= TARGET_THROUGHPUT_RATIO else "NO",
    )
    console.print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
