"""`treino plan scale`: the rows a user reads to choose how many GPUs to rent.

What a row promises: it is the plan of that many GPUs (`treino plan --gpus N` says the same); GPUs without NVLink scale
over PCIe only; without a network the rows stop at one server (or one NVLink domain where it spans servers, NVL72);
tensor parallelism multiplies the GPUs a row uses; one GPU has no all-reduce, so its efficiency is 1; and the row
where the link between servers starts to dominate is the first whose all-reduce spans servers with the fabric's part
the longest.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from treino import catalog
from treino.plan import TrainSetup
from treino.plan.calibration import MeasuredStep
from treino.plan.fabric import NO_FABRIC, parse_fabric
from treino.plan.performance import ScalePoint, estimate_time, scale


def by_gpus(points: list[ScalePoint], interconnect: str) -> dict[int, ScalePoint]:
    return {p.gpus: p for p in points if p.interconnect == interconnect}


def measured_step(gpu: str, model: str, mfu: float) -> MeasuredStep:
    """A `treino bench --train-step` point (the figures are what a calibrated plan reads: device, family, size)."""
    spec = catalog.model(model)
    return MeasuredStep(
        device=gpu,
        device_name="NVIDIA H100 80GB HBM3",
        model=model,
        family=spec.family,
        params=spec.params,
        hidden_size=spec.hidden_size,
        precision="bf16-mixed",
        checkpointing="none",
        micro_batch=2,
        seq_len=2048,
        steps=5,
        warmup_steps=2,
        step_seconds=0.5,
        flops_per_step=1e14,
        peak_tflops=catalog.gpu(gpu).bf16_tflops,
        peak_source="datasheet",
        mfu=mfu,
        measured_at="2026-12-02T07:00:00+00:00",
    )


def test_a_gpu_without_nvlink_scales_over_pcie_only() -> None:
    """The L40S has no NVLink (no bridge, no SXM): its rows are PCIe rows, one for each count."""
    points = scale(catalog.model("llama-3.2-1b"), catalog.gpu("l40s"), TrainSetup(zero=3), [1, 2, 4, 8])
    assert [(p.interconnect, p.gpus) for p in points] == [("pcie", 1), ("pcie", 2), ("pcie", 4), ("pcie", 8)]
    hgx = scale(catalog.model("llama-3.2-1b"), catalog.gpu("h100-sxm"), TrainSetup(zero=3), [1, 8])
    assert [(p.interconnect, p.gpus) for p in hgx] == [("nvlink", 1), ("nvlink", 8), ("pcie", 1), ("pcie", 8)]


# (model, GPU, setup, scale's options): each row must be what `treino plan` says for the same GPUs.
CASES: list[tuple[str, str, TrainSetup, dict[str, Any]]] = [
    # NVLink pairs on 8-GPU servers over 400G InfiniBand: three levels, domain "nvlink-domain"
    ("llama-3.1-8b", "h100-sxm", TrainSetup(micro_batch=1, seq_len=4096, zero=3), {"nvlink_domain": 2}),
    # GB200 NVL72-like: 4 GPUs to a tray, 72 to an NVLink domain, trays joined by 4 x 400G
    (
        "llama-3.1-8b",
        "b200",
        TrainSetup(micro_batch=2, seq_len=8192, zero=3),
        {"gpus_per_server": 4, "nvlink_domain": 72, "fabric": "4x400g-ib"},
    ),
    # a given MFU; tensor parallelism 2 (the rows count data-parallel replicas of 2 GPUs)
    ("llama-3-70b", "h100-sxm", TrainSetup(micro_batch=1, seq_len=4096, tp=2, zero=1), {"mfu": 0.3}),
    # 4-GPU PCIe servers over 2 x 100 GbE
    ("qwen2.5-1.5b", "l40s", TrainSetup(micro_batch=2, seq_len=2048, zero=2), {"gpus_per_server": 4}),
]


@pytest.mark.parametrize("model,gpu,setup,options", CASES)
def test_a_scale_row_is_the_plan_of_that_many_gpus(
    model: str, gpu: str, setup: TrainSetup, options: dict[str, Any]
) -> None:
    """Every figure of a row (step, tokens/s, the share of the step spent waiting for the all-reduce, servers, the
    all-reduce's parts, NVLink domains) is the plan of n x TP GPUs; one replica has no gradient all-reduce, and ZeRO
    shards nothing on one GPU: its row is the plan of one replica without ZeRO, efficiency 1."""
    spec, card = catalog.model(model), catalog.gpu(gpu)
    kwargs = {**options, "fabric": parse_fabric(options["fabric"])} if "fabric" in options else options
    counts = [1, 2, 4, 8, 16, 64]
    points = scale(spec, card, setup, counts, **kwargs)
    interconnects = ("nvlink", "pcie") if card.gpu_link != "none" else ("pcie",)
    assert [(p.interconnect, p.gpus) for p in points] == [(i, n) for i in interconnects for n in counts]
    for p in points:
        gpus = p.gpus * setup.tp
        alone = replace(setup, gpus=gpus, zero=setup.zero if p.gpus > 1 else 0)
        plan = estimate_time(spec, card, alone, interconnect=p.interconnect, **kwargs)
        assert (p.step_seconds, p.tokens_per_second) == (plan.step_seconds, plan.tokens_per_second)
        assert p.exposed_comm_fraction == pytest.approx(plan.exposed_comm_seconds / plan.step_seconds, rel=1e-12)
        assert 0 <= p.exposed_comm_fraction < 1
        assert (p.servers, p.fabric, p.domains, p.domain_kind) == (
            plan.servers,
            plan.fabric,
            plan.domains,
            plan.domain_kind,
        )
        parts = (p.intra_comm_seconds, p.inter_comm_seconds, p.cross_comm_seconds)
        assert parts == (plan.intra_comm_seconds, plan.inter_comm_seconds, plan.cross_comm_seconds)
        assert (sum(parts) > 0) == (p.gpus > 1)  # two replicas or more all-reduce their gradients
        assert p.servers == -(-gpus // options.get("gpus_per_server", 8))  # TP multiplies the GPUs a row fills
    one = by_gpus(points, interconnects[0])[1]
    assert one.efficiency == 1.0
    assert (one.exposed_comm_fraction == 0.0) == (setup.tp == 1)  # TP's own all-reduces wait inside the step
    assert (one.intra_comm_seconds, one.inter_comm_seconds, one.cross_comm_seconds) == (0.0, 0.0, 0.0)


def test_a_measured_step_calibrates_every_row() -> None:
    """A `treino bench --train-step` point replaces the MFU prior in `plan scale` as in `plan`: the one-GPU row of
    the calibrated scale is still efficiency 1, and every row takes the measured MFU."""
    model, gpu = catalog.model("qwen2.5-1.5b"), catalog.gpu("h100-sxm")
    setup = TrainSetup(micro_batch=2, seq_len=2048, zero=3)
    point = measured_step("h100-sxm", "qwen2.5-1.5b", 0.2)
    calibrated = scale(model, gpu, setup, [1, 8, 16], calibration=[point])
    prior = scale(model, gpu, setup, [1, 8, 16])
    for p, q in zip(calibrated, prior, strict=True):
        plan = estimate_time(model, gpu, replace(setup, gpus=p.gpus), interconnect=p.interconnect, calibration=[point])
        assert p.step_seconds == plan.step_seconds > q.step_seconds  # MFU 0.2 is below the prior (0.42 x size)
    assert [p.efficiency for p in calibrated if p.gpus == 1] == [1.0, 1.0]
    one = estimate_time(model, gpu, replace(setup, gpus=1), calibration=[point])
    assert (one.mfu_origin, one.mfu) == ("measured", pytest.approx(0.2))  # the same model on the same GPU
    assert (
        one.mfu_source
        == "measured on NVIDIA H100 80GB HBM3, 2026-12-02: qwen2.5-1.5b at micro-batch 2 x 2048 tokens, MFU 20.0 %"
    )


def test_without_a_network_scale_stops_at_one_nvlink_domain() -> None:
    """Fabric "none": an NVL72 rack (4 GPUs to a tray, 72 to an NVLink domain) scales over NVLink to 64 GPUs; its
    PCIe rows stop at one tray; with TP 2 an 8-GPU server holds 4 replicas, the last row."""
    model, b200 = catalog.model("llama-3.1-8b"), catalog.gpu("b200")
    setup = TrainSetup(micro_batch=2, seq_len=8192, zero=3)
    rack = scale(model, b200, setup, [4, 8, 64, 128], fabric=NO_FABRIC, gpus_per_server=4, nvlink_domain=72)
    assert [(p.interconnect, p.gpus) for p in rack] == [("nvlink", 4), ("nvlink", 8), ("nvlink", 64), ("pcie", 4)]
    assert all(p.inter_comm_seconds == 0 and p.domains == 1 for p in rack)
    tp = TrainSetup(micro_batch=1, seq_len=4096, tp=2, zero=1)
    hgx = scale(catalog.model("llama-3-70b"), catalog.gpu("h100-sxm"), tp, [1, 2, 4, 8], fabric=NO_FABRIC)
    assert [(p.interconnect, p.gpus) for p in hgx] == [(i, n) for i in ("nvlink", "pcie") for n in (1, 2, 4)]


def test_the_link_between_servers_dominates_from_the_second_server() -> None:
    """Llama 3.2 1B on HGX H100 servers: over 2 x 100 GbE (NCCL over TCP, 10 GB/s a server, nccl#450) the fabric's
    part of the all-reduce outlasts the NVLink part from the second server on, though it stays under a second;
    over 8 x 400G InfiniBand it never does. The flag is what a user reads: more than one server and the fabric's
    part the longest."""
    model, gpu = catalog.model("llama-3.2-1b"), catalog.gpu("h100-sxm")
    setup = TrainSetup(micro_batch=1, seq_len=2048, zero=3)
    slow = by_gpus(scale(model, gpu, setup, [1, 8, 16, 64], fabric=parse_fabric("2x100g-eth")), "nvlink")
    fast = by_gpus(scale(model, gpu, setup, [1, 8, 16, 64], fabric=parse_fabric("8x400g-ib")), "nvlink")
    assert [slow[n].fabric_bound for n in (1, 8, 16, 64)] == [False, False, True, True]
    assert all(slow[n].inter_comm_seconds < 1.0 for n in (16, 64))
    assert not any(p.fabric_bound for p in fast.values())
    for p in [*slow.values(), *fast.values()]:
        assert p.fabric_bound == (p.domains > 1 and p.inter_comm_seconds > p.intra_comm_seconds)
