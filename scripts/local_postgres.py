#!/usr/bin/env python3
"""A private PostgreSQL 15 on this machine, from Debian's packages, for trying `treino server --db` and for tests.

An instance lives in one folder of your choosing (nothing under /etc or /var/lib/postgresql is touched): its data
directory, its Unix socket, its log. It listens on 127.0.0.1 only, on a free port (or --port), with `trust` auth
for the role `postgres` and fsync off: for tests and trials, never for data you want to keep.

Usage:
  python3 scripts/local_postgres.py install            # apt-get install postgresql if initdb is missing (root)
  python3 scripts/local_postgres.py up --dir /tmp/pg   # prints the URL, e.g. postgresql+psycopg://postgres@...
  python3 scripts/local_postgres.py createdb --dir /tmp/pg treino   # prints that database's URL
  python3 scripts/local_postgres.py down --dir /tmp/pg # idempotent

As a library (tests/conftest.py):
  instance = start(folder)             # initdb + pg_ctl start, 4-6 s; stopped at interpreter exit at the latest
  url = instance.create_database()     # a fresh, empty database: its SQLAlchemy URL
  instance.stop()

Facts found on this kind of machine (Debian 12, no systemd, root), each the reason for something below:
  * Debian's package starts nothing without systemd, and its binaries are not on PATH: /usr/lib/postgresql/15/bin.
  * initdb refuses to run as root: as root, the instance runs as the package's user `postgres`, so the folder is
    chowned to it, and every parent of it must be searchable by that user (pytest's own tmp dirs are mode 0700:
    tests make their folder with tempfile.mkdtemp under /tmp). Without root it runs as you.
  * Use a non-default port: a shared machine may hold 5432.
  * `pg_ctl stop -m immediate` takes about 0.1 s (no checkpoint; fine with fsync off and throwaway data).
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import json
import os
import pwd
import socket
import subprocess
import sys
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

PROG = "local_postgres.py"
VERSION = "15"
PG_BIN = Path(f"/usr/lib/postgresql/{VERSION}/bin")
PACKAGES = ("postgresql",)
SUPERUSER = "postgres"  # the role initdb creates (-U), and the OS user the instance runs as under root
HOST = "127.0.0.1"
DRIVER = "postgresql+psycopg"  # SQLAlchemy's dialect and driver (pip install 'psycopg[binary]')
STATE_FILE = "instance.json"  # port and OS user of a running instance, for `createdb` and `down`
COMMAND_TIMEOUT_S = 60.0
APT_TIMEOUT_S = 900.0
START_ATTEMPTS = 3  # a free port may be taken between finding it and the server binding it
LOG_TAIL_LINES = 8


class CliError(Exception):
    """An error shown as one line with a fix; `code` 2 is bad usage, 1 a failure."""

    def __init__(self, message: str, fix: str, code: int = 1) -> None:
        super().__init__(f"{message} To fix: {fix}")
        self.message = message
        self.fix = fix
        self.code = code


# ---------------------------------------------------------------- small helpers


def one_line(text: bytes | str, limit_chars: int = 300) -> str:
    s = text.decode(errors="replace") if isinstance(text, bytes) else text
    s = " | ".join(line.strip() for line in s.strip().splitlines() if line.strip())
    return s if len(s) <= limit_chars else s[: limit_chars - 3] + "..."


def free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


def os_user() -> str | None:
    """The user the instance runs as: `postgres` under root, else None (yourself)."""
    return SUPERUSER if os.geteuid() == 0 else None


def run(
    argv: list[str],
    *,
    user: str | None = None,
    cwd: Path | None = None,
    check: bool = True,
    env: dict[str, str] | None = None,
    timeout_s: float = COMMAND_TIMEOUT_S,
) -> subprocess.CompletedProcess[str]:
    """Runs argv (as `user`, when given; needs root), capturing output; CliError when it cannot start, times out,
    or (check) exits non-zero."""
    as_user: dict[str, Any] = {"user": user, "group": pwd.getpwnam(user).pw_gid, "extra_groups": []} if user else {}
    try:
        out = subprocess.run(
            argv,
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout_s,
            stdin=subprocess.DEVNULL,
            **as_user,
        )
    except FileNotFoundError as e:
        raise CliError(f"{argv[0]} not found.", f"install PostgreSQL {VERSION} (`{PROG} install` as root).") from e
    except subprocess.TimeoutExpired as e:
        raise CliError(f"`{' '.join(argv)}` took over {timeout_s:.0f} s.", "see the instance's postgres.log.") from e
    if check and out.returncode != 0:
        raise CliError(
            f"`{' '.join(argv)}` exited {out.returncode}: {one_line(out.stderr or out.stdout)}.",
            "see the message (and the instance's postgres.log).",
        )
    return out


def why_unavailable() -> str | None:
    """Why no instance can be started here (with the fix), or None."""
    if not (PG_BIN / "initdb").exists():
        return (
            f"PostgreSQL {VERSION} is not installed ({PG_BIN / 'initdb'} is missing). To fix: run `make test` as root, "
            f"which installs Debian's postgresql, or `python3 scripts/{PROG} install` as root"
        )
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SUPERUSER)
        except KeyError:
            return f"there is no user {SUPERUSER!r} to run initdb as (root may not). To fix: apt-get install postgresql"
    return None


def unsearchable_parent(folder: Path, user: str) -> Path | None:
    """The first parent of `folder` that `user` (not the owner, not root) cannot enter, if any."""
    uid = pwd.getpwnam(user).pw_uid
    for parent in reversed(folder.parents):
        if not parent.exists():  # made below by mkdir(parents=True), searchable by all under a usual umask
            return None
        st = parent.stat()
        if st.st_uid != uid and not st.st_mode & 0o001:
            return parent
    return None


def log_tail(path: Path) -> str:
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:])
    return "(no log)"


# ---------------------------------------------------------------- the instance


@dataclass
class Instance:
    """A running private PostgreSQL: its folder (data/, run/ with the socket, postgres.log), port and OS user."""

    dir: Path
    port: int
    user: str | None  # the OS user it runs as; None: the one running this

    @property
    def data(self) -> Path:
        return self.dir / "data"

    @property
    def log(self) -> Path:
        return self.dir / "postgres.log"

    def url(self, database: str = "postgres") -> str:
        return f"{DRIVER}://{SUPERUSER}@{HOST}:{self.port}/{database}"

    def client(self, tool: str, *args: str) -> subprocess.CompletedProcess[str]:
        """A PostgreSQL client program (createdb, psql, ...) against this instance, over TCP as role postgres."""
        return run([str(PG_BIN / tool), "-h", HOST, "-p", str(self.port), "-U", SUPERUSER, *args])

    def create_database(self, name: str | None = None, template: str | None = None) -> str:
        """A new database (empty, or a copy of `template`, which must have no open connections): its URL."""
        name = name or f"treino_{uuid.uuid4().hex[:12]}"
        self.client("createdb", *(["-T", template] if template else []), name)
        return self.url(name)

    def sql(self, statement: str, database: str = "postgres") -> str:
        """One SQL statement through psql; its output, unaligned, without headers."""
        return self.client(
            "psql", "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", database, "-c", statement
        ).stdout

    def running(self) -> bool:
        pg_ctl = run([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "status"], user=self.user, check=False)
        return pg_ctl.returncode == 0

    def stop(self) -> bool:
        """Stops it at once (`-m immediate`); idempotent. Whether it was running."""
        was_running = self.data.is_dir() and self.running()
        if was_running:
            run([str(PG_BIN / "pg_ctl"), "-D", str(self.data), "-w", "stop", "-m", "immediate"], user=self.user)
        with contextlib.suppress(FileNotFoundError):
            (self.dir / STATE_FILE).unlink()
        return was_running


def start(folder: Path, port: int | None = None) -> Instance:
    """initdb a new instance in `folder` (which must not hold one yet) and start it on `port` (default: a free
    one). As root it runs as user postgres, and `folder` is chowned to it. Stopped at interpreter exit at the
    latest; `Instance.stop()` earlier."""
    reason = why_unavailable()
    if reason:
        message, _, fix = reason.partition(". To fix: ")
        raise CliError(message + ".", fix or "see the message.")
    folder = folder.resolve()
    if (folder / "data").exists():
        raise CliError(
            f"{folder} already holds an instance (data/).", f"`{PROG} down --dir {folder}` and remove it.", 2
        )
    user = os_user()
    if user and (parent := unsearchable_parent(folder, user)):
        raise CliError(
            f"user {user} cannot enter {parent} (mode {parent.stat().st_mode & 0o777:o}) to reach {folder}.",
            "use a folder whose parents others may enter, e.g. one made with tempfile.mkdtemp() under /tmp.",
            2,
        )
    for sub in (folder, folder / "data", folder / "run"):
        sub.mkdir(mode=0o700, parents=sub == folder, exist_ok=sub == folder)
        if user:
            entry = pwd.getpwnam(user)
            os.chown(sub, entry.pw_uid, entry.pw_gid)
    env = {**os.environ, "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8"}
    run(
        [str(PG_BIN / "initdb"), "-D", str(folder / "data"), "-A", "trust", "-U", SUPERUSER, "-E", "UTF8", "--no-sync"],
        user=user,
        cwd=folder,
        env=env,
    )
    instance = Instance(folder, 0, user)
    for attempt in range(START_ATTEMPTS):
        instance.port = port or free_port()
        options = f"-p {instance.port} -k {folder / 'run'} -c listen_addresses={HOST} -c fsync=off"
        pg_ctl = [str(PG_BIN / "pg_ctl"), "-D", str(instance.data), "-l", str(instance.log), "-w", "start"]
        if run([*pg_ctl, "-o", options], user=user, cwd=folder, env=env, check=False).returncode == 0:
            break
        if port or attempt == START_ATTEMPTS - 1:
            raise CliError(
                f"PostgreSQL did not start on port {instance.port}: {one_line(log_tail(instance.log))}.",
                f"see {instance.log}; pass a free --port.",
            )
    atexit.register(instance.stop)
    (folder / STATE_FILE).write_text(json.dumps({"port": instance.port, "user": user}) + "\n")
    return instance


def attach(folder: Path) -> Instance:
    """The instance `up` started in `folder`, from its state file."""
    folder = folder.resolve()
    try:
        state = json.loads((folder / STATE_FILE).read_text())
    except (OSError, ValueError) as e:
        raise CliError(
            f"no running instance in {folder} ({STATE_FILE} unreadable).", f"`{PROG} up --dir {folder}`."
        ) from e
    return Instance(folder, int(state["port"]), state.get("user"))


# ---------------------------------------------------------------- commands


def cmd_install(args: argparse.Namespace) -> int:
    if (PG_BIN / "initdb").exists():
        print(f"PostgreSQL {VERSION} is at {PG_BIN}: nothing to install")
        return 0
    if os.geteuid() != 0:
        if args.if_root:
            print(f"not root: PostgreSQL {VERSION} not installed; the PostgreSQL tests will skip and say why")
            return 0
        raise CliError("installing needs root (apt-get).", "run it as root or with sudo.", 2)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print(f"apt-get install -y -qq {' '.join(PACKAGES)}", flush=True)
    if run(["apt-get", "install", "-y", "-qq", *PACKAGES], env=env, check=False, timeout_s=APT_TIMEOUT_S).returncode:
        print("apt-get update", flush=True)  # a stale package list: the usual reason an install fails
        run(["apt-get", "update", "-qq"], timeout_s=APT_TIMEOUT_S)
        run(["apt-get", "install", "-y", "-qq", *PACKAGES], env=env, timeout_s=APT_TIMEOUT_S)
    if not (PG_BIN / "initdb").exists():
        raise CliError(
            f"apt-get installed {' '.join(PACKAGES)}, but {PG_BIN / 'initdb'} is missing.",
            f"this script expects PostgreSQL {VERSION} (Debian 12); set PG_BIN in it.",
        )
    print("installed; the package starts no daemon here: `up` (or the tests) start a private one")
    return 0


def cmd_up(args: argparse.Namespace) -> int:
    instance = start(Path(args.dir), args.port)
    atexit.unregister(instance.stop)  # it outlives this command; `down` stops it
    print(instance.url())
    return 0


def cmd_createdb(args: argparse.Namespace) -> int:
    print(attach(Path(args.dir)).create_database(args.name))
    return 0


def cmd_down(args: argparse.Namespace) -> int:
    folder = Path(args.dir).resolve()
    if not (folder / "data").is_dir():
        print(f"no instance in {folder}: nothing to stop")
        return 0
    owner = pwd.getpwuid((folder / "data").stat().st_uid).pw_name
    if Instance(folder, 0, owner if os.geteuid() == 0 else None).stop():
        print(f"stopped; remove {folder} when done with it")
    else:
        print(f"the instance in {folder} was not running")
    return 0


class Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        print(f"{PROG}: error: {message}. To fix: see `{self.prog} --help`.", file=sys.stderr)
        raise SystemExit(2)


def build_parser() -> Parser:
    p = Parser(prog=PROG, description="A private PostgreSQL on this machine (see the module docstring).")
    sub = p.add_subparsers(dest="command", required=True, parser_class=Parser)
    install = sub.add_parser("install", help=f"apt-get install postgresql if PostgreSQL {VERSION}'s initdb is missing")
    install.add_argument("--if-root", action="store_true", help="do nothing (exit 0) when not run as root")
    up = sub.add_parser("up", help="initdb and start an instance in --dir; prints its URL")
    up.add_argument("--dir", required=True, help="folder for data/, run/ (the socket) and postgres.log")
    up.add_argument("--port", type=int, default=None, help="TCP port on 127.0.0.1 (default: a free one)")
    createdb = sub.add_parser("createdb", help="create a database in the instance of --dir; prints its URL")
    createdb.add_argument("--dir", required=True)
    createdb.add_argument("name", nargs="?", help="default: treino_<random>")
    sub.add_parser("down", help="stop the instance of --dir (idempotent)").add_argument("--dir", required=True)
    return p


COMMANDS = {"install": cmd_install, "up": cmd_up, "createdb": cmd_createdb, "down": cmd_down}


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except CliError as e:
        print(f"{PROG}: error: {one_line(e.message, 2000)} To fix: {e.fix}", file=sys.stderr)
        return e.code
    except KeyboardInterrupt:
        print(f"{PROG}: error: interrupted. To fix: run `{PROG} down --dir DIR` to clean up.", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
