"""`treino plan train` names its device and the attention kernel PyTorch runs there; `--gpu cpu` plans a CPU host."""

from __future__ import annotations

import json

import pytest

from tests.cli.test_cli import treino

GPT2 = ["--model", "gpt2", "--micro-batch", "4", "--seq-len", "1024"]


def _plan(*args: str) -> dict:
    out = treino("plan", "train", *args, "--json")
    assert out.returncode in (0, 3), out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize(
    "gpu,precision,device,kernel",
    [
        ("cpu", "fp32", "cpu", "math"),  # GPT-2 drops out 10 %: CPU SDPA falls back to the math kernel
        ("l4", "bf16-mixed", "cuda sm89", "flash"),
        ("a100-80gb-sxm", "fp32", "cuda sm80", "efficient"),  # flash takes only 16-bit inputs
    ],
)
def test_json_names_device_and_kernel(gpu: str, precision: str, device: str, kernel: str) -> None:
    plan = _plan(*GPT2, "--gpu", gpu, "--precision", precision)
    assert (plan["device"], plan["memory"]["attention_kernel"]) == (device, kernel)
    assert plan["setup"]["device"] == device.split()[0]


def test_cpu_host_plan_is_memory_only_against_its_ram() -> None:
    cpu = _plan(*GPT2, "--gpu", "cpu", "--ram-gb", "64", "--precision", "fp32")
    assert cpu["gpu"]["name"] == "cpu" and cpu["gpu"]["memory_bytes"] == 64 * 10**9
    assert cpu["time"] is None and cpu["cost"] is None
    assert cpu["memory"]["overhead_bytes"] < cpu["memory"]["peak_tensor_bytes"]  # no CUDA context
    gpu = _plan(*GPT2, "--gpu", "l4", "--precision", "fp32")
    # The math kernel keeps the s x s probabilities and their dropout mask; CUDA's fused kernels do not.
    assert cpu["memory"]["activations_bytes"] > 2 * gpu["memory"]["activations_bytes"]
    refused = treino("plan", "train", *GPT2, "--gpu", "cpu", "--offer", "anything")
    assert refused.returncode == 2 and "--gpu cpu plans the CPU host itself" in refused.stderr
    for extra in (["--gpus", "2"], ["--fabric", "2x100g-eth"], ["--precision", "fp8"]):
        refused = treino("plan", "train", *GPT2, "--gpu", "cpu", *extra)
        assert refused.returncode == 2 and "--gpu cpu plans one CPU host" in refused.stderr, extra


def test_a_cpu_host_is_never_advised_to_offload_or_add_devices() -> None:
    # 24 GB of RAM cannot hold Llama-3-8B's training: the fixes may change numerics or activations, never offload
    # into the same RAM or shard over a second device the host does not have
    plan = _plan("--model", "llama-3-8b", "--gpu", "cpu", "--ram-gb", "24", "--precision", "bf16-true")
    assert plan["advice"], plan
    for option in plan["advice"]:
        assert "--offload" not in option["flags"] and "--gpus" not in option["flags"], option


def test_rich_output_names_the_kernel_in_both_languages() -> None:
    out = treino("plan", "train", *GPT2, "--gpu", "h200-sxm")
    assert out.returncode == 0 and "attention: flash kernel on cuda sm90" in out.stdout
    pt = treino("--lang", "pt-BR", "plan", "train", *GPT2, "--gpu", "cpu", "--ram-gb", "64")
    assert pt.returncode == 0 and "atenção: kernel math em cpu" in pt.stdout
