"""A spec's `trackers`, checked at submit against the Python the job will run in (treino.trackers writes them).

A tracker whose package the job's Python cannot find would only be skipped with a warning deep in the job's log;
`check` refuses the spec instead (SpecError on `trackers`, 422, with the pip command that fixes it). Which Python:

    script: train.py                       the server's Python (Settings.python), as the engine runs it
    command: [python3, -m, pkg.train]      argv[0] when it is a Python (python, python3, python3.12, ...)
    command: [torchrun, ...]               the interpreter of argv[0]'s "#!" line (console scripts: torchrun,
                                           accelerate, deepspeed), found on the job's PATH as the kernel would
    command: [anything else]               the server's Python (the best guess; the job still warns at run time)

It runs `python -c` as the job's user (never as the server, which may be root: the submitter chose this Python and
its environment), asking importlib.util.find_spec for each package: found, not imported (importing wandb and mlflow
takes seconds). Only an explicit `trackers` is checked: the default (TensorBoard) is skipped at run time with one
info line when it is missing. On a Slurm cluster the nodes are assumed to run the same Python (a shared file
system, as for `script` jobs). What the probe sees of the job:

- environment: only what decides where Python finds modules and whether it starts (PYTHONPATH, PYTHONHOME,
  PYTHONUSERBASE, PYTHONNOUSERSITE, PYTHONPLATLIBDIR, LD_LIBRARY_PATH for a Python whose libpython lies outside the
  system's paths, HOME and the locale); PYTHONPATH's relative entries are resolved against the job's working
  directory. Not LD_PRELOAD or any other loader variable, nor the spec's PATH (used only to find the Python);
- working directory: an empty private temporary folder, so that a `json.py` in the job's folder shadows nothing;
  the job's folder (and a `script`'s) is added at the end of sys.path, after the probe's own imports;
- lifetime: the probe starts in a cgroup of its own where the server has them (root, treino.server.cgroups), which
  is killed whole afterwards: nothing it starts survives, not a `setsid` or a double fork. Without cgroups only its
  process group is killed (a process that left it survives; the limit of a non-root server). It is given
  TRACKER_CHECK_TIMEOUT_S, and its answer counts once it exits (a child still holding its output is not waited for).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import select
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

from treino import trackers as bridges
from treino.errors import SpecError
from treino.i18n import Msg
from treino.server import cgroups
from treino.server.isolation import JobUser
from treino.server.service import _base_env as job_base_env
from treino.server.settings import TRACKER_CHECK_OUTPUT_BYTES_MAX, TRACKER_CHECK_TIMEOUT_S, Settings
from treino.server.spec import JobSpec

_PYTHON_NAME = re.compile(r"^python(\d+(\.\d+)?)?$")
_SHEBANG_BYTES_MAX = 512  # what the kernel reads of a "#!" line (BINPRM_BUF_SIZE is 256; some scripts wrap)
# argv[1]: folders to append to sys.path (os.pathsep-separated); prints those among argv[2:] this Python cannot find,
# as a JSON list. Only `sys` (built in) and importlib (frozen, already loaded) are imported: nothing to shadow.
_PROBE = (
    "import importlib.util, sys; "
    "sys.path.extend(p for p in sys.argv[1].split(__import__('os').pathsep) if p); "
    "print('[' + ','.join(chr(34) + m + chr(34) for m in sys.argv[2:] if importlib.util.find_spec(m) is None) + ']')"
)
# The variables the probe keeps from the job's environment (see the module docstring).
_PROBE_ENV = (
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONUSERBASE",
    "PYTHONNOUSERSITE",
    "PYTHONPLATLIBDIR",
    "LD_LIBRARY_PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
)
# Started by /bin/sh as the probe's user, with the probe's environment less LD_LIBRARY_PATH (kept aside in
# _LD_ASIDE): waits for one line on stdin, sent once it is in the probe's cgroup, then puts LD_LIBRARY_PATH back and
# execs the probe. So nothing the submitter chose runs before the probe is in its cgroup.
_LD_ASIDE = "TREINO_CHECK_LD_LIBRARY_PATH"
_LAUNCHER = (
    'read -r go && [ "$go" = g ] || exit 125\n'
    "exec </dev/null\n"
    f'if [ -n "${{{_LD_ASIDE}+x}}" ]; then LD_LIBRARY_PATH=${_LD_ASIDE}; export LD_LIBRARY_PATH; fi\n'
    f"unset {_LD_ASIDE}\n"
    'exec "$@"\n'
)
_SHELL = "/bin/sh"
_POLL_S = 0.05


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
    """The Python of a script's "#!" line (`#!/venv/bin/python3`, `#!/usr/bin/env python3`), or None. The path is
    resolved first; its file is opened without following a link and without blocking (the server may be root, and a
    FIFO or device put there after the lookup must neither hang nor be read), and read only when it is regular."""
    try:
        fd = os.open(program.resolve(), os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    except (OSError, RuntimeError):  # gone, unreadable, a link put there meanwhile; RuntimeError: a link loop
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        head = os.read(fd, _SHEBANG_BYTES_MAX)
    except OSError:
        return None
    finally:
        os.close(fd)
    if not head.startswith(b"#!"):
        return None
    words = head[2:].split(b"\n", 1)[0].decode(errors="replace").split()
    if words and Path(words[0]).name == "env":
        words = [w for w in words[1:] if not w.startswith("-")]  # `env -S python3 -u`
        return _which(words[0], env, cwd) if words and _PYTHON_NAME.match(words[0]) else None
    if words and _PYTHON_NAME.match(Path(words[0]).name):
        return Path(words[0])
    return None


def probe_env(env: dict[str, str], cwd: Path) -> dict[str, str]:
    """The probe's environment from the job's (see the module docstring): PATH is the default one, PYTHONPATH's
    relative and empty entries (the latter mean the working directory) are resolved against the job's `cwd`."""
    out = {k: env[k] for k in _PROBE_ENV if k in env}
    out["PATH"] = os.defpath
    if "PYTHONPATH" in out:
        out["PYTHONPATH"] = os.pathsep.join(
            str(cwd / p) if p else str(cwd) for p in out["PYTHONPATH"].split(os.pathsep)
        )
    return out


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
    job_dirs = [str(cwd), *([str((cwd / spec.script).parent)] if spec.script else [])]  # the job's sys.path[0]
    argv = [python, "-c", _PROBE, os.pathsep.join(job_dirs), *modules]
    try:
        returncode, output = _run_bounded(argv, probe_env(env, cwd), user)
    except subprocess.TimeoutExpired:
        raise SpecError(
            "trackers",
            Msg(
                "the job's Python {python} did not say within {timeout_s:g} s whether it has the "
                "trackers' packages ({modules}). To fix: check that '{python} -c pass' starts, or drop 'trackers' "
                "from the spec.",
                python=python,
                timeout_s=TRACKER_CHECK_TIMEOUT_S,
                modules=", ".join(modules),
            ),
        ) from None
    except OSError as exc:
        raise SpecError(
            "trackers",
            Msg(
                "cannot run the job's Python {python} to check the trackers' packages ({strerror}). To fix: install "
                "Python there (readable by the job's user), or drop 'trackers' from the spec.",
                python=python,
                strerror=exc.strerror,
            ),
        ) from exc
    missing_modules = _answer(output) if returncode == 0 else None
    if missing_modules is None:
        raise SpecError(
            "trackers",
            Msg(
                "the job's Python {python} failed to check the trackers' packages (exit {returncode}: {output}). To "
                "fix: check that Python, or drop 'trackers' from the spec.",
                python=python,
                returncode=returncode,
                output=output.decode(errors="replace").strip()[-500:],
            ),
        )
    missing = [modules[m] for m in missing_modules if m in modules]
    if missing:
        raise SpecError(
            "trackers",
            Msg(
                "the job's Python {python} cannot import {packages}, which the tracker(s) {trackers} need. To fix: "
                "{pip} with that Python (\"pip install 'treino[trackers]'\" brings all three), or drop them from "
                "'trackers'.",
                python=python,
                packages=", ".join(bridges.PACKAGES[n][0] for n in missing),
                trackers=", ".join(missing),
                pip=bridges.pip_hint(missing),
            ),
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


def _run_bounded(argv: list[str], env: dict[str, str], user: JobUser | None) -> tuple[int, bytes]:
    """(exit status, stdout and stderr) of `argv` with environment `env`, as `user` with no supplementary groups,
    from an empty private folder, in its own session and (where the server has them) its own cgroup, killed whole
    afterwards; at most TRACKER_CHECK_OUTPUT_BYTES_MAX of output are kept, and TimeoutExpired after
    TRACKER_CHECK_TIMEOUT_S. OSError when the launcher (/bin/sh) cannot start; an `argv[0]` it cannot execute
    exits 126 or 127 with the shell's message in the output."""
    as_user: dict[str, Any] = {} if user is None else {"user": user.uid, "group": user.gid, "extra_groups": []}
    deadline = time.monotonic() + TRACKER_CHECK_TIMEOUT_S
    launcher_env = {k: v for k, v in env.items() if k != "LD_LIBRARY_PATH"}
    if "LD_LIBRARY_PATH" in env:
        launcher_env[_LD_ASIDE] = env["LD_LIBRARY_PATH"]
    folder = Path(tempfile.mkdtemp(prefix="treino-trackers-check-"))
    cgroup: cgroups.Cgroup | None = None
    try:
        if user is not None:
            os.chown(folder, user.uid, user.gid)
        with contextlib.suppress(OSError):  # none: the process group is all there is to kill
            cgroup = cgroups.create(f"trackers-check-{secrets.token_hex(4)}", None, None)
        with subprocess.Popen(
            [_SHELL, "-c", _LAUNCHER, "treino-trackers-check", *argv],
            env=launcher_env,
            cwd=folder,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            **as_user,
        ) as proc:
            try:
                assert proc.stdin is not None and proc.stdout is not None
                if cgroup is not None:
                    with contextlib.suppress(OSError):  # refused: the process group is all there is to kill
                        cgroups.add(cgroup, proc.pid)
                proc.stdin.write(b"g\n")
                proc.stdin.close()
                output = _read_until_exit(proc, argv, deadline)
            finally:
                if cgroup is not None:
                    cgroups.kill(cgroup)
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(proc.pid, signal.SIGKILL)  # the probe's group, whatever it left behind
        return proc.returncode, output
    finally:
        if cgroup is not None:
            with contextlib.suppress(OSError):
                cgroups.remove(cgroup)
        shutil.rmtree(folder, ignore_errors=True)


def _read_until_exit(proc: subprocess.Popen[bytes], argv: list[str], deadline: float) -> bytes:
    """The process's output until it exits and its pipe has nothing more to read (a child it left holding the pipe
    is not waited for); TimeoutExpired at `deadline`."""
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    output = bytearray()
    while True:
        remaining_s = deadline - time.monotonic()
        if remaining_s <= 0:
            raise subprocess.TimeoutExpired(argv, TRACKER_CHECK_TIMEOUT_S)
        exited = proc.poll() is not None
        ready, _, _ = select.select([fd], [], [], 0 if exited else min(remaining_s, _POLL_S))
        if not ready:
            if exited:
                return bytes(output)
            continue
        chunk = os.read(fd, 64 * 1024)
        if not chunk:
            proc.wait(max(0.0, deadline - time.monotonic()))
            return bytes(output)
        output += chunk[: max(0, TRACKER_CHECK_OUTPUT_BYTES_MAX - len(output))]
