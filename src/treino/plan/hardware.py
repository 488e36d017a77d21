"""What the planner needs to know about a GPU. The catalog (treino.catalog) fills these from data files."""

from __future__ import annotations

from dataclasses import dataclass

BYTES_PER_GB = 10**9  # vendors' "GB" (decimal); a 141 GB H200 is planned as 141e9 bytes, a slight understatement


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
    gpu_link: str  # "none", "nvlink3", "nvlink4-bridge", ...
    gpu_link_gb_s_bidir: float
    pcie_generation: int
    tdp_w: float
    source: str
    as_of: str

    @property
    def memory_bytes(self) -> int:
        return int(self.memory_gb * BYTES_PER_GB)

    def dense_tflops(self, dtype: str) -> float:
        return {
            "fp32": self.fp32_tflops,
            "tf32": self.tf32_tflops,
            "bf16": self.bf16_tflops,
            "fp16": self.fp16_tflops,
            "fp8": self.fp8_tflops,
        }[dtype]
