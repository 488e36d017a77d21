"""`treino submit --wait | --follow` against a real server: the command ends with the job and exits with its outcome
(0 succeeded, 1 failed), the same with --json."""

from __future__ import annotations

import json
import re
from pathlib import Path

from tests.server.conftest import ServerProcess
from tests.server.test_cli_client import treino, write_spec


def test_submit_follow_streams_the_output_and_exits_0(shared: ServerProcess, tmp_path: Path) -> None:
    write_spec(
        tmp_path / "job.yaml",
        name="follow-me",
        command=["python", "-c", "import time; print('one', flush=True); time.sleep(1.5); print('two')"],
    )
    out = treino("submit", "job.yaml", "--follow", cwd=tmp_path, server=shared)
    assert out.returncode == 0, out.stderr
    found = re.fullmatch(
        r"Submitted job (\d+) \(follow-me\), queued\.\none\ntwo\nJob (\d+) \(follow-me\) succeeded\.\n", out.stdout
    )
    assert found and found[1] == found[2], out.stdout


def test_submit_wait_exits_1_when_the_job_fails(shared: ServerProcess, tmp_path: Path) -> None:
    write_spec(tmp_path / "job.yaml", name="fails", command=["python", "-c", "print('x'); raise SystemExit(3)"])
    out = treino("submit", "job.yaml", "--wait", cwd=tmp_path, server=shared)
    assert out.returncode == 1, out.stdout + out.stderr
    last = out.stdout.splitlines()[-1]
    assert re.fullmatch(r"Job \d+ \(fails\) failed.*\(exit code 3\)\.", last), out.stdout
    assert "x\n" not in out.stdout  # --wait alone does not print the job's output
    out = treino("submit", "job.yaml", "--wait", "--json", cwd=tmp_path, server=shared)
    assert out.returncode == 1, out.stderr
    assert json.loads(out.stdout)["state"] == "failed"  # one JSON document: the ended job
