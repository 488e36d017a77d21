"""`treino bench` and `treino plan train --profile` as users run them: real subprocesses, exit codes, JSON."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from treino.bench import gpu as bench_gpu
from treino.bench.profile import build_profile, save_profile
from treino.bench.runner import NO_GPU_LINE, parse_only, run_bench
from treino.errors import TreinoError

JSON_KEYS = {"gpus", "collectives", "host", "storage", "dataloader", "verdicts"}
COLLECTIVE_KEYS = {"op", "backend", "ranks", "bytes", "algbw_gb_s", "busbw_gb_s", "latency_us"}
QUICK_TIMEOUT_S = 300  # a hang, not a speed check: the 60 s bound of --quick is benchmarks/run_all.py's row


def treino(*args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "treino", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={"COLUMNS": "120", "PATH": "/usr/bin:/bin"},
    )


def test_quick_json_runs_every_cpu_stage() -> None:
    out = treino("bench", "--quick", "--json", timeout=QUICK_TIMEOUT_S)
    assert out.returncode == 0, out.stderr
    assert "Traceback" not in out.stderr
    result = json.loads(out.stdout)
    assert set(result) == JSON_KEYS
    assert result["collectives"] and all(set(c) == COLLECTIVE_KEYS for c in result["collectives"])
    assert {c["op"] for c in result["collectives"]} == {"all_reduce", "all_gather", "reduce_scatter"}
    assert set(result["host"]) == {"cpu", "cores", "ram_bytes", "memory_bandwidth_gb_s"}
    assert result["host"]["memory_bandwidth_gb_s"] > 0 and result["host"]["cores"] >= 1
    assert set(result["storage"]) == {"path", "read_gb_s", "method"} and result["storage"]["read_gb_s"] > 0
    assert set(result["dataloader"]) == {"samples_per_s", "workers"} and result["dataloader"]["samples_per_s"] > 0
    assert any(v["criterion"] == "allreduce_correct" and v["passed"] for v in result["verdicts"])
    if not bench_gpu.cuda_available():
        assert result["gpus"] == []
        assert out.stderr.count(NO_GPU_LINE) == 1


def test_gpu_stage_without_cuda_is_one_clear_line(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bench_gpu, "cuda_available", lambda: False)
    run = run_bench(("gpu",), quick=True)
    assert run.notes == [NO_GPU_LINE]
    assert run.result["gpus"] == []


def test_only_accepts_stages_and_aliases_in_run_order() -> None:
    assert parse_only("disk,gpu") == ("gpu", "storage")
    assert parse_only("allreduce, host") == ("collectives", "host")
    with pytest.raises(TreinoError, match="Valid stages: gpu, collectives, host, storage, dataloader"):
        parse_only("gpu,dsik")


def test_bad_only_exits_2_with_a_clear_message() -> None:
    out = treino("bench", "--only", "gpu,dsik")
    assert out.returncode == 2
    assert "Traceback" not in out.stderr
    assert "Unknown stage 'dsik' in --only. Did you mean 'disk'?" in out.stderr
    assert "Valid stages: gpu, collectives, host, storage, dataloader" in out.stderr


def _h200_profile(hbm_gb_s: float) -> dict:
    result = {
        "gpus": [{"name": "NVIDIA H200", "copy_gb_s": hbm_gb_s, "tflops": {"bf16": 989.5}}],
        "collectives": [],
        "storage": {"path": "/data", "read_gb_s": 6.5, "method": "O_DIRECT"},
        "dataloader": {"samples_per_s": 1000.0, "workers": 2},
    }
    return build_profile(result, "h200-sxm")


PLAN = ["plan", "train", "-m", "llama-3-8b", "-g", "h200-sxm", "-s", "128", "--json"]  # short: memory-bound


def test_profile_round_trip_changes_the_roofline(tmp_path: Path) -> None:
    # The H200 SXM datasheet: 4.8 TB/s HBM3e. A profile measuring half of it must double the roofline time.
    path = tmp_path / "profile.json"
    save_profile(_h200_profile(2400.0), path)
    sheet = json.loads(treino(*PLAN).stdout)
    out = treino(*PLAN, "--profile", str(path))
    assert out.returncode == 3, out.stderr  # the plan does not fit (exit 3); its roofline is computed all the same
    measured = json.loads(out.stdout)
    assert measured["profile"]["measured"]["hbm_bandwidth_gb_s"] == {"datasheet": 4800.0, "measured": 2400.0}
    assert measured["time"]["bound"] == "memory"
    assert measured["time"]["compute_seconds"] > 1.4 * sheet["time"]["compute_seconds"]
    assert measured["pipeline"]["storage_bytes_per_s"] == 6.5e9  # the profile's O_DIRECT read, not --storage
    assert sheet["pipeline"]["storage_bytes_per_s"] == 7.0e9
    text = treino(*PLAN[:-1], "--profile", str(path)).stdout
    assert "Measured (" in text and "hbm_bandwidth_gb_s 2,400 (datasheet 4,800)" in text


def test_measured_matmul_scales_the_peak_by_its_burst_against_the_typical_mamf(tmp_path: Path) -> None:
    # Measured on an H200 SXM (2026-11-29, benchmarks/results/h200-sxm-1x-2026-11-29.json): bf16 789 TFLOP/s
    # burst, 674 sustained. MAMF for H100/H200 is 794.5 of 989 (hardware-and-prices.md §4.1, S01): a typical
    # card, so the step time must stay within 1 % of the datasheet plan; a card bursting at half must take ~2x.
    long_plan = ["plan", "train", "-m", "llama-3-8b", "-g", "h200-sxm", "-s", "4096", "--json"]  # compute-bound
    sheet = json.loads(treino(*long_plan).stdout)["time"]["compute_seconds"]
    for burst, ratio in ((789.0, 1.0), (394.5, 2.0)):
        profile = _h200_profile(4300.0)
        profile["gpu"]["tflops"] = {"bf16": 674.0}
        profile["gpu"]["tflops_burst"] = {"bf16": burst}
        path = tmp_path / f"p{burst}.json"
        save_profile(profile, path)
        out = json.loads(treino(*long_plan, "--profile", str(path)).stdout)
        assert out["time"]["bound"] == "compute"
        assert out["time"]["compute_seconds"] == pytest.approx(ratio * sheet, rel=0.01)
        assert out["profile"]["measured"]["bf16_tflops"]["measured"] == pytest.approx(burst / 0.80)


def test_profile_for_another_gpu_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "profile.json"
    save_profile(_h200_profile(2400.0), path)
    out = treino("plan", "train", "-m", "llama-3-8b", "-g", "a100-80gb-sxm", "--profile", str(path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "To fix: --gpu h200-sxm" in out.stderr


def test_save_on_a_cpu_machine_writes_a_profile_the_planner_refuses_clearly(tmp_path: Path) -> None:
    path = tmp_path / "cpu.json"
    out = treino("bench", "--quick", "--only", "host", "--save", str(path))
    assert out.returncode == 0, out.stderr
    profile = json.loads(path.read_text())
    assert profile["schema_version"] == 1 and profile["measured_at"]
    if bench_gpu.cuda_available():
        return
    assert profile["gpu"] is None
    out = treino(*PLAN, "--profile", str(path))
    assert out.returncode == 2 and "Traceback" not in out.stderr
    assert "The profile holds no GPU measurements" in out.stderr
