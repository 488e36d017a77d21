"""Will CPU, RAM and storage keep the GPUs fed? Bytes/s and samples/s the step rate needs, against what the
server's storage, CPU cores and page cache deliver.

Sources (hardware-and-prices.md §5): NVMe Gen4 7.0-7.45 GB/s and Gen5 14.8 GB/s sequential read (S70, S71),
7200 rpm HDD 0.25-0.29 GB/s (S72); CPU cores per server ≈ GPUs × (workers + 1) + 4 (S04, ml-engineering);
LLM pre-tokenised data needs little bandwidth (10k tokens/s/GPU × 2 B × 8 GPUs = 160 KB/s, §5.3), image and
video pipelines are the ones that load storage and CPUs.
"""

from __future__ import annotations

from dataclasses import dataclass

from treino.errors import PlanError
from treino.i18n import Msg

# Sequential read, GB/s (decimal). hardware-and-prices §5.1; SATA SSD = the SATA III line rate (D); network
# storage = one 10 GbE link (D). Users with a `treino bench` profile pass their measured figure instead.
STORAGE_READ_GB_S = {
    "nvme-gen5": 14.8,  # Samsung 9100 PRO (S71)
    "nvme-gen4": 7.0,  # Samsung 980 PRO (S70)
    "sata-ssd": 0.55,
    "hdd": 0.27,  # 7200 rpm enterprise, 250-290 MB/s (S72, D)
    "nfs-10gbe": 1.25,
}


@dataclass(frozen=True)
class DataKind:
    """What one training sample costs to load: bytes read, and CPU work per sample."""

    name: str
    bytes_per_token: float  # bytes read from storage per token (or per sample for images)
    cpu_samples_per_s_per_core: float  # decode/tokenise/augment rate of one core, configurable
    per_token: bool  # True: rates count tokens; False: samples (images)


# Defaults, all configurable (`--cpu-rate`). Token ids in uint32 for vocabularies over 65,536 (Llama 3),
# read by memory-mapped shards: the CPU cost is negligible (1e8 tokens/s per core, an assumption, U).
# Raw text: ~4 bytes per token for English (OpenAI tokenizer rule of thumb, U); Hugging Face fast tokenizers
# ~1e6 tokens/s per core (U). JPEG: ImageNet's mean ~110 kB per image (U); decode + random-resized-crop
# ~400 images/s per core with Pillow-SIMD-class decoders (U). Measure your own with `treino bench`.
DATA_KINDS = {
    "tokens": DataKind("tokens", 4.0, 1e8, True),
    "text": DataKind("text", 4.0, 1e6, True),
    "images": DataKind("images", 110e3, 400.0, False),
}


@dataclass(frozen=True)
class PipelineEstimate:
    needed_bytes_per_s: float
    needed_samples_per_s: float  # tokens/s for token data, images/s for images
    storage_bytes_per_s: float
    cpu_samples_per_s: float
    worker_cores: int  # cores left for data-loader workers
    dataset_in_page_cache: bool
    gpu_idle_fraction: float  # share of step time the GPUs would wait for data
    bottleneck: str  # "none", "storage", "cpu"
    advice: tuple[str, ...]
    unit: str = "tokens"  # what the samples/s figures count: "tokens" or "images"


def estimate_pipeline(
    *,
    tokens_per_s: float,
    gpus: int,
    data: str = "tokens",
    storage: str = "nvme-gen4",
    storage_read_gb_s: float | None = None,
    cpu_cores: int,
    ram_gb: float,
    dataset_gb: float = 0.0,
    seq_len: int = 2048,
    cpu_rate: float | None = None,
) -> PipelineEstimate:
    """Compare what `gpus` GPUs consume at `tokens_per_s` (all GPUs) with what the server delivers."""
    if data not in DATA_KINDS:
        raise PlanError(
            Msg("Unknown --data {data!r}. To fix: use one of {valid}.", data=data, valid=", ".join(DATA_KINDS))
        )
    if storage_read_gb_s is None:
        if storage not in STORAGE_READ_GB_S:
            raise PlanError(
                Msg(
                    "Unknown --storage {storage!r}. To fix: use one of {valid}.",
                    storage=storage,
                    valid=", ".join(STORAGE_READ_GB_S),
                )
            )
        storage_read_gb_s = STORAGE_READ_GB_S[storage]
    if cpu_cores < 1 or ram_gb <= 0 or storage_read_gb_s <= 0 or tokens_per_s <= 0:
        raise PlanError(Msg("CPU cores, RAM, storage speed and the token rate must be positive."))
    kind = DATA_KINDS[data]
    rate = cpu_rate or kind.cpu_samples_per_s_per_core
    # images: one sample per sequence of `seq_len` "tokens" (patches); tokens: one sample per token
    samples_per_s = tokens_per_s if kind.per_token else tokens_per_s / seq_len
    needed_bytes = samples_per_s * kind.bytes_per_token
    # S04: one core per GPU for the training process and four for the system; the rest run workers.
    worker_cores = max(cpu_cores - gpus - 4, 0)
    cpu_capacity = worker_cores * rate
    # The page cache can hold the dataset if it fits beside ~16 GB per GPU of process memory (assumed, U).
    in_cache = 0 < dataset_gb <= ram_gb - 16 * gpus
    storage_bytes = storage_read_gb_s * 1e9 * (100 if in_cache else 1)  # RAM reads (~100x; after epoch 1)
    storage_samples = storage_bytes / kind.bytes_per_token
    supply = min(storage_samples, cpu_capacity)
    idle = max(0.0, 1 - supply / samples_per_s)
    bottleneck = "none" if idle == 0 else ("storage" if storage_samples < cpu_capacity else "cpu")
    advice: list[str] = []
    if bottleneck == "storage":
        need_gb_s = needed_bytes / 1e9
        advice.append(
            Msg(
                "Storage must read {need:,.2f} GB/s and delivers {have:,.2f}: use NVMe "
                "(Gen4 ~7 GB/s, Gen5 ~14.8 GB/s, RAID-0 several), or cache the dataset in RAM.",
                need=need_gb_s,
                have=storage_read_gb_s,
            )
        )
    if bottleneck == "cpu" or worker_cores == 0:
        cores = int(-(-samples_per_s // rate)) + gpus + 4
        advice.append(
            Msg(
                "Data loading needs about {cores} CPU cores (GPUs x (workers + 1) + 4, docs/catalog.md); the server "
                "has {have}. Pre-tokenise or pre-decode the data, or pick a server with more cores.",
                cores=cores,
                have=cpu_cores,
            )
        )
    return PipelineEstimate(
        needed_bytes_per_s=needed_bytes,
        needed_samples_per_s=samples_per_s,
        storage_bytes_per_s=storage_bytes,
        cpu_samples_per_s=cpu_capacity,
        worker_cores=worker_cores,
        dataset_in_page_cache=in_cache,
        gpu_idle_fraction=idle,
        bottleneck=bottleneck,
        advice=tuple(advice),
        unit="tokens" if kind.per_token else "images",
    )
