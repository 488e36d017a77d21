"""Trace mode: the real model's training step on fake tensors, against the same step on real CPU tensors.

The issue's bound: trace mode's peak within 2 % of PyTorch's MemTracker on real tensors. Both sides run
`engine.measure_training_step`, so what this checks is that FakeTensorMode changes nothing MemTracker sees.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from treino import catalog
from treino.errors import PlanError
from treino.plan import TrainSetup, model_from_config

REPO = Path(__file__).resolve().parents[2]
TRACE_BOUND = 0.02  # the issue: "Trace mode must be within 2 %"
PARTS = ("weights_bytes", "gradients_bytes", "optimizer_bytes", "activations_bytes", "logits_bytes", "temporary_bytes")

# A 2-layer Llama with grouped-query attention: small enough to train for real on a CPU in a second,
# wide enough in tokens (2 x 128) that activations, not weights, make the peak.
TINY_LLAMA: dict[str, Any] = {
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 176,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 512,
    "max_position_embeddings": 512,
    "tie_word_embeddings": False,
    "torch_dtype": "bfloat16",  # must not decide the weights' dtype
}
# Mixtral: experts multiplied with grouped_mm, whose meta kernel differs from the CPU kernel.
TINY_MIXTRAL: dict[str, Any] = {
    "model_type": "mixtral",
    "hidden_size": 64,
    "intermediate_size": 96,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 512,
    "num_local_experts": 4,
    "num_experts_per_tok": 2,
    "max_position_embeddings": 512,
}
# T5: a family the analytic planner does not model.
TINY_T5: dict[str, Any] = {
    "model_type": "t5",
    "d_model": 64,
    "d_kv": 16,
    "d_ff": 128,
    "num_layers": 2,
    "num_decoder_layers": 2,
    "num_heads": 4,
    "vocab_size": 256,
    "decoder_start_token_id": 0,
    "pad_token_id": 0,
}
MICRO_BATCH, SEQ_LEN = 2, 128


def _write_config(tmp_path: Path, name: str, config: dict[str, Any]) -> Path:
    folder = tmp_path / name
    folder.mkdir()
    path = folder / "config.json"
    path.write_text(json.dumps(config), encoding="utf-8")
    return path


def treino(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "treino", *args],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
    )


@pytest.mark.parametrize(
    "family,precision,checkpointing,grad_accum",
    [
        ("llama", "fp32", "none", 1),
        ("llama", "bf16-mixed", "none", 1),
        # Without a KV cache transformers looks for packed sequences, which fake tensors cannot show it.
        ("llama", "fp32", "full", 1),
        ("llama", "bf16-mixed", "full", 2),
        ("mixtral", "bf16-mixed", "none", 1),
    ],
)
def test_trace_peak_within_2_percent_of_real_tensors(
    tmp_path: Path, family: str, precision: str, checkpointing: str, grad_accum: int
) -> None:
    torch = pytest.importorskip("torch")
    from treino.trace import engine
    from treino.trace.plan import plan_by_trace

    config = {"llama": TINY_LLAMA, "mixtral": TINY_MIXTRAL}[family]
    path = _write_config(tmp_path, f"tiny-{family}", config)
    setup = TrainSetup(
        micro_batch=MICRO_BATCH,
        seq_len=SEQ_LEN,
        precision=precision,
        checkpointing=checkpointing,
        grad_accum=grad_accum,
    )
    plan = plan_by_trace(str(path), catalog.gpu("l4"), setup)

    torch.manual_seed(0)
    model = engine.build_hf_model(config, precision=precision, attention="sdpa")
    real = engine.measure_training_step(
        model,
        engine.lm_batch(config, MICRO_BATCH, SEQ_LEN),
        precision=precision,
        checkpointing=checkpointing,
        plan_device="cuda",  # as the L4 plan runs it
        grad_accum=grad_accum,
    )

    m = plan.memory
    error = m.peak_tensor_bytes / real.peak_bytes - 1
    assert abs(error) <= TRACE_BOUND, f"trace {m.peak_tensor_bytes:,} B vs real {real.peak_bytes:,} B: {error:+.2%}"
    assert m.activations_bytes > m.weights_bytes, "the case should exercise activations, not just weights"
    assert sum(getattr(m, part) for part in PARTS) == m.peak_tensor_bytes
    assert m.weights_bytes == real.weights_bytes  # fp32 weights in both precisions, + rotary buffers:
    assert 4 * real.params < m.weights_bytes < 4 * real.params + 1024
    assert m.params == real.params == model_from_config(config).params
    assert m.overhead_bytes == setup.cuda_context_bytes + round(setup.allocator_reserve_fraction * m.peak_tensor_bytes)
    assert m.peak_bytes == m.peak_tensor_bytes + m.overhead_bytes
    assert (plan.method, plan.model.name, plan.model.family, m.peak_phase) == (
        "trace",
        f"tiny-{family}",
        family,
        "measured",
    )


def test_optimizer_temporaries_are_reported_as_temporaries(tmp_path: Path) -> None:
    """At an AdamW step peak the state (2 fp32 copies) is optimizer, foreach's scratch is temporary."""
    pytest.importorskip("torch")
    from treino.trace.plan import plan_by_trace

    path = _write_config(tmp_path, "tiny-llama", TINY_LLAMA)
    m = plan_by_trace(str(path), catalog.gpu("l4"), TrainSetup(micro_batch=1, seq_len=8, precision="fp32")).memory
    state_bytes = 2 * 4 * m.params
    assert state_bytes <= m.optimizer_bytes <= state_bytes + 4 * 64  # + AdamW's scalar step per tensor
    assert m.temporary_bytes >= 4 * m.params  # one fp32 copy of every tensor: the peak is at the step


@pytest.mark.parametrize("precision", ["fp32", "bf16-true"])
def test_module_function_traces_a_model_that_is_not_hugging_face(precision: str) -> None:
    torch = pytest.importorskip("torch")
    from tests.trace import tiny_model
    from treino.trace import engine
    from treino.trace.plan import plan_by_trace

    plan = plan_by_trace("tests.trace.tiny_model:build", catalog.gpu("l4"), TrainSetup(precision=precision))

    torch.manual_seed(0)
    with engine.default_dtype(engine.weights_dtype(precision)):
        model, batch = tiny_model.build()
    real = engine.measure_training_step(model, batch, precision=precision, plan_device="cuda")
    assert plan.memory.weights_bytes == real.weights_bytes == tiny_model.params() * (4 if precision == "fp32" else 2)
    assert plan.memory.params == plan.memory.trainable_params == plan.model.params == tiny_model.params()
    assert abs(plan.memory.peak_tensor_bytes / real.peak_bytes - 1) <= TRACE_BOUND
    assert (plan.model.name, plan.model.family) == ("tests.trace.tiny_model:build", "custom")
    assert plan.fits and plan.advice() == []
    assert any("--micro-batch" in note for note in plan.memory.notes)
    assert json.loads(json.dumps(plan.to_json()))["params"] == tiny_model.params()


@pytest.mark.parametrize(
    "spec,message",
    [
        ("tests.trace.tiny_model:not_a_pair", "must return (nn.Module, dict"),
        ("tests.trace.tiny_model:missing", "Cannot load"),
        ("tests.trace.no_such_module:build", "Cannot load"),
        ("tests.trace.tiny_model:build_reads_values", "on fake tensors failed: DataDependentOutputException"),
    ],
)
def test_module_function_errors_say_what_is_wrong(spec: str, message: str) -> None:
    pytest.importorskip("torch")
    from treino.trace.plan import plan_by_trace

    with pytest.raises(PlanError, match=message.replace("(", r"\(")):
        plan_by_trace(spec, catalog.gpu("l4"), TrainSetup())


@pytest.mark.parametrize(
    "change,flag",
    [
        ({"gpus": 2}, "--gpus 2"),
        ({"gpus": 2, "zero": 3}, "--zero 3"),
        ({"gpus": 2, "tp": 2}, "--tp 2"),
        ({"offload": "optimizer"}, "--offload optimizer"),
        ({"lora_rank": 16}, "--lora-rank 16"),
        ({"lora_rank": 16, "quant": "nf4"}, "--quant nf4"),
        ({"optimizer": "adamw-8bit"}, "--optimizer adamw-8bit"),
        ({"optimizer": "adafactor"}, "--optimizer adafactor"),
    ],
)
def test_refuses_what_one_traced_process_cannot_measure(change: dict[str, Any], flag: str) -> None:
    from treino.trace.plan import plan_by_trace

    with pytest.raises(PlanError) as raised:
        plan_by_trace("llama-3-8b", catalog.gpu("h200-sxm"), TrainSetup(**change))
    assert flag in str(raised.value) and "To fix: use --method analytic" in str(raised.value)


def test_selective_checkpointing_of_a_module_function_model_is_refused() -> None:
    """Selective checkpointing recomputes transformers' attention function; a model of one's own has none."""
    from treino.trace.plan import plan_by_trace

    with pytest.raises(PlanError, match=r"cannot trace --checkpointing selective\. To fix: use --method analytic"):
        plan_by_trace("tests.trace.tiny_model:build", catalog.gpu("l4"), TrainSetup(checkpointing="selective"))


def test_cli_trace_json_for_a_model_larger_than_the_process_may_map(tmp_path: Path) -> None:
    """`treino plan train --method trace --json` as a user runs it, on a 1.9 B-parameter model (31 GB of fp32
    weights, gradients and AdamW state) in a process that may not map more than 12 GiB: a real allocation
    would fail with MemoryError. It does not fit an L4, so the analytic advice comes too."""
    pytest.importorskip("torch")
    resource = pytest.importorskip("resource")
    limit_bytes = 12 * 2**30
    wide = {
        **TINY_LLAMA,
        "hidden_size": 8192,
        "intermediate_size": 28672,
        "num_hidden_layers": 1,
        "num_attention_heads": 64,
        "num_key_value_heads": 8,
        "vocab_size": 65536,
    }
    path = _write_config(tmp_path, "wide", wide)

    def limit_address_space() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (limit_bytes, limit_bytes))

    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "treino",
            "plan",
            "train",
            "--model",
            str(path),
            "--gpu",
            "l4",
            "--method",
            "trace",
            "--json",
            "--seq-len",
            "128",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
        preexec_fn=limit_address_space,
    )
    assert out.returncode == 3, out.stderr[-2000:]  # exit 3: the plan does not fit (an L4)
    assert out.stderr == ""
    plan = json.loads(out.stdout)
    assert (plan["method"], plan["model"], plan["family"]) == ("trace", "wide", "llama")
    assert plan["params"] == plan["trainable_params"] == model_from_config(wide).params > 1.9e9
    memory = plan["memory"]
    assert memory["peak_tensor_bytes"] == sum(memory[part] for part in PARTS) > 16 * plan["params"] > 2 * limit_bytes
    assert memory["peak_bytes"] == memory["peak_tensor_bytes"] + memory["overhead_bytes"]
    assert plan["fits"] is False
    assert plan["headroom_bytes"] == catalog.gpu("l4").memory_bytes - memory["peak_bytes"] < 0
    assert plan["advice"] and all(a["fits"] for a in plan["advice"])


def test_unsupported_family_traces_but_analytic_refuses(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    from treino.trace.plan import TRACE_STEPS, plan_by_trace

    path = _write_config(tmp_path, "tiny-t5", TINY_T5)
    steps: list[str] = []  # the progress the CLI shows, one step at a time
    plan = plan_by_trace(str(path), catalog.gpu("l4"), TrainSetup(seq_len=64), steps.append).to_json()
    assert len(steps) == len(set(steps)) == TRACE_STEPS, steps
    assert (plan["model"], plan["family"], plan["method"], plan["advice"]) == ("tiny-t5", "t5", "trace", [])
    assert plan["params"] > 0 and plan["memory"]["peak_tensor_bytes"] > 0 and plan["fits"] is True
    assert any("does not model model_type 't5'" in note for note in plan["notes"])

    out = treino("plan", "train", "--model", str(path), "--gpu", "l4", "--method", "trace", "--seq-len", "64")
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    assert "tiny-t5" in out.stdout and "trace" in out.stdout and "FITS" in out.stdout
    assert "What makes it fit" not in out.stdout

    out = treino("plan", "train", "--model", str(path), "--gpu", "l4", "--method", "analytic")
    stderr = " ".join(out.stderr.split())
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "model_type 't5'" in stderr and "--method trace" in stderr
    assert "Supported: llama, mistral, mixtral, qwen2, gemma, gemma2, phi3, qwen2_moe, gpt2, gpt_neox, bert" in stderr


def test_without_torch_the_cli_says_how_to_install_it() -> None:
    """`sys.modules['torch'] = None` makes `import torch` fail as it does where torch is not installed."""
    code = (
        "import sys; sys.modules['torch'] = None; sys.argv = ['treino', 'plan', 'train', '--model', "
        "'llama-3-8b', '--gpu', 'l4', '--method', 'trace']; from treino.cli.app import main; main()"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert out.returncode == 1
    assert "Trace mode needs the torch extras. To fix: pip install 'treino[torch]'" in out.stderr
    assert "Traceback" not in out.stderr
