"""`treino submit | jobs | show | logs | cancel` as users run them: real CLI subprocesses against a real server."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.server.conftest import ServerProcess, clean_env, free_port
from treino.cli.client import sparkline

CLI_TIMEOUT_S = 30


def treino(*args: str, cwd: Path, server: ServerProcess | None = None, **env: str) -> subprocess.CompletedProcess[str]:
    """`treino ARGS` in a clean environment: HOME and XDG_CONFIG_HOME under `cwd`, so no real config is read."""
    base = {"HOME": str(cwd / "home"), "XDG_CONFIG_HOME": str(cwd / "xdg"), "COLUMNS": "200"}
    if server is not None:
        base |= {"TREINO_URL": server.url, "TREINO_TOKEN": server.token}
    return subprocess.run(
        [sys.executable, "-m", "treino", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        env=clean_env(**(base | env)),
    )


def write_spec(path: Path, **spec: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(spec))
    return path


def submit(spec: Path, server: ServerProcess) -> int:
    out = treino("submit", spec.name, cwd=spec.parent, server=server)
    assert out.returncode == 0, out.stderr
    found = re.fullmatch(r"Submitted job (\d+) \(.+\), queued\.\n", out.stdout)
    assert found, out.stdout
    return int(found[1])


def wait_state(server: ServerProcess, job_id: int, states: set[str], timeout_s: float = 15) -> dict[str, object]:
    deadline = time.monotonic() + timeout_s
    with server.client() as http:
        while True:
            job = http.get(f"/api/v1/jobs/{job_id}").json()
            if job["state"] in states or time.monotonic() > deadline:
                return job
            time.sleep(0.1)


def test_submit_list_follow_show(shared: ServerProcess, tmp_path: Path) -> None:
    # A relative spec path from another directory: workdir becomes the spec file's directory.
    write_spec(
        tmp_path / "proj" / "job.yaml",
        name="hello",
        command=["python", "-c", "import os, time; print('hello'); print(os.getcwd()); time.sleep(0.5)"],
    )
    out = treino("submit", "proj/job.yaml", cwd=tmp_path, server=shared)
    assert out.returncode == 0 and out.stderr == ""
    found = re.fullmatch(r"Submitted job (\d+) \(hello\), queued\.\n", out.stdout)
    assert found, out.stdout
    job_id = found[1]

    out = treino("jobs", cwd=tmp_path, server=shared)
    assert out.returncode == 0, out.stderr
    row = next(line for line in out.stdout.splitlines() if "hello" in line).split("│")
    assert row[1].strip() == job_id and row[3].strip() in ("queued", "running", "succeeded")

    out = treino("logs", job_id, "-f", cwd=tmp_path, server=shared)
    assert (out.returncode, out.stdout) == (0, f"hello\n{tmp_path / 'proj'}\n"), out.stderr

    out = treino("show", job_id, "--json", cwd=tmp_path, server=shared)
    job = json.loads(out.stdout)
    assert (job["state"], job["exit_code"], job["spec"]["workdir"]) == ("succeeded", 0, str(tmp_path / "proj"))
    assert [(a["number"], a["outcome"]) for a in job["history"]] == [(1, "succeeded")]

    with shared.client() as http:  # a user token may post metrics too: the loss curve `show` draws
        points = [{"step": s, "time": 1000.0 + s, "values": {"loss": loss}} for s, loss in enumerate([4, 3, 2, 1])]
        assert http.post(f"/api/v1/jobs/{job_id}/metrics", json={"points": points}).status_code == 204
    out = treino("show", job_id, cwd=tmp_path, server=shared)
    assert out.returncode == 0, out.stderr
    assert f"Job {job_id} (hello)" in out.stdout and "succeeded" in out.stdout
    assert "loss  █▆▃▁" in out.stdout and "first 4 · last 1 · min 1 over 4 point(s)" in out.stdout


def test_logs_follow_moves_on_to_the_next_attempt(shared: ServerProcess, tmp_path: Path) -> None:
    # Attempt 1 prints, waits until `logs -f` has shown its line (so it is following attempt 1, however slow the
    # machine) and crashes; attempt 2 prints and succeeds.
    go = tmp_path / "go"
    code = "import os, sys, time; a = os.environ['TREINO_ATTEMPT']; print('attempt', a, flush=True); "
    code += f"t = time.time() + 60\nwhile a == '1' and not os.path.exists({str(go)!r}) and time.time() < t: "
    code += "time.sleep(0.05)\nsys.exit(a == '1')"
    spec = write_spec(tmp_path / "retry.yaml", name="retry", command=["python", "-c", code], max_restarts=1)
    job_id = str(submit(spec, shared))
    base = {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "xdg"), "COLUMNS": "200"}
    env = clean_env(**base, TREINO_URL=shared.url, TREINO_TOKEN=shared.token)
    argv = [sys.executable, "-m", "treino", "logs", job_id, "--follow"]
    pipes = {"stdout": subprocess.PIPE, "stderr": subprocess.PIPE}
    with subprocess.Popen(argv, cwd=tmp_path, env=env, text=True, **pipes) as cli:
        assert cli.stdout is not None
        first = cli.stdout.readline()
        go.touch()
        rest, err = cli.communicate(timeout=CLI_TIMEOUT_S)
    assert (cli.returncode, first + rest) == (0, "attempt 1\n--- attempt 2 ---\nattempt 2\n"), err
    out = treino("logs", job_id, "--attempt", "1", cwd=tmp_path, server=shared)
    assert out.stdout == "attempt 1\n"
    out = treino("logs", job_id, "--attempt", "3", cwd=tmp_path, server=shared)
    assert out.returncode == 1 and f"Job {job_id} has 2 attempt(s), not 3" in out.stderr


def test_invalid_spec_lists_each_field(shared: ServerProcess, tmp_path: Path) -> None:
    write_spec(tmp_path / "bad.yaml", name="bad name", command=["true"], gpus=0, colour="red")
    out = treino("submit", "bad.yaml", cwd=tmp_path, server=shared)
    assert out.returncode == 1 and out.stdout == ""
    assert "Traceback" not in out.stderr
    lines = out.stderr.splitlines()
    assert lines[0] == "error: The server refused the job spec bad.yaml (422):"
    assert "  name: String should match pattern '^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$'" in lines
    assert "  gpus: Input should be greater than or equal to 1" in lines
    colour = next(line for line in lines if line.startswith("  colour: "))  # pydantic's words, then the keys
    assert colour.startswith(
        "  colour: Extra inputs are not permitted. To fix: remove it, or use one of the keys 'name'"
    )
    write_spec(tmp_path / "big.yaml", name="big", command=["true"], gpus=3)
    out = treino("submit", "big.yaml", cwd=tmp_path, server=shared)
    assert out.returncode == 1 and "  gpus: asks for 3 but this server has 2" in out.stderr


def test_missing_token_says_where_to_get_it(tmp_path: Path) -> None:
    out = treino("jobs", cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    message = " ".join(out.stderr.split())
    assert message.startswith("error: No API token for http://127.0.0.1:8765.")
    assert "admin-token" in message and "--token" in message and "TREINO_TOKEN" in message
    assert str(tmp_path / "xdg" / "treino" / "config.yaml") in message


def test_no_server_at_url(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    out = treino("show", "1", "--url", url, "--token", "trn_x", cwd=tmp_path)
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert " ".join(out.stderr.split()) == (
        f"error: No treino server at {url}. To fix: start one with 'treino server' or pass --url."
    )


def test_cancel_a_running_job(shared: ServerProcess, tmp_path: Path) -> None:
    spec = write_spec(tmp_path / "long.yaml", name="long", command=["sleep", "60"], grace_seconds=2)
    job_id = submit(spec, shared)
    assert wait_state(shared, job_id, {"running"})["state"] == "running"
    out = treino("cancel", str(job_id), cwd=tmp_path, server=shared)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith(f"Cancelling job {job_id} (long): SIGTERM sent, SIGKILL after 2 s.")
    job = wait_state(shared, job_id, {"cancelled", "failed", "succeeded"})
    assert job["state"] == "cancelled" and [a["outcome"] for a in job["history"]] == ["cancel"]  # type: ignore[attr-defined]
    out = treino("cancel", str(job_id), cwd=tmp_path, server=shared)
    assert (out.returncode, out.stderr) == (1, f"error: Job {job_id} is already cancelled; nothing to cancel.\n")
    out = treino("show", "999", cwd=tmp_path, server=shared)
    assert (out.returncode, out.stderr) == (1, "error: No job 999. To fix: list jobs with 'treino jobs'.\n")


def test_url_and_token_resolution_order(shared: ServerProcess, tmp_path: Path) -> None:
    with shared.client() as http:
        listed = [j["id"] for j in http.get("/api/v1/jobs").json()["jobs"]]
    config = tmp_path / "xdg" / "treino" / "config.yaml"
    config.parent.mkdir(parents=True)
    config.write_text(yaml.safe_dump({"url": shared.url, "token": shared.token}))
    out = treino("jobs", "--json", cwd=tmp_path)  # the config file alone
    assert out.returncode == 0, out.stderr
    assert [j["id"] for j in json.loads(out.stdout)] == listed
    dead = f"http://127.0.0.1:{free_port()}"
    out = treino("jobs", cwd=tmp_path, TREINO_URL=dead)  # the environment beats the file
    assert out.returncode == 1 and f"No treino server at {dead}" in out.stderr
    out = treino("jobs", "--json", "--url", shared.url, cwd=tmp_path, TREINO_URL=dead)  # an option beats both
    assert out.returncode == 0, out.stderr
    out = treino("jobs", cwd=tmp_path, TREINO_TOKEN="trn_wrong")
    assert (out.returncode, out.stderr) == (
        1,
        "error: Invalid, expired or revoked token. To fix: use a valid API token.\n",
    )


@pytest.mark.parametrize(("values", "line"), [([], ""), ([2.0, 2.0], "▄▄"), ([3.0, 2.0, 1.0], "█▅▁")])
def test_sparkline(values: list[float], line: str) -> None:
    assert sparkline(values) == line


def test_sparkline_averages_long_series_into_60_characters() -> None:
    drawn = sparkline([float(i) for i in range(600)])
    assert len(drawn) == 60 and drawn[0] == "▁" and drawn[-1] == "█" and list(drawn) == sorted(drawn)
