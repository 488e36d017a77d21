"""What one `treino server` claims at start, before it touches its database or says it listens: its data dir (an
exclusive lock) and its port (a bound socket).

The data dir's lock is an `fcntl.flock` on DATA_DIR/server.lock, held for the life of the process: the kernel
releases it on any exit, SIGKILL and crashes included, so a stale lock file never blocks the next start. The file
holds the PID of the server that holds it, for the message a second server prints. The lock is per data dir: two
data dirs on one PostgreSQL database (`--db`) are not locked against each other, and are not supported.

The port is bound with SO_REUSEADDR, as uvicorn binds it, and the bound socket is handed to uvicorn: a port in use
is found before the server reconciles jobs or prints that it listens, and nothing can take it in between.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
from pathlib import Path
from typing import IO

from treino.errors import TreinoError
from treino.server.settings import LOCK_FILE, PORT_SUGGESTIONS_MAX


def lock_data_dir(data_dir: Path) -> IO[str]:
    """The open lock file of `data_dir`, locked for this process (keep it referenced while the server runs), with
    this process's PID in it. A data dir another server holds raises TreinoError naming that server's PID."""
    path = data_dir / LOCK_FILE
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)  # not inherited by jobs (O_CLOEXEC is Python's default)
    handle = os.fdopen(fd, "r+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = handle.read().strip() or "unknown"
        handle.close()
        raise TreinoError(
            f"Another treino server (PID {holder}) is running on the data dir {data_dir}. To fix: stop that server "
            "(kill -TERM " + holder + "), or start this one with another --data-dir."
        ) from None
    handle.seek(0)
    handle.truncate()
    handle.write(f"{os.getpid()}\n")
    handle.flush()
    return handle


def bind_port(host: str, port: int) -> socket.socket:
    """A socket bound to (host, port) as uvicorn binds one (SO_REUSEADDR), for uvicorn to listen on. A port in use
    raises TreinoError suggesting a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            free = _free_port_after(host, port, family)
            instead = f"--port {free}" if free else "another --port"
            raise TreinoError(
                f"Port {port} on {host} is in use (by another treino server?). To fix: {instead} or stop the other "
                "server."
            ) from None
        raise TreinoError(
            f"Cannot listen on {host} port {port}: {exc.strerror or exc}. To fix: give an address of this machine "
            "(--host) and a port above 1023 unless the server runs as root (--port)."
        ) from None
    return sock


def _free_port_after(host: str, port: int, family: socket.AddressFamily) -> int | None:
    """The first port after `port` that binds on `host` (of PORT_SUGGESTIONS_MAX tried), to suggest one."""
    for candidate in range(port + 1, min(port + 1 + PORT_SUGGESTIONS_MAX, 65536)):
        with socket.socket(family, socket.SOCK_STREAM) as probe:
            probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                probe.bind((host, candidate))
            except OSError:
                continue
            return candidate
    return None
