"""A FIFO a job planted where the server opens files: a call that blocks on it must fail its test, not hang it."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

HANG_S = 20.0  # far longer than any scan here takes; only a blocked open gets near it


def returns_despite_fifo(call: Callable[[], Any], fifo: Path) -> Any:
    """What `call` returns, run in a thread; a call blocked on opening `fifo` fails the test (after releasing it by
    opening its writing end, so that no thread is left blocked)."""
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(call()), daemon=True)
    thread.start()
    thread.join(HANG_S)
    if thread.is_alive():
        os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))  # the blocked reader's open returns
        thread.join(HANG_S)
        pytest.fail(f"the call blocked opening the FIFO {fifo}")
    return box[0]
