"""Sequential read throughput of a directory's filesystem, with the page cache bypassed.

Method after fio's seqread job (../shared/reference/hardware-and-prices.md §5.2: direct=1, bs=1m, delete the
file afterwards). In order of preference:
    O_DIRECT                  reads bypass the page cache; buffers aligned by mmap (page-aligned memory)
    posix_fadvise(DONTNEED)   the file is fsync'ed and its cached pages dropped before reading
    larger than RAM           a buffered read of a file bigger than RAM cannot be served from the cache
    buffered (cached)         none of the above: the figure measures RAM, and the report says so
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from treino.errors import TreinoError
from treino.i18n import Msg

FILE_BYTES_QUICK = 256 * 1024**2
FILE_BYTES_FULL = 4 * 1024**3
BLOCK_BYTES = 1024**2  # fio bs=1m
WRITE_CHUNK_BYTES = 64 * 1024**2
TEST_FILE_NAME = ".treino-bench-read.bin"


@dataclass(frozen=True)
class StorageResult:
    path: str
    read_gb_s: float
    method: str  # "O_DIRECT", "posix_fadvise(DONTNEED)", "larger than RAM" or "buffered (cached)"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def _write_test_file(path: Path, nbytes: int) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    with open(path, "wb") as f:
        written = 0
        while written < nbytes:
            chunk = rng.bytes(min(WRITE_CHUNK_BYTES, nbytes - written))  # random: no compression/dedup wins
            f.write(chunk)
            written += len(chunk)
        f.flush()
        os.fsync(f.fileno())


def _read_direct(path: Path) -> tuple[int, float]:
    """Read the whole file with O_DIRECT into a page-aligned buffer; raises OSError where unsupported."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECT", 0))
    buf = mmap.mmap(-1, BLOCK_BYTES)  # anonymous mmap: page-aligned, as O_DIRECT requires
    try:
        total = 0
        t0 = time.perf_counter()
        while n := os.readv(fd, [buf]):
            total += n
        return total, time.perf_counter() - t0
    finally:
        buf.close()
        os.close(fd)


def _read_buffered(path: Path) -> tuple[int, float]:
    buf = bytearray(BLOCK_BYTES)
    view = memoryview(buf)
    total = 0
    with open(path, "rb", buffering=0) as f:
        t0 = time.perf_counter()
        while n := f.readinto(view):
            total += n
        return total, time.perf_counter() - t0


def _drop_cache(path: Path) -> bool:
    if not hasattr(os, "posix_fadvise"):
        return False
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def measure_storage(directory: Path | None, quick: bool, ram_bytes: int = 0) -> StorageResult:
    """Write a random test file in `directory` (default: a temp dir), read it back sequentially, delete it."""
    with contextlib.ExitStack() as stack:
        if directory is None:
            directory = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="treino-bench-")))
        if not directory.is_dir():
            raise TreinoError(
                Msg("--path {directory} is not a directory. To fix: give the dataset's directory.", directory=directory)
            )
        path = directory / TEST_FILE_NAME
        nbytes = FILE_BYTES_QUICK if quick else FILE_BYTES_FULL
        try:
            _write_test_file(path, nbytes)
        except OSError as exc:
            raise TreinoError(
                Msg(
                    "Cannot write a {gb:.1f} GB test file in {directory}: {error}.",
                    gb=nbytes / 1e9,
                    directory=directory,
                    error=exc,
                )
            ) from exc
        try:
            try:
                total, seconds = _read_direct(path)
                method = "O_DIRECT"
            except OSError:  # EINVAL: tmpfs, some network and FUSE filesystems refuse O_DIRECT
                if ram_bytes and nbytes > ram_bytes:
                    method = "larger than RAM"
                elif _drop_cache(path):
                    method = "posix_fadvise(DONTNEED)"
                else:
                    method = "buffered (cached)"
                total, seconds = _read_buffered(path)
        finally:
            path.unlink(missing_ok=True)
        assert total == nbytes, (total, nbytes)
        return StorageResult(path=str(directory), read_gb_s=total / seconds / 1e9, method=method)
