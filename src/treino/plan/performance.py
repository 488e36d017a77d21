"""How long a training run takes, and how it scales over GPUs: FLOPs, MFU priors, all-reduce, overlap.

    flops per token   6N + 12·L·d_attn·s (PaLM App. B; the convention torchtitan and MosaicML report MFU in,
                      reproduced to 0.1 pp in planner-formulas §B7). Full recompute adds a forward: 8N + 16·L·d·s.
    compute seconds   tokens · flops / (GPUs · dense peak · MFU)                     (planner-formulas §B8)
    all-reduce        2(p−1)/p · bytes / busbw + latency    (ring; Thakur et al. 2005; hardware-and-prices §3.3);
                      beyond one NVLink domain, ring or hierarchical: NVLink inside each domain, PCIe between the
                      domains of one server, the fabric between servers (treino.plan.fabric)
    step seconds      compute + the all-reduce time backward cannot hide

MFU priors are measured values for well-tuned frameworks (torchtitan, Megatron, llm-foundry): A100 bf16
0.55, H100/H200 0.42 (hardware-and-prices.md §7, from §4.2 rows). Hugging Face Trainer fine-tunes run far
lower (Llama-3.2-3B on an L40S: ~12 %, planner-formulas §B8): pass `mfu=` to use your own.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from treino.errors import PlanError
from treino.i18n import Msg
from treino.plan.calibration import MeasuredStep, calibrated_mfu
from treino.plan.fabric import (
    DEFAULT_FABRIC,
    NCCL_LATENCY_S,
    AllReduceTime,
    Fabric,
    hierarchical_allreduce,
    parse_fabric,
)
from treino.plan.fp8 import fp8_peak_tflops
from treino.plan.hardware import GpuSpec
from treino.plan.memory import TrainSetup, lora_params
from treino.plan.model import ModelSpec

# MFU priors by GPU (bf16, dense LLM, no recompute, large matmuls). hardware-and-prices.md §7 / §4.2.
MFU_PRIOR = {
    "a100-40gb-pcie": 0.55,
    "a100-80gb-sxm": 0.55,  # llm_mfu_a100_bf16 (S50 S52 S55)
    "h100-pcie": 0.42,
    "h100-sxm": 0.42,
    "h100-nvl": 0.42,
    "h200-sxm": 0.42,
    "h200-nvl": 0.42,  # S50 S53 S55
    # No published LLM MFU for these: Hopper's prior scaled by their matmul efficiency against H100's
    # (MAMF, hardware-and-prices §4.1: B200 0.776, MI300X 0.514 vs H100 0.803). Unverified.
    "b200": 0.42 * 0.776 / 0.803,
    "mi300x": 0.42 * 0.514 / 0.803,
}
MFU_PRIOR_UNVERIFIED = 0.35  # Ada/Ampere PCIe cards (L4, L40S, A10, RTX): no published pre-training MFU
# Small models run small matmuls: MPT-125M (h 768) reached 44.8 % MFU where MPT-7B reached 64.2 % on the same
# A100s, and MPT-1B (h 2048) 59.9 % (llm-foundry benchmarking README, planner-formulas §C B5c).
SMALL_MODEL_FLOOR = 0.70  # 44.8 / 64.2
# Full recompute keeps hardware utilisation and spends 8N instead of 6N: MFU x 0.75 (MPT-30B: MFU 55.3 %,
# HFU 73.7 %; §C B5c).
RECOMPUTE_MFU_FACTOR = 6 / 8
HBM_EFFICIENCY = 0.88  # hbm_bw_efficiency, hardware-and-prices §7 (S60 S61 S64)
# Bus bandwidth over the per-GPU one-way link (hardware-and-prices §3.2, §7): NVLink ring 0.80 (8xA100
# 234.9/300, 8xH200 367.6/450); PCIe-only 0.56 at 4 GPUs, 0.44 at 8 (4x/8x RTX 5090, 35 and 28 of 63 GB/s).
NVLINK_BUSBW_EFFICIENCY = 0.80
PCIE_BUSBW_EFFICIENCY = {2: 0.56, 4: 0.56, 8: 0.44}
PCIE_UNI_GB_S = {3: 15.75, 4: 31.5, 5: 63.0, 6: 121.0}  # x16, one direction (hardware-and-prices §2.2)
# Between servers: the fabric (treino.plan.fabric); 8 GPUs to an HGX/DGX server unless an offer says otherwise.
GPUS_PER_SERVER = 8
DDP_BUCKET_BYTES = 25 * 2**20  # torch DDP bucket_cap_mb default
# Backward is 2/3 of a step's FLOPs; bucketed all-reduce overlaps most of it (0.5-0.9, §7, unverified).
OVERLAP_FRACTION = 0.8


@dataclass(frozen=True)
class TimeEstimate:
    flops_per_token: float  # model FLOPs (what MFU counts)
    hardware_flops_per_token: float  # with recompute and LoRA's skipped weight gradients
    mfu: float
    mfu_source: str  # a Msg (treino.i18n)
    compute_seconds: float  # per optimizer step
    comm_seconds: float
    exposed_comm_seconds: float
    step_seconds: float
    tokens_per_step: int  # all GPUs
    tokens_per_second: float  # all GPUs
    bound: str  # "compute" or "memory"
    total_seconds: float  # for the requested tokens; 0 when none given
    steps: int
    servers: int = 1  # servers the job's GPUs fill, `gpus_per_server` to a server
    fabric: str = "none"  # the network between domains (treino.plan.fabric spec); "none" within one domain
    intra_comm_seconds: float = 0.0  # the all-reduce's reduce-scatter + all-gather inside NVLink domains (servers)
    inter_comm_seconds: float = 0.0  # its all-reduce between servers, over the fabric
    mfu_origin: str = "prior"  # "prior", "measured" (a calibrated MFU from the profile, plan.calibration), "given"
    domains: int = 1  # NVLink domains (servers, unless an NVLink domain is set apart) the all-reduce spans
    domain_kind: str = "server"  # what a domain is: "server", or "nvlink-domain" when --nvlink-domain differs
    cross_comm_seconds: float = 0.0  # between the NVLink domains of one server, over PCIe (domains < a server)


def model_flops_per_token(model: ModelSpec, seq_len: int) -> float:
    """6N + 12·L·d_attn·s with N all parameters a token passes through (MoE: the active experts), as
    torchtitan and llm-foundry count MFU (PaLM App. B; planner-formulas §B7: this reproduces their published
    MFU to 0.1 pp)."""
    return 6 * model.active_params + 12 * model.num_layers * model.attention_core_width * seq_len


def hardware_flops_per_token(model: ModelSpec, setup: TrainSetup) -> float:
    """What the GPUs execute: full recompute repeats the forward (8N + 16·L·d·s, §B3); LoRA skips the frozen
    weights' gradients (4N, §B5) and adds its adapters (6 per adapter parameter)."""
    base = model_flops_per_token(model, setup.seq_len)
    attention = 12 * model.num_layers * model.attention_core_width * setup.seq_len
    dense = base - attention
    if setup.lora:
        dense = dense * 4 / 6 + 6 * lora_params(model, setup)
    if setup.checkpointing == "full":
        return dense * 8 / 6 + attention * 16 / 12
    return dense + attention


def mfu_size_factor(hidden_size: int) -> float:
    """Small matmuls run below the large-model MFU, down to SMALL_MODEL_FLOOR (MPT-125M vs MPT-7B)."""
    return min(1.0, max(SMALL_MODEL_FLOOR, SMALL_MODEL_FLOOR + 0.15 * math.log2(hidden_size / 768)))


def mfu_prior(model: ModelSpec, gpu: GpuSpec, setup: TrainSetup) -> tuple[float, str]:
    base = MFU_PRIOR.get(gpu.name)
    source = Msg("prior for {gpu} (docs/catalog.md, MFU priors)", gpu=gpu.name)  # a Msg: the views translate it
    if base is None:
        base, source = MFU_PRIOR_UNVERIFIED, Msg("unverified prior for {gpu}", gpu=gpu.name)
    mfu = base * mfu_size_factor(model.hidden_size)
    if setup.checkpointing == "full":
        mfu *= RECOMPUTE_MFU_FACTOR
    # fp32 training runs its matmuls in TF32: estimate_time divides by the TF32 peak, so the prior (a fraction of
    # the peak of the dtype the matmuls run in) is not scaled again
    return mfu, source


def link_busbw_gb_s(gpu: GpuSpec, interconnect: str, gpus: int) -> float:
    """All-reduce bus bandwidth inside one server, GB/s (nccl-tests' busbw, hardware-and-prices §3.1)."""
    if interconnect == "nvlink":
        if gpu.gpu_link in ("none",):
            raise PlanError(Msg("The {gpu} has no NVLink. To fix: use --interconnect pcie.", gpu=gpu.display_name))
        # Bridges join pairs of cards (A100/H100 PCIe, H100 NVL), or 2 or 4 (H200 NVL: "-2or4way"); more meet over PCIe.
        bridged = 4 if gpu.gpu_link.endswith("-bridge-2or4way") else 2 if gpu.gpu_link.endswith("-bridge") else gpus
        if gpus <= bridged:
            return gpu.gpu_link_gb_s_bidir / 2 * NVLINK_BUSBW_EFFICIENCY
    uni = PCIE_UNI_GB_S[gpu.pcie_generation]
    key = min((k for k in PCIE_BUSBW_EFFICIENCY if k >= min(gpus, 8)), default=8)
    return uni * PCIE_BUSBW_EFFICIENCY[key]


def allreduce_time(
    nbytes: float,
    gpus: int,
    gpu: GpuSpec,
    interconnect: str,
    gpus_per_server: int = GPUS_PER_SERVER,
    *,
    fabric: Fabric | None = None,
    nvlink_domain: int | None = None,
    model_parallel: int = 1,
) -> AllReduceTime:
    """All-reduce of `nbytes` per GPU among `gpus` data-parallel ranks: inside an NVLink domain over NVLink (over
    PCIe on PCIe-only servers), between the domains of one server over PCIe when a domain is smaller than the
    server, between servers over the fabric (ring or hierarchical, whichever is faster: treino.plan.fabric).
    `fabric` None: the reference design for the interconnect (DEFAULT_FABRIC); `nvlink_domain` None: the server.
    With tensor/pipeline parallelism (`model_parallel` = tp x pp GPUs per replica, Megatron's placement: TP inside
    a server) a domain holds domain / model_parallel ranks of each data-parallel group; the rest are elsewhere."""
    domain = max(1, _domain(interconnect, gpus_per_server, nvlink_domain) // model_parallel)
    server = max(1, gpus_per_server // model_parallel)
    local = max(1, min(gpus, domain))
    # The PCIe level: every GPU of the server taking part crosses its own host link (PCIe-only busbw at that count).
    cross = link_busbw_gb_s(gpu, "pcie", min(gpus * model_parallel, gpus_per_server)) if domain < server else math.inf
    return hierarchical_allreduce(
        nbytes,
        gpus,
        domain_gpus=domain,
        intra_busbw_gb_s=link_busbw_gb_s(gpu, interconnect, local) if local > 1 else math.inf,
        fabric=fabric if fabric is not None else parse_fabric(DEFAULT_FABRIC[interconnect]),
        gpus_per_server=gpus_per_server,
        buckets=max(1, math.ceil(nbytes / DDP_BUCKET_BYTES)),
        server_gpus=server,
        cross_busbw_gb_s=cross,
    )


def allreduce_seconds(
    nbytes: float,
    gpus: int,
    gpu: GpuSpec,
    interconnect: str,
    gpus_per_server: int = GPUS_PER_SERVER,
    *,
    fabric: Fabric | None = None,
    nvlink_domain: int | None = None,
    model_parallel: int = 1,
) -> float:
    """Seconds of `allreduce_time`; 0 on one GPU."""
    if gpus == 1:
        return 0.0
    return allreduce_time(
        nbytes,
        gpus,
        gpu,
        interconnect,
        gpus_per_server,
        fabric=fabric,
        nvlink_domain=nvlink_domain,
        model_parallel=model_parallel,
    ).seconds


def tensor_parallel_seconds(
    model: ModelSpec,
    setup: TrainSetup,
    gpu: GpuSpec,
    interconnect: str,
    gpus_per_server: int = GPUS_PER_SERVER,
    nvlink_domain: int | None = None,
) -> float:
    """Megatron tensor parallelism all-reduces the block's b·s·h activations twice in forward and twice in
    backward (Shoeybi et al. 2019, §3, Fig. 4: the f and g operators), in 16 bits; full recompute repeats the
    forward's two. Sequence parallelism swaps them for reduce-scatter + all-gather, the same bytes (Korthikanti
    et al. 2022, §4.2.2). Not overlapped with compute."""
    t = setup.tp
    if t == 1:
        return 0.0
    if t > max(gpus_per_server, nvlink_domain or 0):
        raise PlanError(
            Msg(
                "--tp {t} spans servers; tensor parallelism needs one NVLink domain. To fix: --tp <= "
                "{gpus_per_server}, and data parallelism (ZeRO) across servers.",
                t=t,
                gpus_per_server=gpus_per_server,
            )
        )
    per_block = 6 if setup.checkpointing == "full" else 4
    nbytes = setup.micro_batch * setup.seq_len * model.hidden_size * 2
    if interconnect == "nvlink" and nvlink_domain and t > nvlink_domain:
        interconnect = "pcie"  # a TP group over several NVLink domains of one server meets over PCIe
    one = 2 * (t - 1) / t * nbytes / (link_busbw_gb_s(gpu, interconnect, t) * 1e9) + NCCL_LATENCY_S
    return setup.grad_accum * model.num_layers / setup.pp * per_block * one


def _comm_bytes(model: ModelSpec, setup: TrainSetup) -> float:
    """Bytes each GPU all-reduces per optimizer step: the gradients, in 16 bits unless training in fp32 (FSDP
    MixedPrecision / DDP's bf16 compression hook); ZeRO-3 adds the weights' all-gathers: 1.5x the volume of an
    all-reduce (Rajbhandari et al. 2020, §7). An all-reduce is a reduce-scatter and an all-gather of the same
    bytes; bf16-fsdp gathers bf16 parameters (once under ZeRO-2, twice under ZeRO-3) and reduce-scatters fp32
    gradients (FSDP2's MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32))."""
    trainable = lora_params(model, setup) if setup.lora else model.params
    per_gpu = trainable / (setup.tp * setup.pp)
    if setup.precision == "bf16-fsdp":
        gathers = 2 if setup.zero >= 3 else 1
        return per_gpu * (gathers * 2 + 4) / 2  # each half of an all-reduce moves its bytes once
    grad_bytes = 4 if setup.precision == "fp32" else 2
    volume = grad_bytes * per_gpu
    return volume * (1.5 if setup.zero >= 3 else 1.0)


def _fp8_peak(model: ModelSpec, gpu: GpuSpec, flops_per_token: float) -> float:
    if not gpu.fp8_tflops:
        raise PlanError(
            Msg(
                "The {gpu} has no FP8 tensor cores. To fix: use --precision bf16-mixed, or a GPU with "
                "FP8 (Ada: L4, L40S; Hopper: H100, H200; Blackwell).",
                gpu=gpu.display_name,
            )
        )
    return fp8_peak_tflops(model, flops_per_token, gpu.bf16_tflops, gpu.fp8_tflops) * 1e12


def estimate_time(
    model: ModelSpec,
    gpu: GpuSpec,
    setup: TrainSetup,
    *,
    tokens: float = 0.0,
    interconnect: str = "nvlink",
    mfu: float | None = None,
    gpus_per_server: int = GPUS_PER_SERVER,
    fabric: Fabric | None = None,
    nvlink_domain: int | None = None,
    calibration: Sequence[MeasuredStep] = (),
) -> TimeEstimate:
    """Step time and run time of `setup` on `setup.gpus` GPUs of type `gpu`, `gpus_per_server` to a server,
    servers joined by `fabric` (None: DEFAULT_FABRIC for the interconnect), `nvlink_domain` GPUs to an NVLink
    domain (None: the server; 72 for an NVL72 rack). `calibration`: training steps measured by `treino bench
    --train-step`; a close one replaces the MFU prior (plan.calibration)."""
    if interconnect not in ("nvlink", "pcie"):
        raise PlanError(
            Msg("Unknown interconnect {interconnect!r}. To fix: use nvlink or pcie.", interconnect=interconnect)
        )
    if mfu is not None and not 0 < mfu <= 1:
        raise PlanError(Msg("--mfu must be in (0, 1], got {mfu}.", mfu=mfu))
    if tokens < 0:
        raise PlanError(Msg("--tokens must not be negative."))
    model_flops = model_flops_per_token(model, setup.seq_len)
    hw_flops = hardware_flops_per_token(model, setup)
    prior, source = mfu_prior(model, gpu, setup)
    origin = "prior"
    calibrated = calibrated_mfu(model, gpu, setup, calibration) if calibration else None
    if calibrated is not None:
        (prior, source), origin = calibrated, "measured"
    used_mfu, used_source = (mfu, "given") if mfu is not None else (prior, source)
    dtype = "tf32" if setup.precision == "fp32" else "bf16"
    peak = gpu.dense_tflops(dtype) * 1e12
    if setup.precision == "fp8":  # Linear layers on the FP8 tensor cores (fp8.py)
        peak = _fp8_peak(model, gpu, model_flops)
    tokens_per_gpu = setup.micro_batch * setup.seq_len * setup.grad_accum
    tokens_per_step = tokens_per_gpu * setup.dp
    # MFU counts model FLOPs, so hardware FLOPs (recompute, LoRA) scale the time by hw/model at equal HFU.
    compute = tokens_per_gpu * model_flops / (setup.tp * setup.pp * peak * used_mfu)
    # Pipeline bubble: (p-1)/(v·m) of the ideal time with m micro-batches (Narayanan et al. 2021, §2.2).
    compute *= 1 + (setup.pp - 1) / (setup.pp_interleave * setup.grad_accum)
    if setup.checkpointing != "full":
        compute *= hw_flops / model_flops
    # Roofline: every micro-batch reads the weights in forward and twice in backward.
    weight_bytes = (2 if setup.precision != "fp32" else 4) * model.params / (setup.tp * setup.pp)
    memory_time = setup.grad_accum * 3 * weight_bytes / (gpu.hbm_bandwidth_gb_s * 1e9 * HBM_EFFICIENCY)
    bound = "memory" if memory_time > compute else "compute"
    compute = max(compute, memory_time)
    comm_bytes = _comm_bytes(model, setup)
    reduce = (
        allreduce_time(
            comm_bytes,
            setup.dp,
            gpu,
            interconnect,
            gpus_per_server,
            fabric=fabric,
            nvlink_domain=nvlink_domain,
            model_parallel=setup.tp * setup.pp,
        )
        if setup.dp > 1
        else None
    )
    comm = reduce.seconds if reduce else 0.0
    backward = compute * 2 / 3 / setup.grad_accum  # only the last micro-batch's backward overlaps
    if reduce and reduce.domains > 1:  # the last bucket crosses the fabric too
        last_bucket = allreduce_seconds(
            min(DDP_BUCKET_BYTES, comm_bytes),
            setup.dp,
            gpu,
            interconnect,
            gpus_per_server,
            fabric=fabric,
            nvlink_domain=nvlink_domain,
            model_parallel=setup.tp * setup.pp,
        )
    else:
        last_bucket = min(DDP_BUCKET_BYTES, comm_bytes) / (link_busbw_gb_s(gpu, interconnect, 2) * 1e9)
    exposed = max(comm - OVERLAP_FRACTION * backward, min(comm, last_bucket)) if comm else 0.0
    tp_comm = tensor_parallel_seconds(model, setup, gpu, interconnect, gpus_per_server, nvlink_domain)
    comm += tp_comm
    exposed += tp_comm  # on the critical path: each block waits for its all-reduce
    step = compute + exposed
    steps = math.ceil(tokens / tokens_per_step) if tokens else 0
    return TimeEstimate(
        flops_per_token=model_flops,
        hardware_flops_per_token=hw_flops,
        mfu=used_mfu * compute / step if step else used_mfu,
        mfu_source=used_source,
        compute_seconds=compute,
        comm_seconds=comm,
        exposed_comm_seconds=exposed,
        step_seconds=step,
        tokens_per_step=tokens_per_step,
        tokens_per_second=tokens_per_step / step,
        bound=bound,
        total_seconds=steps * step,
        steps=steps,
        servers=math.ceil(setup.gpus / gpus_per_server),
        fabric=_fabric_spec(fabric, interconnect) if reduce and reduce.units > 1 else "none",
        intra_comm_seconds=reduce.intra_seconds if reduce else 0.0,
        inter_comm_seconds=reduce.inter_seconds if reduce else 0.0,
        mfu_origin="given" if mfu is not None else origin,
        domains=math.ceil(setup.gpus / _domain(interconnect, gpus_per_server, nvlink_domain)) if reduce else 1,
        domain_kind=_domain_kind(interconnect, gpus_per_server, nvlink_domain),
        cross_comm_seconds=reduce.cross_seconds if reduce else 0.0,
    )


def _domain(interconnect: str, gpus_per_server: int, nvlink_domain: int | None) -> int:
    return nvlink_domain if interconnect == "nvlink" and nvlink_domain else gpus_per_server


def _domain_kind(interconnect: str, gpus_per_server: int, nvlink_domain: int | None) -> str:
    """ "server" when the all-reduce's lower level is one server; "nvlink-domain" when an NVLink domain of another
    size is (smaller: several to a server; larger: an NVL72 rack across trays)."""
    return "server" if _domain(interconnect, gpus_per_server, nvlink_domain) == gpus_per_server else "nvlink-domain"


def _fabric_spec(fabric: Fabric | None, interconnect: str) -> str:
    return fabric.spec if fabric is not None else DEFAULT_FABRIC[interconnect]


@dataclass(frozen=True)
class ScalePoint:
    gpus: int
    interconnect: str  # the link inside a server: "nvlink" or "pcie"
    step_seconds: float
    tokens_per_second: float
    efficiency: float  # tokens/s over gpus x one GPU's tokens/s
    exposed_comm_fraction: float
    servers: int = 1  # servers the GPUs fill
    fabric: str = "none"  # the network between domains (treino.plan.fabric spec)
    intra_comm_seconds: float = 0.0  # reduce-scatter + all-gather inside each domain
    inter_comm_seconds: float = 0.0  # all-reduce between servers (domains, when a domain is a server or more)
    fabric_bound: bool = False  # the fabric's part of the all-reduce outlasts the parts inside servers
    domains: int = 1  # NVLink domains (servers, unless an NVLink domain is set apart) the all-reduce spans
    domain_kind: str = "server"  # "server" or "nvlink-domain" (TimeEstimate.domain_kind)
    cross_comm_seconds: float = 0.0  # between the NVLink domains of one server, over PCIe


def scale(
    model: ModelSpec,
    gpu: GpuSpec,
    setup: TrainSetup,
    counts: list[int],
    *,
    mfu: float | None = None,
    fabric: Fabric | None = None,
    gpus_per_server: int = GPUS_PER_SERVER,
    nvlink_domain: int | None = None,
    calibration: Sequence[MeasuredStep] = (),
) -> list[ScalePoint]:
    """Weak scaling (same micro-batch per GPU) over `counts` GPUs, NVLink and PCIe inside a server, `fabric`
    between servers (None: DEFAULT_FABRIC for each interconnect). A fabric of "none" stops at one server."""
    points: list[ScalePoint] = []
    for interconnect in ("nvlink", "pcie"):
        if interconnect == "nvlink" and gpu.gpu_link == "none":
            continue
        one = estimate_time(
            model, gpu, _with_gpus(setup, 1), interconnect=interconnect, mfu=mfu, calibration=calibration
        )
        # No network: one server is the most there is, or one NVLink domain where it spans servers (NVL72).
        most = max(gpus_per_server, nvlink_domain if interconnect == "nvlink" and nvlink_domain else 0)
        for n in counts:
            if fabric is not None and fabric.kind == "none" and n * setup.tp > most:
                break
            est = estimate_time(
                model,
                gpu,
                _with_gpus(setup, n),
                interconnect=interconnect,
                mfu=mfu,
                gpus_per_server=gpus_per_server,
                fabric=fabric,
                nvlink_domain=nvlink_domain,
                calibration=calibration,
            )
            points.append(
                ScalePoint(
                    n,
                    interconnect,
                    est.step_seconds,
                    est.tokens_per_second,
                    est.tokens_per_second / (n * one.tokens_per_second),  # n data-parallel replicas
                    est.exposed_comm_seconds / est.step_seconds,
                    est.servers,
                    est.fabric,
                    est.intra_comm_seconds,
                    est.inter_comm_seconds,
                    est.inter_comm_seconds > max(0.0, est.intra_comm_seconds + est.cross_comm_seconds),
                    est.domains,
                    est.domain_kind,
                    est.cross_comm_seconds,
                )
            )
    return points


def _with_gpus(setup: TrainSetup, gpus: int) -> TrainSetup:
    return replace(setup, gpus=gpus * setup.tp, zero=setup.zero if gpus > 1 else 0)
