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

Not a test: the Llama 3 paper's 405B runs (Table 4: 430 TFLOP/s per GPU on 8,192 H100s, 400 on 16,384; TP 8, PP 16,
RoCE 400 Gb/s per GPU) come out 15-49 % low, the miss set by the pipeline schedule (the interleaving depth is not
published: 1 to 8 virtual stages give -38 to -17 % at 8,192 GPUs, -49 to -15 % at 16,384), not by the network: the
gradient all-reduce the planner cannot hide is 5-9 % of a step at both sizes.
MLPerf Training scores are times to a target accuracy, whose sample counts change with the batch size, so they hold
no throughput to compare a step-time model against.
"""

from __future__ import annotations

import pytest

from treino import catalog
from treino.errors import PlanError
from treino.plan import TrainSetup
from treino.plan.fabric import NO_FABRIC, hierarchical_allreduce, parse_fabric
from treino.plan.performance import estimate_time, link_busbw_gb_s, scale

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
