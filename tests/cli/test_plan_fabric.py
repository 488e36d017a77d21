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


def test_plan_scale_calls_nvlink_domains_smaller_than_a_server_domains() -> None:
    """--nvlink-domain 4 on 8-GPU servers: 8 GPUs are one server holding two NVLink domains, 32 GPUs four servers
    holding eight; the table, the fabric's sentences and the JSON say domains where they mean domains, and keep
    'servers' for servers."""
    args = ("plan", "scale", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--max-gpus", "32", "--fabric")
    args += ("2x100g-eth", "--nvlink-domain", "4")
    points = json.loads(treino(*args, "--json").stdout)["points"]
    nvlink = {p["gpus"]: p for p in points if p["interconnect"] == "nvlink"}
    assert [(nvlink[n]["servers"], nvlink[n]["domains"]) for n in (4, 8, 32)] == [(1, 1), (1, 2), (4, 8)]
    assert {p["domain_kind"] for p in points} == {"nvlink-domain", "server"}  # PCIe: the server is the domain
    out = treino(*args)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "NVLink inside each NVLink domain (4 GPUs; 8 GPUs a server)" in text
    assert "GPUs ┃ servers ┃ domains ┃ step" in text
    assert "8 │ 1 │ 2 │" in text and "32 │ 4 │ 8 │" in text
    assert "Between NVLink domains: 2×100 GbE (TCP) (10 GB/s a server). Beyond one domain" in text
    assert "The link between NVLink domains dominates from 8 GPUs (2 domains)" in text
    assert "Between the NVLink domains of one server the plan counts the fabric's share, not the PCIe" in text
    assert "inside each server over NVLink" not in text and "(2 servers)" not in text.split("PCIe inside")[0]
    assert "PCIe inside each server (8 GPUs)" in text  # PCIe has no NVLink domain: its levels stay servers
    alone = " ".join(treino(*args[:-3], "none", "--nvlink-domain", "4").stdout.split())
    assert "No network between NVLink domains: one domain at most." in alone
    pt = " ".join(treino("--lang", "pt-BR", *args).stdout.split())
    assert "NVLink dentro de cada domínio NVLink (4 GPUs; 8 GPUs por servidor)" in pt and "domínios" in pt


def test_plan_train_counts_nvlink_domains_and_servers_apart() -> None:
    """64 GPUs in 4-GPU NVLink domains on 8-GPU servers: 16 domains on 8 servers."""
    text = " ".join(treino(*TRAIN, "--gpus-per-server", "8", "--nvlink-domain", "4").stdout.split())
    assert "(16 NVLink domains on 8 servers, joined by 4×400G InfiniBand NDR:" in text
    time = _time("--nvlink-domain", "4")
    assert (time["domains"], time["servers"], time["domain_kind"]) == (16, 8, "nvlink-domain")
