"""Jobs kept out of the server's secrets, on real root servers with real job processes (docs/govern.md, "Trust
model"): they run as the job user, cannot open the admin token, the server key, the database or the store, still
checkpoint and read their datasets; each attempt has its own cgroup, which carries the spec's memory limit and is
how cancel finds a process that cleared its environment and left the attempt's session.

These need root (to switch users and write cgroups) and, for the cgroup tests, cgroups: without them they skip
saying why, and under CI=true (CI runs as root) they fail instead.
"""

from __future__ import annotations

import atexit
import concurrent.futures
import csv
import functools
import json
import os
import pwd
import shlex
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Database
from tests.server.conftest import SERVER_START_S, StartServer, clean_env, free_port
from tests.server.people import churn_job, people_and_clientes
from tests.server.test_jobs import Server, final
from treino.server import cgroups
from treino.server.isolation import JobUser, blocked_at, give_dataset, resolve_job_user
from treino.server.settings import DEFAULT_JOB_USER

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "examples" / "data"
CGROUP_GONE_S = 10.0  # after an attempt ends: its supervisor removes the cgroup


def require(ok: bool, reason: str) -> None:
    """Skip saying why, or fail under CI=true, where these must run (as tests/conftest.py does for PostgreSQL)."""
    if ok:
        return
    if os.environ.get("CI") == "true":
        pytest.fail(f"the isolation tests must run under CI=true, but: {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="module")
def database() -> Database:
    """SQLite only: the job user, its folders and its cgroups are the kernel's business, not the database's (the
    [postgresql] variants of the other server tests cover the records these tests read)."""
    return Database()


@pytest.fixture
def root_only() -> None:
    require(os.geteuid() == 0, "jobs can only run as another user when the server runs as root")
    require(shutil.which("useradd") is not None, "no useradd to create the job user")


@pytest.fixture
def with_cgroups(root_only: None) -> None:
    require(cgroups.detect() is not None, "no cgroup v1 memory/freezer hierarchy nor cgroup v2 with controllers")


@pytest.fixture
def open_dir(root_only: None) -> Iterator[Path]:
    """A folder the job user may pass through (pytest's temporary folders are 0700): the data dir and the tests'
    job scripts go in it."""
    folder = Path(tempfile.mkdtemp(prefix="treino-isolation-"))
    folder.chmod(0o711)
    blocked = blocked_at(folder, JobUser("probe", 65534, 65534))
    require(blocked is None, f"{blocked} is closed to other users, so no job user could reach {folder}")
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


PROBE = JobUser("probe", 65534, 65534)  # any user but root: what a job user may reach


@functools.cache
def reachable_repo() -> Path:
    """This checkout as a job user can reach it: itself, or, when it lies under a folder closed to other users (a
    clone under /root, 0700), a bind mount of it in an open temporary folder, unmounted when the tests end."""
    if blocked_at(ROOT, PROBE) is None:
        return ROOT
    mount_point = Path(tempfile.mkdtemp(prefix="treino-repo-"))
    mount_point.chmod(0o755)
    done = subprocess.run(["mount", "--bind", str(ROOT), str(mount_point)], capture_output=True, text=True)
    require(done.returncode == 0, f"{ROOT} is closed to the job user and bind-mounting it failed: {done.stderr}")
    atexit.register(subprocess.run, ["umount", "-l", str(mount_point)], capture_output=True)
    return mount_point


def job_python() -> tuple[str, dict[str, str], Path]:
    """A Python the job user may run, the environment that gives it this venv's packages, and the checkout as the
    job user reaches it (reachable_repo): the venv's own Python when the job user can run it, else the system's
    interpreter of the same version (a venv made from an interpreter under /root, 0700, is the usual reason)."""
    here = Path(sys.executable)
    repo = reachable_repo()
    if blocked_at(here.resolve(), PROBE) is None and repo == ROOT:
        return sys.executable, {}, repo
    system = shutil.which(f"python{sys.version_info.major}.{sys.version_info.minor}", path="/usr/bin:/usr/local/bin")
    require(system is not None, f"the job user cannot run {here.resolve()} and there is no system Python to use")
    assert system is not None
    site_packages = Path(next(p for p in sys.path if p.endswith("site-packages") and p.startswith(sys.prefix)))
    if site_packages.is_relative_to(ROOT):  # the venv inside the checkout (make's .venv): seen through the mount
        site_packages = repo / site_packages.relative_to(ROOT)
    require(blocked_at(site_packages, PROBE) is None, f"the job user cannot read the venv's {site_packages}")
    return system, {"PYTHONPATH": os.pathsep.join([str(repo / "src"), str(site_packages)])}, repo


def isolated(start_server: StartServer, open_dir: Path, *args: str) -> Server:
    """A root server with no --job-user: its jobs run as DEFAULT_JOB_USER."""
    return Server(start_server(extra_args=list(args), data_dir=open_dir / "data", job_user=None))


def attempt_cgroup(server: Server, job_id: int) -> cgroups.Cgroup:
    state = json.loads((server.data_dir / "jobs" / str(job_id) / "attempt-1" / "state.json").read_text())
    assert state["cgroup"] is not None, "the attempt got no cgroup"
    return cgroups.Cgroup.from_record(state["cgroup"])


def wait_for(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"never happened: {what}")
        time.sleep(0.1)


def alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return False


HOSTILE = """
import os, sys
from pathlib import Path

data = Path(sys.argv[1])
for name in sys.argv[2:]:
    path = data / name
    try:
        os.listdir(path) if path.is_dir() else path.read_bytes()
        print(f"READ {name}")
    except PermissionError as e:
        print(f"PermissionError {name}: {e}")
try:
    os.listdir(data)
    print("LISTED the data dir")
except PermissionError:
    print("PermissionError listing the data dir")
print(f"uid={os.getuid()} gid={os.getgid()} groups={os.getgroups()} home={os.environ['HOME']} cwd={os.getcwd()}")
"""


def test_a_job_cannot_read_the_servers_secrets_and_a_normal_job_still_checkpoints(
    open_dir: Path, start_server: StartServer
) -> None:
    server = isolated(start_server, open_dir)
    assert f"Jobs run as user {DEFAULT_JOB_USER}" in server.process.log()
    user = pwd.getpwnam(DEFAULT_JOB_USER)
    python, env, repo = job_python()
    script = open_dir / "hostile.py"
    script.write_text(HOSTILE)
    script.chmod(0o644)
    secrets = ["admin-token", "server-key", "store"] + (["treino.db"] if server.process.db_url is None else [])
    hostile = server.submit({"name": "hostile", "command": [python, str(script), str(server.data_dir), *secrets]})
    normal = server.submit(
        {
            "name": "normal",
            "command": [python, str(repo / "examples" / "ddp_train.py"), "--steps", "10", "--save-every", "5"],
            "workdir": str(repo),
            "env": {"OMP_NUM_THREADS": "1", **env},
        }
    )
    job = server.wait(hostile, final)
    log = server.logs(hostile)
    assert job["state"] == "succeeded", log
    for name in secrets:
        assert f"PermissionError {name}: [Errno 13] Permission denied" in log
    assert "READ" not in log and "PermissionError listing the data dir" in log
    work = server.data_dir / "jobs" / str(hostile) / "work"
    assert f"uid={user.pw_uid} gid={user.pw_gid} groups=[] home={work} cwd={work}" in log
    assert (work.stat().st_uid, work.stat().st_mode & 0o777) == (user.pw_uid, 0o700)

    job = server.wait(normal, final)
    assert job["state"] == "succeeded", server.logs(normal)
    assert [c["step"] for c in job["checkpoints"]] == [5, 10] and all(c["exists"] for c in job["checkpoints"])
    saved = Path(job["checkpoints"][-1]["path"])
    assert saved.stat().st_uid == user.pw_uid  # written by the job user, into its own checkpoint folder
    assert (saved.parent.stat().st_uid, saved.parent.stat().st_mode & 0o777) == (user.pw_uid, 0o700)
    # Continued (treino.server.resubmission): as the job user, the new job restores the old job's checkpoint (linked
    # into its own folder by the server, then handed to the job user) and saves its own beside it.
    saved.unlink()  # the newest left is step 5
    r = server.api("POST", f"/api/v1/jobs/{normal}/resubmit", json={})
    assert r.status_code == 201, r.text
    again = server.wait(r.json()["id"], final)
    assert again["state"] == "succeeded" and "resumed from step=5" in server.logs(again["id"]), server.logs(again["id"])
    seeded, own = (Path(c["path"]) for c in again["checkpoints"])
    assert seeded.stat().st_ino == (saved.parent / "step-000000005.pt").stat().st_ino
    assert (own.name, own.stat().st_uid, own.parent.stat().st_uid) == ("step-000000010.pt", user.pw_uid, user.pw_uid)
    # What the job could not read is the server's alone; the data dir itself may only be passed through.
    assert server.data_dir.stat().st_mode & 0o777 == 0o711
    for name in ("admin-token", "server-key", *(["treino.db"] if server.process.db_url is None else [])):
        assert (server.data_dir / name).stat().st_mode & 0o777 == 0o600, name
    assert (server.data_dir / "store").stat().st_mode & 0o777 == 0o700


READER = """
import time
from treino import job

run = job.init()
path = run.dataset("clientes")
print(f"read {len(path.read_bytes())} bytes from {path}", flush=True)
time.sleep(1000)
"""


def test_a_job_reads_its_dataset_from_a_copy_that_erasure_and_the_attempts_end_delete(
    open_dir: Path, start_server: StartServer
) -> None:
    server = isolated(start_server, open_dir, "--site", "eveo-sp1", "--import-root", str(DATA))
    tokens = people_and_clientes(server.url, server.token)
    python, env, _ = job_python()
    script = open_dir / "reader.py"
    script.write_text(READER)
    script.chmod(0o644)
    spec = {**churn_job(), "command": [python, str(script)], "env": env, "grace_seconds": 1}
    del spec["script"], spec["args"]
    engineer = Server(server.process)
    engineer.token = tokens["eng1"]
    job_id = engineer.submit(spec)
    engineer.wait(job_id, lambda j: "read " in engineer.logs(job_id) or final(j))
    copy = Path(engineer.logs(job_id).split(" from ")[1].split()[0])
    assert copy.parent == server.data_dir / "jobs" / str(job_id) / "datasets", engineer.logs(job_id)
    stored = next((server.data_dir / "store").rglob(copy.name))
    assert copy.read_bytes() == stored.read_bytes()
    assert (copy.stat().st_uid, copy.stat().st_mode & 0o777) == (pwd.getpwnam(DEFAULT_JOB_USER).pw_uid, 0o400)

    with (DATA / "clientes.csv").open() as f:
        cpf = next(csv.DictReader(f))["cpf"]
    dpo = Server(server.process)
    dpo.token = tokens["dpo1"]
    erased = dpo.api("POST", "/api/v1/erasures", json={"subject": cpf})
    assert erased.status_code == 201 and erased.json()["rows_removed"] == 1, erased.text
    assert not copy.exists() and not stored.exists()  # the job's copy goes with the store's file

    assert engineer.api("POST", f"/api/v1/jobs/{job_id}/cancel").status_code == 200
    assert engineer.wait(job_id, final)["state"] == "cancelled"
    assert not copy.parent.exists()  # and its folder with the attempt


def test_cancel_kills_a_process_that_cleared_its_environment_and_left_the_session(
    open_dir: Path, start_server: StartServer, with_cgroups: None
) -> None:
    server = isolated(start_server, open_dir)
    # It ignores SIGTERM too: only the cgroup's SIGKILL ends it, and nothing marks it as the attempt's but that.
    escape = "trap '' TERM; echo escaped=$$; exec /bin/sleep 1000"
    command = f"/usr/bin/env -i /usr/bin/setsid /bin/sh -c {shlex.quote(escape)} & exec /bin/sleep 1000"
    job_id = server.submit({"name": "escaper", "command": ["/bin/sh", "-c", command], "grace_seconds": 1})
    server.wait(job_id, lambda j: "escaped=" in server.logs(job_id))
    pid = int(server.logs(job_id).split("escaped=")[1].split()[0])
    environ = Path(f"/proc/{pid}/environ").read_bytes()
    assert b"TREINO_ATTEMPT_KEY" not in environ and os.getsid(pid) == pid  # out of reach of the key scan
    cgroup = attempt_cgroup(server, job_id)
    assert pid in cgroups.procs(cgroup)

    assert server.api("POST", f"/api/v1/jobs/{job_id}/cancel").status_code == 200
    job = server.wait(job_id, final, timeout_s=30)
    assert job["state"] == "cancelled"
    wait_for(lambda: not alive(pid), 10, f"the escaped process {pid} killed")
    wait_for(lambda: not any(Path(d).exists() for _, d in cgroup.dirs), CGROUP_GONE_S, "the attempt's cgroup removed")


def test_the_memory_limit_of_the_spec_lands_in_the_attempts_cgroup(
    open_dir: Path, start_server: StartServer, with_cgroups: None
) -> None:
    server = isolated(start_server, open_dir)
    for bad in (0, -1, "2", 2e6):
        r = server.api("POST", "/api/v1/jobs", json={"name": "m", "command": ["true"], "memory_gb": bad})
        assert r.status_code == 422, (bad, r.text)
    job_id = server.submit({"name": "bounded", "command": ["/bin/sleep", "1000"], "memory_gb": 0.5})
    server.wait(job_id, lambda j: j["state"] == "running")
    wait_for(lambda: (server.data_dir / "jobs" / str(job_id) / "attempt-1" / "state.json").exists(), 10, "state.json")
    cgroup = attempt_cgroup(server, job_id)
    if cgroup.version == 1:
        limit = cgroup.dir("memory")
        assert limit is not None
        assert int((limit / "memory.limit_in_bytes").read_text()) == 512 * 1024**2
    else:
        assert int((cgroup.main / "memory.max").read_text()) == 512 * 1024**2
    assert len(cgroups.procs(cgroup)) == 1  # the sleep, not its supervisor (which left after starting it)
    devices = cgroup.dir("devices")
    if devices is not None:  # v1: a job on CPU slots may open every device but the NVIDIA GPUs
        listed = set((devices / "devices.list").read_text().splitlines())
        assert listed == set(cgroups.nvidia_device_rules((), Path("/proc/devices").read_text()))
        assert "a *:* rwm" not in listed
    assert server.api("POST", f"/api/v1/jobs/{job_id}/cancel").status_code == 200
    assert server.wait(job_id, final)["state"] == "cancelled"


def test_a_job_over_its_memory_limit_is_ended_by_the_kernel_and_failed_as_oom(
    open_dir: Path, start_server: StartServer, with_cgroups: None
) -> None:
    server = isolated(start_server, open_dir)
    python, _, _ = job_python()
    hog = "chunks = []\nwhile True:\n    chunks.append(b'x' * 16 * 1024**2)"  # 16 MiB at a time, written
    job_id = server.submit({"name": "hog", "command": [python, "-c", hog], "memory_gb": 0.25, "max_restarts": 2})
    job = server.wait(job_id, final)
    assert job["state"] == "failed" and job["failure_reason"] == "oom", server.logs(job_id)
    assert job["attempts"] == 1  # an OOM is not retried: the next attempt would hit the same limit
    assert "went over its memory limit (268435456 bytes" in server.logs(job_id)


def test_a_job_user_that_cannot_reach_the_data_dir_is_refused_at_start(root_only: None, tmp_path: Path) -> None:
    # pytest's temporary folders are 0700: the job user could not reach a job folder under them.
    argv = [sys.executable, "-m", "treino", "server", "--data-dir", str(tmp_path / "data"), "--devices", "cpu:1"]
    done = subprocess.run(
        [*argv, "--port", str(free_port())],
        capture_output=True,
        text=True,
        env=clean_env(COLUMNS="300"),
        timeout=SERVER_START_S,
        check=False,
    )
    assert done.returncode != 0
    assert f"The job user {DEFAULT_JOB_USER} cannot enter" in done.stderr and "To fix:" in done.stderr


def test_a_server_whose_jobs_run_as_itself_says_they_can_read_its_data_dir(start_server: StartServer) -> None:
    log = start_server().log()  # the harness names the test's own user as --job-user
    assert "jobs run as" in log and "To fix:" in log
    assert log.count("can read the data dir") == 1, log  # once, though the console and the log share the stream
    # The fix a root server can follow (it is root already); another user is told to start it as root
    fix = "leave out --job-user (jobs then run as" if os.geteuid() == 0 else "start the server as root (jobs then"
    assert fix in " ".join(log.split()), log


def test_v1_device_rules_allow_every_device_but_the_gpus_not_given() -> None:
    proc_devices = "Character devices:\n  1 mem\n195 nvidia-frontend\n236 nvidia-uvm\n\nBlock devices:\n  7 loop\n"
    assert cgroups.nvidia_device_rules((2,), proc_devices) == [
        "b *:* rwm",
        "c 1:* rwm",
        "c 236:* rwm",
        "c 195:2 rwm",
        "c 195:254 rwm",
        "c 195:255 rwm",
    ]


def test_the_job_user_cannot_plant_a_link_where_the_server_copies_datasets_and_ranks_get_whole_copies(
    open_dir: Path,
) -> None:
    """The copies' folder is the server's: a job that could put a symlink at the name the server (root) writes would
    have any file of the machine overwritten and handed to it. Eight ranks asking at once each get the whole file."""
    user = resolve_job_user(None)
    assert user is not None
    stored = open_dir / "store-file.parquet"
    stored.write_bytes(os.urandom(4 * 1024**2))
    job_dir = open_dir / "jobs" / "1"
    job_dir.mkdir(parents=True)
    job_dir.chmod(0o711)
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        copies = list(pool.map(lambda _: give_dataset(stored, job_dir, user), range(8)))
    assert len(set(copies)) == 1 and copies[0].read_bytes() == stored.read_bytes()
    info = copies[0].stat()
    assert (info.st_uid, stat.S_IMODE(info.st_mode)) == (user.uid, 0o400)
    assert [p.name for p in copies[0].parent.iterdir()] == [stored.name]  # no temporary file left behind
    victim = open_dir / "victim"
    victim.write_text("the server's")
    planted = subprocess.run(
        [
            "setpriv",
            f"--reuid={user.uid}",
            f"--regid={user.gid}",
            "--clear-groups",
            "ln",
            "-s",
            str(victim),
            str(copies[0].parent / f".{stored.name}.tmp"),
        ],
        capture_output=True,
        text=True,
    )
    assert planted.returncode != 0 and "Permission denied" in planted.stderr, planted
    assert victim.read_text() == "the server's"
