#!/usr/bin/env python3
"""A real Slurm 22.05 cluster on this one machine, from Debian's packages, for trying treino's Slurm mode and for tests.

It writes a private `slurm.conf` into a folder you choose (nothing under /etc is touched), starts munged if needed,
slurmctld and one slurmd per node, and waits until every node is idle (about 1 s). `down` stops all of it again.
Needs root (mknod, network namespaces, SlurmUser=root) and no systemd.

Modes (`up --mode`):
  single    one node named after `hostname -s` on 127.0.0.1.
  loopback  two slurmd (node1, node2) on 127.0.0.1 with different ports (`slurmd -N nodeX`). Cheap, but both nodes
            share one hostname and address, so addressing bugs go unnoticed.
  netns     two nodes with their own network namespace (/run/netns/treino-node1, -node2), address (10.77.0.2, .3),
            hostname (node1, node2) and /etc/hosts. Each namespace's `treino0` end of a veth pair hangs on a bridge
            `treinobr0` in the root namespace, which has 10.77.0.1: slurmctld, the Slurm clients, a `treino server`
            and tests all stay in the root namespace, and jobs on every node reach a server there at 10.77.0.1.
            Jobs set GLOO_SOCKET_IFNAME=treino0. One netns cluster per machine at a time (fixed names).

Accounting (`up --accounting`, any mode): a private MariaDB (`mariadb-install-db` into DIR/db, `mariadbd` on
127.0.0.1 only) and slurmdbd, so that `sacct` and `sacctmgr` work (AccountingStorageType=accounting_storage/slurmdbd,
AccountingStorageTRES=gres/gpu: AllocTRES then lists the GPUs). Without it `sacct` says accounting is disabled.

Usage (as root):
  python3 scripts/local_slurm.py install                      # apt-get Slurm, slurmdbd and MariaDB if missing
  eval "$(python3 scripts/local_slurm.py up --dir /tmp/slurm --mode single)"    # prints export SLURM_CONF=...
  python3 scripts/local_slurm.py up --dir /tmp/slurm --mode netns --gpus 2 --json  # JSON also in DIR/cluster.json
  python3 scripts/local_slurm.py up --dir /tmp/slurm --mode single --accounting    # + MariaDB and slurmdbd: sacct
  python3 scripts/local_slurm.py status --dir /tmp/slurm      # sinfo
  python3 scripts/local_slurm.py node-stop --dir /tmp/slurm node2     # the machine dies: slurmd and its jobs
  python3 scripts/local_slurm.py node-restart --dir /tmp/slurm node2  # slurmd again; the node returns to idle
  python3 scripts/local_slurm.py down --dir /tmp/slurm        # idempotent; also fine on a half-up folder

Facts found on this kind of machine (Debian 12, no systemd, 2 cores), each the reason for something below:
  * Daemons are started with `nsenter --net=/run/netns/NAME`, not `ip netns exec`: the latter remounts /sys and
    slurmd then dies with "No filesystem mounted on /sys/fs/cgroup".
  * Each netns slurmd also runs under `unshare --uts --mount` with its own hostname and a bind-mounted hosts file
    naming every node: torch's c10d rendezvous resolves hostnames (socket.gaierror [Errno -3] without it).
  * Fake GPUs must be character devices (`mknod DIR/dev/NODE/nvidiaN c 195 N`, as the real /dev/nvidiaN): with
    plain files slurmd counts the GPUs but leaves CUDA_VISIBLE_DEVICES empty.
  * A requeued job (node failure, `scontrol requeue`) waits PENDING with Reason=BeginTime for a fixed 120 s;
    `scontrol update jobid=N StartTime=now` releases it at once. A requeue truncates the output file unless the
    job was submitted with --open-mode=append.
  * A dead slurmd (`node-stop`) is noticed at the third failed ping, since each ping of a dead slurmd retries its
    connect for MessageTimeout: about SlurmdTimeout + 2 x (MessageTimeout + 1) s. Measured: 15 s with the defaults
    here (--slurmd-timeout 5 --message-timeout 5; Slurm's own 300/10 take minutes), 5-9 s with 2/2. Its running
    --requeue jobs are then requeued (Restarts=1, Reason=BeginTime). `node-restart` brings it back (idle in < 1 s).
  * `scontrol update nodename=X state=down reason=...` requeues at once, but with ReturnToService=2 a node whose
    slurmd is alive re-registers and is idle again within a second (a later state=resume fails: "Invalid node
    state transition"). state=drain keeps it out until state=resume, but requeues nothing: its jobs run on.
  * munged is one per machine and other clusters may use it: `down` stops it only if `up` started it and no
    other Slurm daemon is running.
  * PID 1 here reaps orphans late: a killed daemon stays <defunct> for a while, so liveness is read from
    /proc/PID/stat (zombies count as gone), never from `ps -p` or kill(pid, 0).
  * Without slurmdbd `sacct` says "accounting storage is disabled": `sacct -c` reads the jobcomp file
    (DIR/log/jobcomp.txt).
  * slurmdbd has no option for its config file: it reads slurmdbd.conf from the folder of SLURM_CONF, and refuses
    one that others can read (mode 0600). Its MariaDB here is private: its own data dir (DIR/db, made by
    `mariadb-install-db`), socket, pid file and a port on 127.0.0.1; root@127.0.0.1 has no password, which is why
    it listens nowhere else. Started without systemd, stopped by `down`.
  * MariaDB syncs every table file it creates (about 1000 syncs for mariadb-install-db, 6.5 s on this disk, and 4 s
    more while slurmctld registers the cluster): DIR/db is a tmpfs of its own (1.3 s). `up --accounting` took
    6.3 s in all, against 1-2 s without.
  * Without AccountingStorageTRES=gres/gpu, sacct's AllocTRES lists cpu, mem, node and billing but not the GPUs.
  * torch's c10d logs "The hostname of the client socket cannot be retrieved. err=-3" in netns mode: it looks up
    the IPv4-mapped IPv6 peer address, which no hosts file names. Harmless.
Processes are recognised by TREINO_LOCAL_SLURM_DIR (and _NODE) in their environment, which the daemons and their
slurmstepds carry; job processes are found as the slurmstepds' descendants, or as every process of a node namespace.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import time
import traceback
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, NoReturn

PROG = "local_slurm.py"
MODES = ("single", "loopback", "netns")
PARTITION = "debug"
PACKAGES = ("slurmctld", "slurmd", "slurm-client", "munge", "slurmdbd", "mariadb-server")
INSTALLED_WHEN = ("slurmctld", "slurmd", "sbatch", "munged", "slurmdbd", "mariadbd", "mariadb-install-db")

MARKER_DIR_ENV = "TREINO_LOCAL_SLURM_DIR"  # set on the daemons we start; slurmstepd inherits it from slurmd
MARKER_NODE_ENV = "TREINO_LOCAL_SLURM_NODE"
ACCOUNTING_DAEMONS = ("slurmdbd", "mariadbd")
STATE_FILE = "local_slurm.state.json"  # what `up` created, written before creating it, so `down` can undo a half-up
CLUSTER_FILE = "cluster.json"

# netns mode: fixed names with a treino prefix (Linux caps interface names at 15 characters)
NETNS_PREFIX = "treino-"
BRIDGE = "treinobr0"
HOST_VETH_PREFIX = "treinoh"  # root-namespace end of node i's veth: treinoh1, treinoh2
NODE_IFNAME = "treino0"  # the node-namespace end, the same name on every node (GLOO_SOCKET_IFNAME)
SUBNET = "10.77.0"
SUBNET_BITS = 24
HOST_ADDR = f"{SUBNET}.1"
LOOPBACK_ADDR = "127.0.0.1"
NETNS_RUN_DIR = Path("/run/netns")

GPU_DEVICE_MAJOR = 195  # the major number of /dev/nvidiaN
REAL_MEMORY_MB = 4000
KILL_WAIT_S = 5  # SIGTERM to SIGKILL on cancel: tests cancel often
# A dead slurmd is noticed at the third failed ping: about SlurmdTimeout + 2 x (MessageTimeout + 1) s, since each
# ping of a dead slurmd retries its connect for MessageTimeout (Slurm's defaults, 300 s and 10 s, take minutes).
DEFAULT_SLURMD_TIMEOUT_S = 5
DEFAULT_MESSAGE_TIMEOUT_S = 5  # also how long clients wait for slurmctld: not lower on 2 busy cores
IDLE_TIMEOUT_S = 20.0
NODE_RESTART_TIMEOUT_S = 20.0
STOP_TIMEOUT_S = 10.0
COMMAND_TIMEOUT_S = 30.0
APT_TIMEOUT_S = 900.0
POLL_S = 0.1
LOG_TAIL_LINES = 5
# accounting (--accounting): slurmdbd and MariaDB on ports after the slurmd ones (loopback uses base+1, base+2)
DBD_PORT_OFFSET = 3
MARIADB_PORT_OFFSET = 4
ACCOUNTING_DB = "treino_acct"
ACCOUNTING_UP_TIMEOUT_S = 60.0  # each of mariadb-install-db, mariadbd, slurmdbd (its first tables): 0.3-7 s
DB_STOP_TIMEOUT_S = 20.0  # mariadbd flushes InnoDB on SIGTERM
DB_TMPFS_SIZE = "256m"  # an upper bound: a tmpfs takes memory only as files fill it (about 60 MB here)
SOCKET_PATH_MAX_CHARS = 107  # sun_path; slurmd and slurmstepd put sockets in the spool dir
STEPD_SOCKET_NAME_CHARS = 24  # "_<jobid>.<stepid>" after the node name, generously

MUNGE_RUN_DIR = Path("/run/munge")
MUNGE_PID_FILE = MUNGE_RUN_DIR / "munged.pid"
MUNGE_KEY = Path("/etc/munge/munge.key")
POLICY_RC_D = Path("/usr/sbin/policy-rc.d")  # Debian's invoke-rc.d asks it before a package starts a service

DEBUG = False


class CliError(Exception):
    """An error shown as one line with a fix; `code` 2 is bad usage, 1 a failure."""

    def __init__(self, message: str, fix: str, code: int = 1, details: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.fix = fix
        self.code = code
        self.details = details


@dataclass(frozen=True)
class Node:
    name: str
    hostname: str  # what `hostname` prints in its jobs
    addr: str
    port: int  # slurmd's
    gpus: int
    cpus: int
    netns: str | None  # namespace name in netns mode
    veth: str | None  # root-namespace end of its veth pair in netns mode

    @property
    def netns_path(self) -> str | None:
        return str(NETNS_RUN_DIR / self.netns) if self.netns else None


# ---------------------------------------------------------------- small helpers


def debug(message: str) -> None:
    if DEBUG:
        print(f"[{PROG}] {message}", file=sys.stderr, flush=True)


def run(
    argv: list[str],
    *,
    env: dict[str, str] | None = None,
    check: bool = True,
    input_bytes: bytes | None = None,
    timeout_s: float = COMMAND_TIMEOUT_S,
) -> subprocess.CompletedProcess[bytes]:
    """Runs argv, capturing output; raises CliError when it cannot start, times out, or (check) exits non-zero."""
    debug("$ " + " ".join(argv))
    try:
        out = subprocess.run(argv, env=env, input=input_bytes, capture_output=True, timeout=timeout_s)
    except FileNotFoundError as e:
        raise CliError(f"{argv[0]} not found.", f"install it (`{PROG} install` for Slurm and munge).") from e
    except subprocess.TimeoutExpired as e:
        raise CliError(f"`{' '.join(argv)}` took over {timeout_s:.0f} s.", "see the logs in DIR/log.") from e
    if check and out.returncode != 0:
        raise CliError(
            f"`{' '.join(argv)}` exited {out.returncode}: {one_line(out.stderr or out.stdout)}.",
            "see the message; rerun with --debug for every command run.",
        )
    return out


def one_line(text: bytes | str, limit_chars: int = 300) -> str:
    s = text.decode(errors="replace") if isinstance(text, bytes) else text
    s = " | ".join(line.strip() for line in s.strip().splitlines() if line.strip())
    return s if len(s) <= limit_chars else s[: limit_chars - 3] + "..."


def slurm_env(d: Path) -> dict[str, str]:
    return {**os.environ, "SLURM_CONF": str(d / "slurm.conf")}


def short_hostname() -> str:
    return socket.gethostname().split(".")[0]


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n")
    tmp.replace(path)


def log_tails(d: Path) -> str:
    """The last lines of every Slurm log in DIR/log, for errors."""
    parts = []
    for log in sorted((d / "log").glob("*.log")) + sorted((d / "log").glob("*.stderr")):
        try:
            lines = log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
        except OSError:
            continue
        if lines:
            parts.append(f"--- {log}\n" + "\n".join(lines))
    return "\n".join(parts)


# ---------------------------------------------------------------- processes (read from /proc: PID 1 reaps late)


def is_alive(pid: int) -> bool:
    """True while pid runs; a zombie (<defunct>, which PID 1 here reaps late) counts as gone."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return False
    return fields[0] not in ("Z", "X")


def all_pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def proc_environ(pid: int) -> dict[str, str]:
    try:
        raw = Path(f"/proc/{pid}/environ").read_bytes()
    except OSError:
        return {}
    env = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        if sep:
            env[key.decode(errors="replace")] = value.decode(errors="replace")
    return env


def parent_pids() -> dict[int, int]:
    parents = {}
    for pid in all_pids():
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        parents[pid] = int(fields[1])
    return parents


def with_descendants(roots: set[int]) -> set[int]:
    parents = parent_pids()
    found = set(roots)
    grew = True
    while grew:
        children = {pid for pid, ppid in parents.items() if ppid in found and pid not in found}
        found |= children
        grew = bool(children)
    return found


def marked_pids(d: Path, node: str | None = None) -> set[int]:
    """Live processes started for this cluster folder (daemons, slurmstepds), or for one of its nodes."""
    me = os.getpid()
    found = set()
    for pid in all_pids():
        if pid == me or not is_alive(pid):
            continue
        env = proc_environ(pid)
        if env.get(MARKER_DIR_ENV) != str(d):
            continue
        if node is None or env.get(MARKER_NODE_ENV) == node:
            found.add(pid)
    return found


def other_slurm_daemons(d: Path) -> set[int]:
    """Slurm daemons on this machine that are not this folder's: they share our munged."""
    names = ("slurmctld", "slurmd", "slurmdbd", "slurmstepd")
    return {p for p in all_pids() if is_alive(p) and comm(p) in names and proc_environ(p).get(MARKER_DIR_ENV) != str(d)}


def netns_pids(name: str) -> set[int]:
    if not (NETNS_RUN_DIR / name).exists():
        return set()
    out = run(["ip", "netns", "pids", name], check=False)
    return {int(x) for x in out.stdout.split() if x.isdigit()} - {os.getpid()}


def comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return ""


def pid_from_file(path: Path) -> int | None:
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def wait_gone(pids: set[int], timeout_s: float) -> set[int]:
    deadline = time.monotonic() + timeout_s
    alive = {p for p in pids if is_alive(p)}
    while alive and time.monotonic() < deadline:
        time.sleep(POLL_S)
        alive = {p for p in alive if is_alive(p)}
    return alive


def signal_all(pids: set[int], sig: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):  # already gone
            os.kill(pid, sig)


def terminate(pids: set[int], grace_s: float) -> None:
    """SIGTERM, then SIGKILL what is left after grace_s; raises if anything survives."""
    if not pids:
        return
    debug(f"stopping pids {sorted(pids)}")
    signal_all(pids, signal.SIGTERM)
    kill_now(wait_gone(pids, grace_s))


def kill_now(pids: set[int]) -> None:
    if not pids:
        return
    debug(f"killing pids {sorted(pids)}")
    signal_all(pids, signal.SIGKILL)
    left = wait_gone(pids, STOP_TIMEOUT_S)
    if left:
        raise CliError(f"processes {sorted(left)} survive SIGKILL.", "look at them with `ps -o pid,stat,cmd -p PID`.")


# ---------------------------------------------------------------- munge


def munge_works() -> bool:
    try:
        cred = subprocess.run(["munge", "-n"], capture_output=True, timeout=COMMAND_TIMEOUT_S)
        if cred.returncode != 0:
            return False
        check = subprocess.run(["unmunge"], input=cred.stdout, capture_output=True, timeout=COMMAND_TIMEOUT_S)
    except FileNotFoundError as e:
        raise CliError("munge is not installed.", f"run `{PROG} install`.") from e
    return check.returncode == 0


def start_munged() -> None:
    if not MUNGE_KEY.exists():  # Debian's postinst makes it; a hand-made image may lack it
        run(["runuser", "-u", "munge", "--", "mungekey", "--create"])
    run(["install", "-d", "-o", "munge", "-g", "munge", "-m", "0755", str(MUNGE_RUN_DIR)])
    run(["runuser", "-u", "munge", "--", "/usr/sbin/munged"])
    deadline = time.monotonic() + IDLE_TIMEOUT_S
    while not munge_works():
        if time.monotonic() > deadline:
            raise CliError("munged started but `munge -n | unmunge` still fails.", "see /var/log/munge/munged.log.")
        time.sleep(POLL_S)


def stop_munged() -> None:
    pid = pid_from_file(MUNGE_PID_FILE)
    if pid is not None and is_alive(pid):
        terminate({pid}, STOP_TIMEOUT_S)


# ---------------------------------------------------------------- configuration


def plan_nodes(mode: str, gpus: int, cpus: int, port_base: int) -> list[Node]:
    slurmd_port = port_base + 1
    if mode == "single":
        host = short_hostname()
        return [Node(host, host, LOOPBACK_ADDR, slurmd_port, gpus, cpus, None, None)]
    nodes = []
    for i in (1, 2):
        name = f"node{i}"
        if mode == "loopback":  # one address: the ports tell the two slurmd apart
            nodes.append(Node(name, short_hostname(), LOOPBACK_ADDR, slurmd_port + i - 1, gpus, cpus, None, None))
        else:
            addr = f"{SUBNET}.{i + 1}"
            nodes.append(
                Node(name, name, addr, slurmd_port, gpus, cpus, NETNS_PREFIX + name, HOST_VETH_PREFIX + str(i))
            )
    return nodes


def device_dir(d: Path, node: Node) -> Path:
    return d / "dev" / node.name  # per node: each node's GPUs are its own files


def gpu_files(d: Path, node: Node) -> str:
    base = device_dir(d, node) / "nvidia"
    return f"{base}0" if node.gpus == 1 else f"{base}[0-{node.gpus - 1}]"


def render_slurm_conf(d: Path, mode: str, nodes: list[Node], args: argparse.Namespace) -> str:
    port_base: int = args.port_base
    ctl_addr = HOST_ADDR if mode == "netns" else LOOPBACK_ADDR
    lines = [
        f"# written by scripts/local_slurm.py up --mode {mode}; `down --dir {d}` stops it",
        "ClusterName=treino",
        f"SlurmctldHost={short_hostname()}({ctl_addr})",
        f"SlurmctldPort={port_base}",
        f"SlurmdPort={port_base + 1}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        f"StateSaveLocation={d}/state",
        f"SlurmdSpoolDir={d}/spool/%n",
        f"SlurmctldPidFile={d}/run/slurmctld.pid",
        f"SlurmdPidFile={d}/run/slurmd-%n.pid",
        f"SlurmctldLogFile={d}/log/slurmctld.log",
        f"SlurmdLogFile={d}/log/slurmd-%n.log",
        "SlurmctldDebug=info",
        "SlurmdDebug=info",
        "SchedulerType=sched/backfill",
        # batch jobs start at a later scheduler pass, not at submit: batch_sched_delay=0 (default 3 s) and
        # bf_interval=1 (default 30 s) bring that pass within a second (sbatch -> RUNNING measured 0.1-1.0 s)
        "SchedulerParameters=batch_sched_delay=0,bf_interval=1",
        "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core",
        # proctrack/cgroup and task/cgroup also work on Debian 12 but need cgroup.conf; linuxproc needs nothing
        "ProctrackType=proctrack/linuxproc",
        "TaskPlugin=task/none",
        # use the CPUs/RealMemory below even where the machine has fewer (2 nodes x 2 CPUs on 2 cores)
        "SlurmdParameters=config_overrides",
        "MpiDefault=none",
        "MailProg=/bin/true",
        "ReturnToService=2",
        "JobRequeue=1",
        "MinJobAge=300",
        f"KillWait={KILL_WAIT_S}",
        f"SlurmdTimeout={args.slurmd_timeout}",
        f"MessageTimeout={args.message_timeout}",
        "InactiveLimit=0",
        *accounting_lines(args),
        "JobAcctGatherType=jobacct_gather/linux",
        "JobCompType=jobcomp/filetxt",
        f"JobCompLoc={d}/log/jobcomp.txt",
        "GresTypes=gpu",
    ]
    for n in nodes:
        gres = f" Gres=gpu:{n.gpus}" if n.gpus else ""
        lines.append(
            f"NodeName={n.name} NodeHostname={n.hostname} NodeAddr={n.addr} Port={n.port} CPUs={n.cpus} "
            f"Boards=1 SocketsPerBoard=1 CoresPerSocket={n.cpus} ThreadsPerCore=1 RealMemory={REAL_MEMORY_MB}"
            f"{gres} State=UNKNOWN"
        )
    for i, name in enumerate(partitions_of(args)):  # every partition holds every node; the first is the default
        default = "YES" if i == 0 else "NO"
        lines.append(f"PartitionName={name} Nodes=ALL Default={default} MaxTime=INFINITE State=UP")
    return "\n".join(lines) + "\n"


def accounting_lines(args: argparse.Namespace) -> list[str]:
    if not getattr(args, "accounting", False):
        return ["AccountingStorageType=accounting_storage/none"]
    return [
        "AccountingStorageType=accounting_storage/slurmdbd",
        f"AccountingStorageHost={LOOPBACK_ADDR}",
        f"AccountingStoragePort={args.port_base + DBD_PORT_OFFSET}",
        "AccountingStorageTRES=gres/gpu",  # else AllocTRES leaves the GPUs out
    ]


def render_slurmdbd_conf(d: Path, port_base: int) -> str:
    lines = [
        f"# written by scripts/local_slurm.py up --accounting; `down --dir {d}` stops it",
        "AuthType=auth/munge",
        f"DbdAddr={LOOPBACK_ADDR}",
        "DbdHost=localhost",
        f"DbdPort={port_base + DBD_PORT_OFFSET}",
        "SlurmUser=root",
        f"PidFile={d}/run/slurmdbd.pid",
        f"LogFile={d}/log/slurmdbd.log",
        "DebugLevel=info",
        "StorageType=accounting_storage/mysql",
        f"StorageHost={LOOPBACK_ADDR}",
        f"StoragePort={port_base + MARIADB_PORT_OFFSET}",
        "StorageUser=root",
        f"StorageLoc={ACCOUNTING_DB}",
    ]
    return "\n".join(lines) + "\n"


def render_mariadb_conf(d: Path, port_base: int) -> str:
    """A private MariaDB: its own data dir, socket and pid file, on 127.0.0.1 only; made for speed, not safety
    (a test's accounting may be lost in a crash)."""
    lines = [
        "[mariadbd]",
        f"datadir={d}/db",
        f"socket={d}/run/mariadb.sock",
        f"port={port_base + MARIADB_PORT_OFFSET}",
        f"bind-address={LOOPBACK_ADDR}",
        "user=root",
        f"pid-file={d}/run/mariadbd.pid",
        f"log-error={d}/log/mariadbd.log",
        "skip-name-resolve",
        "innodb-buffer-pool-size=64M",
        "innodb-flush-log-at-trx-commit=0",
        "innodb-doublewrite=0",
        "innodb-flush-method=nosync",
    ]
    return "\n".join(lines) + "\n"


def render_gres_conf(d: Path, nodes: list[Node]) -> str:
    lines = ["AutoDetect=off"]
    lines += [f"NodeName={n.name} Name=gpu File={gpu_files(d, n)}" for n in nodes if n.gpus]
    return "\n".join(lines) + "\n"


def render_hosts(nodes: list[Node]) -> str:
    """The /etc/hosts every netns node sees: itself, the other nodes, and the root namespace's host name."""
    lines = ["127.0.0.1 localhost", "::1 localhost ip6-localhost", f"{HOST_ADDR} {short_hostname()} treino-host"]
    lines += [f"{n.addr} {n.hostname}" for n in nodes]
    return "\n".join(lines) + "\n"


def write_cluster_files(d: Path, mode: str, nodes: list[Node], args: argparse.Namespace) -> None:
    for sub in ("state", "spool", "dev", "run", "log", "db"):
        shutil.rmtree(d / sub, ignore_errors=True)  # a fresh cluster: no old jobs, devices, pid files or logs
        (d / sub).mkdir(parents=True)
    for n in nodes:
        (d / "spool" / n.name).mkdir()  # else slurmd logs "Domain socket directory ...: No such file"
        device_dir(d, n).mkdir(parents=True)
        for i in range(n.gpus):  # character devices like /dev/nvidiaN: slurmd ignores plain files' indices
            os.mknod(device_dir(d, n) / f"nvidia{i}", stat.S_IFCHR | 0o666, os.makedev(GPU_DEVICE_MAJOR, i))
    (d / "slurm.conf").write_text(render_slurm_conf(d, mode, nodes, args))
    (d / "gres.conf").write_text(render_gres_conf(d, nodes))
    (d / "hosts").write_text(render_hosts(nodes))
    dbd_conf = d / "slurmdbd.conf"
    dbd_conf.unlink(missing_ok=True)
    if args.accounting:  # slurmdbd reads it beside slurm.conf and refuses it unless only its owner can read it
        fd = os.open(dbd_conf, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(render_slurmdbd_conf(d, args.port_base))
        (d / "mariadb.cnf").write_text(render_mariadb_conf(d, args.port_base))
        mount_db_tmpfs(d)


def mount_db_tmpfs(d: Path) -> None:
    """DIR/db on a tmpfs of its own (see the module docstring); on disk where mounting is not allowed."""
    record(d, "mounts", str(d / "db"))
    options = f"size={DB_TMPFS_SIZE},mode=0700"
    out = run(["mount", "-t", "tmpfs", "-o", options, "treino-slurm-db", str(d / "db")], check=False)
    if out.returncode != 0:
        debug(f"no tmpfs for {d}/db ({one_line(out.stderr)}): MariaDB's files stay on disk")


def mounted(path: str) -> bool:
    try:
        return any(line.split()[1] == path for line in Path("/proc/self/mounts").read_text().splitlines())
    except (OSError, IndexError):
        return False


# ---------------------------------------------------------------- network namespaces


def link_exists(name: str) -> bool:
    return Path("/sys/class/net", name).exists()  # our /sys is the root namespace's


def check_netns_free(nodes: list[Node]) -> None:
    """Refuses names a live cluster uses; removes those an abandoned one left behind.

    A cluster whose owner was killed before `down` (a cancelled test run, a lost session) leaves its namespaces,
    veths and bridge behind with no process inside. Such leftovers are removed here, so the next `up` works; a
    namespace that still holds a process belongs to a running cluster and is never touched.
    """
    namespaces = [n.netns for n in nodes if n.netns and (NETNS_RUN_DIR / n.netns).exists()]
    links = [name for name in [BRIDGE] + [n.veth for n in nodes if n.veth] if link_exists(name)]
    if (namespaces or links) and not any(netns_pids(ns) for ns in namespaces):
        leftovers = ", ".join(namespaces + links)
        print(f"[{PROG}] removing {leftovers}: left by a cluster no process runs in", file=sys.stderr)
        delete_network({"links": links, "netns": namespaces})
    taken = [ns for ns in namespaces if (NETNS_RUN_DIR / ns).exists()]
    taken += [name for name in links if link_exists(name)]
    if taken:
        fix = f"`{PROG} down --dir OTHER_DIR` for the cluster using them, or `ip netns del NAME` / `ip link del NAME`."
        raise CliError(f"{', '.join(taken)} already exist (another netns cluster?).", fix)
    routes = run(["ip", "-4", "route", "show"]).stdout.decode()
    if f"{SUBNET}." in routes:
        raise CliError(f"the root namespace already routes {SUBNET}.0/{SUBNET_BITS}.", "free that subnet first.")


def record(d: Path, key: str, value: str) -> None:
    """Notes a resource in the state file before it is created, so that `down` removes it even after a crash."""
    state = read_json(d / STATE_FILE)
    items = state.setdefault(key, [])
    if value not in items:
        items.append(value)
    write_json(d / STATE_FILE, state)


def create_network(d: Path, nodes: list[Node]) -> None:
    """A bridge with HOST_ADDR in the root namespace; per node a namespace whose veth end hangs on that bridge.

    The default route and eth0 are untouched: the only new route is SUBNET/24 via the bridge.
    """
    record(d, "links", BRIDGE)
    run(["ip", "link", "add", BRIDGE, "type", "bridge"])
    run(["ip", "addr", "add", f"{HOST_ADDR}/{SUBNET_BITS}", "dev", BRIDGE])
    run(["ip", "link", "set", BRIDGE, "up"])
    for n in nodes:
        assert n.netns and n.veth
        record(d, "netns", n.netns)
        run(["ip", "netns", "add", n.netns])
        record(d, "links", n.veth)
        run(["ip", "link", "add", n.veth, "type", "veth", "peer", "name", NODE_IFNAME, "netns", n.netns])
        run(["ip", "link", "set", n.veth, "master", BRIDGE, "up"])
        run(["ip", "-n", n.netns, "addr", "add", f"{n.addr}/{SUBNET_BITS}", "dev", NODE_IFNAME])
        run(["ip", "-n", n.netns, "link", "set", NODE_IFNAME, "up"])
        run(["ip", "-n", n.netns, "link", "set", "lo", "up"])  # torch and friends use 127.0.0.1 too


def delete_network(state: dict[str, Any]) -> None:
    # root-side veth ends first: deleting one deletes its pair at once (a namespace's destruction is asynchronous)
    for link in reversed(state.get("links", [])):
        if link_exists(link):
            run(["ip", "link", "del", link])
    for ns in state.get("netns", []):
        if (NETNS_RUN_DIR / ns).exists():
            run(["ip", "netns", "del", ns])


# ---------------------------------------------------------------- daemons


def daemon_env(d: Path, node: str | None = None) -> dict[str, str]:
    env = {**slurm_env(d), MARKER_DIR_ENV: str(d)}
    if node is not None:
        env[MARKER_NODE_ENV] = node
    return env


def start_slurmctld(d: Path) -> None:
    with (d / "log" / "slurmctld.stderr").open("ab") as err:
        argv = ["slurmctld", "-i"]
        debug("$ " + " ".join(argv))
        rc = subprocess.run(argv, env=daemon_env(d), stdout=err, stderr=err, timeout=COMMAND_TIMEOUT_S).returncode
    if rc != 0:
        raise CliError(f"slurmctld exited {rc}.", f"see {d}/log/slurmctld.log and slurmctld.stderr.")


def port_open(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(1.0)
        return s.connect_ex((LOOPBACK_ADDR, port)) == 0


def wait_port(d: Path, port: int, pid_file: Path, what: str) -> None:
    """Until `what` accepts connections on 127.0.0.1:port; raises at once if its process is gone."""
    deadline = time.monotonic() + ACCOUNTING_UP_TIMEOUT_S
    while not port_open(port):
        pid = pid_from_file(pid_file)
        gone = pid is not None and not is_alive(pid)
        if gone or time.monotonic() > deadline:
            why = "exited" if gone else f"does not listen on port {port} after {ACCOUNTING_UP_TIMEOUT_S:.0f} s"
            raise CliError(f"{what} {why}.", f"read the log tails below (all logs in {d}/log).", details=log_tails(d))
        time.sleep(POLL_S)


def start_accounting(d: Path, port_base: int) -> None:
    """A fresh private MariaDB (DIR/db) and slurmdbd on it; slurmctld, started next, registers the cluster."""
    cnf = d / "mariadb.cnf"
    with (d / "log" / "mariadb-install.log").open("ab") as out:
        argv = [
            "mariadb-install-db",
            f"--defaults-file={cnf}",
            "--auth-root-authentication-method=normal",  # root@127.0.0.1 without a password (listens there only)
            "--skip-test-db",
        ]
        debug("$ " + " ".join(argv))
        rc = subprocess.run(argv, stdout=out, stderr=out, timeout=ACCOUNTING_UP_TIMEOUT_S).returncode
    if rc != 0:
        raise CliError(f"mariadb-install-db exited {rc}.", f"see {d}/log/mariadb-install.log.", details=log_tails(d))
    with (d / "log" / "mariadbd.stderr").open("ab") as err:
        argv = ["mariadbd", f"--defaults-file={cnf}"]
        debug("$ " + " ".join(argv))
        # mariadbd does not daemonize: its own session, no terminal and none of our pipes (a caller that captures
        # our output would wait for them to close)
        subprocess.Popen(
            argv, env=daemon_env(d), stdin=subprocess.DEVNULL, stdout=err, stderr=err, start_new_session=True
        )
    wait_port(d, port_base + MARIADB_PORT_OFFSET, d / "run" / "mariadbd.pid", "mariadbd")
    with (d / "log" / "slurmdbd.stderr").open("ab") as err:
        debug("$ slurmdbd")
        env = daemon_env(d)
        rc = subprocess.run(["slurmdbd"], env=env, stdout=err, stderr=err, timeout=COMMAND_TIMEOUT_S).returncode
    if rc != 0:
        raise CliError(f"slurmdbd exited {rc}.", f"see {d}/log/slurmdbd.log and slurmdbd.stderr.", details=log_tails(d))
    wait_port(d, port_base + DBD_PORT_OFFSET, d / "run" / "slurmdbd.pid", "slurmdbd")


def slurmd_argv(d: Path, node: Node) -> list[str]:
    if node.netns is None:
        return ["slurmd", "-N", node.name]
    # nsenter, not `ip netns exec` (that remounts /sys: "No filesystem mounted on /sys/fs/cgroup"); unshare gives
    # the node its own hostname and, in a private mount namespace, its own /etc/hosts (done by _exec-node)
    script = str(Path(__file__).resolve())
    inner = [sys.executable, script, "_exec-node", "--dir", str(d), node.name]
    return ["nsenter", f"--net={node.netns_path}", "unshare", "--uts", "--mount", "--", *inner]


def start_slurmd(d: Path, node: Node) -> None:
    with (d / "log" / f"slurmd-{node.name}.stderr").open("ab") as err:
        argv = slurmd_argv(d, node)
        debug("$ " + " ".join(argv))
        env = daemon_env(d, node.name)
        rc = subprocess.run(argv, env=env, stdout=err, stderr=err, timeout=COMMAND_TIMEOUT_S).returncode
    if rc != 0:
        raise CliError(f"slurmd for {node.name} exited {rc}.", f"see {d}/log/slurmd-{node.name}.log and .stderr.")


def exec_node(d: Path, name: str) -> NoReturn:
    """Inside the node's new UTS and mount namespaces: own /etc/hosts and hostname, then become slurmd."""
    nodes = nodes_from(read_json(d / STATE_FILE))
    node = next((n for n in nodes if n.name == name), None)
    if node is None:
        raise CliError(f"no node {name} in {d}/{STATE_FILE}.", f"bring the cluster up with `{PROG} up`.")
    run(["mount", "--bind", str(d / "hosts"), "/etc/hosts"])
    socket.sethostname(node.hostname)
    slurmd = shutil.which("slurmd") or "/usr/sbin/slurmd"
    os.execve(slurmd, ["slurmd", "-N", node.name], os.environ)


def slurmd_pid_file(d: Path, node: str) -> Path:
    return d / "run" / f"slurmd-{node}.pid"


def our_pid(path: Path, d: Path) -> int | None:
    """The pid in a pid file if that process is still one of ours (a pid may have been reused)."""
    pid = pid_from_file(path)
    if pid is None or not is_alive(pid) or proc_environ(pid).get(MARKER_DIR_ENV) != str(d):
        return None
    return pid


def stop_node(d: Path, node: Node, slurmd_only: bool) -> None:
    """SIGKILL, as a crash would: the node's slurmd and, unless slurmd_only, its slurmstepds and their jobs."""
    slurmd = our_pid(slurmd_pid_file(d, node.name), d)
    pids = {slurmd} if slurmd else set()
    if not slurmd_only:
        pids |= with_descendants(marked_pids(d, node.name))
        if node.netns:
            pids |= netns_pids(node.netns)
    elif slurmd is None:
        pids |= {p for p in marked_pids(d, node.name) if comm(p) == "slurmd"}
    kill_now(pids)


# ---------------------------------------------------------------- Slurm queries


def node_states(d: Path) -> dict[str, str]:
    """{node: state} from sinfo, e.g. "idle", "down*", "alloc"; {} while slurmctld does not answer."""
    out = run(["sinfo", "-h", "-N", "-o", "%N %T"], env=slurm_env(d), check=False, timeout_s=5 * COMMAND_TIMEOUT_S)
    if out.returncode != 0:
        return {}
    states = {}
    for line in out.stdout.decode().splitlines():
        name, _, state = line.strip().partition(" ")
        if name:
            states[name] = state.strip()
    return states


def wait_until(d: Path, nodes: list[str], ok_states: set[str], timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    states: dict[str, str] = {}
    while time.monotonic() < deadline:
        states = node_states(d)
        if all(states.get(n) in ok_states for n in nodes):
            return
        time.sleep(POLL_S)
    shown = ", ".join(f"{n}={states.get(n, '?')}" for n in nodes) or "no answer from slurmctld"
    raise CliError(
        f"{what} not reached after {timeout_s:.0f} s ({shown}).",
        f"read the log tails below (all logs in {d}/log); rerun with --debug.",
        details=log_tails(d),
    )


# ---------------------------------------------------------------- state


def partitions_of(args: argparse.Namespace) -> list[str]:
    """The partitions `up` creates (--partition, repeatable; default one named PARTITION), each with every node:
    a test maps them to different sites to check residency."""
    return list(dict.fromkeys(getattr(args, "partition", None) or [PARTITION]))


def nodes_from(state: dict[str, Any]) -> list[Node]:
    return [Node(**n) for n in state.get("nodes", [])]


def cluster_json(d: Path, mode: str, nodes: list[Node]) -> dict[str, Any]:
    return {
        "slurm_conf": str(d / "slurm.conf"),
        "mode": mode,
        "dir": str(d),
        "partition": PARTITION,
        "nodes": [
            {"name": n.name, "addr": n.addr, "gpus": n.gpus, "netns": n.netns_path, "hostname": n.hostname}
            for n in nodes
        ],
        "host_addr": HOST_ADDR if mode == "netns" else LOOPBACK_ADDR,  # where jobs reach a server in the root ns
        "ifname": NODE_IFNAME if mode == "netns" else "lo",  # the same on every node: GLOO_SOCKET_IFNAME
    }


def check_dir(raw: str) -> Path:
    d = Path(raw).resolve()
    if any(c.isspace() or c in "#=," for c in str(d)):
        raise CliError(f"--dir {d} has a space or one of #=, which slurm.conf cannot hold.", "pick a plain path.", 2)
    longest = len(str(d / "spool" / "node00")) + 1 + len(short_hostname()) + STEPD_SOCKET_NAME_CHARS
    if longest > SOCKET_PATH_MAX_CHARS:
        raise CliError(f"--dir {d} is too long for slurmd's sockets.", "use a shorter --dir, e.g. under /tmp.", 2)
    return d


def require_root() -> None:
    if os.geteuid() != 0:
        raise CliError(
            "this needs root (mknod, network namespaces, SlurmUser=root).", "run it as root or with sudo.", 2
        )


def require_binaries(mode: str, accounting: bool) -> None:
    needed = ["slurmctld", "slurmd", "sinfo", "munge", "unmunge"]
    needed += ["slurmdbd", "mariadbd", "mariadb-install-db"] if accounting else []
    needed += ["ip", "nsenter", "unshare", "mount"] if mode == "netns" else []
    missing = [b for b in needed if shutil.which(b) is None]
    if missing:
        raise CliError(f"not on PATH: {', '.join(missing)}.", f"run `{PROG} install` (iproute2/util-linux for netns).")


def check_ports_free(ports: list[int]) -> None:
    for port in ports:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as Slurm does: TIME_WAIT is no obstacle
            try:
                s.bind(("0.0.0.0", port))
            except OSError as e:
                raise CliError(f"port {port} is in use ({e.strerror}).", "pick another --port-base.", 1) from e


# ---------------------------------------------------------------- commands


def teardown(d: Path, keep_munge: bool) -> list[str]:
    """Stops everything `up` started for d, in any state (up, half-up, down). Returns what it did."""
    done = []
    state = read_json(d / STATE_FILE)
    daemons = {pid for f in sorted((d / "run").glob("*.pid")) if (pid := our_pid(f, d)) is not None}
    daemons |= {p for p in marked_pids(d) if comm(p) in ("slurmctld", "slurmd", *ACCOUNTING_DAEMONS)}
    # in order: slurmctld and slurmd, then slurmdbd (slurmctld sends it its last records), then MariaDB
    slurm = {p for p in daemons if comm(p) not in ACCOUNTING_DAEMONS}
    dbd = {p for p in daemons if comm(p) == "slurmdbd"}
    db = daemons - slurm - dbd
    for group, grace_s in ((slurm, KILL_WAIT_S), (dbd, KILL_WAIT_S), (db, DB_STOP_TIMEOUT_S)):
        terminate(group, grace_s)
    if slurm:
        done.append(f"stopped {len(slurm)} Slurm daemon(s)")
    if dbd or db:
        done.append("stopped " + " and ".join(["slurmdbd"] * bool(dbd) + ["mariadbd"] * bool(db)))
    # what the daemons leave: slurmstepds and their jobs, and anything else inside the node namespaces
    rest = with_descendants(marked_pids(d))
    for ns in state.get("netns", []):
        rest |= netns_pids(ns)
    if rest:
        kill_now(rest)
        done.append(f"killed {len(rest)} slurmstepd/job process(es)")
    for path in state.get("mounts", []):  # MariaDB's tmpfs, once mariadbd is gone
        if mounted(path):
            run(["umount", path])
            done.append(f"unmounted {path}")
    if state.get("links") or state.get("netns"):
        delete_network(state)
        done.append("deleted " + ", ".join([*state.get("links", []), *state.get("netns", [])]))
    munged_started = bool(state.get("munged_started"))
    if munged_started and not keep_munge:
        others = other_slurm_daemons(d)
        if others:  # munged is machine-wide: another cluster (another folder, or one from /etc) still needs it
            done.append(f"left munged running for {len(others)} other Slurm daemon(s)")
        else:
            stop_munged()
            done.append("stopped munged")
        munged_started = False
    for f in [d / CLUSTER_FILE, *(d / "run").glob("*.pid")]:
        f.unlink(missing_ok=True)
    if state:
        write_json(d / STATE_FILE, {"munged_started": munged_started})
    return done


def cmd_up(args: argparse.Namespace) -> int:
    require_root()
    mode: str = args.mode
    require_binaries(mode, args.accounting)
    d = check_dir(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    teardown(d, keep_munge=True)  # `up` on an up folder: a fresh cluster
    nodes = plan_nodes(mode, args.gpus, args.cpus, args.port_base)
    ports = [args.port_base] + ([] if mode == "netns" else [n.port for n in nodes])
    if args.accounting:
        ports += [args.port_base + DBD_PORT_OFFSET, args.port_base + MARIADB_PORT_OFFSET]
    check_ports_free(ports)
    if mode == "netns":
        check_netns_free(nodes)
    state = read_json(d / STATE_FILE)
    munged_started = bool(state.get("munged_started"))
    if not munge_works():
        start_munged()
        munged_started = True
    write_json(d / STATE_FILE, {"mode": mode, "munged_started": munged_started, "nodes": [asdict(n) for n in nodes]})
    try:
        if mode == "netns":
            create_network(d, nodes)
        write_cluster_files(d, mode, nodes, args)
        if args.accounting:
            start_accounting(d, args.port_base)
        start_slurmctld(d)
        for n in nodes:
            start_slurmd(d, n)
        wait_until(d, [n.name for n in nodes], {"idle"}, IDLE_TIMEOUT_S, "every node idle")
    except BaseException as e:
        if isinstance(e, CliError) and not e.details:
            e.details = log_tails(d)
        teardown(d, keep_munge=not munged_started)  # no half-up cluster stays behind; logs do
        raise
    info = {
        **cluster_json(d, mode, nodes),
        "partition": partitions_of(args)[0],
        "partitions": partitions_of(args),
        "accounting": args.accounting,  # sacct works (slurmdbd on a private MariaDB)
    }
    write_json(d / CLUSTER_FILE, info)
    took_s = time.monotonic() - started
    where = ", ".join(f"{n.name} ({n.addr}{f' in {n.netns_path}' if n.netns else ''})" for n in nodes)
    accounting = ", accounting by slurmdbd" if args.accounting else ""
    print(
        f"# Slurm up in {took_s:.1f} s, mode {mode}{accounting}: {where}; partitions {', '.join(partitions_of(args))}",
        file=sys.stderr,
    )
    if args.json:
        print(json.dumps(info, indent=2))
    else:
        print(f"export SLURM_CONF={d / 'slurm.conf'}")
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    require_root()
    d = Path(args.dir).resolve()
    started = time.monotonic()
    done = teardown(d, keep_munge=False) if d.exists() else []
    took_s = time.monotonic() - started
    print(f"down in {took_s:.1f} s: " + ("; ".join(done) if done else "nothing was running"))
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    d = Path(args.dir).resolve()
    if not (d / "slurm.conf").exists():
        raise CliError(f"no slurm.conf in {d}.", f"bring a cluster up with `{PROG} up --dir {d} --mode MODE`.")
    out = run(["sinfo"], env=slurm_env(d), check=False)
    if out.returncode != 0:
        raise CliError(f"sinfo failed: {one_line(out.stderr)}.", f"start the cluster: `{PROG} up --dir {d} ...`.")
    sys.stdout.write(out.stdout.decode())
    return 0


def node_of(d: Path, name: str) -> Node:
    nodes = nodes_from(read_json(d / STATE_FILE))
    if not nodes:
        raise CliError(f"no cluster in {d}.", f"bring one up with `{PROG} up --dir {d} --mode MODE`.")
    for n in nodes:
        if n.name == name:
            return n
    raise CliError(f"no node {name} in {d}.", f"use one of: {', '.join(n.name for n in nodes)}.", 2)


def cmd_node_stop(args: argparse.Namespace) -> int:
    require_root()
    d = Path(args.dir).resolve()
    node = node_of(d, args.node)
    stop_node(d, node, args.slurmd_only)
    what = "slurmd" if args.slurmd_only else "slurmd and its jobs"
    print(f"{node.name}: killed {what}; Slurm marks it down after SlurmdTimeout")
    return 0


def cmd_node_restart(args: argparse.Namespace) -> int:
    require_root()
    d = Path(args.dir).resolve()
    node = node_of(d, args.node)
    started = time.monotonic()
    stop_node(d, node, slurmd_only=False)
    start_slurmd(d, node)
    # ReturnToService=2: a node that registers again leaves DOWN by itself
    ok = {"idle", "mixed", "allocated", "completing", "drained", "draining"}
    wait_until(d, [node.name], ok, NODE_RESTART_TIMEOUT_S, f"{node.name} responding")
    print(f"{node.name}: slurmd restarted, {node_states(d).get(node.name)} after {time.monotonic() - started:.1f} s")
    return 0


def installed(binary: str) -> bool:
    return shutil.which(binary) is not None or Path("/usr/sbin", binary).exists()  # /usr/sbin: not on every PATH


def cmd_install(args: argparse.Namespace) -> int:
    if all(installed(b) for b in INSTALLED_WHEN):
        print("Slurm, slurmdbd and MariaDB are installed: nothing to install")
        return 0
    if args.if_root and os.geteuid() != 0:
        print("not root: Slurm not installed; the cluster tests (tests/cluster) will skip and say why")
        return 0
    require_root()
    print("apt-get update", flush=True)
    run(["apt-get", "update"], timeout_s=APT_TIMEOUT_S)
    print(f"apt-get install -y {' '.join(PACKAGES)}", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    # mariadb-server's postinst starts the machine's own MariaDB (port 3306) unless policy-rc.d says no; `up`
    # starts a private one. A policy-rc.d of ours (exit 101: "not allowed") only while apt-get runs.
    ours = not POLICY_RC_D.exists()
    if ours:
        POLICY_RC_D.write_text(
            "#!/bin/sh\n# scripts/local_slurm.py install: no daemon starts while it runs\nexit 101\n"
        )
        POLICY_RC_D.chmod(0o755)
    try:
        run(["apt-get", "install", "-y", *PACKAGES], env=env, timeout_s=APT_TIMEOUT_S)
    finally:
        if ours:
            POLICY_RC_D.unlink(missing_ok=True)
    print("installed; the packages start no daemon: `up` does")
    return 0


# ---------------------------------------------------------------- command line


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"{PROG}: error: {message}. To fix: see `{self.prog} --help`.", file=sys.stderr)
        raise SystemExit(2)


def bounded_int(low: int, high: int) -> Any:
    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is outside {low}..{high}")
        return value

    return parse


def build_parser() -> Parser:
    p = Parser(prog=PROG, description="A real Slurm cluster on this machine (see the module docstring).")
    p.add_argument("--debug", action="store_true", help="print every command run, and tracebacks")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    install = sub.add_parser("install", help="apt-get install Slurm, munge, slurmdbd and MariaDB if one is missing")
    install.add_argument("--if-root", action="store_true", help="do nothing (exit 0) when not run as root")
    up = sub.add_parser("up", help="write the config and start munged, slurmctld and slurmd(s)")
    up.add_argument("--dir", required=True, help="folder for slurm.conf, state, spool, logs and fake GPUs")
    up.add_argument("--mode", required=True, choices=MODES)
    up.add_argument("--gpus", type=bounded_int(0, 64), default=2, help="fake GPUs per node (default 2)")
    up.add_argument("--cpus", type=bounded_int(1, 256), default=2, help="CPUs per node (default 2)")
    port_help = "slurmctld's port; the slurmd use the next ones (default 16817)"
    up.add_argument("--port-base", type=bounded_int(1024, 65000), default=16817, help=port_help)
    timeout_help = f"seconds until a silent slurmd's node is DOWN (default {DEFAULT_SLURMD_TIMEOUT_S})"
    up.add_argument("--slurmd-timeout", type=bounded_int(1, 65533), default=DEFAULT_SLURMD_TIMEOUT_S, help=timeout_help)
    message_help = f"Slurm's MessageTimeout, also in every ping of a dead slurmd (default {DEFAULT_MESSAGE_TIMEOUT_S})"
    up.add_argument("--message-timeout", type=bounded_int(2, 100), default=DEFAULT_MESSAGE_TIMEOUT_S, help=message_help)
    up.add_argument("--json", action="store_true", help="print the cluster as JSON (also in DIR/cluster.json)")
    accounting_help = (
        f"also a private MariaDB and slurmdbd, so that sacct works (ports: --port-base + {DBD_PORT_OFFSET} and "
        f"+ {MARIADB_PORT_OFFSET}; about 5 s more)"
    )
    up.add_argument("--accounting", action="store_true", help=accounting_help)
    up.add_argument(
        "--partition", action="append", help=f"a partition holding every node (repeatable; default {PARTITION})"
    )
    for name, text in (("down", "stop everything up started (idempotent)"), ("status", "print sinfo")):
        sub.add_parser(name, help=text).add_argument("--dir", required=True)
    stop = sub.add_parser("node-stop", help="kill one node's slurmd and its jobs, as a crash would")
    stop.add_argument("--dir", required=True)
    stop.add_argument("node")
    stop.add_argument("--slurmd-only", action="store_true", help="kill only slurmd; its jobs go on running")
    restart = sub.add_parser("node-restart", help="(re)start one node's slurmd and wait until it responds")
    restart.add_argument("--dir", required=True)
    restart.add_argument("node")
    return p


COMMANDS = {
    "install": cmd_install,
    "up": cmd_up,
    "down": cmd_down,
    "status": cmd_status,
    "node-stop": cmd_node_stop,
    "node-restart": cmd_node_restart,
}


def main(argv: list[str]) -> int:
    global DEBUG
    DEBUG = "--debug" in argv  # accepted anywhere on the line
    argv = [a for a in argv if a != "--debug"]
    try:
        if argv[:1] == ["_exec-node"]:  # internal: the netns slurmd's last step (see slurmd_argv)
            inner = Parser(prog=f"{PROG} _exec-node")
            inner.add_argument("--dir", required=True)
            inner.add_argument("node")
            args = inner.parse_args(argv[1:])
            exec_node(Path(args.dir).resolve(), args.node)
        args = build_parser().parse_args(argv)
        return COMMANDS[args.command](args)
    except CliError as e:
        if DEBUG:
            traceback.print_exc()
        print(f"{PROG}: error: {one_line(e.message, 2000)} To fix: {e.fix}", file=sys.stderr)
        if e.details:
            print(e.details, file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print(f"{PROG}: error: interrupted. To fix: run `{PROG} down --dir DIR` to clean up.", file=sys.stderr)
        return 1
    except Exception as e:
        if DEBUG:
            traceback.print_exc()
        print(f"{PROG}: error: {type(e).__name__}: {e}. To fix: rerun with --debug and report it.", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
