"""Inside a Slurm allocation: `python -m treino.server.slurm_launch batch|node ATTEMPT_DIR [HEAD_ADDR]`.

The batch step (ATTEMPT_DIR/launch.sh, what sbatch runs on the first node) starts one task per node with srun;
each task execs the job's command there: for a script, one torchrun agent per node with c10d rendezvous on the
first node's address, so every node's workers join one process group of nodes x gpus ranks.
    ATTEMPT_DIR/launch.json   in:  argv, cwd, env (with the job's token; mode 0600), grace_s, gpus_per_node, script,
                                   python, step_start_s (written by the server's SlurmBackend)
    ATTEMPT_DIR/output.log    every node's output, each line prefixed with its node's task number (srun --label)
    ATTEMPT_DIR/state.json    {"slurm_job_id", "nodes", "head_addr", "restart", "started_at"} once srun starts
    ATTEMPT_DIR/exit.json     {"returncode", "ended_at", "restart"}, written atomically when srun ends; with
                              "step_started": false where srun could not start the step on the nodes (below)
    ATTEMPT_DIR/step-started.RESTART   left by the first node task that starts, on the shared filesystem

The step must start within step_start_s (srun --immediate; the server's STEP_START_S). Slurm can give a job nodes
it then refuses the job's step on, for good: after a requeue, a node that was down while its slurmd lived on reports
the end of the earlier run's step late, and slurmctld takes that node out of the run that has just started (Slurm
22.05 job_mgr.c, job_epilog_complete: make_node_idle), so srun retries "Requested nodes are busy" forever. srun then
gives up, the exit record says the step never started, and the server submits the attempt again as a new Slurm
job: a node fault, which spends none of the job's restarts.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from treino.server.spec import TORCHRUN_SHUTDOWN_TIMEOUT_S
from treino.server.supervisor import KEY_VAR, write_json_atomic


def scontrol(*args: str) -> str:
    return subprocess.run(["scontrol", *args], capture_output=True, text=True, check=True).stdout


def node_addr(name: str) -> str:
    """A node's address as Slurm knows it (NodeAddr=), which is what the other nodes can reach."""
    match = re.search(r"\bNodeAddr=(\S+)", scontrol("-o", "show", "node", name))
    return match.group(1) if match else name


STEP_START_S = 60  # srun --immediate: the job's step starts on its nodes within this long, or the attempt is lost


def started_marker(attempt_dir: Path, restart: str) -> Path:
    return attempt_dir / f"step-started.{restart}"


def batch(attempt_dir: Path) -> int:
    # SIGTERM to the job's steps is how treino stops an attempt (scancel --signal=TERM): the workers checkpoint and
    # exit, srun returns, and this step records the exit. It must not die first, so it ignores SIGTERM itself.
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    launch = json.loads((attempt_dir / "launch.json").read_text())
    restart = os.environ.get("SLURM_RESTART_COUNT", "0")
    (attempt_dir / "exit.json").unlink(missing_ok=True)  # a requeued job's earlier run may have left one
    step_start_s = int(launch.get("step_start_s", STEP_START_S))
    started = started_marker(attempt_dir, restart)
    started.unlink(missing_ok=True)
    nodes = scontrol("show", "hostnames", os.environ["SLURM_JOB_NODELIST"]).split()
    head = node_addr(nodes[0])
    port = free_port()  # this step runs on the first node, where torchrun's rendezvous store will listen
    write_json_atomic(
        attempt_dir / "state.json",
        {
            "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
            "nodes": nodes,
            "head_addr": head,
            "restart": restart,
            "started_at": time.time(),
        },
    )
    print(f"treino: Slurm job {os.environ.get('SLURM_JOB_ID')} on {', '.join(nodes)} (restart {restart})", flush=True)
    argv = [
        "srun",
        f"--immediate={step_start_s}",  # a step Slurm will not start is an attempt lost, not a job that hangs
        "--label",  # each line of output starts with its node's task number
        f"--nodes={len(nodes)}",
        f"--ntasks={len(nodes)}",
        "--ntasks-per-node=1",
        "--kill-on-bad-exit=1",  # a node's agent that fails takes the others down: the attempt ends, not hangs
        launch["python"],
        "-m",
        "treino.server.slurm_launch",
        "node",
        str(attempt_dir),
        head,
        str(port),
    ]
    returncode = subprocess.run(argv, stdin=subprocess.DEVNULL).returncode
    record: dict[str, object] = {"returncode": returncode, "ended_at": time.time(), "restart": restart}
    if returncode != 0 and not started.exists():
        record.update(step_started=False, step_start_s=step_start_s)
    write_json_atomic(attempt_dir / "exit.json", record)
    return returncode


def free_port() -> int:
    """A port free on this node now (the kernel's pick): two jobs sharing a first node never share a rendezvous."""
    with socket.socket() as s:
        s.bind(("", 0))
        return int(s.getsockname()[1])


def node(attempt_dir: Path, head_addr: str, port: int) -> None:
    """Exec the job's command on this node (never returns)."""
    launch = json.loads((attempt_dir / "launch.json").read_text())
    with contextlib.suppress(OSError):  # a marker that cannot be written must not keep the job from running
        started_marker(attempt_dir, os.environ.get("SLURM_RESTART_COUNT", "0")).touch()
    nnodes = int(os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES") or 1)
    gpus = int(launch["gpus_per_node"])
    # Slurm's own variables (CUDA_VISIBLE_DEVICES from the GRES, SLURM_*) over the job's environment.
    slurm_vars = {k: v for k, v in os.environ.items() if k.startswith(("SLURM", "CUDA_", "GPU_DEVICE_ORDINAL"))}
    env = {**launch["env"], **slurm_vars, KEY_VAR: launch["key"]}
    script = launch.get("script")
    if script is not None and (nnodes > 1 or gpus > 1):
        me = node_addr(os.environ.get("SLURMD_NODENAME", ""))
        argv = [
            launch["python"],
            "-m",
            "treino.server.torchrun",  # torchrun, minus its traceback when stopped
            f"--nnodes={nnodes}",
            f"--nproc-per-node={gpus}",
            "--rdzv-backend=c10d",
            f"--rdzv-endpoint={head_addr}:{port}",
            f"--rdzv-id={os.environ.get('SLURM_JOB_ID', '0')}-{os.environ.get('SLURM_RESTART_COUNT', '0')}",
            f"--local-addr={me}",
            "--max-restarts=0",  # restarts are treino's (from a checkpoint) or Slurm's (requeue), not torchrun's
        ]
        if float(launch["grace_s"]) > TORCHRUN_SHUTDOWN_TIMEOUT_S:
            argv.append(f"--shutdown-timeout={int(float(launch['grace_s'])) + 1}")
        argv += script
    elif script is not None:
        argv = [launch["python"], *script]
    else:  # a command of the user's own, once per node, told where the first node is
        argv = list(launch["argv"])
        env.update(
            MASTER_ADDR=head_addr,
            MASTER_PORT=str(port),
            NNODES=str(nnodes),
            NODE_RANK=os.environ.get("SLURM_NODEID", "0"),
        )
    try:
        os.chdir(launch["cwd"])
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        print(f"treino: cannot start {argv[0]!r} in {launch['cwd']!r}: {exc}", flush=True)
        raise SystemExit(127) from exc


def main(argv: list[str]) -> int:
    if len(argv) >= 2 and argv[0] == "batch":
        return batch(Path(argv[1]))
    if len(argv) >= 4 and argv[0] == "node":
        node(Path(argv[1]), argv[2], int(argv[3]))
    print(
        "usage: python -m treino.server.slurm_launch batch ATTEMPT_DIR | node ATTEMPT_DIR HEAD_ADDR PORT",
        file=sys.stderr,
    )
    return 2


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
