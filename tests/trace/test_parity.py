"""Trace mode against a real run: the same model's ordinary training step on real CPU tensors.

The reference (tests/trace/real_run.py) shares no code with trace mode: transformers' model from its config,
`torch.optim.AdamW(model.parameters())` with torch's defaults for CPU, and `outputs = model(input_ids=...,
labels=...)`, `outputs.loss.backward()`, `optimizer.step()`, `optimizer.zero_grad()`, measured with
MemTracker. Trace mode plans the same model for a CPU host on fake tensors. The issue's bound: within 1 %.
Before trace mode kept the model's outputs through backward it missed one logits tensor (1 x 64 x vocab x 4 B
in fp32): -18 % on the 256k-vocabulary cases below (benchmarks/trace_parity.py prints the whole table).
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest

from tests.plan import families
from tests.trace import real_run
from treino import catalog
from treino.plan import TrainSetup
from treino.plan.hardware import GpuSpec

PARITY_BOUND = 0.01  # the issue: "trace <= 1 %" of the same model's real run on CPU

# Every family of tests/plan/families.py once, tied and untied embeddings, vocabularies up to Gemma's 256k,
# fp32 and bf16 autocast: (family, tied, vocab, precision). GPT-2 and BERT keep their configs' dropout 0.1.
CASES = [
    ("llama", True, 256_000, "bf16-mixed"),
    ("llama", False, 32_000, "fp32"),
    ("mistral", False, 32_000, "bf16-mixed"),
    ("mixtral", False, 32_000, "fp32"),
    ("qwen2", True, 32_000, "fp32"),
    ("gemma", True, 256_000, "fp32"),
    ("gemma2", False, 32_000, "bf16-mixed"),
    ("phi3", False, 32_064, "fp32"),
    ("gpt2", True, 50_257, "fp32"),
    ("gpt_neox", False, 50_304, "bf16-mixed"),
    ("bert", True, 30_522, "fp32"),
]


def cpu_host() -> GpuSpec:
    """A plan for a CPU host (`--gpu cpu`): trace mode reads the device from the name alone."""
    return dataclasses.replace(catalog.gpu("l4"), name="cpu", display_name="CPU host")


def trace_plan(
    tmp_path: Path,
    config: dict[str, Any],
    precision: str,
    gpu: GpuSpec,
    seq_len: int,
    optimizer: str = "adamw",
    checkpointing: str = "none",
) -> Any:
    from treino.trace.plan import plan_by_trace

    path = tmp_path / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    setup = TrainSetup(
        micro_batch=real_run.MICRO_BATCH,
        seq_len=seq_len,
        precision=precision,
        optimizer=optimizer,
        attention=real_run.attention(str(config["model_type"])),
        checkpointing=checkpointing,
    )
    return plan_by_trace(str(path), gpu, setup)


def trace_peak(
    tmp_path: Path,
    config: dict[str, Any],
    precision: str,
    gpu: GpuSpec,
    seq_len: int,
    optimizer: str = "adamw",
    checkpointing: str = "none",
) -> int:
    plan = trace_plan(tmp_path, config, precision, gpu, seq_len, optimizer, checkpointing)
    return int(plan.memory.peak_tensor_bytes)


@pytest.mark.slow
@pytest.mark.parametrize("family,tied,vocab,precision", CASES)
def test_trace_within_1_percent_of_a_real_training_step(
    tmp_path: Path, family: str, tied: bool, vocab: int, precision: str
) -> None:
    pytest.importorskip("torch")
    config = real_run.tiny_config(family, vocab=vocab, tied=tied)
    traced = trace_peak(tmp_path, config, precision, cpu_host(), real_run.SEQ_LEN)
    real = real_run.peak_bytes(config, precision=precision)
    error = traced / real - 1
    assert abs(error) <= PARITY_BOUND, f"trace {traced:,} B vs real run {real:,} B: {error:+.2%}"
    logits = real_run.MICRO_BATCH * real_run.SEQ_LEN * vocab * 4
    assert real > 2 * logits, "the case should have its logits, not the weights alone, at the peak"


# DeepSeek-V3 (tests/plan/families.py), narrowed as the cases above: MLA, shared and routed experts, a dense block.
DEEPSEEK_V3 = {**families.DEEPSEEK_V3, "hidden_size": real_run.WIDTH, "num_hidden_layers": real_run.LAYERS}


@pytest.mark.slow
@pytest.mark.parametrize(
    "precision,checkpointing",
    [("fp32", "none"), ("bf16-mixed", "none"), ("fp32", "selective"), ("bf16-mixed", "selective")],
)
def test_deepseek_v3_trace_within_1_percent_of_a_real_training_step(
    tmp_path: Path, precision: str, checkpointing: str
) -> None:
    """Trace mode on DeepSeek-V3 against the real run, with and without the attention core recomputed (the real
    run registers a recomputed SDPA with transformers itself: real_run.attention_recomputed). Errors found:
    0.0 % in all four cases."""
    pytest.importorskip("torch")
    config = {**DEEPSEEK_V3, "vocab_size": 32_000, "tie_word_embeddings": False}
    traced = trace_peak(tmp_path, config, precision, cpu_host(), real_run.SEQ_LEN, checkpointing=checkpointing)
    real = real_run.peak_bytes(config, precision=precision, selective=checkpointing == "selective")
    error = traced / real - 1
    assert abs(error) <= PARITY_BOUND, f"trace {traced:,} B vs real run {real:,} B: {error:+.2%}"
    logits = real_run.MICRO_BATCH * real_run.SEQ_LEN * 32_000 * 4
    assert real > 2 * logits, "the case should have its logits, not the weights alone, at the peak"


def test_optimizer_is_the_one_torch_picks_on_the_plan_device(tmp_path: Path) -> None:
    """At 8 tokens the optimizer step makes the peak. On CPU torch's AdamW runs its single-tensor loop (one
    parameter's temporaries at a time), as the CPU plan does; a CUDA plan's foreach AdamW holds temporaries
    for every parameter at once, more than a CPU run has."""
    torch = pytest.importorskip("torch")
    from torch.optim.optimizer import _default_to_fused_or_foreach

    from treino.trace import engine

    real_param = [torch.nn.Parameter(torch.zeros(4))]
    assert engine.default_foreach("cpu") is _default_to_fused_or_foreach(real_param, False)[1] is False
    assert engine.default_foreach("cuda") is True  # torch/utils/_foreach_utils.py: CUDA has foreach kernels
    assert engine.make_optimizer("adamw", real_param, "cpu").defaults["foreach"] is False

    config = real_run.tiny_config("llama", vocab=2048, tied=False)
    real = real_run.peak_bytes(config, seq_len=8)
    plan = trace_plan(tmp_path, config, "fp32", cpu_host(), 8)
    on_cpu = plan.memory.peak_tensor_bytes
    # The note tells Trainer users what they save: the logits, 1 x 8 x 2048 fp32.
    (note,) = [n for n in plan.memory.notes if "outputs" in n]
    assert note.params["mib"] * 2**20 == real_run.MICRO_BATCH * 8 * 2048 * 4, note
    assert "run as on CPU" in plan.memory.notes[0]
    on_gpu = trace_peak(tmp_path, config, "fp32", catalog.gpu("l4"), 8)
    assert abs(on_cpu / real - 1) <= PARITY_BOUND, f"CPU plan {on_cpu:,} B vs real run {real:,} B"
    assert on_gpu / real - 1 > PARITY_BOUND, f"a CUDA plan's foreach AdamW: {on_gpu:,} B vs {real:,} B on CPU"


def test_cuda_plans_run_cuda_autocast_lists() -> None:
    """PyTorch's autocast op reference (https://pytorch.org/docs/2.9/amp.html#autocast-op-reference): on CUDA
    `pow`, `softmax`, `sum`, `layer_norm` of bf16 inputs run in fp32 and `mv` in bf16; CPU autocast leaves
    the first four in bf16 and `mv` in fp32. Linear is bf16 on both."""
    torch = pytest.importorskip("torch")
    from treino.trace.cuda import as_on_cuda

    x = torch.randn(4, 8, dtype=torch.bfloat16)
    w = torch.randn(8, 8)

    def dtypes() -> list[torch.dtype]:
        with torch.autocast("cpu", dtype=torch.bfloat16):
            return [
                torch.pow(x, 3.0).dtype,
                (x**2).dtype,
                torch.nn.functional.softmax(x, dim=-1).dtype,
                x.sum().dtype,
                torch.nn.functional.layer_norm(x, (8,)).dtype,
                torch.mv(w, x[0].float()).dtype,
                torch.nn.functional.linear(x.float(), w).dtype,
                torch.nn.functional.softmax(x, dim=-1, dtype=torch.bfloat16).dtype,  # explicit dtype: not cast
            ]

    bf16, fp32 = torch.bfloat16, torch.float32
    assert dtypes() == [bf16, bf16, bf16, bf16, bf16, fp32, bf16, bf16]  # CPU autocast alone
    with as_on_cuda():
        assert dtypes() == [fp32, fp32, fp32, fp32, fp32, bf16, bf16, bf16]
        assert torch.pow(x, 3.0).dtype == bf16  # outside autocast nothing changes


@pytest.mark.slow
def test_gpt2_on_a_gpu_keeps_its_gelu_in_fp32_and_no_attention_matrix(tmp_path: Path) -> None:
    """GPT-2 as a GPU runs it. Plain SGD updates in place with foreach and without, so the optimizer is the
    same on both plans here.
    - Its tanh GELU calls `torch.pow`, which CUDA autocast runs in fp32: the fp32 copies saved for backward
      make a GPU plan's bf16-mixed peak larger than a CPU host's (measured without dropout).
    - With its config's attention dropout (0.1) CPU's SDPA takes the math kernel and saves the (B, H, T, T)
      probabilities, their dropout mask and output; CUDA's kernels save none of them: the GPU plan is smaller.
    """
    pytest.importorskip("torch")
    from tests.plan.families import without_dropout

    gpus = (cpu_host(), catalog.gpu("l4"))
    seq = real_run.SEQ_LEN
    config = without_dropout(real_run.tiny_config("gpt2", vocab=2048, tied=True))
    on_cpu, on_gpu = (trace_peak(tmp_path, config, "bf16-mixed", gpu, seq, "sgd") for gpu in gpus)
    mlp_activation = real_run.MICRO_BATCH * seq * 4 * real_run.WIDTH  # elements, one layer
    assert on_gpu - on_cpu >= mlp_activation * 2, (on_gpu, on_cpu)
    on_cpu, on_gpu = (trace_peak(tmp_path, config, "fp32", gpu, seq, "sgd") for gpu in gpus)
    assert on_cpu == on_gpu, "without autocast and dropout the two plans run the same step"

    config = real_run.tiny_config("gpt2", vocab=2048, tied=True)  # GPT2Config's default attn_pdrop: 0.1
    on_cpu, on_gpu = (trace_peak(tmp_path, config, "fp32", gpu, seq, "sgd") for gpu in gpus)
    probabilities = real_run.LAYERS * real_run.MICRO_BATCH * real_run.HEADS * seq * seq * 4
    assert on_cpu - on_gpu >= probabilities, (on_cpu, on_gpu)
