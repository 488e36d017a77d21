"""A full disk, said plainly: which folder, on which filesystem, how much is free (for a failed job's detail and
the API's 507). The supervisor sees it first (treino.server.supervisor.record_exit); this module only describes it.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Literal

from sqlalchemy.exc import DBAPIError

from treino.i18n import Msg
from treino.orm import database_fault
from treino.server.supervisor import DISK_FULL_ERRNOS, free_bytes

# What a process's output says when it ran out of disk: the C library's ENOSPC and EDQUOT messages (Python's
# OSError prints them with their errno), and PyTorch's torch.save failing in its zip writer.
DISK_FULL_PATTERNS = re.compile(
    r"No space left on device|Disk quota exceeded|\[Errno (?:28|122)\]|\bENOSPC\b|\bEDQUOT\b"
    r"|PytorchStreamWriter failed writing file|unexpected pos \d+"
)
_QUOTED_PATH = re.compile(r"'(/[^']+)'")


def is_disk_full(exc: BaseException) -> bool:
    """An OSError of a full disk or quota, here or as the cause of `exc`."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OSError) and seen.errno in DISK_FULL_ERRNOS:
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def storage_fault(exc: BaseException) -> Literal["full", "corrupt"] | None:
    """What `exc` says of the storage: "full" for a write that failed for want of disk (the filesystem's or the
    database's), "corrupt" for a damaged database (treino.orm.database_fault), None for anything else."""
    if isinstance(exc, DBAPIError):
        return database_fault(exc)
    return "full" if is_disk_full(exc) else None


def size_text(n: int) -> str:
    """1536 -> '1.5 KiB'."""
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    raise AssertionError("unreachable")


def existing(path: Path) -> Path:
    """`path`, or its nearest folder that exists (a file that could not be written may not)."""
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def mount_point(path: Path) -> Path:
    """The folder `path`'s filesystem is mounted at."""
    path = existing(path.resolve())
    dev = path.stat().st_dev
    while path != path.parent and path.parent.stat().st_dev == dev:
        path = path.parent
    return path


def space_text(path: Path) -> str:
    """'/data/jobs/3 (filesystem at /data): 12.0 KiB free of 64.0 MiB'."""
    place = existing(path)
    try:
        st = os.statvfs(place)
        return Msg(
            "{path} (filesystem at {mount}): {free} free of {total}",
            path=str(path),
            mount=str(mount_point(place)),
            free=size_text(free_bytes(place)),
            total=size_text(st.f_blocks * st.f_frsize),
        )
    except OSError as exc:
        return Msg("{path} (its free space unknown: {error})", path=str(path), error=str(exc.strerror))


def folders_in(text: str) -> list[Path]:
    """Absolute paths a message names ("No space left on device: '/scratch/ckpt.pt'")."""
    return [Path(p) for p in _QUOTED_PATH.findall(text)]


def spaces_text(folders: list[Path]) -> str:
    """The free space of each distinct filesystem among `folders`, the first of each named, joined with '; '."""
    seen: set[int] = set()
    parts = []
    for folder in folders:
        try:
            dev = existing(folder).stat().st_dev
        except OSError:
            continue
        if dev not in seen:
            seen.add(dev)
            parts.append(space_text(folder))
    return "; ".join(parts)
