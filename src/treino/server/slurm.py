"""The Slurm backend: treino's queue, governance and dashboard in front of an existing Slurm cluster.

treino keeps deciding *which* job runs next (priorities, backfill, preemption, residency: the partitions a job's
data may be processed in); Slurm places it on the nodes treino counted, isolates it, and requeues it when a node
fails. Everything goes through Slurm's own clients, as a user's scripts would, with `SLURM_CONF` from the
environment:

    launch     sbatch --parsable --job-name=treino-<server>-<job>-<attempt> --nodes --gres=gpu:N --requeue
               --open-mode=append --time --signal=TERM@<grace> ATTEMPT_DIR/launch.sh
               -> treino.server.slurm_launch: one torchrun agent per node via srun, c10d rendezvous on the
               first node's NodeAddr (docs/cluster.md)
    poll       squeue --json (one call per SNAPSHOT_S for every job), then `scontrol show job` for the final
               state and exit code (within MinJobAge), `sacct --json` where accounting exists, else `sacct -c`
               (the job-completion log), and the exit.json the launcher writes on the shared filesystem
    stop/kill  scancel --signal=TERM (the job's steps; the grace period to checkpoint), then scancel
    requeue    a job Slurm requeued (node failure) waits on a fixed 2-minute BeginTime hold; treino releases its
               own jobs at once (scontrol update jobid=N StartTime=now), since they resume from a checkpoint
    inventory  scontrol show node -o: nodes, GPUs (GRES), state, partitions; refreshed every INVENTORY_S

A Slurm job whose name treino did not give it is never signalled, requeued or cancelled: every call takes a job
id from one of treino's own attempt handles.
"""

from __future__ import annotations

import contextlib
import difflib
import functools
import hashlib
import json
import logging
import math
import os
import re
import secrets
import shlex
import socket
import subprocess
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from treino.errors import TreinoError, UsageError
from treino.server.backend import BackendUnavailable, ExitInfo, LaunchRequest, Placement, launch_failed, read_tail
from treino.server.db import FailureReason
from treino.server.inventory import Device, Inventory, Node
from treino.server.slurm_launch import STEP_START_S
from treino.server.supervisor import write_json_atomic

log = logging.getLogger("treino.server")

SLURM_CMD_TIMEOUT_S = 30.0  # one client call (slurmctld answers in milliseconds; a hung one must not hang us)
SNAPSHOT_S = 1.0  # how stale the squeue snapshot poll() reads may be: one squeue per second, whatever the jobs
INVENTORY_S = 5.0  # how often nodes are re-read (drains, failures, returns)
UNREACHABLE_BACKOFF_S = 5.0  # after slurmctld could not be reached, calls fail at once for this long
REQUEUE_SETTLE_S = 20.0  # a requeued job is held this long, not Slurm's 120 s: its nodes' earlier steps end first
REQUEUE_RELEASE_RETRY_S = 5.0  # a requeued job's hold released again if Slurm still shows it after this long
REQUEUE_NODE_WAIT_S = 60.0  # a job Slurm requeued waits this long for its (pinned) nodes before treino moves it
SHARED_CHECK_S = 120.0  # the start-up check job's limit (it waits for a free node like any job)
DEFAULT_CONF = Path("/etc/slurm/slurm.conf")  # where Slurm's clients look when SLURM_CONF is unset
# Slurm states in which a job is not over yet (squeue's JOB_STATE, without flags).
LIVE_STATES = frozenset(
    {
        "PENDING",
        "RUNNING",
        "CONFIGURING",
        "COMPLETING",
        "SUSPENDED",
        "REQUEUED",
        "REQUEUE_HOLD",
        "REQUEUE_FED",
        "RESIZING",
        "SIGNALING",
        "STAGE_OUT",
        "STOPPED",
        "RESV_DEL_HOLD",
    }
)
# Final Slurm states that say why on their own, as treino's failure classes. `None` for the return code: the
# attempt has no exit status of its own (its node died, or Slurm took it back), so treino requeues it without
# spending a restart, as it does for a local attempt whose machine went down.
FINAL_STATES: dict[str, tuple[str, bool, str]] = {  # state -> (failure class, has an exit status, detail)
    "TIMEOUT": (FailureReason.TIMEOUT, True, "Slurm's time limit (--time) was reached"),
    "DEADLINE": (FailureReason.TIMEOUT, True, "Slurm's deadline (--deadline) was reached"),
    "OUT_OF_MEMORY": (FailureReason.OOM, True, "the allocation's host memory limit was exceeded (Slurm OOM)"),
    "NODE_FAIL": (FailureReason.NODE_FAULT, False, "a node of the job failed (Slurm NODE_FAIL)"),
    "BOOT_FAIL": (FailureReason.NODE_FAULT, False, "a node failed to boot for the job (Slurm BOOT_FAIL)"),
    "PREEMPTED": (FailureReason.NODE_FAULT, False, "Slurm preempted the job for another of the cluster's jobs"),
    "CANCELLED": (FailureReason.SIGNAL, True, "cancelled in Slurm (scancel) by someone other than treino"),
}
UNREACHABLE = re.compile(
    r"Unable to contact slurm controller|Connection refused|Zero Bytes were transmitted|Socket timed out|"
    r"Communication connection failure|Unable to establish controller machine|Could not establish a configuration",
    re.IGNORECASE,
)
GONE = re.compile(r"Invalid job id specified|Invalid job id")


class SlurmError(TreinoError):
    """Slurm refused a request (its own message, and what to do about it)."""


def slurm_env() -> dict[str, str]:
    """The environment Slurm's clients run with: the server's, minus treino's own variables (sbatch exports it
    to the job, and the server's token must not travel)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("TREINO_") and k != "CUDA_VISIBLE_DEVICES"}


_unreachable: dict[str, Any] = {"until": -math.inf, "why": ""}  # the last BackendUnavailable, for UNREACHABLE_BACKOFF_S


def run(argv: Sequence[str], timeout_s: float = SLURM_CMD_TIMEOUT_S, env: Mapping[str, str] | None = None) -> str:
    """One Slurm client call (`env`: variables added to slurm_env()'s): stdout, BackendUnavailable when the
    controller cannot be reached, SlurmError when Slurm refuses (its message). After one call finds slurmctld
    unreachable, the next UNREACHABLE_BACKOFF_S fail at once: a tick with many jobs must not wait MessageTimeout per
    call while it holds the service's lock."""
    if time.monotonic() < _unreachable["until"]:
        raise BackendUnavailable(_unreachable["why"])
    try:
        return _run(argv, timeout_s, env)
    except BackendUnavailable as exc:
        _unreachable.update(until=time.monotonic() + UNREACHABLE_BACKOFF_S, why=str(exc))
        raise


def _run(argv: Sequence[str], timeout_s: float, env: Mapping[str, str] | None = None) -> str:
    try:
        done = subprocess.run(
            list(argv),
            capture_output=True,
            text=True,
            timeout=timeout_s,
            env={**slurm_env(), **(env or {})},
            stdin=subprocess.DEVNULL,
        )
    except FileNotFoundError as exc:
        raise BackendUnavailable(
            f"{argv[0]} not found: Slurm's client commands are not installed here. To fix: install them "
            "(Debian: apt-get install slurm-client) on the machine that runs treino server, or use --backend local."
        ) from exc
    except subprocess.TimeoutExpired as exc:
        raise BackendUnavailable(f"{argv[0]} did not answer in {timeout_s:g} s (slurmctld busy or down).") from exc
    if done.returncode != 0:
        message = (done.stderr.strip() or done.stdout.strip() or f"exit code {done.returncode}").splitlines()[-1]
        if UNREACHABLE.search(done.stderr):
            raise BackendUnavailable(
                f"slurmctld cannot be reached ({message}). To fix: check that slurmctld runs and that SLURM_CONF "
                f"({os.environ.get('SLURM_CONF', DEFAULT_CONF)}) is the cluster's slurm.conf (scontrol ping)."
            )
        raise SlurmError(f"{argv[0]}: {message}")
    return done.stdout


def parse_record(line: str) -> dict[str, str]:
    """`scontrol -o show ...`'s one-line `Key=value Key=value` records (values may hold spaces: OS=Linux 6.1...)."""
    return {m.group(1): m.group(2) for m in re.finditer(r"(\w+(?::\w+)?)=(.*?)(?=\s+\w+(?::\w+)?=|\s*$)", line)}


def gres_gpus(gres: str) -> tuple[int, str]:
    """(count, type) of the GPUs in a GRES string: `gpu:2`, `gpu:h100:8(S:0-1)`, `gpu:a100:4,shard:8`."""
    count, kind = 0, ""
    for item in re.split(r",(?![^(]*\))", gres):
        parts = item.split("(")[0].split(":")
        if parts[0] != "gpu" or len(parts) < 2:
            continue
        with contextlib.suppress(ValueError):
            count += int(parts[-1])
            kind = parts[1] if len(parts) == 3 else kind
    return count, kind


def node_usable(state: str) -> bool:
    """Slurm's node State= (`IDLE`, `MIXED`, `IDLE+DRAIN`, `DOWN*`, ...): may jobs be given this node now."""
    if state.endswith("*"):  # not responding
        return False
    base, *flags = state.upper().split("+")
    bad_flags = {"DRAIN", "FAIL", "MAINT", "REBOOT_REQUESTED", "REBOOT_ISSUED", "POWERED_DOWN", "POWERING_DOWN"}
    return base in {"IDLE", "MIXED", "ALLOCATED", "COMPLETING"} and not bad_flags & set(flags)


def read_nodes(partitions: Sequence[str]) -> list[Node]:
    """Every node of `partitions` (all partitions when empty), from `scontrol -o show node`."""
    nodes = []
    for line in run(["scontrol", "-o", "show", "node"]).splitlines():
        rec = parse_record(line)
        if "NodeName" not in rec:
            continue
        parts = tuple(p for p in rec.get("Partitions", "").split(",") if p and (not partitions or p in partitions))
        if not parts:
            continue  # not in a partition treino may use
        gpus, gpu_type = gres_gpus(rec.get("Gres", ""))
        state = rec.get("State", "UNKNOWN")
        addr = rec.get("NodeAddr", rec["NodeName"])
        nodes.append(Node(rec["NodeName"], addr, state.lower(), gpus, parts, node_usable(state), gpu_type))
    return sorted(nodes, key=lambda n: n.name)


def partitions_of_cluster() -> list[str]:
    return sorted({p.split()[0].rstrip("*") for p in run(["sinfo", "-h", "-o", "%P"]).split() if p})


def inventory_of(nodes: Sequence[Node]) -> Inventory:
    """Devices of the usable nodes. Indices are stable while the cluster's node list is: node k's GPU g is
    sum(GPUs of nodes before k) + g, counting unusable nodes too, so a drain does not renumber held devices."""
    devices, index = [], 0
    for ordinal, n in enumerate(nodes):
        for g in range(n.gpus):
            if n.usable:
                devices.append(Device(index + g, "gpu", n.gpu_type or "GPU", 0, ordinal, node=n.name))
        index += n.gpus
    return Inventory("gpu", tuple(devices), nodes=tuple(nodes))


@functools.lru_cache(maxsize=1024)
def expand_hostlist(hostlist: str) -> tuple[str, ...]:
    """`node[1-2],gpu7` -> names, with Slurm's own parser (`scontrol show hostnames`); cached, as the service
    asks for a running job's placement every tick."""
    if not hostlist or hostlist in ("(null)", "None"):
        return ()
    return tuple(run(["scontrol", "show", "hostnames", hostlist]).split())


class SlurmBackend:
    name = "slurm"
    multi_node = True

    def __init__(self, partitions: Sequence[str] = (), account: str | None = None, tag: str = "") -> None:
        self.partitions = list(partitions)
        self.account = account
        self.tag = tag or secrets.token_hex(3)  # in every job name: several treino servers may share a cluster
        self._inventory = Inventory("gpu", ())
        self._inventory_at = -math.inf
        self._snapshot: dict[int, dict[str, Any]] = {}
        self._snapshot_at = -math.inf
        # Slurm job id -> (the restart count whose BeginTime hold we released, when: time.monotonic())
        self._released: dict[int, tuple[int, float]] = {}
        self._pending_since: dict[int, float] = {}  # Slurm job id -> when it was first seen pending after a requeue

    # --- start-up ----------------------------------------------------------------------------------------------
    def check(self) -> None:
        """Slurm reachable and the partitions known: a TreinoError that says how to fix it otherwise."""
        conf = os.environ.get("SLURM_CONF")
        if not conf and not DEFAULT_CONF.exists():
            raise TreinoError(
                f"SLURM_CONF is not set and {DEFAULT_CONF} does not exist: treino reads the cluster's slurm.conf "
                "like every Slurm client. To fix: export SLURM_CONF=/path/to/slurm.conf (on a login node of the "
                "cluster), or use --backend local."
            )
        if conf and not Path(conf).is_file():
            raise TreinoError(f"SLURM_CONF={conf} is not a file. To fix: point it at the cluster's slurm.conf.")
        known = partitions_of_cluster()
        for p in self.partitions:
            if p not in known:
                close = difflib.get_close_matches(p, known, n=2)
                hint = f" Did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
                raise UsageError(
                    f"Unknown Slurm partition {p!r}.{hint} This cluster has: {', '.join(known)} (sinfo). "
                    "To fix: --partition NAME with one of those."
                )
        if not self.partitions:
            self.partitions = known
        inventory = self.inventory()
        if not inventory.nodes:
            raise TreinoError(f"Partitions {', '.join(self.partitions)} have no nodes. To fix: check sinfo.")
        if not any(n.gpus for n in inventory.nodes):
            raise TreinoError(
                f"No node of partitions {', '.join(self.partitions)} has GPUs as a GRES (Gres=gpu:N in slurm.conf "
                "and gres.conf). To fix: pick GPU partitions with --partition."
            )

    def check_shared(self, shared_dir: Path) -> None:
        """A 1-node Slurm job reads a file the server wrote in `shared_dir` and writes back another: checkpoints,
        logs and datasets live there, so every node must see it as this server does."""
        check_dir = shared_dir / "shared-check"
        check_dir.mkdir(parents=True, exist_ok=True)
        passed = check_dir / "passed"  # once shown shared, a restart does not wait for a free node again
        if passed.exists() and passed.read_text() == f"{shared_dir}\n{','.join(self.partitions)}":
            return
        nonce = secrets.token_hex(16)
        src, dst = check_dir / f"{nonce}.in", check_dir / f"{nonce}.out"
        src.write_text(nonce)
        argv = [
            "sbatch",
            "--parsable",
            "--wait",
            "--nodes=1",
            f"--partition={','.join(self.partitions)}",
            f"--job-name=treino-{self.tag}-shared-check",
            "--time=2",
            "--output=/dev/null",
            *([f"--account={self.account}"] if self.account else []),
            f"--wrap=cat {shlex.quote(str(src))} > {shlex.quote(str(dst))}",
        ]
        try:
            try:
                run(argv, timeout_s=SHARED_CHECK_S)
            except SlurmError as exc:  # sbatch --wait exits non-zero with only the job id when the job failed
                if not re.fullmatch(r"sbatch: \d+(;\S+)?", str(exc)):
                    raise SlurmError(f"{exc}. To fix: check --partition and --slurm-account (sbatch refused)") from exc
            got = dst.read_text() if dst.exists() else ""
        except BackendUnavailable as exc:
            with contextlib.suppress(BackendUnavailable, SlurmError):  # a check job still pending must not linger
                _run(["scancel", f"--name=treino-{self.tag}-shared-check"], SLURM_CMD_TIMEOUT_S)
            raise TreinoError(
                f"Could not check that {shared_dir} is shared with the cluster's nodes: {exc} To fix: make sure a "
                "1-node job can start in these partitions (sinfo, squeue)."
            ) from exc
        finally:
            for path in (src, dst):
                path.unlink(missing_ok=True)
        if got == nonce:
            passed.write_text(f"{shared_dir}\n{','.join(self.partitions)}")
            return
        if got != nonce:
            raise TreinoError(
                f"{shared_dir} is not shared with the cluster's nodes: a Slurm job could not read and write it as "
                "this server does. Checkpoints, job logs and datasets live there. To fix: put the data dir (or "
                "--shared-dir) on a filesystem every node mounts at the same path (NFS, Lustre, ...)."
            )

    # --- inventory ---------------------------------------------------------------------------------------------
    def inventory(self) -> Inventory:
        if time.monotonic() - self._inventory_at > INVENTORY_S:
            self._inventory_at = time.monotonic()
            try:
                self._inventory = inventory_of(read_nodes(self.partitions))
            except (BackendUnavailable, SlurmError) as exc:
                log.warning("Slurm inventory not refreshed: %s", exc)  # the last one stands
        return self._inventory

    # --- launch ------------------------------------------------------------------------------------------------
    def job_name(self, request: LaunchRequest) -> str:
        return f"treino-{self.tag}-{request.job_id}-{request.attempt}"

    def handle_for(self, request: LaunchRequest) -> dict[str, Any]:
        return {
            "node": "slurm",
            "name": self.job_name(request),
            "dir": str(request.attempt_dir),
            "key": request.key,
            "nodes": list(request.nodes),
            "slurm_job_id": None,
        }

    def _partition_for(self, request: LaunchRequest) -> str:
        """One partition the job may run in (its data's residency) that holds every chosen node: sbatch needs
        one for --nodelist. Several when no single one does; Slurm then picks, still among the allowed."""
        allowed = list(request.partitions) if request.partitions is not None else self.partitions
        of = {n.name: set(n.partitions) for n in self.inventory().nodes}
        common = set(allowed).intersection(*(of.get(n, set()) for n in request.nodes))
        return sorted(common)[0] if common else ",".join(allowed)

    def launch(self, request: LaunchRequest) -> dict[str, Any]:
        # An earlier sbatch of this very attempt may have reached Slurm although its answer did not reach us (a
        # timeout): that job carries this name. It is cancelled before the new one, so the attempt never runs twice.
        self._snapshot_at = -math.inf
        earlier = self._by_name(self.job_name(request))
        if earlier is not None:
            log.warning("Slurm job %s is an earlier submission of %s: cancelled", earlier, self.job_name(request))
            self._scancel({"name": self.job_name(request)}, earlier)
        request.attempt_dir.mkdir(parents=True, exist_ok=True)
        nodes = list(request.nodes)
        write_json_atomic(
            request.attempt_dir / "launch.json",
            {
                "argv": request.argv,
                "cwd": request.cwd,
                "env": request.env,  # the job's token: 0600 on the shared filesystem, never on a command line
                "key": request.key,
                "grace_s": request.grace_s,
                "gpus_per_node": request.gpus_per_node,
                "script": request.script,
                "python": request.python,
                "step_start_s": STEP_START_S,
            },
        )
        script = request.attempt_dir / "launch.sh"
        script.write_text(
            "#!/bin/sh\n# treino: one attempt of a job; see treino.server.slurm_launch\n"
            f"exec {shlex.quote(request.python)} -m treino.server.slurm_launch batch "
            f"{shlex.quote(str(request.attempt_dir))}\n"
        )
        script.chmod(0o700)
        output = str(request.attempt_dir / "output.log")
        partition = self._partition_for(request)
        argv = [
            "sbatch",
            "--parsable",
            f"--job-name={self.job_name(request)}",
            f"--nodes={len(nodes)}",
            "--ntasks-per-node=1",  # one torchrun agent per node; it starts the node's worker processes
            f"--gres=gpu:{request.gpus_per_node}",
            f"--partition={partition}",
            f"--nodelist={','.join(nodes)}",  # where treino's scheduler counted the GPUs free
            "--requeue",  # a node failure puts it back in Slurm's queue (same job id); it resumes from a checkpoint
            "--open-mode=append",  # a requeue must not truncate the log of the run before
            f"--output={output}",
            f"--error={output}",
            f"--chdir={request.attempt_dir}",
            *([f"--account={self.account}"] if self.account else []),
            *self._time_limit(request),
            str(script),
        ]
        out = run(argv)
        job_id = int(out.strip().split(";")[0])
        self._snapshot_at = -math.inf  # the next poll sees it
        return {**self.handle_for(request), "slurm_job_id": job_id, "partition": partition}

    @staticmethod
    def _time_limit(request: LaunchRequest) -> list[str]:
        """--time from the spec's timeout (whole minutes, rounded up), and SIGTERM to the steps a grace period
        before it, so the job checkpoints even if treino is down when the limit comes (Slurm's timer has ~30-60 s
        resolution, reference cluster-on-one-machine.md)."""
        if request.timeout_s is None:
            return []
        minutes = max(1, math.ceil(request.timeout_s / 60))
        return [f"--time={minutes}", f"--signal=TERM@{max(1, int(request.grace_s))}"]

    # --- poll ----------------------------------------------------------------------------------------------------
    def _jobs(self) -> dict[int, dict[str, Any]]:
        """treino's own jobs in Slurm now (one `squeue --json` per SNAPSHOT_S), by Slurm job id."""
        if time.monotonic() - self._snapshot_at > SNAPSHOT_S:
            data = json.loads(run(["squeue", "--json"]))
            prefix = f"treino-{self.tag}-"
            self._snapshot = {
                int(j["job_id"]): j for j in data.get("jobs", []) if str(j.get("name", "")).startswith(prefix)
            }
            self._snapshot_at = time.monotonic()
        return self._snapshot

    def _job_id(self, handle: dict[str, Any]) -> int | None:
        """The handle's Slurm job id; for an attempt recorded just before a crash, found by its name."""
        if handle.get("slurm_job_id"):
            return int(handle["slurm_job_id"])
        found = self._by_name(handle["name"])
        if found is not None:
            handle["slurm_job_id"] = found
        return found

    def _by_name(self, name: str) -> int | None:
        for job_id, job in self._jobs().items():
            if job.get("name") == name:
                return job_id
        return None

    def _live(self, handle: dict[str, Any], job_id: int) -> dict[str, Any] | None:
        """The job in the snapshot, if it is still this attempt's (same name): a Slurm job id is never trusted
        alone, since ids restart after a controller's cold start."""
        job = self._jobs().get(job_id)
        return job if job is not None and job.get("name") == handle["name"] else None

    def poll(self, handle: dict[str, Any]) -> ExitInfo | None:
        attempt_dir = Path(handle["dir"])
        if handle.get("launch_error"):
            return launch_failed(handle, attempt_dir)
        try:
            job_id = self._job_id(handle)
            if job_id is None:
                return self._from_exit_file(attempt_dir, "the attempt never reached Slurm (server stopped first)")
            live = self._live(handle, job_id)
            if live is not None and _state(live) in LIVE_STATES:
                self._release_requeue_hold(job_id, live)
                if self._stuck_after_requeue(handle, job_id, live):
                    self._scancel(handle, job_id)
                    nodes = ", ".join(handle.get("nodes", []))
                    return ExitInfo(
                        None,
                        read_tail(attempt_dir / "output.log"),
                        reason=FailureReason.NODE_FAULT,
                        detail=f"Slurm requeued it after a node failure, and its nodes ({nodes}) stayed unusable "
                        f"for {REQUEUE_NODE_WAIT_S:g} s: submitted again on other nodes",
                    )
                return None
            final = self._final(job_id, handle["name"])
        except BackendUnavailable as exc:
            log.warning("Slurm unreachable; job state unknown for now: %s", exc)
            return None  # unknown is not ended: nothing is requeued or failed while slurmctld is down
        if final is None:
            return self._from_exit_file(attempt_dir, f"Slurm no longer knows job {job_id} (past MinJobAge)")
        state, exit_code = final
        if state in LIVE_STATES:
            return None
        return self._exit_info(attempt_dir, state, exit_code)

    def _final(self, job_id: int, name: str) -> tuple[str, int | None] | None:
        """(state, exit code) of a job squeue no longer lists: `scontrol show job` (kept for MinJobAge), then
        accounting (`sacct --json`, with slurmdbd), then the job-completion log (`sacct -c`, jobcomp/filetxt),
        else None."""
        try:
            rec = parse_record(run(["scontrol", "-o", "show", "job", str(job_id)]).strip())
            if rec.get("JobName") != name:
                return None  # not this attempt's job any more (ids restart after a controller's cold start)
            return rec.get("JobState", "UNKNOWN").split("+")[0], _exit_code(rec.get("ExitCode", ""))
        except SlurmError as exc:
            if not GONE.search(str(exc)):
                raise
        with contextlib.suppress(SlurmError, ValueError, KeyError, IndexError, TypeError):
            jobs = json.loads(run(["sacct", "--json", "-X", "-j", str(job_id), f"--name={name}"])).get("jobs", [])
            if jobs:
                state = jobs[-1]["state"]["current"]
                code = jobs[-1].get("exit_code", {}).get("return_code")
                return str(state[0] if isinstance(state, list) else state).split()[0], code
        with contextlib.suppress(SlurmError, ValueError):
            lines = run(["sacct", "-c", "-n", "-P", "-j", str(job_id), "-o", "JobID,JobName,State,ExitCode"])
            mine = [f for f in (line.split("|") for line in lines.splitlines()) if f[:2] == [str(job_id), name]]
            if mine:
                return mine[-1][2].split()[0], _exit_code(mine[-1][3])
        return None

    def _exit_info(self, attempt_dir: Path, state: str, exit_code: int | None) -> ExitInfo:
        tail = read_tail(attempt_dir / "output.log")
        record = _exit_record(attempt_dir)
        if state in ("COMPLETED", "FAILED") and record.get("step_started") is False:  # the batch step's own end
            return ExitInfo(
                None,
                tail,
                reason=FailureReason.NODE_FAULT,
                detail="Slurm gave the job its nodes but did not start its step on them within "
                f"{record.get('step_start_s', STEP_START_S)} s (srun: see the log's end): submitted again as a "
                "new Slurm job",
            )
        written = _returncode(record)
        returncode = written if written is not None else exit_code
        if state == "COMPLETED" or (state == "FAILED" and returncode):
            return ExitInfo(returncode if returncode is not None else 1, tail)
        if state in FINAL_STATES:
            reason, has_status, detail = FINAL_STATES[state]
            return ExitInfo(returncode if has_status else None, tail, reason=reason, detail=detail)
        return ExitInfo(returncode, tail, reason=FailureReason.NODE_FAULT, detail=f"Slurm ended the job as {state}")

    @staticmethod
    def _from_exit_file(attempt_dir: Path, why: str) -> ExitInfo:
        written = _returncode(_exit_record(attempt_dir))
        tail = read_tail(attempt_dir / "output.log")
        if written is not None:
            return ExitInfo(written, tail)
        return ExitInfo(None, tail, reason=FailureReason.NODE_FAULT, detail=why)

    def _stuck_after_requeue(self, handle: dict[str, Any], job_id: int, job: dict[str, Any]) -> bool:
        """Requeued by Slurm (node failure) and pending for REQUEUE_NODE_WAIT_S while one of the nodes it is pinned
        to (--nodelist) is still unusable: it would wait for that node forever."""
        if _state(job) != "PENDING" or int(job.get("restart_cnt") or 0) == 0:
            self._pending_since.pop(job_id, None)
            return False
        since = self._pending_since.setdefault(job_id, time.monotonic())
        usable = {n.name for n in self.inventory().nodes if n.usable}
        return time.monotonic() - since > REQUEUE_NODE_WAIT_S and not set(handle.get("nodes", [])) <= usable

    def _release_requeue_hold(self, job_id: int, job: dict[str, Any]) -> None:
        """Slurm holds a requeued job for a fixed 2 minutes (Reason=BeginTime). treino's jobs resume from their
        last checkpoint, so most of the wait only loses time; but not all of it. A node that was down while its
        slurmd lived on still runs the earlier run's step, which slurmctld kills when the node registers again; a
        run started before that kill is reported has the node taken from it (slurm_launch's docstring). So the
        hold is released once the job has been pending REQUEUE_SETTLE_S. Slurm sets the hold when the job's last
        process on its nodes has ended, and sets it again over a release that came first (job_mgr.c
        batch_requeue_fini: a begin time already past is replaced): so the release is repeated, every
        REQUEUE_RELEASE_RETRY_S, while squeue still shows a begin time ahead."""
        restarts = int(job.get("restart_cnt") or 0)
        if _state(job) != "PENDING" or job.get("state_reason") != "BeginTime" or restarts == 0:
            return
        if time.monotonic() - self._pending_since.setdefault(job_id, time.monotonic()) < REQUEUE_SETTLE_S:
            return
        begins = _epoch(job.get("eligible_time"))
        done = self._released.get(job_id)
        if done is not None and done[0] == restarts:
            if begins is not None and begins <= time.time():
                return  # released: the scheduler has not started it yet
            if time.monotonic() - done[1] < REQUEUE_RELEASE_RETRY_S:
                return
        with contextlib.suppress(SlurmError):
            run(["scontrol", "update", f"jobid={job_id}", "StartTime=now"])
            again = " again (Slurm set it after the first release)" if done and done[0] == restarts else ""
            log.info("Slurm job %s: requeued (restart %s); its BeginTime hold released%s", job_id, restarts, again)
        self._released[job_id] = (restarts, time.monotonic())

    def placement(self, handle: dict[str, Any]) -> Placement | None:
        try:
            job_id = self._job_id(handle)
            job = self._live(handle, job_id) if job_id else None
            if job is None:
                return None
            state = _state(job)
            extra = {
                "slurm_job_id": job_id,
                "partition": job.get("partition"),
                "slurm_restarts": int(job.get("restart_cnt") or 0),
            }
            if state == "PENDING":
                return Placement((), "pending", str(job.get("state_reason", "")), extra)
            return Placement(expand_hostlist(str(job.get("nodes", ""))), "running", "", extra)
        except (BackendUnavailable, SlurmError):
            return None

    # --- stop ----------------------------------------------------------------------------------------------------
    def stop(self, handle: dict[str, Any], grace_s: float) -> None:
        """SIGTERM to the job's steps (torchrun passes it to its workers, which checkpoint); a job still pending
        in Slurm is simply cancelled. The service kills it after the grace period if it has not ended, and keeps
        trying while slurmctld cannot be reached."""
        try:
            job_id = self._job_id(handle)
            if job_id is None:
                return
            live = self._live(handle, job_id)
            self._scancel(handle, job_id, signal=None if live and _state(live) == "PENDING" else "TERM")
        except BackendUnavailable as exc:
            log.warning("could not signal %s now: %s", handle.get("name"), exc)

    def kill(self, handle: dict[str, Any]) -> None:
        """scancel: SIGTERM then SIGKILL after Slurm's KillWait, to every step and the batch step."""
        try:
            job_id = self._job_id(handle)
            if job_id is not None:
                self._scancel(handle, job_id)
        except BackendUnavailable as exc:
            log.warning("could not cancel %s now: %s", handle.get("name"), exc)

    @staticmethod
    def _scancel(handle: dict[str, Any], job_id: int, signal: str | None = None) -> None:
        """scancel of this attempt's job only: the id *and* treino's name for it must match (--name filters)."""
        with contextlib.suppress(SlurmError):
            run(["scancel", f"--name={handle['name']}", *([f"--signal={signal}"] if signal else []), str(job_id)])

    def sweep(self, active: Iterable[dict[str, Any]]) -> None:
        """Nothing: Slurm tracks every process of a job (proctrack) and ends them with it."""

    def telemetry(self) -> list[dict[str, Any]]:
        return []  # GPUs are on the nodes, not here; their telemetry belongs to the cluster's own exporters

    def metrics(self) -> dict[str, Any]:
        return {}


def _state(job: dict[str, Any]) -> str:
    state = job.get("job_state", "")
    if isinstance(state, list):  # newer Slurm: a list of the state and its flags
        state = state[0] if state else ""
    return str(state).split("+")[0]


def _epoch(value: Any) -> float | None:
    """A time field of squeue --json in seconds since the epoch: a number (22.05), or {"set", "number"} (23.02
    on); None where unset or absent."""
    if isinstance(value, dict):
        value = value.get("number") if value.get("set", True) else None
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) and value > 0 else None


def _exit_code(text: str) -> int | None:
    """Slurm's `ExitCode=code:signal`: the code, or -signal when a signal ended it."""
    try:
        code, _, sig = text.partition(":")
        return -int(sig) if sig and int(sig) and not int(code) else int(code)
    except ValueError:
        return None


def _exit_record(attempt_dir: Path) -> dict[str, Any]:
    """The exit record slurm_launch wrote when srun ended; {} where there is none (or none readable)."""
    with contextlib.suppress(OSError, ValueError):
        record = json.loads((attempt_dir / "exit.json").read_text())
        return record if isinstance(record, dict) else {}
    return {}


def _returncode(record: dict[str, Any]) -> int | None:
    """The exit record's return code, if it has a usable one."""
    with contextlib.suppress(ValueError, TypeError):
        value = record.get("returncode")
        return int(value) if value is not None else None
    return None


def server_tag(data_dir: Path) -> str:
    """A short, stable tag of this server (its machine and data dir) for Slurm job names: a restarted server finds
    its own jobs by name, and two servers on one cluster never take each other's."""
    return hashlib.sha256(f"{socket.gethostname()}:{data_dir}".encode()).hexdigest()[:8]
