"""`treino plan train` and `plan scale` beyond one server: the servers, the NVLink domain and the fabric between
them, as users pass them (a real `treino` subprocess)."""

from __future__ import annotations

import json
from typing import Any

from tests.cli.test_cli import treino

# GB200 NVL72 as B200s: 72 GPUs in one NVLink domain across trays of 4 GPUs, 4 x 400G NICs a tray
# (hardware-and-prices §1, S11). 64 GPUs, Llama 3.1 8B under FSDP (ZeRO-3).
TRAIN = ("plan", "train", "--model", "llama-3.1-8b", "--gpu", "b200", "--gpus", "64", "--zero", "3")
TRAIN += ("--micro-batch", "1", "--seq-len", "8192", "--fabric", "4x400g-ib")


def _time(*extra: str) -> dict[str, Any]:
    out = treino(*TRAIN, *extra, "--json")
    assert out.returncode == 0, out.stderr
    time: dict[str, Any] = json.loads(out.stdout)["time"]
    return time


def test_plan_train_takes_the_gpus_per_server_and_the_nvlink_domain() -> None:
    """The step time's all-reduce follows --gpus-per-server and --nvlink-domain as `plan scale`'s does: 8-GPU
    servers cross the fabric between 8 servers; trays of 4 GPUs between 16, each with half the NVLink group (so a
    longer fabric phase); a 72-GPU NVLink domain holds all 64 GPUs and never touches the fabric."""
    hgx, trays = _time(), _time("--gpus-per-server", "4")
    rack = _time("--gpus-per-server", "4", "--nvlink-domain", "72")
    assert (hgx["servers"], hgx["fabric"]) == (8, "4x400g-ib") and hgx["inter_comm_seconds"] > 0
    assert (trays["servers"], trays["fabric"]) == (16, "4x400g-ib")
    assert trays["inter_comm_seconds"] > hgx["inter_comm_seconds"]
    assert (rack["fabric"], rack["inter_comm_seconds"]) == ("none", 0)
    assert rack["comm_seconds"] < trays["comm_seconds"]
    text = " ".join(treino(*TRAIN, "--gpus-per-server", "4").stdout.split())
    assert "16 servers joined by 4×400G InfiniBand NDR" in text
