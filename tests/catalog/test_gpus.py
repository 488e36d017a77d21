"""The GPU catalog's memory capacities: what a process can fill, not the datasheet's "GB"."""

from __future__ import annotations

import pytest

from treino import catalog


def test_h200_capacity_is_the_measured_cuda_total() -> None:
    # Measured by treino bench on an H200 SXM, 2026-11-29 (driver 580.159.04, torch 2.11+cu130):
    # torch.cuda.mem_get_info() total = 150,109,880,320 B (139.80 GiB); nvidia-smi total 143771 MiB.
    h200 = catalog.gpu("h200-sxm")
    assert h200.memory_bytes == 150_109_880_320
    assert h200.smi_memory_mib == 143_771
    assert h200.memory_gb == 141  # the datasheet figure stays for display
    assert h200.memory_source is not None and "measured by treino bench" in h200.memory_source


def test_nvidia_smi_figure_is_used_where_no_runtime_reading() -> None:
    # nvidia-smi 23034MiB on an L4: https://github.com/modal-labs/modal-client/pull/2797
    assert catalog.gpu("l4").memory_bytes == 23_034 * 2**20


def test_gpu_without_a_reading_falls_back_to_decimal_gb() -> None:
    uncited = [g for g in catalog.gpus().values() if g.smi_memory_mib is None and g.runtime_memory_bytes is None]
    assert uncited, "every row has a reading; drop this test"
    for g in uncited:
        assert g.memory_source is None
        assert g.memory_bytes == int(g.memory_gb * 10**9)


@pytest.mark.parametrize("name", sorted(catalog.gpus()))
def test_readings_are_near_the_datasheet_in_gib_and_cited(name: str) -> None:
    """Vendors' "GB" on these cards is close to GiB: a reading 10 % off it is a typo or the wrong card."""
    g = catalog.gpu(name)
    nominal_bytes = g.memory_gb * 2**30
    for reading in (g.runtime_memory_bytes, g.smi_memory_mib and g.smi_memory_mib * 2**20):
        if reading:
            assert 0.9 * nominal_bytes <= reading <= 1.1 * nominal_bytes, (name, reading)
            assert g.memory_source and ("http" in g.memory_source or "measured" in g.memory_source)
    if g.runtime_memory_bytes and g.smi_memory_mib:
        assert g.runtime_memory_bytes <= g.smi_memory_mib * 2**20  # the driver keeps some back from CUDA
