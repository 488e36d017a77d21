"""Beyond one server: the fabric between servers against published multi-node measurements, with the errors found.

Recorded errors (planner vs published; reproduce with benchmarks/fabric_validation.py):

| published figure                                                          | published | planner  | error  |
|---------------------------------------------------------------------------|-----------|----------|--------|
| nccl-tests all_reduce busbw, 2 x DGX A100, 8 x 200G HDR IB (nccl#1576)    | 192 GB/s  | 192 GB/s | 0.0 %  |
| nccl-tests all_reduce busbw, 4 x P6-B200, 8 x 400G EFA, 16 GiB (S02)      | 381.8     | 379.9    | -0.5 % |
| torchtitan Llama 3.1 8B FSDP, 8 -> 128 H100, tokens/s/GPU ratio           | 0.973     | 1.000    | +2.8 % |
| torchtitan same, + torch.compile                                          | 0.977     | 1.000    | +2.3 % |
| torchtitan same, + compile + Float8                                       | 0.982     | 1.000    | +1.8 % |
| torchtitan Llama 3.1 8B (Trainy), 32 -> 64 H200, tokens/s/GPU ratio       | 0.983     | 1.000    | +1.7 % |
| nccl-tests all_reduce busbw, 8 x H200 SXM, one NVLink domain, 16 GiB (S02) | 367.6     | 359.8    | -2.1 % |
| nccl-tests all_reduce busbw, 8 x RTX 5090, PCIe Gen5 only (nccl#1639)      | 28        | 27.7     | -1.0 % |
| nccl-tests all_reduce busbw, 4 x RTX 5090, PCIe Gen5 only (nccl#1639)      | 35        | 35.3     | +0.8 % |

Not a test: the Llama 3 paper's 405B runs (Table 4: 430 TFLOP/s per GPU on 8,192 H100s, 400 on 16,384; TP 8, PP 16,
RoCE 400 Gb/s per GPU) come out 15-49 % low, the miss set by the pipeline schedule (the interleaving depth is not
published: 1 to 8 virtual stages give -38 to -17 % at 8,192 GPUs, -49 to -15 % at 16,384), not by the network: the
gradient all-reduce the planner cannot hide is 5-9 % of a step at both sizes.
MLPerf Training scores are times to a target accuracy, whose sample counts change with the batch size, so they hold
no throughput to compare a step-time model against.
"""

from __future__ import annotations

import math
from typing import Any

import pytest

from treino import catalog
from treino.errors import PlanError
from treino.plan import TrainSetup
from treino.plan.fabric import NO_FABRIC, hierarchical_allreduce, parse_fabric
from treino.plan.performance import (
    DDP_BUCKET_BYTES,
    allreduce_seconds,
    allreduce_time,
    estimate_time,
    link_busbw_gb_s,
    scale,
    tensor_parallel_seconds,
)

GIB = 2**30


@pytest.mark.parametrize(
    "gpu,gpus,fabric,size_bytes,busbw_gb_s",
    [
        # NVIDIA/nccl#1576: DGX A100 nodes (8 A100 on NVLink3, 8 x 200G HDR InfiniBand), all_reduce at large sizes,
        # 192 GB/s busbw on 2+ nodes (hardware-and-prices.md §3.2).
        ("a100-80gb-sxm", 16, "8x200g-ib", 8 * GIB, 192.0),
        # stas00/ml-engineering network/README.md @744d01e1: 4 x AWS P6-B200 (8 B200 on NVLink5, 8 x 400G EFA),
        # all_reduce 16 GiB, busbw 381.8 GB/s (hardware-and-prices.md §3.2).
        ("b200", 32, "8x400g-efa", 16 * GIB, 381.8),
    ],
)
def test_multi_node_all_reduce_bus_bandwidth(
    gpu: str, gpus: int, fabric: str, size_bytes: float, busbw_gb_s: float
) -> None:
    """nccl-tests' busbw = S / t x 2(p-1)/p for one buffer of S bytes (no DDP buckets: one latency). Tolerance 5 %:
    the per-NIC efficiencies behind the model span 0.95-0.97 (hardware-and-prices §2.3), and each figure is one
    run's plateau (the mean of 20 iterations) on one cluster. Errors found: 0.0 % and -0.5 %. The HDR efficiency
    (0.96) was read partly from the A100 figure, so that row checks the ring's structure (16 ranks, the fabric as
    its slowest link); the EFA row is independent (EFA takes the generic 0.95)."""
    spec, network = catalog.gpu(gpu), parse_fabric(fabric)
    t = hierarchical_allreduce(
        size_bytes,
        gpus,
        domain_gpus=8,
        intra_busbw_gb_s=link_busbw_gb_s(spec, "nvlink", 8),
        fabric=network,
        gpus_per_server=8,
    )
    predicted = size_bytes / t.seconds * 2 * (gpus - 1) / gpus / 1e9
    assert predicted == pytest.approx(busbw_gb_s, rel=0.05)
    assert t.domains == gpus // 8 and t.inter_seconds > 0  # the fabric carries part of it


@pytest.mark.parametrize(
    "gpu,fabric,few,many,measured_ratio",
    [
        # pytorch/torchtitan benchmarks/llama3_h100_202412_torchtitan.md @31a17bfd, Tables 1 and 3: Llama 3.1 8B,
        # FSDP, local batch 2, selective activation checkpointing, "400 Gb/s per GPU" RDMA between 8-GPU hosts:
        # tokens/s per GPU 5,762 on 8 GPUs, 5,605 on 128 (eager; 6,667 -> 6,514 compiled; 8,532 -> 8,380 Float8).
        ("h100-sxm", "8x400g-roce", 8, 128, 5605 / 5762),
        ("h100-sxm", "8x400g-roce", 8, 128, 6514 / 6667),
        ("h100-sxm", "8x400g-roce", 8, 128, 8380 / 8532),
        # pytorch/torchtitan benchmarks/llama3_8b_h200_2025-06_torchtitan.md @bcdeaa37 (Trainy): Llama 3.1 8B, local
        # batch 2, compile + Float8, "400Gb/s (Mellanox CX-7) per GPU": 10,938 tokens/s/GPU on 4 nodes, 10,753 on 8.
        ("h200-sxm", "8x400g-ib", 32, 64, 10753 / 10938),
    ],
)
def test_torchtitan_multi_node_scaling(gpu: str, fabric: str, few: int, many: int, measured_ratio: float) -> None:
    """Tokens/s per GPU from `few` to `many` GPUs at the same local batch: the ratio isolates what the servers'
    network costs (compute per GPU is unchanged, whatever the MFU). Tolerance 5 %: each figure is one iteration's
    reading (the 90th or 100th) with no spread given; the three variants of the same H100 run differ by 0.9 pp.
    Errors found: +1.7 to +2.8 % (the planner hides the whole all-reduce behind backward; the runs lost 2-3 %)."""
    model, spec, network = catalog.model("llama-3.1-8b"), catalog.gpu(gpu), parse_fabric(fabric)

    def per_gpu(gpus: int) -> float:
        setup = TrainSetup(micro_batch=2, seq_len=8192, gpus=gpus, zero=3, checkpointing="selective")
        return estimate_time(model, spec, setup, fabric=network).tokens_per_second / gpus

    big = estimate_time(
        model,
        spec,
        TrainSetup(micro_batch=2, seq_len=8192, gpus=many, zero=3, checkpointing="selective"),
        fabric=network,
    )
    assert big.servers == many // 8 and big.fabric == network.spec and big.inter_comm_seconds > 0
    assert per_gpu(many) / per_gpu(few) == pytest.approx(measured_ratio, rel=0.05)


def test_the_same_job_over_two_100_gbe_ports_stops_scaling_at_the_fabric() -> None:
    """Not a published figure: the planner's behaviour. The torchtitan job above over two 100 GbE ports (NCCL over
    TCP: 10 GB/s a server) instead of one 400G NIC per GPU loses over 10 % from 8 to 128 GPUs, and says the link
    between servers dominates."""
    model, spec = catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm")
    setup = TrainSetup(micro_batch=2, seq_len=8192, zero=3, checkpointing="selective")
    points = scale(model, spec, setup, [8, 128], fabric=parse_fabric("2x100g-eth"))
    nvlink = {p.gpus: p for p in points if p.interconnect == "nvlink"}
    assert nvlink[128].efficiency / nvlink[8].efficiency < 0.9
    assert nvlink[128].fabric_bound and not nvlink[8].fabric_bound and nvlink[128].fabric == "2x100g-eth"


@pytest.mark.parametrize(
    "gpu,gpus,domain,busbw_gb_s",
    [
        # stas00/ml-engineering network/README.md @744d01e1: 8 x H200 SXM on NVLink4, all_reduce ring, 16 GiB,
        # busbw 367.6 GB/s (hardware-and-prices.md §3.2, S02): the level inside one NVLink domain.
        ("h200-sxm", 8, 8, 367.6),
        # NVIDIA/nccl#1639: 8 x RTX 5090 on PCIe Gen5 x16, no NVLink, all_reduce busbw 28 GB/s; 4 of them 35 GB/s
        # (hardware-and-prices.md §3.2, S31): the level between NVLink domains of one server, each GPU its own
        # domain, here PCIe Gen5 GPUs (H100 PCIe) without their bridges.
        ("h100-pcie", 8, 1, 28.0),
        ("h100-pcie", 4, 1, 35.0),
    ],
)
def test_one_server_levels_against_nccl_tests(gpu: str, gpus: int, domain: int, busbw_gb_s: float) -> None:
    """One server, no fabric: the NVLink level and the PCIe level against nccl-tests' busbw for one buffer of
    8 GiB. Tolerance 5 %: each efficiency (NVLink 0.80, PCIe 0.44 and 0.56 of the x16 rate) was read from a
    figure like these, so the rows check that the levels move the bytes the ring does (2(L-1)/L x S over NVLink,
    2(K-1)/K x S over L host links); errors found: -2.1 %, -1.0 %, +0.8 %."""
    spec, size = catalog.gpu(gpu), 8 * GIB
    t = hierarchical_allreduce(
        size,
        gpus,
        domain_gpus=domain,
        intra_busbw_gb_s=link_busbw_gb_s(spec, "nvlink", gpus) if domain > 1 else math.inf,
        fabric=NO_FABRIC,
        gpus_per_server=8,
        cross_busbw_gb_s=link_busbw_gb_s(spec, "pcie", gpus),
    )
    assert size / t.seconds * 2 * (gpus - 1) / gpus / 1e9 == pytest.approx(busbw_gb_s, rel=0.05)
    assert (t.cross_seconds > 0) == (domain < gpus) and t.inter_seconds == 0 and t.units == 1


# An 8-GPU H100 server whose GPUs are NVLink-joined in pairs (--nvlink-domain 2) against one NVLink domain of 8 and
# against four 2-GPU servers over one 100 GbE port each: Llama 3.1 8B under FSDP, 8 GPUs.
PAIRS_SETUP = TrainSetup(micro_batch=1, seq_len=4096, gpus=8, zero=3)


def test_nvlink_pairs_meet_over_pcie_inside_a_server() -> None:
    """Not a published figure: the planner's behaviour. Pairs of NVLink GPUs meet over PCIe inside their server
    (28 GB/s a GPU on Gen5), slower than one NVLink domain of 8 (360 GB/s) and far faster than 100 GbE between
    servers (5 GB/s a server over TCP); one server needs no network between servers at all."""
    model, spec = catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm")
    whole = estimate_time(model, spec, PAIRS_SETUP, nvlink_domain=8)
    pairs = estimate_time(model, spec, PAIRS_SETUP, nvlink_domain=2)
    apart = estimate_time(
        model, spec, PAIRS_SETUP, gpus_per_server=2, nvlink_domain=2, fabric=parse_fabric("1x100g-eth")
    )
    assert whole.step_seconds < pairs.step_seconds < apart.step_seconds
    assert whole.comm_seconds < pairs.comm_seconds < apart.comm_seconds
    assert (pairs.servers, pairs.domains, pairs.fabric, pairs.inter_comm_seconds) == (1, 4, "none", 0.0)
    assert pairs.cross_comm_seconds > pairs.intra_comm_seconds > 0  # PCIe carries most of it
    assert (apart.servers, apart.fabric, apart.cross_comm_seconds) == (4, "1x100g-eth", 0.0)
    alone = estimate_time(model, spec, PAIRS_SETUP, nvlink_domain=2, fabric=NO_FABRIC)
    assert alone.step_seconds == pairs.step_seconds  # the server's own PCIe, whatever joins the servers


def test_nvlink_pairs_on_pcie_gpus_use_their_bridges() -> None:
    """H100 PCIe servers of 8 GPUs bridged in pairs: NVLink inside each pair, PCIe between the pairs, is faster
    than PCIe between all 8 GPUs (the planner's model of an 8-GPU ring, which NCCL paces by its PCIe hops)."""
    model, spec = catalog.model("llama-3.1-8b"), catalog.gpu("h100-pcie")
    pcie = estimate_time(model, spec, PAIRS_SETUP, interconnect="pcie")
    pairs = estimate_time(model, spec, PAIRS_SETUP, nvlink_domain=2)
    assert pairs.comm_seconds < pcie.comm_seconds and pairs.cross_comm_seconds > 0


def test_scale_says_where_the_link_between_servers_dominates_pcie_pairs() -> None:
    """NVLink pairs on 8-GPU servers: over 2 x 100 GbE the fabric dominates from the second server on, over
    8 x 400G InfiniBand never (the PCIe level between the pairs is then the slowest part of the all-reduce)."""
    model, spec = catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm")
    setup = TrainSetup(micro_batch=1, seq_len=4096, zero=3)

    def nvlink(fabric: str) -> dict[int, Any]:
        points = scale(model, spec, setup, [8, 16, 64], nvlink_domain=2, fabric=parse_fabric(fabric))
        return {p.gpus: p for p in points if p.interconnect == "nvlink"}

    slow, fast = nvlink("2x100g-eth"), nvlink("8x400g-ib")
    assert [slow[n].fabric_bound for n in (8, 16, 64)] == [False, True, True]
    assert not any(p.fabric_bound for p in fast.values())
    assert all(p.cross_comm_seconds > p.inter_comm_seconds for p in fast.values())


def test_tensor_parallelism_over_nvlink_pairs_meets_over_pcie() -> None:
    """--tp 4 over NVLink pairs: the TP group spans two pairs, so its all-reduces cross PCIe."""
    model, spec = catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm")
    setup = TrainSetup(micro_batch=1, seq_len=4096, gpus=8, tp=4, zero=1)
    assert tensor_parallel_seconds(model, setup, spec, "nvlink", 8, 2) > tensor_parallel_seconds(
        model, setup, spec, "nvlink", 8, 8
    )


# What the two-level model (NVLink or PCIe inside a server, the fabric between servers) gave before the PCIe level
# between NVLink domains was added: (step, all-reduce, inside servers, between servers) seconds. One NVLink domain
# to a server (or a domain larger than a server) must plan exactly as before.
TWO_LEVEL = [
    (
        (
            "llama-3.1-8b",
            "h100-sxm",
            {"micro_batch": 2, "seq_len": 8192, "gpus": 64, "zero": 3, "checkpointing": "selective"},
        ),
        {"fabric": "8x400g-roce"},
        (2.4076154985413125, 0.1501264736, 0.13548797653333333, 0.12932439882105262),
    ),
    (
        (
            "llama-3.1-8b",
            "h100-sxm",
            {"micro_batch": 2, "seq_len": 8192, "gpus": 64, "zero": 3, "checkpointing": "selective"},
        ),
        {"fabric": "2x100g-eth", "nvlink_domain": 8},
        (5.4932327963859455, 4.369755131733333, 0.13548797653333333, 4.2342671551999995),
    ),
    (
        ("llama-3.1-8b", "l40s", {"micro_batch": 1, "seq_len": 4096, "gpus": 16, "zero": 2}),
        {"interconnect": "pcie"},
        (3.847696290274298, 3.023607968, 2.0401037494949494, 1.6183122496),
    ),
    (
        ("llama-3.1-8b", "b200", {"micro_batch": 2, "seq_len": 8192, "gpus": 64, "zero": 3}),
        {"gpus_per_server": 4, "nvlink_domain": 72, "fabric": "4x400g-ib"},
        (1.0956181010667598, 0.08425323679999999, 0.08425323679999999, 0.0),
    ),
    (
        ("llama-3-70b", "h100-sxm", {"micro_batch": 1, "seq_len": 4096, "gpus": 32, "tp": 4, "zero": 1}),
        {"fabric": "8x400g-ib"},
        (1.2830334506923695, 0.7592365593951891, 0.12491125902222222, 0.5724383491958763),
    ),
]


@pytest.mark.parametrize("case,options,expected", TWO_LEVEL)
def test_one_nvlink_domain_per_server_plans_as_before(
    case: tuple[str, str, dict[str, Any]], options: dict[str, Any], expected: tuple[float, ...]
) -> None:
    """Regression: with one NVLink domain to a server (HGX, PCIe-only servers) or one domain across servers
    (NVL72), the third level is absent and every figure is the two-level model's, to the last bit."""
    name, gpu, fields = case
    kwargs = {**options, "fabric": parse_fabric(options["fabric"])} if "fabric" in options else options
    t = estimate_time(catalog.model(name), catalog.gpu(gpu), TrainSetup(**fields), **kwargs)
    assert (t.step_seconds, t.comm_seconds, t.intra_comm_seconds, t.inter_comm_seconds) == expected
    assert t.cross_comm_seconds == 0


def test_no_fabric_means_one_server() -> None:
    model, spec = catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm")
    with pytest.raises(PlanError, match="no network joins them"):
        estimate_time(model, spec, TrainSetup(gpus=16, zero=3), fabric=NO_FABRIC)
    points = scale(model, spec, TrainSetup(zero=3), [1, 8, 16, 64], fabric=NO_FABRIC)
    assert max(p.gpus for p in points) == 8


def test_an_nvl72_rack_is_one_nvlink_domain() -> None:
    """GB200 NVL72: 72 GPUs in one NVLink domain across 18 trays of 4 (hardware-and-prices §1, S11); 64 GPUs never
    touch the fabric there, while 64 GPUs of 8-GPU HGX servers do."""
    model, spec = catalog.model("llama-3.1-8b"), catalog.gpu("b200")
    setup = TrainSetup(micro_batch=2, seq_len=8192, gpus=64, zero=3)
    rack = estimate_time(model, spec, setup, gpus_per_server=4, nvlink_domain=72, fabric=parse_fabric("4x400g-ib"))
    hgx = estimate_time(model, spec, setup, fabric=parse_fabric("8x400g-ib"))
    assert rack.inter_comm_seconds == 0 and (rack.domains, rack.servers, rack.domain_kind) == (1, 16, "nvlink-domain")
    assert hgx.inter_comm_seconds > 0 and (hgx.domains, hgx.servers, hgx.domain_kind) == (8, 8, "server")


@pytest.mark.parametrize(
    "text,spec,label,server_gb_s",
    [
        ("8x400g-ib", "8x400g-ib", "8×400G InfiniBand NDR", 8 * 48.5),  # NDR: 48.5 of 50 GB/s (nccl-tests#267)
        ("8 x 200G-IB", "8x200g-ib", "8×200G InfiniBand HDR", 8 * 24.0),  # HDR: 24 of 25 GB/s (nccl-tests#119)
        ("32x100g-efa", "32x100g-efa", "32×100G EFA", 32 * 12.5 * 0.95),
        ("2x100g-eth", "2x100g-eth", "2×100 GbE (TCP)", 2 * 12.5 * 0.40),  # NCCL over TCP: 4-6 of 12.5 (nccl#450)
        ("none", "none", "none", 0.0),
    ],
)
def test_fabric_specs(text: str, spec: str, label: str, server_gb_s: float) -> None:
    fabric = parse_fabric(text)
    assert (fabric.spec, fabric.label) == (spec, label)
    assert fabric.server_gb_s == pytest.approx(server_gb_s)


def test_unknown_fabric_says_how_to_write_one() -> None:
    with pytest.raises(PlanError, match=r"Unknown fabric '400G'\. To fix: .*8x400g-ib"):
        parse_fabric("400G")


def test_what_each_all_reduce_crosses() -> None:
    """Not a published figure: where the planner's all-reduce runs. 1 GB of gradients among data-parallel ranks of
    H100 SXM: one GPU has nothing to reduce; two ranks in one server stay on NVLink, while under TP 8 (a replica
    fills a server, Megatron's placement) the same two ranks sit in two servers and meet over the fabric; pairs of
    NVLink GPUs meet over PCIe; 16 GPUs in one 16-GPU server never touch the fabric, on 8-GPU servers they do, and
    over a slower fabric they take longer."""
    h100, size = catalog.gpu("h100-sxm"), 1e9
    eth = parse_fabric("2x100g-eth")
    assert allreduce_seconds(size, 1, h100, "nvlink") == 0.0
    assert allreduce_seconds(size, 1, h100, "pcie", 4, fabric=eth, nvlink_domain=2, model_parallel=8) == 0.0
    one, apart = allreduce_time(size, 2, h100, "nvlink"), allreduce_time(size, 2, h100, "nvlink", model_parallel=8)
    assert (one.domains, one.inter_seconds, apart.domains) == (1, 0.0, 2) and apart.inter_seconds > 0
    assert allreduce_seconds(size, 2, h100, "nvlink", model_parallel=8) == apart.seconds > one.seconds
    whole, pairs = allreduce_time(size, 8, h100, "nvlink"), allreduce_time(size, 8, h100, "nvlink", nvlink_domain=2)
    assert whole.cross_seconds == 0 < pairs.cross_seconds
    assert allreduce_seconds(size, 8, h100, "nvlink", nvlink_domain=2) == pairs.seconds > whole.seconds
    big = allreduce_time(size, 16, h100, "nvlink", 16, fabric=eth)
    assert (big.domains, big.inter_seconds) == (1, 0.0)
    assert allreduce_seconds(size, 16, h100, "nvlink", 16, fabric=eth) == big.seconds
    assert big.seconds < allreduce_seconds(size, 16, h100, "nvlink", fabric=eth)
    assert allreduce_seconds(size, 16, h100, "nvlink") < allreduce_seconds(size, 16, h100, "nvlink", fabric=eth)


def test_tensor_parallel_pairs_over_pcie_match_an_8_gpu_pcie_all_reduce() -> None:
    """TP 2 over NVLink pairs: each pair is one replica, so the 4 data-parallel ranks of a server sit in 4 domains and
    all-reduce over PCIe, with all 8 GPUs crossing their host links at once, as in nccl#1639's 8 x RTX 5090 run on
    PCIe Gen5: 28 GB/s busbw (hardware-and-prices §3.2, S31). Tolerance 5 %, as above; error found: -2.4 %."""
    h100, size = catalog.gpu("h100-sxm"), 8 * GIB
    t = allreduce_time(size, 4, h100, "nvlink", nvlink_domain=2, model_parallel=2)
    assert (t.local, t.domains, t.units, t.intra_seconds, t.inter_seconds) == (1, 4, 1, 0.0, 0.0)
    assert size / t.seconds * 2 * 3 / 4 / 1e9 == pytest.approx(28.0, rel=0.05)


def test_replicas_that_do_not_divide_a_server_use_one_rank_of_each_per_server() -> None:
    """TP 2 x PP 3: 6 GPUs to a replica on 8-GPU servers; a server then holds one rank of each data-parallel group
    (never a third of one), so 4 ranks are 4 servers apart, joined by the fabric alone, no PCIe level."""
    t = allreduce_time(1e9, 4, catalog.gpu("h100-sxm"), "nvlink", model_parallel=6)
    assert (t.local, t.domains, t.units, t.cross_seconds) == (1, 4, 4, 0.0) and t.inter_seconds == t.seconds


def test_a_tensor_parallel_group_inside_one_nvlink_domain_stays_on_nvlink() -> None:
    """--tp 2 over NVLink pairs fits one pair: the same NVLink all-reduces as on a server of 8 NVLink GPUs."""
    model, spec = catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm")
    setup = TrainSetup(micro_batch=1, seq_len=4096, gpus=8, tp=2, zero=1)
    assert tensor_parallel_seconds(model, setup, spec, "nvlink", 8, 2) == tensor_parallel_seconds(
        model, setup, spec, "nvlink", 8
    )


@pytest.mark.parametrize(
    "gpus,setup_fields,options",
    [
        (16, {}, {"fabric": "8x200g-ib"}),  # two HGX servers over HDR
        (16, {}, {"fabric": "8x200g-ib", "nvlink_domain": 2}),  # NVLink pairs: PCIe, then HDR
        (8, {}, {"fabric": "4x200g-ib", "gpus_per_server": 4}),  # two 4-GPU servers
        (32, {"pp": 2}, {"fabric": "8x200g-ib"}),  # two pipeline stages to a replica: 16 ranks, 2 to a server pair
    ],
)
def test_a_well_overlapped_step_still_waits_for_its_last_bucket_over_the_fabric(
    gpus: int, setup_fields: dict[str, int], options: dict[str, Any]
) -> None:
    """Not a published figure: DDP/FSDP reduce the gradients in 25 MiB buckets while backward runs, and the last
    bucket is ready only when backward ends; Llama 3.1 8B at 2 x 8192 tokens a GPU hides every other bucket, so the
    step waits for that last one, which between servers crosses the fabric (as the rest of the all-reduce does)."""
    model, spec = catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm")
    setup = TrainSetup(micro_batch=2, seq_len=8192, gpus=gpus, zero=1, **setup_fields)
    kwargs = {**options, "fabric": parse_fabric(options["fabric"])}
    est = estimate_time(model, spec, setup, **kwargs)
    bucket = allreduce_seconds(
        DDP_BUCKET_BYTES,
        setup.dp,
        spec,
        "nvlink",
        kwargs.get("gpus_per_server", 8),
        fabric=kwargs["fabric"],
        nvlink_domain=kwargs.get("nvlink_domain"),
        model_parallel=setup.pp,
    )
    assert est.domains > 1 and est.exposed_comm_seconds == pytest.approx(bucket, rel=1e-12)
    assert est.fabric == options["fabric"] and est.servers == -(-gpus // kwargs.get("gpus_per_server", 8))
    assert est.exposed_comm_seconds < 0.01 * est.comm_seconds


def test_a_bridged_pair_waits_less_for_its_last_bucket_than_pcie() -> None:
    """Two H100 PCIe cards: the last bucket crosses their NVLink bridge, faster than their PCIe links."""
    model, spec = catalog.model("llama-3.1-8b"), catalog.gpu("h100-pcie")
    setup = TrainSetup(micro_batch=2, seq_len=8192, gpus=2, zero=1)
    bridged = estimate_time(model, spec, setup, interconnect="nvlink")
    pcie = estimate_time(model, spec, setup, interconnect="pcie")
    assert 0 < bridged.exposed_comm_seconds < pcie.exposed_comm_seconds


def test_tensor_parallelism_over_nvlink_pairs_slows_the_plan() -> None:
    """The plan itself, not only tensor_parallel_seconds: --tp 4 over NVLink pairs waits longer for its TP
    all-reduces than --tp 4 inside one NVLink domain of 8."""
    model, spec = catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm")
    setup = TrainSetup(micro_batch=1, seq_len=4096, gpus=8, tp=4, zero=1)

    def tp_seconds(domain: int) -> float:
        est = estimate_time(model, spec, setup, nvlink_domain=domain)
        return est.comm_seconds - est.intra_comm_seconds - est.cross_comm_seconds - est.inter_comm_seconds

    assert tp_seconds(2) > tp_seconds(8) > 0


def test_pure_model_parallelism_has_no_gradient_all_reduce() -> None:
    """TP 8 x PP 8 on 64 GPUs, the layout of Korthikanti et al.'s 175B run (planner-formulas §C B1b), is one replica:
    no data-parallel all-reduce, nothing over the fabric, though it fills 8 servers."""
    model = catalog.model("llama-3-70b")
    setup = TrainSetup(micro_batch=1, seq_len=2048, gpus=64, tp=8, pp=8, grad_accum=64)
    est = estimate_time(model, catalog.gpu("a100-80gb-sxm"), setup)
    assert (est.servers, est.domains, est.fabric, est.inter_comm_seconds, est.intra_comm_seconds) == (
        8,
        1,
        "none",
        0.0,
        0.0,
    )


def test_pipeline_and_tensor_parallelism_all_reduce_the_same_gradients() -> None:
    """A GPU holds half the weights under PP 2 or TP 2, and a replica is 2 GPUs either way: the gradient
    all-reduce of 32 GPUs on 4 servers is the same (only TP adds its own all-reduces)."""
    model, spec = catalog.model("llama-3.1-8b"), catalog.gpu("h100-sxm")
    pp = estimate_time(model, spec, TrainSetup(micro_batch=1, seq_len=2048, gpus=32, pp=2, grad_accum=4, zero=1))
    tp = estimate_time(model, spec, TrainSetup(micro_batch=1, seq_len=2048, gpus=32, tp=2, grad_accum=4, zero=1))
    parts = ("intra_comm_seconds", "cross_comm_seconds", "inter_comm_seconds", "domains", "servers")
    assert [getattr(pp, p) for p in parts] == [getattr(tp, p) for p in parts]
    assert pp.inter_comm_seconds > 0 and pp.domains == 4
