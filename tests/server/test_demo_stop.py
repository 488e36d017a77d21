"""`make demo` leaves a server running with the example job on it; `scripts/demo_dashboard.py --stop` must stop both:
a server stopped alone leaves its running jobs to their supervisors (as a restart should), so the demo's stop
cancels the job first and waits for the server to exit. Real processes, in a demo folder of the test's own."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from tests.server.conftest import clean_env
from tests.server.test_jobs import job_pids

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "demo_dashboard.py"


def demo(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = clean_env(TREINO_DEMO_DIR=str(folder))
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=150)


def running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_the_demos_stop_ends_its_job_and_its_server(tmp_path: Path) -> None:
    folder = tmp_path / "demo"
    started = demo(folder)
    assert started.returncode == 0, started.stdout + started.stderr
    url, pid = (folder / "server.url").read_text(), int((folder / "server.pid").read_text())
    try:
        deadline = time.monotonic() + 60
        while not (pids := job_pids(url, 1)) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert pids, (folder / "server.log").read_text()  # the example job's processes, training
        stopped = demo(folder, "--stop")
        assert stopped.returncode == 0 and "Stopped the demo's server and its jobs" in stopped.stdout, stopped.stderr
        assert not running(pid), "the demo's server still runs"
        assert [p for p in pids if running(p)] == [] and job_pids(url, 1) == []  # nothing of the job is left
        assert not (folder / "server.pid").exists() and (folder / "data").is_dir()  # its data kept
    finally:
        subprocess.run(["kill", "-9", str(pid), *map(str, job_pids(url, 1))], capture_output=True)
