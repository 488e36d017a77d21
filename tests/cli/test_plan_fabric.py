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


def test_plan_scale_names_the_link_of_each_level_when_nvlink_domains_are_smaller_than_a_server() -> None:
    """--nvlink-domain 4 on 8-GPU servers: 8 GPUs are one server holding two NVLink domains joined by PCIe, 32 GPUs
    four servers holding eight; the table gives the PCIe level's share and the fabric's, the sentences say which
    link carries each level and where the link between servers starts to dominate, and the JSON keeps domains and
    servers apart."""
    args = ("plan", "scale", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--max-gpus", "32", "--fabric")
    args += ("2x100g-eth", "--nvlink-domain", "4")
    points = json.loads(treino(*args, "--json").stdout)["points"]
    nvlink = {p["gpus"]: p for p in points if p["interconnect"] == "nvlink"}
    assert [(nvlink[n]["servers"], nvlink[n]["domains"]) for n in (4, 8, 32)] == [(1, 1), (1, 2), (4, 8)]
    assert {p["domain_kind"] for p in points} == {"nvlink-domain", "server"}  # PCIe: the server is the domain
    # One server: the two domains meet over PCIe, not over the fabric; four servers use both.
    assert nvlink[8]["cross_comm_seconds"] > 0 and nvlink[8]["inter_comm_seconds"] == 0
    assert nvlink[8]["fabric"] == "none" and not nvlink[8]["fabric_bound"]
    assert nvlink[32]["cross_comm_seconds"] > 0 and nvlink[32]["inter_comm_seconds"] > 0
    out = treino(*args)
    assert out.returncode == 0, out.stderr
    text = " ".join(out.stdout.split())
    assert "NVLink inside each NVLink domain (4 GPUs; 8 GPUs a server)" in text
    assert "GPUs ┃ servers ┃ domains ┃ step ┃ tokens/s ┃ efficiency ┃ PCIe ┃ fabric" in text
    assert "8 │ 1 │ 2 │" in text and "32 │ 4 │ 8 │" in text
    assert (
        "Each level's link: NVLink inside each NVLink domain, PCIe Gen5 between the 2 domains of one server "
        "(28 GB/s a GPU), the fabric between servers." in text
    )  # PCIe Gen5 x16, 63 GB/s a direction, x 0.44 at 8 GPUs (hardware-and-prices §2.2, §3.2)
    assert "Between servers: 2×100 GbE (TCP) (10 GB/s a server)." in text
    assert "The link between servers dominates from 16 GPUs (2 servers)" in text
    assert "counts the fabric's share" not in text  # the caveat of the two-level model is gone
    assert "PCIe inside each server (8 GPUs)" in text  # PCIe has no NVLink domain: its levels stay servers
    alone = " ".join(treino(*args[:-3], "none", "--nvlink-domain", "4").stdout.split())
    assert "No network between servers: one server at most." in alone
    assert "8 │ 1 │ 2 │" in alone  # without a network, the server's two domains still meet over PCIe
    pt = " ".join(treino("--lang", "pt-BR", *args).stdout.split())
    assert "NVLink dentro de cada domínio NVLink (4 GPUs; 8 GPUs por servidor)" in pt and "domínios" in pt
    assert "PCIe Gen5 entre os 2 domínios de um servidor" in pt


def test_plan_train_counts_nvlink_domains_and_servers_apart() -> None:
    """64 GPUs in 4-GPU NVLink domains on 8-GPU servers: 16 domains on 8 servers, PCIe between the two domains of
    each server, the fabric between servers; 8 GPUs: one server, no fabric."""
    text = " ".join(treino(*TRAIN, "--gpus-per-server", "8", "--nvlink-domain", "4").stdout.split())
    assert "(16 NVLink domains on 8 servers: " in text
    assert " of it between the domains of a server, over PCIe; " in text
    assert " between servers, over 4×400G InfiniBand NDR)" in text
    time = _time("--nvlink-domain", "4")
    assert (time["domains"], time["servers"], time["domain_kind"]) == (16, 8, "nvlink-domain")
    assert time["cross_comm_seconds"] > 0 and time["inter_comm_seconds"] > 0
    one = [a if a != "64" else "8" for a in TRAIN]
    text = " ".join(treino(*one, "--nvlink-domain", "4").stdout.split())
    assert "(2 NVLink domains joined by PCIe: " in text and "InfiniBand" not in text
