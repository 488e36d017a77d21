"""What the planner needs to know about a GPU. The catalog (treino.catalog) fills these from data files."""

from __future__ import annotations

from dataclasses import dataclass

BYTES_PER_GB = 10**9  # vendors' "GB" (decimal): the fallback capacity when the catalog has no reading
BYTES_PER_MIB = 2**20  # nvidia-smi's "MiB"


@dataclass(frozen=True)
class GpuSpec:
    name: str
    display_name: str
    memory_gb: float
    hbm_bandwidth_gb_s: float
    fp32_tflops: float
    tf32_tflops: float
    bf16_tflops: float  # dense, no 2:4 sparsity
    fp16_tflops: float
    fp8_tflops: float  # 0 where unsupported
    gpu_link: str  # "none", "nvlink3", "nvlink4-bridge" (pairs), "nvlink4-bridge-2or4way" (H200 NVL), ...
    gpu_link_gb_s_bidir: float
    pcie_generation: int
    tdp_w: float
    source: str
    as_of: str
    smi_memory_mib: int | None = None  # nvidia-smi memory.total; None where no cited reading
    runtime_memory_bytes: int | None = None  # CUDA's cudaMemGetInfo total (HIP's for AMD); None where unknown
    memory_source: str | None = None  # where the two readings above come from

    @property
    def interconnect(self) -> str:
        """The link between its GPUs that a plan assumes unless told: nvlink where the GPU has one, else pcie."""
        return "pcie" if self.gpu_link == "none" else "nvlink"

    @property
    def memory_bytes(self) -> int:
        """What one process can fill: the capacity the planner compares its peak against.

        Vendors' "GB" is neither GB nor GiB of usable memory (an H200 "141 GB" reads 143771 MiB in nvidia-smi
        and 150.11e9 B in torch.cuda.mem_get_info), so the catalog carries readings. Preference:
        1. The runtime's total (cudaMemGetInfo / torch.cuda.mem_get_info()[1]): the pool cudaMalloc draws
           from; the CUDA context (in the planner's overhead) is allocated inside it. nvidia-smi's total is
           453-621 MiB larger (H100, H200, A100), memory the driver keeps that no process can allocate.
        2. nvidia-smi's total, where no runtime reading is cited: overstates by that ~0.5 GiB, less than the
           ~1000 MiB CUDA context the planner already counts, and far closer than (3).
        3. memory_gb x 1e9: conservative (L4: 24e9 B vs 23034 MiB = 24.15e9 B; H200: 141e9 B vs 150.11e9 B).
        """
        if self.runtime_memory_bytes is not None:
            return self.runtime_memory_bytes
        if self.smi_memory_mib is not None:
            return self.smi_memory_mib * BYTES_PER_MIB
        return int(self.memory_gb * BYTES_PER_GB)

    def dense_tflops(self, dtype: str) -> float:
        return {
            "fp32": self.fp32_tflops,
            "tf32": self.tf32_tflops,
            "bf16": self.bf16_tflops,
            "fp16": self.fp16_tflops,
            "fp8": self.fp8_tflops,
        }[dtype]


CPU_HOST_SOURCE = "the host's RAM (--ram-gb, or the operating system's physical memory)"


def cpu_host(memory_bytes: int) -> GpuSpec:
    """`--gpu cpu`: training on the CPU host itself, with its RAM as the memory to fill. It has no
    datasheet throughput in the catalog, so its compute figures are 0 and no run time is estimated."""
    return GpuSpec(
        name="cpu",
        display_name="CPU",
        memory_gb=memory_bytes / BYTES_PER_GB,
        hbm_bandwidth_gb_s=0.0,
        fp32_tflops=0.0,
        tf32_tflops=0.0,
        bf16_tflops=0.0,
        fp16_tflops=0.0,
        fp8_tflops=0.0,
        gpu_link="none",
        gpu_link_gb_s_bidir=0.0,
        pcie_generation=0,
        tdp_w=0.0,
        source=CPU_HOST_SOURCE,
        as_of="",
        runtime_memory_bytes=memory_bytes,
        memory_source=CPU_HOST_SOURCE,
    )
