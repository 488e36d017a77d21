"""A real Slurm 22.05 for the cluster-mode tests, brought up by scripts/local_slurm.py (Debian's packages, no
systemd): `slurm_single` (one node, 2 fake GPUs, partitions gpu-sp1 and gpu-mia on it), `slurm_two_nodes` (two
slurmd in their own network namespaces, with their own addresses and hostnames) and `slurm_accounting` (one node
whose jobs slurmdbd records in a private MariaDB: `sacct` works).

Without root or the Slurm packages these tests are skipped, saying why; under CI=true they must run, so a missing
package fails them instead (.ci/run installs the packages).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.server.conftest import ServerProcess, Servers

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "local_slurm.py"
JOB_WAIT_S = 180.0  # a job through Slurm, including torch start-up on 2 busy cores
POLL_S = 0.2
UP_DOWN_LOCK = Path("/tmp/treino-local-slurm.lock")  # held while a cluster is up (one_at_a_time)


@dataclass
class Cluster:
    info: dict[str, Any]
    dir: Path

    @property
    def conf(self) -> str:
        return str(self.info["slurm_conf"])

    def slurm(self, *argv: str, check: bool = True) -> str:
        done = subprocess.run(list(argv), capture_output=True, text=True, env={**os.environ, "SLURM_CONF": self.conf})
        if check and done.returncode != 0:
            raise RuntimeError(f"{' '.join(argv)}: {done.stderr}")
        return done.stdout

    def script(self, *argv: str) -> str:
        done = subprocess.run(
            [sys.executable, str(SCRIPT), *argv, "--dir", str(self.dir)], capture_output=True, text=True
        )
        if done.returncode != 0:
            raise RuntimeError(f"local_slurm.py {' '.join(argv)}: {done.stdout}{done.stderr}")
        return done.stdout

    def cancel_all(self) -> None:
        self.slurm("scancel", "--user", os.environ.get("USER", "root"), check=False)


def why_no_slurm(accounting: bool = False) -> str | None:
    if os.geteuid() != 0:
        return "needs root (Slurm's daemons, fake GPU devices with mknod, network namespaces)"
    for tool in ("slurmctld", "slurmd", "sbatch", "munged", "nsenter"):
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} is not installed (apt-get install slurmctld slurmd slurm-client munge)"
    for tool in ("slurmdbd", "mariadbd", "mariadb-install-db") if accounting else ():
        if shutil.which(tool) is None and not Path(f"/usr/sbin/{tool}").exists():
            return f"{tool} is not installed (apt-get install slurmdbd mariadb-server, or {SCRIPT.name} install)"
    return None


@contextlib.contextmanager
def one_at_a_time() -> Iterator[None]:
    """One cluster at a time on this machine: `make test`'s two workers may reach tests/cluster's two files at once,
    and their timings (a node's death noticed, a requeue) assume a machine not also running the other cluster."""
    with open(UP_DOWN_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield


def bring_up_allowed(accounting: bool = False) -> None:
    """Skips (fails under CI=true) where this machine cannot run a cluster, saying why."""
    reason = why_no_slurm(accounting)
    if reason:
        if os.environ.get("CI") == "true":
            pytest.fail(f"cluster tests must run under CI=true, but: {reason}")
        pytest.skip(reason)


def bring_up(tmp: pytest.TempPathFactory, mode: str, extra: list[str]) -> Iterator[Cluster]:
    bring_up_allowed(accounting="--accounting" in extra)
    with one_at_a_time():
        yield from _up_and_down(tmp, mode, extra)


def _up_and_down(tmp: pytest.TempPathFactory, mode: str, extra: list[str]) -> Iterator[Cluster]:
    where = tmp.mktemp(f"slurm-{mode}")
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "up", "--dir", str(where), "--mode", mode, "--json", *extra],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        subprocess.run([sys.executable, str(SCRIPT), "down", "--dir", str(where)], capture_output=True)
        pytest.fail(f"local_slurm.py up --mode {mode} failed:\n{done.stdout}\n{done.stderr}")
    cluster = Cluster(json.loads(done.stdout), where)
    old = os.environ.get("SLURM_CONF")
    os.environ["SLURM_CONF"] = cluster.conf  # the servers the tests start inherit it, like any Slurm client
    try:
        yield cluster
    finally:
        cluster.cancel_all()
        subprocess.run([sys.executable, str(SCRIPT), "down", "--dir", str(where)], capture_output=True)
        if old is None:
            os.environ.pop("SLURM_CONF", None)
        else:
            os.environ["SLURM_CONF"] = old


@pytest.fixture(scope="module")
def slurm_single(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from bring_up(
        tmp_path_factory,
        "single",
        ["--gpus", "2", "--partition", "gpu-sp1", "--partition", "gpu-mia", "--port-base", "17817"],
    )


@pytest.fixture(scope="module")
def slurm_accounting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from bring_up(
        tmp_path_factory, "single", ["--gpus", "2", "--partition", "gpu-sp1", "--port-base", "18817", "--accounting"]
    )


@pytest.fixture(scope="module")
def slurm_two_nodes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    yield from bring_up(tmp_path_factory, "netns", ["--gpus", "1"])


@pytest.fixture
def servers(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[Servers]:
    s = Servers(tmp_path_factory)
    try:
        yield s
    finally:
        s.close()
        clear_queue()


def clear_queue(timeout_s: float = 60.0) -> None:
    """Every job the test left in the cluster cancelled, and gone from squeue, before the next test: a treino server
    that stops leaves its Slurm jobs running (a restarted server adopts them), so a test that timed out would
    otherwise hold the nodes the next test's jobs wait for (one CI failure became two that way)."""
    conf = os.environ.get("SLURM_CONF")
    if not conf:
        return
    env = {**os.environ, "SLURM_CONF": conf}
    subprocess.run(["scancel", "--user", os.environ.get("USER", "root")], capture_output=True, env=env)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        done = subprocess.run(["squeue", "--noheader", "--format=%i"], capture_output=True, text=True, env=env)
        if done.returncode == 0 and not done.stdout.strip():
            return
        time.sleep(POLL_S)


def slurm_state() -> str:
    """What Slurm says now (queue, nodes, the daemons' last log lines), for a timed-out wait's message: a timeout
    in these tests is the cluster's story as much as treino's."""
    conf = os.environ.get("SLURM_CONF")
    if not conf:
        return ""
    env = {**os.environ, "SLURM_CONF": conf}
    parts = []
    for argv in (["squeue", "--all", "--long"], ["sinfo", "--Node", "--long"], ["scontrol", "show", "job"]):
        done = subprocess.run(argv, capture_output=True, text=True, env=env)
        parts.append(f"$ {' '.join(argv)}\n{done.stdout}{done.stderr}")
    for log in sorted((Path(conf).parent / "log").glob("slurm*.log")):
        lines = log.read_text(errors="replace").splitlines()[-40:]
        parts.append(f"--- {log.name} (last {len(lines)} lines)\n" + "\n".join(lines))
    return "\n".join(parts)


def api(server: ServerProcess, method: str, path: str, token: str | None = None, **kw: Any) -> httpx.Response:
    headers = {"Authorization": f"Bearer {token or server.token}"}
    return httpx.request(method, server.url + path, headers=headers, timeout=30, **kw)


def wait_for(what: str, check: Any, timeout_s: float = JOB_WAIT_S, server: ServerProcess | None = None) -> Any:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(POLL_S)
    raise AssertionError(
        f"timed out after {timeout_s:g} s waiting for {what}"
        + (f"\n{server.log()}" if server else "")
        + f"\n{slurm_state()}"
    )


def job(server: ServerProcess, job_id: int) -> dict[str, Any]:
    r = api(server, "GET", f"/api/v1/jobs/{job_id}")
    assert r.status_code == 200, r.text
    return dict(r.json())


def wait_final(server: ServerProcess, job_id: int, timeout_s: float = JOB_WAIT_S) -> dict[str, Any]:
    try:
        final = wait_for(
            f"job {job_id} to end",
            lambda: (j := job(server, job_id))["state"] in ("succeeded", "failed", "cancelled") and j,
            timeout_s,
            server,
        )
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- job {job_id}: {job(server, job_id)}\n{logs(server, job_id)[-4000:]}") from None
    return dict(final)


def logs(server: ServerProcess, job_id: int, attempt: int | None = None) -> str:
    params = {"attempt": attempt} if attempt else {}
    r = api(server, "GET", f"/api/v1/jobs/{job_id}/logs", params=params)
    assert r.status_code == 200, r.text
    return str(r.json()["text"])
