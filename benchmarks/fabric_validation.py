"""The multi-server model (treino.plan.fabric) against published multi-node figures: the table tests/plan/test_fabric.py
records, plus the Llama 3 paper's 405B runs that it does not test (the pipeline schedule decides them).

    python benchmarks/fabric_validation.py

Pure arithmetic, no GPU: prints planner vs published and the error of each row.
"""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from treino import catalog
from treino.plan import TrainSetup
from treino.plan.fabric import hierarchical_allreduce, parse_fabric
from treino.plan.performance import estimate_time, link_busbw_gb_s, model_flops_per_token

GIB = 2**30
# (what, GPU, GPUs, fabric, buffer bytes, published busbw GB/s): nccl-tests all_reduce, large buffers
BUSBW = [
    ("2 x DGX A100, 8 x 200G HDR (nccl#1576)", "a100-80gb-sxm", 16, "8x200g-ib", 8 * GIB, 192.0),
    ("4 x P6-B200, 8 x 400G EFA (ml-engineering)", "b200", 32, "8x400g-efa", 16 * GIB, 381.8),
]
# (what, GPU, fabric, GPUs before, after, published tokens/s/GPU before, after): torchtitan benchmarks/
SCALING = [
    ("torchtitan 8B FSDP, H100", "h100-sxm", "8x400g-roce", 8, 128, 5762, 5605),
    ("torchtitan 8B FSDP+compile, H100", "h100-sxm", "8x400g-roce", 8, 128, 6667, 6514),
    ("torchtitan 8B FSDP+compile+Float8, H100", "h100-sxm", "8x400g-roce", 8, 128, 8532, 8380),
    ("torchtitan 8B (Trainy), H200", "h200-sxm", "8x400g-ib", 32, 64, 10938, 10753),
]
# The Llama 3 Herd of Models, Table 4 (Dubey et al. 2024): 405B, seq 8192, 16M tokens a batch, TP 8, PP 16, on H100s
# joined by RoCE at 400 Gb/s per GPU. (GPUs, data-parallel size, sequences per data-parallel group, TFLOP/s per GPU)
LLAMA3 = [(8192, 64, 32, 430.0), (16384, 128, 16, 400.0)]


def main() -> None:
    out = Console()
    table = Table(title="Multi-server model vs published figures", title_justify="left")
    for col in ("figure", "published", "planner", "error"):
        table.add_column(col, justify="left" if col == "figure" else "right")
    for what, gpu, gpus, fabric, size, published in BUSBW:
        t = hierarchical_allreduce(
            size,
            gpus,
            domain_gpus=8,
            intra_busbw_gb_s=link_busbw_gb_s(catalog.gpu(gpu), "nvlink", 8),
            fabric=parse_fabric(fabric),
            gpus_per_server=8,
        )
        busbw = size / t.seconds * 2 * (gpus - 1) / gpus / 1e9
        table.add_row(f"busbw, {what}", f"{published:.1f} GB/s", f"{busbw:.1f} GB/s", f"{busbw / published - 1:+.1%}")
    model = catalog.model("llama-3.1-8b")
    for what, gpu, fabric, few, many, before, after in SCALING:

        def per_gpu(gpus: int, gpu: str = gpu, fabric: str = fabric) -> float:
            setup = TrainSetup(micro_batch=2, seq_len=8192, gpus=gpus, zero=3, checkpointing="selective")
            return estimate_time(model, catalog.gpu(gpu), setup, fabric=parse_fabric(fabric)).tokens_per_second / gpus

        ratio, published = per_gpu(many) / per_gpu(few), after / before
        error = f"{ratio / published - 1:+.1%}"
        table.add_row(f"{what}, {few} -> {many} GPUs", f"{published:.3f}", f"{ratio:.3f}", error)
    big = catalog.model("llama-3.1-405b")
    flops = model_flops_per_token(big, 8192)
    for gpus, _dp, sequences, published in LLAMA3:
        for interleave in (1, 2, 4, 8):
            setup = TrainSetup(
                micro_batch=1,
                seq_len=8192,
                grad_accum=sequences,
                gpus=gpus,
                tp=8,
                pp=16,
                pp_interleave=interleave,
                zero=1,
                kernels="megatron",
                sequence_parallel=True,
            )
            est = estimate_time(big, catalog.gpu("h100-sxm"), setup, fabric=parse_fabric("8x400g-roce"))
            tflops = est.tokens_per_second * flops / gpus / 1e12
            table.add_row(
                f"Llama 3 405B, {gpus} H100, interleave {interleave} (assumed; exposed all-reduce "
                f"{est.exposed_comm_seconds / est.step_seconds:.0%})",
                f"{published:.0f} TFLOP/s",
                f"{tflops:.0f} TFLOP/s",
                f"{tflops / published - 1:+.1%}",
            )
    out.print(table)


if __name__ == "__main__":
    main()
