"""A spec's `trackers`, checked at submit against the Python the job will run in (treino.trackers writes them).

A tracker whose package the job's Python cannot find would only be skipped with a warning deep in the job's log;
`check` refuses the spec instead (SpecError on `trackers`, 422, with the pip command that fixes it). Which Python:

    script: train.py                       the server's Python (Settings.python), as the engine runs it
    command: [python3, -m, pkg.train]      argv[0] when it is a Python (python, python3, python3.12, ...)
    command: [torchrun, ...]               the interpreter of argv[0]'s "#!" line (console scripts: torchrun,
                                           accelerate, deepspeed), found on the job's PATH as the kernel would
    command: [anything else]               the server's Python (the best guess; the job still warns at run time)

It runs `python -c` as the job would: as the job's user (never as the server, which may be root: the submitter chose
this Python and its environment), with the job's environment (the server's, then the spec's `env`: PYTHONPATH
counts), in the job's working directory, in its own process group killed after TRACKER_CHECK_TIMEOUT_S, asking
importlib.util.find_spec for each package: found, not imported (importing wandb and mlflow takes seconds). Only
an explicit `trackers` is checked: the default (TensorBoard) is skipped at run time with one info line when it is
missing. On a Slurm cluster the nodes are assumed to run the same Python (a shared file system, as for `script`
jobs).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import select
import shutil
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from treino import trackers as bridges
from treino.errors import SpecError
from treino.server.isolation import JobUser
from treino.server.service import _base_env as job_base_env
from treino.server.settings import TRACKER_CHECK_OUTPUT_BYTES_MAX, TRACKER_CHECK_TIMEOUT_S, Settings
from treino.server.spec import JobSpec

_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?$")
_SHEBANG_BYTES_MAX = 512  # what the kernel reads of a "#!" line (BINPRM_BUF_SIZE is 256; some scripts wrap)
# Prints the packages among argv[1:] this Python cannot find, as a JSON list.
_PROBE = (
    "import importlib.util, json, sys; "
    "print(json.dumps([m for m in sys.argv[1:] if importlib.util.find_spec(m) is None]))"
)


def job_python(spec: JobSpec, settings: Settings, env: dict[str, str], cwd: Path) -> str:
    """The Python interpreter the job's processes will run (see the module docstring)."""
    if spec.command is None:
        return settings.python
    program = _which(spec.command[0], env, cwd)
    if program is None:
        return settings.python
    if _PYTHON_NAME.match(program.name):
        return str(program)
    interpreter = _shebang_python(program, env, cwd)
    return str(interpreter) if interpreter is not None else settings.python


def _which(name: str, env: dict[str, str], cwd: Path) -> Path | None:
    if "/" in name:
        path = cwd / name
        return path if path.is_file() else None
    found = shutil.which(name, path=env.get("PATH", os.defpath))
    return Path(found) if found else None


def _shebang_python(program: Path, env: dict[str, str], cwd: Path) -> Path | None:
    """The Python of a script's "#!" line (`#!/venv/bin/python3`, `#!/usr/bin/env python3`), or None."""
    if not program.is_file():  # a FIFO would block the read
        return None
    try:
        with program.open("rb") as f:
            head = f.read(_SHEBANG_BYTES_MAX)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]  # `env -S python3 -u`
        return _which(words[0], env, cwd) if words and _PYTHON_NAME.match(words[0]) else None
    if words and _PYTHON_NAME.match(Path(words[0]).name):
        return Path(words[0])
    return None


def check(spec: JobSpec, settings: Settings) -> None:
    """SpecError (422) when the job's Python cannot find the package of a tracker its spec names."""
    if not spec.trackers:
        return
    env = {**job_base_env(), **spec.env}  # as the engine gives the job's processes, less the TREINO_ variables
    user = settings.job_user
    if user is not None:  # as the job user, never as the server: the submitter chose this Python and its env
        env.update({"HOME": str(settings.jobs_dir), "USER": user.name, "LOGNAME": user.name})
    cwd = Path(spec.workdir) if spec.workdir and Path(spec.workdir).is_dir() else settings.data_dir
    python = job_python(spec, settings, env, cwd)
    modules = {bridges.PACKAGES[name][0]: name for name in spec.trackers}
    try:
        returncode, output = _run_bounded([python, "-c", _PROBE, *modules], env, cwd, user)
    except subprocess.TimeoutExpired:
        raise SpecError(
            "trackers",
            f"the job's Python {python} did not say within {TRACKER_CHECK_TIMEOUT_S:g} s whether it has the "
            f"trackers' packages ({', '.join(modules)}). To fix: check that '{python} -c pass' starts, or drop "
            "'trackers' from the spec.",
        ) from None
    except OSError as exc:
        raise SpecError(
            "trackers",
            f"cannot run the job's Python {python} to check the trackers' packages ({exc.strerror}). To fix: install "
            "Python there (readable by the job's user), or drop 'trackers' from the spec.",
        ) from exc
    missing_modules = _answer(output) if returncode == 0 else None
    if missing_modules is None:
        raise SpecError(
            "trackers",
            f"the job's Python {python} failed to check the trackers' packages (exit {returncode}: "
            f"{output.decode(errors='replace').strip()[-500:]}). To fix: check that Python, or drop 'trackers' "
            "from the spec.",
        )
    missing = [modules[m] for m in missing_modules if m in modules]
    if missing:
        raise SpecError(
            "trackers",
            f"the job's Python {python} cannot import {', '.join(bridges.PACKAGES[n][0] for n in missing)}, which "
            f"the tracker(s) {', '.join(missing)} need. To fix: {bridges.pip_hint(missing)} with that Python "
            "(\"pip install 'treino[trackers]'\" brings all three), or drop them from 'trackers'.",
        )


def _answer(output: bytes) -> list[str] | None:
    """The probe's JSON list: its last line that is one (a sitecustomize may print before it)."""
    for line in reversed(output.decode(errors="replace").splitlines()):
        try:
            answer = json.loads(line)
        except ValueError:
            continue
        if isinstance(answer, list) and all(isinstance(m, str) for m in answer):
            return answer
    return None


def _run_bounded(argv: list[str], env: dict[str, str], cwd: Path, user: JobUser | None) -> tuple[int, bytes]:
    """(exit status, stdout and stderr) of `argv`, in its own process group, as `user` with no supplementary
    groups; at most TRACKER_CHECK_OUTPUT_BYTES_MAX are kept (the rest is drained), and the group is killed after
    TRACKER_CHECK_TIMEOUT_S (TimeoutExpired)."""
    as_user: dict[str, Any] = {} if user is None else {"user": user.uid, "group": user.gid, "extra_groups": []}
    deadline = time.monotonic() + TRACKER_CHECK_TIMEOUT_S
    with subprocess.Popen(
        argv,
        env=env,
        cwd=cwd,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
        **as_user,
    ) as proc:
        assert proc.stdout is not None
        output = bytearray()
        try:
            while True:
                remaining_s = deadline - time.monotonic()
                if remaining_s <= 0:
                    raise subprocess.TimeoutExpired(argv, TRACKER_CHECK_TIMEOUT_S)
                ready, _, _ = select.select([proc.stdout], [], [], remaining_s)
                if not ready:
                    continue
                chunk = os.read(proc.stdout.fileno(), 64 * 1024)
                if not chunk:
                    break
                output += chunk[: max(0, TRACKER_CHECK_OUTPUT_BYTES_MAX - len(output))]
            return proc.wait(max(0.0, deadline - time.monotonic())), bytes(output)
        finally:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)  # the probe's group, whatever it left behind
