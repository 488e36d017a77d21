"""The `treino` command as users run it: a real subprocess, exit codes, stderr, JSON schema."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[2] / "src"  # this checkout's treino, not an installed one
DEMO = ["--model", "llama-3-8b", "--micro-batch", "1", "--seq-len", "4096", "--precision", "bf16-true"]


def treino(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "treino", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"COLUMNS": "120", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(SRC)},
    )


def test_demo_l4_does_not_fit_and_advises() -> None:
    out = treino("plan", "train", *DEMO, "--gpu", "l4", "--json")
    assert out.returncode == 3, out.stderr  # EXIT_NO_FIT, as without --json
    plan = json.loads(out.stdout)
    assert plan["fits"] is False
    assert plan["headroom_bytes"] < 0
    assert plan["advice"], "a plan that does not fit must say what makes it fit"
    assert all(a["fits"] and a["peak_bytes"] <= 24e9 for a in plan["advice"])


def test_demo_h200_fits() -> None:
    out = treino("plan", "train", *DEMO, "--gpu", "h200-sxm", "--json")
    plan = json.loads(out.stdout)
    assert plan["fits"] is True and plan["headroom_bytes"] > 0 and plan["advice"] == []


def test_json_schema_keys_and_consistency() -> None:
    plan = json.loads(treino("plan", "train", *DEMO, "--gpu", "h200-sxm", "--json").stdout)
    assert plan["params"] == 8_030_261_248 and plan["trainable_params"] == plan["params"]
    memory = plan["memory"]
    parts = (
        "weights_bytes",
        "gradients_bytes",
        "optimizer_bytes",
        "activations_bytes",
        "logits_bytes",
        "temporary_bytes",
    )
    assert abs(sum(memory[p] for p in parts) - memory["peak_tensor_bytes"]) <= len(parts)
    assert memory["peak_bytes"] == memory["peak_tensor_bytes"] + memory["overhead_bytes"]
    assert plan["gpu"]["name"] == "h200-sxm" and plan["gpu"]["source"] and plan["gpu"]["as_of"]
    assert plan["headroom_bytes"] == plan["gpu"]["memory_bytes"] - memory["peak_bytes"]


def test_rich_output_shows_verdict_and_bar() -> None:
    out = treino("plan", "train", *DEMO, "--gpu", "l4")
    assert out.returncode == 3  # does not fit: EXIT_NO_FIT
    assert "DOES NOT FIT" in out.stdout and "What makes it fit" in out.stdout and "█" in out.stdout
    ok = treino("plan", "train", *DEMO, "--gpu", "h200-sxm")
    assert ok.returncode == 0 and "FITS" in ok.stdout


@pytest.mark.parametrize(
    "args,message",
    [
        (("plan", "train", "--model", "llama-3-8b", "--gpu", "h100"), "Unknown GPU 'h100'. Did you mean 'h100-sxm'"),
        (
            ("plan", "train", "--model", "lama-3-8b", "--gpu", "l4"),
            "Unknown model 'lama-3-8b'. Did you mean 'llama-3-8b'",
        ),
        (
            ("plan", "train", "--model", "llama-3-8b", "--gpu", "l4", "--micro-batch", "0"),
            "--micro-batch must be at least 1",
        ),
        (
            ("plan", "train", "--model", "llama-3-8b", "--gpu", "l4", "--gpus", "2", "--tp", "3"),
            "--tp 3 does not divide",
        ),
        (
            ("plan", "train", "--model", "llama-3-8b", "--gpu", "l4", "--gpus", "3", "--tp", "3"),
            "does not divide the model's 32 attention heads",
        ),
        (("plan", "train", "--model", "llama-3-8b", "--gpu", "l4", "--precision", "fp4"), "Unknown precision 'fp4'"),
        (
            ("plan", "train", "--model", "llama-3-8b", "--gpu", "l4", "--kernels", "deepspeed"),
            "Unknown kernels 'deepspeed'",
        ),
        (("plan", "infer", "--model", "llama-3-8b", "--gpu", "l4", "--weights", "int3"), "Unknown --weights 'int3'"),
    ],
)
def test_bad_input_exit_2_with_a_clear_line_and_no_traceback(args: tuple[str, ...], message: str) -> None:
    out = treino(*args)
    assert out.returncode == 2
    assert message in " ".join(out.stderr.split())
    assert "Traceback" not in out.stderr


def test_malformed_config_names_the_problem(tmp_path: Path) -> None:
    broken = tmp_path / "config.json"
    broken.write_text('{"model_type": "llama", "hidden_size": 64,')
    out = treino("plan", "train", "--model", str(broken), "--gpu", "l4")
    # a file that cannot be read is a runtime failure (1), not a usage error
    assert out.returncode == 1 and "is not valid JSON" in out.stderr and "Traceback" not in out.stderr
    broken.write_text(
        json.dumps(
            {
                "model_type": "llama",
                "hidden_size": 64,
                "num_attention_heads": 4,
                "num_hidden_layers": 2,
                "vocab_size": 100,
            }
        )
    )
    out = treino("plan", "train", "--model", str(broken), "--gpu", "l4")
    assert out.returncode == 2 and "lacks 'intermediate_size'" in out.stderr  # a PlanError: its input is wrong


def test_debug_shows_the_traceback() -> None:
    out = treino("--debug", "plan", "train", "--model", "llama-3-8b", "--gpu", "h100")
    assert out.returncode != 0 and "Traceback" in out.stderr


def test_catalog_commands() -> None:
    gpus = json.loads(treino("gpus", "--json").stdout)
    names = {g["name"] for g in gpus}
    assert {
        "l4",
        "l40s",
        "a10",
        "a100-40gb-pcie",
        "a100-80gb-sxm",
        "h100-pcie",
        "h100-sxm",
        "h100-nvl",
        "h200-sxm",
        "h200-nvl",
        "b200",
        "rtx-4090",
        "rtx-6000-ada",
        "mi300x",
    } <= names
    assert all(g["source"] and g["as_of"] for g in gpus)
    models = json.loads(treino("models", "--json").stdout)
    assert len(models) >= 30 and all(m["source"] for m in models)
    assert "llama-3.1-405b" in treino("models").stdout


def test_every_advice_replans_to_a_fit_with_its_own_flags() -> None:
    """The advice is only as good as its flags: run each one back through the CLI and it must fit."""
    base = ["plan", "train", *DEMO, "--gpu", "l4"]
    plan = json.loads(treino(*base, "--json").stdout)
    slowdowns = []
    for advice in plan["advice"]:
        flags = advice["flags"].split()
        replanned = json.loads(treino(*base, *flags, "--json").stdout)
        assert replanned["fits"], advice
        assert replanned["memory"]["peak_bytes"] == advice["peak_bytes"]
        slowdowns.append((advice["change"], advice["slowdown"]))
    assert slowdowns, "the L4 plan must offer options"


def test_plan_train_time_object() -> None:
    out = treino("plan", "train", *DEMO, "--gpu", "h200-sxm", "--tokens", "2e9", "--json")
    time = json.loads(out.stdout)["time"]
    for key in (
        "flops_per_token",
        "step_seconds",
        "tokens_per_second",
        "mfu",
        "comm_seconds",
        "exposed_comm_seconds",
        "total_seconds",
    ):
        assert key in time
    assert time["total_seconds"] == pytest.approx(time["steps"] * time["step_seconds"])
    assert time["steps"] * time["tokens_per_step"] >= 2e9


def test_plan_scale_json_and_table() -> None:
    out = treino("plan", "scale", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--micro-batch", "2", "--json")
    points = json.loads(out.stdout)["points"]
    assert {(p["gpus"], p["interconnect"]) for p in points} >= {(1, "nvlink"), (64, "nvlink"), (64, "pcie")}
    assert all({"gpus", "interconnect", "step_seconds", "tokens_per_second", "efficiency"} <= set(p) for p in points)
    table = treino("plan", "scale", "--model", "llama-3-8b", "--gpu", "h100-sxm", "--micro-batch", "2").stdout
    assert "falls below 90 %" in table and "stays at or above 90 %" in table
    l4 = json.loads(treino("plan", "scale", "--model", "llama-3-8b", "--gpu", "l4", "--json").stdout)["points"]
    assert {p["interconnect"] for p in l4} == {"pcie"}  # an L4 has no NVLink


def test_plan_shared_table() -> None:
    args = (
        "plan",
        "shared",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h200-sxm",
        "--tokens",
        "5e8",
        "--seq-len",
        "4096",
        "--precision",
        "bf16-true",
    )
    data = json.loads(treino(*args, "--mig", "3g", "--json").stdout)
    assert data["dedicated"]["fits"] is True and data["shared"]["fits"] is False  # 85 GiB vs half an H200
    assert "VRAM available" in treino(*args, "--mig", "3g").stdout
    bad = treino(*args)
    assert bad.returncode == 2 and "--mig 3g, or --time-slice 1" in bad.stderr
    # A GPU without NVLink (an L4) plans over PCIe: once refused with advice no option of this command could follow
    l4 = ("plan", "shared", "--model", "llama-3-8b", "--gpu", "l4", "--tokens", "1e8", "--lora-rank", "16")
    sliced = treino(*l4, "--time-slice", "1")
    assert sliced.returncode == 0, sliced.stderr
    (nvlink,) = [line for line in sliced.stdout.splitlines() if "NVLink between GPUs" in line]
    assert [cell.strip() for cell in nvlink.split("│")[2:4]] == ["no (this GPU has none)"] * 2
    # A time-sliced L4 keeps half its 22.5 GiB (the neighbour holds the rest): the table in pt-BR, numbers too
    pt = treino("--lang", "pt-BR", *l4, "--time-slice", "1")
    assert pt.returncode == 0 and "50 %: 11,2 GiB, o job NÃO" in pt.stdout and "nenhum entre fatias de" in pt.stdout
    assert "VRAM available" not in pt.stdout and "dedicated" not in pt.stdout


def test_recommend_json_and_parsing() -> None:
    args = ("recommend", "--model", "llama-3-8b", "--tokens", "2e9", "--deadline", "3d", "--residency", "BR")
    data = json.loads(treino(*args, "--budget", "R$ 60.000", "--json").stdout)
    assert data["choices"], data["rejected"]
    first = data["choices"][0]
    for key in ("offer", "gpu", "gpus", "site", "country", "hours", "cost_brl"):
        assert key in first
    assert all(c["country"] == "BR" and c["hours"] <= 72 and c["cost_brl"] <= 60_000 for c in data["choices"])
    assert all({"offer", "reason"} <= set(r) for r in data["rejected"])
    bad = treino("recommend", "--model", "llama-3-8b", "--tokens", "2e9", "--deadline", "soon")
    assert bad.returncode == 2 and "Cannot read the deadline 'soon'" in bad.stderr


def test_plan_cost_dedicated_vs_cloud() -> None:
    args = (
        "plan",
        "cost",
        "--model",
        "llama-3-8b",
        "--tokens",
        "2e9",
        "--dedicated",
        "example-eveo-sp1-8x-h200",
        "--cloud",
        "aws-p5en-48xlarge",
        "--runs-per-month",
        "4",
    )
    data = json.loads(treino(*args, "--json").stdout)
    assert data["cheaper"] in ("dedicated", "cloud") and data["fx"]["date"] and data["fx"]["source"]
    out = treino(*args).stdout
    assert "R$ " in out and "pays off above" in out
    typo = treino(
        "plan",
        "cost",
        "--model",
        "llama-3-8b",
        "--tokens",
        "2e9",
        "--dedicated",
        "example-eveo-sp1-8x-h20",
        "--cloud",
        "aws-p5en-48xlarge",
    )
    assert typo.returncode == 2 and "Did you mean" in typo.stderr


def test_plan_train_cost_object() -> None:
    args = (
        "plan",
        "train",
        "--model",
        "llama-3-8b",
        "--gpu",
        "h200-sxm",
        "--gpus",
        "8",
        "--zero",
        "3",
        "--seq-len",
        "4096",
        "--tokens",
        "2e9",
        "--offer",
        "aws-p5en-48xlarge",
        "--json",
    )
    data = json.loads(treino(*args).stdout)
    hours = data["time"]["total_seconds"] / 3600
    assert data["cost"]["total_brl"] == pytest.approx(hours * 63.296 * data["cost"]["fx_brl_per_usd"])
    wrong = treino(
        "plan", "train", "--model", "llama-3-8b", "--gpu", "l4", "--tokens", "1e9", "--offer", "aws-p5en-48xlarge"
    )
    assert wrong.returncode == 2 and "--gpu h200-sxm" in wrong.stderr


def test_plan_scale_names_the_network_between_servers() -> None:
    """Which link carries each level, where the fabric starts to dominate, and no servers without a network."""
    args = ("plan", "scale", "--model", "llama-3-70b", "--gpu", "h100-sxm", "--max-gpus", "32")
    points = json.loads(treino(*args, "--fabric", "2x100g-eth", "--json").stdout)["points"]
    nvlink = {p["gpus"]: p for p in points if p["interconnect"] == "nvlink"}
    assert (nvlink[8]["servers"], nvlink[8]["fabric"], nvlink[8]["inter_comm_seconds"]) == (1, "none", 0)
    assert (nvlink[32]["servers"], nvlink[32]["fabric"]) == (4, "2x100g-eth") and nvlink[32]["fabric_bound"]
    text = " ".join(treino(*args, "--fabric", "2x100g-eth").stdout.split())
    assert "Between servers: 2×100 GbE (TCP) (10 GB/s a server)" in text
    assert "reduce-scatter inside each server over NVLink, an all-reduce between servers over the fabric" in text
    assert "The link between servers dominates from 16 GPUs (2 servers)" in text
    alone = treino(*args, "--fabric", "none")
    assert "No network between servers: one server at most." in " ".join(alone.stdout.split())
    assert max(p["gpus"] for p in json.loads(treino(*args, "--fabric", "none", "--json").stdout)["points"]) == 8
    bad = treino(*args, "--fabric", "fast")
    assert bad.returncode == 2 and "Unknown fabric 'fast'" in bad.stderr
