"""Dedicated vs shared GPU: memory share, slowdown, expected lost work, Young's checkpoint interval."""

from __future__ import annotations

import pytest

from treino.errors import PlanError
from treino.plan.shared import SharedGpu, estimate_shared, seed_table

H200 = {"gpu_name": "h200-sxm", "gpu_memory_bytes": 141 * 10**9, "gpu_has_nvlink": True}


def test_mig_slice_has_its_memory_and_compute_share() -> None:
    est = estimate_shared(
        **H200,
        peak_bytes=60 * 10**9,
        run_seconds=7 * 3600,
        shared=SharedGpu("mig", "3g", interruptions_per_day=0),
        checkpoint_minutes=60,
    )
    assert est.memory_bytes == 141 * 10**9 // 2 and est.fits
    # 3 of 7 compute slices; one 60 s checkpoint per hour of busy time
    busy = 7 * 3600 * 7 / 3
    assert est.seconds == pytest.approx(busy + busy / 3600 * 60)
    assert not est.nvlink


def test_expected_lost_work_and_young_interval() -> None:
    """One interruption a day on a 48 h job: 2 expected; each loses half an interval plus the restart."""
    est = estimate_shared(
        **H200,
        peak_bytes=1,
        run_seconds=48 * 3600,
        shared=SharedGpu("time-slice", neighbours=0, interruptions_per_day=1, restart_minutes=10),
        checkpoint_minutes=60,
    )
    assert est.expected_interruptions == pytest.approx(2.0)
    assert est.lost_seconds == pytest.approx(2 * (30 + 10) * 60)
    assert est.best_checkpoint_minutes == pytest.approx((2 * 60 * 86400) ** 0.5 / 60)  # Young 1974


def test_time_slice_with_a_neighbour_halves_speed_and_memory() -> None:
    est = estimate_shared(
        **H200,
        peak_bytes=80 * 10**9,
        run_seconds=3600,
        shared=SharedGpu("time-slice", neighbours=1, interference=0.1, interruptions_per_day=0),
        checkpoint_minutes=1e9,
    )
    assert not est.fits  # 80 GB does not fit in the half the neighbour leaves
    assert est.seconds == pytest.approx(3600 / (0.5 * 0.9))


def test_seed_table_rows_and_errors() -> None:
    est = estimate_shared(**H200, peak_bytes=1, run_seconds=3600, shared=SharedGpu("mig", "1g"), checkpoint_minutes=30)
    rows = seed_table(
        dedicated_memory=141 * 10**9, dedicated_seconds=3600, shared=est, peak_bytes=1, gpu_has_nvlink=True, kind="mig"
    )
    assert [r.aspect for r in rows] == [
        "VRAM available",
        "Training time",
        "Interruptions",
        "NVLink between GPUs",
        "Data isolation",
    ]
    with pytest.raises(PlanError, match="does not support MIG"):
        estimate_shared(
            gpu_name="l4",
            gpu_memory_bytes=24 * 10**9,
            gpu_has_nvlink=False,
            peak_bytes=1,
            run_seconds=1,
            shared=SharedGpu("mig"),
            checkpoint_minutes=10,
        )
