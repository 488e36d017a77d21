"""algbw/busbw as nccl-tests defines them (doc/PERFORMANCE.md; src/all_reduce.cu L59-65), and copy accounting."""

import pytest

from treino.bench.collectives import algbw_gb_s, busbw_factor, busbw_gb_s
from treino.bench.dataloader import workers_needed
from treino.bench.host import bandwidth_gb_s, copy_bytes_moved, stream_copy_gb_s


def test_algbw_is_bytes_over_time_in_decimal_gb() -> None:
    # 1 GiB in 10 ms: 1073741824 B / 0.01 s = 107.3741824 GB/s (GB = 1e9 B)
    assert algbw_gb_s(1024**3, 0.01) == pytest.approx(107.3741824)


@pytest.mark.parametrize(
    ("op", "ranks", "factor"),
    [
        ("all_reduce", 2, 1.0),  # 2(n-1)/n
        ("all_reduce", 8, 1.75),
        ("all_gather", 8, 0.875),  # (n-1)/n
        ("reduce_scatter", 4, 0.75),
        ("broadcast", 8, 1.0),
    ],
)
def test_busbw_factor(op: str, ranks: int, factor: float) -> None:
    assert busbw_factor(op, ranks) == factor


def test_busbw_hand_numbers() -> None:
    # 8-GPU all-reduce of 1 GiB in 10 ms: algbw 107.37 GB/s, busbw 107.37 x 1.75 = 187.90 GB/s
    assert busbw_gb_s("all_reduce", 8, 1024**3, 0.01) == pytest.approx(187.9048192)
    # 4-rank all-gather of 400 MB in 20 ms: algbw 20 GB/s, busbw 15 GB/s
    assert busbw_gb_s("all_gather", 4, 400_000_000, 0.02) == pytest.approx(15.0)


def test_copy_counts_read_plus_write() -> None:
    assert copy_bytes_moved(1000) == 2000
    # copying 1 GB in 1 s moves 2 GB: the STREAM / BabelStream convention
    assert bandwidth_gb_s(10**9, 1.0) == pytest.approx(2.0)


def test_stream_copy_measures_a_positive_bandwidth() -> None:
    assert stream_copy_gb_s(16 * 1024**2, repeats=3) > 0.1


def test_workers_needed() -> None:
    assert workers_needed(1000.0, 2500.0) == 3
    assert workers_needed(1000.0, 0.0) == 0
