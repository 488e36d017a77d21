"""Dedicated against shared GPUs, with numbers: the seed article's comparison table computed for one job.

A shared GPU is either a MIG slice (hardware partition: a fixed share of memory and SMs, no NVLink peer
access) or a time slice (the whole GPU, taken in turns with neighbours). Interruptions follow a Poisson
process; each costs the work since the last checkpoint (half an interval on average) plus a restart.
The checkpoint interval that minimises the loss is Young's, sqrt(2 · checkpoint cost / interruption rate)
(J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM 17(9), 1974).

MIG profiles: NVIDIA Multi-Instance GPU User Guide, "Supported MIG profiles" (A100/H100/H200): a g-slice
gets g of 7 compute slices and 1, 2, 4, 4 or 8 of 8 memory slices for 1g, 2g, 3g, 4g, 7g (not in the
project's reference files; unverified here).
"""

from __future__ import annotations

from dataclasses import dataclass

from treino.errors import PlanError
from treino.i18n import Msg

MIG_PROFILES = {
    "1g": (1 / 7, 1 / 8),
    "2g": (2 / 7, 2 / 8),
    "3g": (3 / 7, 4 / 8),
    "4g": (4 / 7, 4 / 8),
    "7g": (7 / 7, 8 / 8),
}  # compute share, memory share
MIG_GPUS = ("a100-40gb-pcie", "a100-80gb-sxm", "h100-pcie", "h100-sxm", "h100-nvl", "h200-sxm", "h200-nvl", "b200")


@dataclass(frozen=True)
class SharedGpu:
    kind: str  # "mig" or "time-slice"
    mig_profile: str = "3g"
    neighbours: int = 1  # time slice: other jobs taking turns on the GPU
    neighbour_memory_fraction: float = 0.5  # time slice: memory the neighbours hold
    interference: float = 0.10  # extra throughput lost to context switches and cache thrash (assumed, U)
    interruptions_per_day: float = 0.5  # provider restarts and evictions (assumed, U; set yours)
    restart_minutes: float = 10.0  # requeue, reload, warm-up


@dataclass(frozen=True)
class Comparison:
    aspect: str
    dedicated: str
    shared: str


@dataclass(frozen=True)
class SharedEstimate:
    memory_bytes: int  # what the job can use
    fits: bool
    seconds: float  # expected wall time including lost work
    expected_interruptions: float
    lost_seconds: float
    best_checkpoint_minutes: float
    nvlink: bool


def estimate_shared(
    *,
    gpu_name: str,
    gpu_memory_bytes: int,
    gpu_has_nvlink: bool,
    peak_bytes: int,
    run_seconds: float,
    shared: SharedGpu,
    checkpoint_minutes: float,
    checkpoint_seconds: float = 60.0,
) -> SharedEstimate:
    """The same job on a shared slice of the GPU. `run_seconds` is its time on a dedicated GPU."""
    if checkpoint_minutes <= 0 or run_seconds < 0:
        raise PlanError(Msg("--checkpoint-minutes must be positive."))
    if shared.kind == "mig":
        if shared.mig_profile not in MIG_PROFILES:
            raise PlanError(
                Msg(
                    "Unknown MIG profile {profile!r}. To fix: use one of {valid}.",
                    profile=shared.mig_profile,
                    valid=", ".join(MIG_PROFILES),
                )
            )
        if gpu_name not in MIG_GPUS:
            raise PlanError(
                Msg(
                    "The {gpu} does not support MIG. To fix: use --time-slice, or one of {valid}.",
                    gpu=gpu_name,
                    valid=", ".join(MIG_GPUS),
                )
            )
        compute, memory_share = MIG_PROFILES[shared.mig_profile]
        speed = compute
    elif shared.kind == "time-slice":
        if shared.neighbours < 0 or not 0 <= shared.neighbour_memory_fraction < 1:
            raise PlanError(Msg("Neighbours must be >= 0 and their memory fraction in [0, 1)."))
        memory_share = 1 - shared.neighbour_memory_fraction if shared.neighbours else 1.0
        speed = 1 / (1 + shared.neighbours) * (1 - shared.interference if shared.neighbours else 1)
    else:
        raise PlanError(Msg("Unknown sharing {kind!r}. To fix: use mig or time-slice.", kind=shared.kind))
    memory = int(gpu_memory_bytes * memory_share)
    busy = run_seconds / speed
    rate = shared.interruptions_per_day / 86400
    interval = checkpoint_minutes * 60
    per_interruption = interval / 2 + shared.restart_minutes * 60
    interruptions = rate * busy
    lost = interruptions * per_interruption
    checkpoints = busy / interval * checkpoint_seconds
    best = (2 * checkpoint_seconds / rate) ** 0.5 / 60 if rate else float("inf")
    return SharedEstimate(
        memory_bytes=memory,
        fits=peak_bytes <= memory,
        seconds=busy + lost + checkpoints,
        expected_interruptions=interruptions,
        lost_seconds=lost,
        best_checkpoint_minutes=best,
        nvlink=gpu_has_nvlink and shared.kind == "time-slice",
    )


def seed_table(
    *,
    dedicated_memory: int,
    dedicated_seconds: float,
    shared: SharedEstimate,
    peak_bytes: int,
    gpu_has_nvlink: bool,
    kind: str,
) -> list[Comparison]:
    """The seed article's table ('GPU dedicada ou compartilhada'), each row with this job's numbers: Msgs, so that a
    view words them (and their numbers) in its language."""
    gib = 2**30
    no_nvlink = Msg("no (this GPU has none)")
    return [
        Comparison(
            Msg("VRAM available"),
            Msg(
                "100 %: {memory_gib:,.1f} GiB (job needs {peak_gib:,.1f})",
                memory_gib=dedicated_memory / gib,
                peak_gib=peak_bytes / gib,
            ),
            Msg(
                "{share:.0f} %: {memory_gib:,.1f} GiB, job {fit}",
                share=100 * shared.memory_bytes / dedicated_memory,
                memory_gib=shared.memory_bytes / gib,
                fit=Msg("fits") if shared.fits else Msg("does NOT fit"),
            ),
        ),
        Comparison(
            Msg("Training time"),
            Msg("{hours:,.1f} h, predictable", hours=dedicated_seconds / 3600),
            Msg("{hours:,.1f} h expected, varies with the neighbours", hours=shared.seconds / 3600),
        ),
        Comparison(
            Msg("Interruptions"),
            Msg("none from neighbours"),
            Msg(
                "{interruptions:,.2f} expected, {lost_hours:,.1f} h of work lost (checkpoint every {minutes:,.0f} min "
                "to minimise it)",
                interruptions=shared.expected_interruptions,
                lost_hours=shared.lost_seconds / 3600,
                minutes=shared.best_checkpoint_minutes,
            ),
        ),
        Comparison(
            Msg("NVLink between GPUs"),
            Msg("yes") if gpu_has_nvlink else no_nvlink,
            Msg("yes")
            if shared.nvlink
            else Msg("no (MIG instances have no peer NVLink)")
            if kind == "mig"
            else no_nvlink,
        ),
        Comparison(
            Msg("Data isolation"),
            Msg("total (whole GPU, whole server)"),
            Msg("memory and SMs partitioned in hardware") if kind == "mig" else Msg("none between time slices"),
        ),
    ]
