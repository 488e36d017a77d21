"""Tracker bridges end to end (treino.trackers, treino.server.trackers): a real server runs a real torchrun job with
`trackers: [tensorboard, mlflow, wandb]`; what it wrote is read back with each library's own reader (TensorBoard's
EventAccumulator, MLflow's client on the file store, W&B's record protobufs from the offline run file). The job
watches its own sockets (a Python audit hook) and every HTTP client is pointed at a trap proxy: nothing may reach
for the network. Submits naming an unknown tracker, or one the job's Python lacks, are refused with 422.

The database plays no part here: these tests run on SQLite only."""

from __future__ import annotations

import contextlib
import json
import os
import pwd
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import textwrap
import time
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Database
from tests.server.conftest import Servers
from tests.server.test_jobs import Server, final
from treino.server import cgroups
from treino.server.settings import DEFAULT_JOB_USER

LOSSES = [1.0 / step for step in range(1, 6)]  # what the job logs at steps 1..5
HPARAMS = {"lr": 0.001, "layers": 2, "tied": True, "optim": {"name": "adamw", "beta2": 0.95}}

# The job: 2 processes under torchrun, each logging (only rank 0 may write), a hook recording every non-local
# address any code in the process tries to resolve or connect to.
JOB = textwrap.dedent(
    """
    import json, os, socket, sys
    for marker in ("PYTEST_CURRENT_TEST", "CI", "GITHUB_ACTIONS"):  # run as in production: libraries that stay
        os.environ.pop(marker, None)                                 # quiet under tests or CI must not be
    attempts = []
    def watch(event, args):
        if event == "socket.getaddrinfo":
            host = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
            if host not in ("127.0.0.1", "localhost", "::1", "None"):
                attempts.append(f"resolve {host}")
        elif event == "socket.connect":
            family, address = args[0].family, args[1]
            if family in (socket.AF_INET, socket.AF_INET6) and address[0] not in ("127.0.0.1", "::1"):
                attempts.append(f"connect {address}")
    sys.addaudithook(watch)

    from treino import job
    run = job.init()
    run.config(**json.loads(sys.argv[1]))
    for step, loss in enumerate(json.loads(sys.argv[2]), start=1):
        run.log(step=step, loss=loss, **({"grad_norm": float("nan")} if step == 3 else {}))
    run.finish()
    out = os.path.join(sys.argv[3], f"network-rank{os.environ['RANK']}.json")
    with open(out, "w") as f:
        json.dump(attempts, f)
    print("trained", os.environ["RANK"])
    """
)


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    servers = Servers(tmp_path_factory, Database())  # SQLite: the database plays no part here
    try:
        yield Server(servers.start())
    finally:
        servers.close()


@pytest.fixture
def trap() -> Iterator[socket.socket]:
    """A listening socket every HTTP client of the job is sent to as its proxy: a connection to it is a leak."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        listener.listen(8)
        listener.setblocking(False)
        yield listener


def connections(listener: socket.socket) -> int:
    count = 0
    while True:
        try:
            listener.accept()[0].close()
        except BlockingIOError:
            return count
        count += 1


def wandb_records(run_file: Path) -> Iterator[Any]:
    """The records of a W&B offline run file, parsed with W&B's own protobufs. The file is a LevelDB-style log
    (W&B's datastore): a 7-byte header (':W&B', magic, version), then 32 KiB blocks of chunks, each with a 7-byte
    header (CRC-32 of type and data, length, type: 1 full, 2 first, 3 middle, 4 last)."""
    from wandb.proto import wandb_internal_pb2

    data = run_file.read_bytes()
    assert data[:4] == b":W&B"
    block, pos, pending = 32 * 1024, 7, b""
    while pos + 7 <= len(data):
        if block - pos % block < 7:  # a block's tail too short for a header is padding
            pos += block - pos % block
            continue
        crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunk = data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind == 0:
            continue
        assert zlib.crc32(chunk, zlib.crc32(bytes([kind]))) == crc, f"{run_file}: a corrupt chunk at {pos}"
        pending = chunk if kind in (1, 2) else pending + chunk
        if kind in (1, 4):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(pending)
            yield record


def test_a_job_writes_every_tracker_and_reaches_for_no_network(
    server: Server, trap: socket.socket, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "train.py"
    script.write_text(JOB)
    proxy = f"http://127.0.0.1:{trap.getsockname()[1]}"
    job_id = server.submit(
        {
            "name": "tracked",
            "script": str(script),
            "args": [json.dumps(HPARAMS), json.dumps(LOSSES), str(tmp_path)],
            "gpus": 2,
            "trackers": ["tensorboard", "mlflow", "wandb"],
            "env": {"OMP_NUM_THREADS": "1", "HTTP_PROXY": proxy, "HTTPS_PROXY": proxy, "https_proxy": proxy},
        }
    )
    job = server.wait(job_id, final, timeout_s=180)
    logs = server.logs(job_id)
    assert job["state"] == "succeeded", logs
    assert "treino:" not in logs  # no tracker warned, failed or was skipped
    folder = server.data_dir / "jobs" / str(job_id) / "trackers"

    # the hyperparameters, as given
    assert json.loads((folder / "config.json").read_text()) == HPARAMS

    # TensorBoard: one event file (rank 0's), the scalars and the hparams plugin's session
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import plugin_data_pb2

    assert len(list((folder / "tensorboard").glob("events.out.tfevents.*"))) == 1
    events = EventAccumulator(str(folder / "tensorboard"))
    events.Reload()
    assert [(e.step, e.value) for e in events.Scalars("loss")] == [
        (step, pytest.approx(loss, rel=1e-6)) for step, loss in enumerate(LOSSES, start=1)
    ]
    [nan] = events.Scalars("grad_norm")
    assert nan.step == 3 and nan.value != nan.value
    session = plugin_data_pb2.HParamsPluginData.FromString(
        events.PluginTagToContent("hparams")["_hparams_/session_start_info"]
    ).session_start_info
    assert {k: v.WhichOneof("kind") for k, v in session.hparams.items()} == {
        "lr": "number_value",
        "layers": "number_value",
        "tied": "bool_value",
        "optim.name": "string_value",
        "optim.beta2": "number_value",
    }
    assert session.hparams["lr"].number_value == 0.001 and session.hparams["optim.name"].string_value == "adamw"

    # MLflow: one run in the file store, tagged with the job
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=(folder / "mlflow").as_uri())
    experiment = client.get_experiment_by_name("treino")
    assert experiment is not None
    [run] = client.search_runs([experiment.experiment_id])
    assert run.info.run_name == f"job-{job_id}" and run.info.status == "FINISHED"
    assert run.data.tags["treino.job_id"] == str(job_id)
    assert run.data.params == {
        "lr": "0.001",
        "layers": "2",
        "tied": "True",
        "optim.name": "adamw",
        "optim.beta2": "0.95",
    }
    history = client.get_metric_history(run.info.run_id, "loss")
    assert [(m.step, m.value) for m in history] == list(enumerate(LOSSES, start=1))

    # W&B: one offline run (rank 0's) under the job's id, its history and config
    [run_file] = (folder / "wandb").glob("offline-run-*/run-*.wandb")
    records = list(wandb_records(run_file))
    [header] = [r.run for r in records if r.WhichOneof("record_type") == "run"]
    assert header.run_id == f"treino-job-{job_id}" and header.display_name == f"job-{job_id}"
    history_rows = [
        {i.key or ".".join(i.nested_key): json.loads(i.value_json) for i in r.history.item}
        for r in records
        if r.WhichOneof("record_type") == "history"
    ]
    assert [(row["_step"], row["loss"]) for row in history_rows] == list(enumerate(LOSSES, start=1))
    config: dict[str, Any] = {}
    for r in records:
        if r.WhichOneof("record_type") == "config":
            config.update({i.key or ".".join(i.nested_key): json.loads(i.value_json) for i in r.config.update})
    assert {k: config[k] for k in ("lr", "layers", "tied", "optim.name")} == {
        "lr": 0.001,
        "layers": 2,
        "tied": True,
        "optim.name": "adamw",
    }

    # no network: neither rank resolved or connected to anything off this machine, and no client used the proxy
    for rank in (0, 1):
        assert json.loads((tmp_path / f"network-rank{rank}.json").read_text()) == []
    assert connections(trap) == 0


def test_a_restarted_job_goes_on_in_the_same_mlflow_run_and_wandb_id(
    server: Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, sys
            from treino import job
            run = job.init()
            run.config(lr=0.1)
            attempt = int(os.environ["TREINO_ATTEMPT"])
            for step in (1, 2) if attempt == 1 else (3, 4):
                run.log(step=step, loss=float(step))
            run.finish()
            sys.exit(1 if attempt == 1 else 0)  # the first attempt crashes after its steps
            """
        )
    )
    job_id = server.submit(
        {"name": "again", "command": [sys.executable, str(script)], "max_restarts": 1, "trackers": ["mlflow", "wandb"]}
    )
    job = server.wait(job_id, final)
    assert job["state"] == "succeeded" and job["attempts"] == 2, server.logs(job_id)
    folder = server.data_dir / "jobs" / str(job_id) / "trackers"
    monkeypatch.setenv("MLFLOW_ALLOW_FILE_STORE", "true")
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=(folder / "mlflow").as_uri())
    [run] = client.search_runs([client.get_experiment_by_name("treino").experiment_id])
    assert [(m.step, m.value) for m in client.get_metric_history(run.info.run_id, "loss")] == [
        (1, 1.0),
        (2, 2.0),
        (3, 3.0),
        (4, 4.0),
    ]
    assert run.data.params == {"lr": "0.1"} and run.info.status == "FINISHED"
    run_files = sorted((folder / "wandb").glob("offline-run-*/run-*.wandb"))
    assert len(run_files) == 2  # one per attempt, under the one id `wandb sync` merges
    assert {f.name for f in run_files} == {f"run-treino-job-{job_id}.wandb"}


def test_the_default_is_tensorboard_and_an_empty_list_turns_it_off(server: Server, tmp_path: Path) -> None:
    script = tmp_path / "train.py"
    script.write_text(
        "from treino import job\nrun = job.init()\nrun.config(lr=0.5)\nrun.log(step=1, loss=2.0)\nrun.finish()\n"
    )
    command = [sys.executable, str(script)]
    default = server.submit({"name": "default", "command": command})
    off = server.submit({"name": "off", "command": command, "trackers": []})
    for job_id in (default, off):
        assert server.wait(job_id, final)["state"] == "succeeded", server.logs(job_id)
    default_dir = server.data_dir / "jobs" / str(default) / "trackers"
    off_dir = server.data_dir / "jobs" / str(off) / "trackers"
    assert sorted(p.name for p in default_dir.iterdir()) == ["config.json", "tensorboard"]
    assert len(list((default_dir / "tensorboard").glob("events.out.tfevents.*"))) == 1
    assert sorted(p.name for p in off_dir.iterdir()) == ["config.json"]  # the hparams, and no tracker
    assert json.loads((off_dir / "config.json").read_text()) == {"lr": 0.5}


def test_a_tracker_the_jobs_python_lacks_or_an_unknown_one_is_refused_at_submit(server: Server, tmp_path: Path) -> None:
    # A Python of its own, without tracker packages (the server's own has all three)
    bare = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(bare)], check=True)
    python = bare / "bin" / "python"
    launcher = tmp_path / "launch"  # a console script, as torchrun is: its Python is on its "#!" line
    launcher.write_text(f"#!{python}\nprint('launched')\n")
    launcher.chmod(0o755)

    def submit(spec: dict[str, Any]) -> Any:
        return server.api("POST", "/api/v1/jobs", json={"name": "t", **spec})

    for command in ([str(python), "-c", "pass"], [str(launcher)]):
        r = submit({"command": command, "trackers": ["tensorboard", "wandb"]})
        assert r.status_code == 422, r.text
        [error] = r.json()["detail"]
        assert error["field"] == "trackers"
        assert f"the job's Python {python} cannot import tensorboard, wandb" in error["message"]
        assert "To fix: pip install 'tensorboard>=2.17' 'wandb>=0.19.10'" in error["message"]

    # the server's own Python has them; and without `trackers` nothing is checked
    assert submit({"command": [sys.executable, "-c", "pass"], "trackers": ["wandb"]}).status_code == 201
    assert submit({"command": [str(python), "-c", "pass"]}).status_code == 201

    # PYTHONPATH in the spec's env is the job's too: a package found there counts
    shim = tmp_path / "shim" / "tensorboard"
    shim.mkdir(parents=True)
    (shim / "__init__.py").write_text("")
    spec = {"command": [str(python), "-c", "pass"], "trackers": ["tensorboard"]}
    assert submit(spec).status_code == 422
    assert submit({**spec, "env": {"PYTHONPATH": str(shim.parent)}}).status_code == 201

    r = submit({"command": ["true"], "trackers": ["wandbb"]})
    assert r.status_code == 422
    assert r.json()["detail"][0]["field"] == "trackers"
    assert "no tracker 'wandbb' (did you mean 'wandb'?)" in r.json()["detail"][0]["message"]
    r = submit({"command": ["true"], "trackers": ["mlflow", "mlflow"]})
    assert r.status_code == 422 and "twice" in r.text


def test_the_check_runs_as_the_job_user_never_as_the_server(tmp_path_factory: pytest.TempPathFactory) -> None:
    """A submitter picks the Python and its environment: a root server must not run them as root."""
    if os.geteuid() != 0:
        pytest.skip("only a root server switches to a job user")
    folder = Path(tempfile.mkdtemp(prefix="treino-trackers-"))  # not pytest's 0700 tmp: the job user runs from it
    try:
        folder.chmod(0o755)
        fake = folder / "python"  # named like a Python: the check runs it as the job's interpreter
        fake.write_text(f"#!/bin/sh\nid -u > {folder}/uid\necho '[\"wandb\"]'\n")
        fake.chmod(0o755)
        (folder / "uid").touch(mode=0o666)
        (folder / "uid").chmod(0o666)
        servers = Servers(tmp_path_factory, Database())
        try:
            server = Server(servers.start(data_dir=folder / "data", job_user=None))  # the job user: treino-job
            r = server.api("POST", "/api/v1/jobs", json={"name": "t", "command": [str(fake)], "trackers": ["wandb"]})
        finally:
            servers.close()
        assert r.status_code == 422 and "cannot import wandb" in r.text, r.text
        assert int((folder / "uid").read_text()) == pwd.getpwnam(DEFAULT_JOB_USER).pw_uid != 0
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def shared_folder() -> Iterator[Path]:
    """A folder the job user can read and run from (pytest's tmp is 0700)."""
    folder = Path(tempfile.mkdtemp(prefix="treino-trackers-"))
    folder.chmod(0o755)
    try:
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def test_the_check_runs_apart_from_the_job_s_folder_and_loader(server: Server, shared_folder: Path) -> None:
    workdir = shared_folder / "work"
    (workdir / "lib").mkdir(parents=True)
    (workdir / "json.py").write_text("raise SystemExit('the job folder shadowed the standard library')\n")
    # A json.py in the job's folder shadows nothing of the check: it runs elsewhere.
    spec = {"name": "t", "command": [sys.executable, "-c", "pass"], "trackers": ["tensorboard"]}
    r = server.api("POST", "/api/v1/jobs", json={**spec, "workdir": str(workdir)})
    assert r.status_code == 201, r.text
    server.wait(int(r.json()["id"]), final)

    # What the check's Python gets: no loader variables nor the spec's PATH, PYTHONPATH resolved against the job's
    # folder, an empty working directory of its own.
    spy = shared_folder / "python"
    record = f"env > {shared_folder}/env && pwd > {shared_folder}/cwd && ls -A > {shared_folder}/ls"
    spy.write_text(f'#!/bin/sh\n[ "$1" = -c ] && {record}\necho "[]"\n')  # the check runs it with -c, the job without
    spy.chmod(0o755)
    env = {"LD_PRELOAD": "/nonexistent/preload.so", "PATH": f"/elsewhere:{os.defpath}", "PYTHONPATH": "lib"}
    r = server.api("POST", "/api/v1/jobs", json={**spec, "command": [str(spy)], "workdir": str(workdir), "env": env})
    assert r.status_code == 201, r.text
    server.wait(int(r.json()["id"]), final)
    seen = dict(line.split("=", 1) for line in (shared_folder / "env").read_text().splitlines() if "=" in line)
    assert "LD_PRELOAD" not in seen and seen["PATH"] == os.defpath
    assert seen["PYTHONPATH"] == str(workdir / "lib")
    cwd = Path((shared_folder / "cwd").read_text().strip())
    assert cwd != workdir and (shared_folder / "ls").read_text() == "" and not cwd.exists()  # removed after


def _alive(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def test_nothing_the_check_starts_outlives_it(server: Server, shared_folder: Path) -> None:
    if os.geteuid() != 0 or cgroups.detect() is None:
        pytest.skip("the check's cgroup needs a root server with cgroups")
    daemon = shared_folder / "daemon"
    python = shared_folder / "python"  # a probe that leaves a process in a session of its own, holding its output
    python.write_text(
        '#!/bin/sh\n[ "$1" = -c ] || exit 0\n'  # the check runs it with -c; the job itself, without
        f"setsid sh -c 'echo $$ > {daemon}; exec sleep 300' &\n"
        f"while [ ! -s {daemon} ]; do sleep 0.05; done\n"
        "echo '[]'\n"
    )
    python.chmod(0o755)
    r = server.api("POST", "/api/v1/jobs", json={"name": "t", "command": [str(python)], "trackers": ["wandb"]})
    pid = int(daemon.read_text())
    try:
        assert r.status_code == 201, r.text  # answered once the probe exited, not when its straggler let go
        deadline = time.monotonic() + 30
        while _alive(pid):
            assert time.monotonic() < deadline, f"the probe's straggler {pid} survived the check"
            time.sleep(0.1)
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    assert server.wait(int(r.json()["id"]), final)


def test_a_launcher_s_python_is_read_from_regular_files_only(tmp_path: Path) -> None:
    from treino.server.trackers import _shebang_python

    launcher = tmp_path / "launch"
    launcher.write_text("#!/opt/venv/bin/python3\n")
    (tmp_path / "linked").symlink_to(launcher)  # a console script linked onto PATH: its target's line counts
    assert _shebang_python(tmp_path / "linked", {}, tmp_path) == Path("/opt/venv/bin/python3")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: a blocking open would wait forever
    assert _shebang_python(fifo, {}, tmp_path) is None
    assert _shebang_python(Path("/dev/zero"), {}, tmp_path) is None
