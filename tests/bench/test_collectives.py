"""A real 2-process gloo run: the all-reduce result is checked, every op is timed."""

from treino.bench.collectives import OPS, busbw_factor, run_collectives


def test_gloo_two_processes_all_reduce_is_correct() -> None:
    sizes = (4096, 1024**2)
    done = run_collectives("gloo", 2, sizes, iters=2)
    assert done.correct, done.max_abs_error
    assert done.max_abs_error < 1e-4
    assert [(r.op, r.bytes) for r in done.results] == [(op, s) for op in OPS for s in sizes]
    for r in done.results:
        assert r.backend == "gloo" and r.ranks == 2
        assert r.algbw_gb_s > 0
        assert r.busbw_gb_s == r.algbw_gb_s * busbw_factor(r.op, 2)
        assert (r.latency_us is not None) == (r.bytes <= 64 * 1024)
