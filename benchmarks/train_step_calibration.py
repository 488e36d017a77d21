"""Calibrated step time: predicted against measured training steps, after `treino bench --train-step`.

    python benchmarks/train_step_calibration.py --device cpu [--rounds 3] [--json out.json]
    python benchmarks/train_step_calibration.py --device cuda [--json out.json]     (skips without CUDA)

Each group calibrates on one setting (bench.train_step.measure_train_step, as `treino bench --train-step` runs it),
then predicts the group's other settings with the calibrated MFU (plan.performance.estimate_time with the
measurement; plan.calibration) and with the prior, and measures them for real. On the CPU every setting is
measured `--rounds` times, interleaved (calibration, then each other setting, round after round), each time by
the median of STEPS steps of CPU time on one thread, and the median over rounds is compared: the neighbours'
load on a shared host moves single measurements by several per cent. On CUDA each setting is measured once
(STEPS steps, wall time with synchronisation), models of 1-3B parameters in bf16-mixed, as the H200 check runs:
7 measurements of WARMUP + STEPS steps, each a model built on the GPU (a few seconds) and 9 steps of 0.1-0.6 s,
expected about 90 s in all on an H200 (benchmarks/device_check.sh gives it 190 s). With --json the rows are
written after each group and each measurement is printed as it ends, so a run stopped at its limit keeps them.

The issue's target: calibrated predictions within 10 % of the measured step.

Measured on CPU (a shared 2-core AMD EPYC, load average about 20, 3 rounds, CPU time on one thread, 2026-12-02):
    calibrated on      setting                measured   calibrated   error    prior error
    tiny-llama 8x128   tiny-llama 16x128      224.7 ms     225.8 ms   +0.5 %      +155 %
    tiny-llama 8x128   tiny-llama 8x256       240.7 ms     250.8 ms   +4.2 %      +165 %
    tiny-llama 8x128   tiny-llama 4x128        63.0 ms      56.5 ms  -10.4 %      +128 %
    tiny-llama 8x128   tiny-llama-wide 8x128  145.5 ms     160.6 ms  +10.3 %      +177 %
    tiny-gpt2 8x128    tiny-gpt2 16x128       225.0 ms     219.5 ms   -2.4 %      +165 %
    tiny-gpt2 8x128    tiny-gpt2 8x256        235.5 ms     241.4 ms   +2.5 %      +179 %
Larger settings than the calibrated one land within 5 %; half the batch runs 10 % slower than predicted (the
optimizer's and Python's fixed cost per step weighs twice as much), and a 1.6x wider model 10 % faster (larger
matmuls run closer to the CPU's peak): calibrate at the setting you will train. The CPU's prior (an unverified
0.35 x the small-model floor) is 2.5x off, which is why a CPU plan needs the measurement. CUDA: not yet run.
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from rich.console import Console
from rich.table import Table

from treino import catalog
from treino.bench.train_step import add_to_profile, cpu_spec, measure_train_step, train_steps
from treino.plan import TrainSetup
from treino.plan.performance import estimate_time

TARGET = 0.10
STEPS = 7
WARMUP = 2
# Tiny configs for the CPU (random weights, built from the config): each a family the planner models.
CPU_MODELS: dict[str, dict[str, Any]] = {
    "tiny-llama": {
        "model_type": "llama",
        "hidden_size": 128,
        "intermediate_size": 344,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "vocab_size": 512,
        "max_position_embeddings": 1024,
        "tie_word_embeddings": False,
    },
    "tiny-llama-wide": {  # 1.6x the parameters of tiny-llama: a close size
        "model_type": "llama",
        "hidden_size": 160,
        "intermediate_size": 432,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 4,
        "vocab_size": 512,
        "max_position_embeddings": 1024,
        "tie_word_embeddings": False,
    },
    "tiny-gpt2": {
        "model_type": "gpt2",
        "n_embd": 128,
        "n_layer": 2,
        "n_head": 4,
        "vocab_size": 512,
        "n_positions": 1024,
        "resid_pdrop": 0.0,
        "embd_pdrop": 0.0,
        "attn_pdrop": 0.0,
    },
}


@dataclass(frozen=True)
class Case:
    model: str
    micro_batch: int
    seq_len: int


# (calibration, [settings predicted from it])
CPU_GROUPS = (
    (
        Case("tiny-llama", 8, 128),
        [Case("tiny-llama", 16, 128), Case("tiny-llama", 8, 256), Case("tiny-llama", 4, 128)],
    ),
    (Case("tiny-llama", 8, 128), [Case("tiny-llama-wide", 8, 128)]),
    (Case("tiny-gpt2", 8, 128), [Case("tiny-gpt2", 16, 128), Case("tiny-gpt2", 8, 256)]),
)
CUDA_GROUPS = (
    (
        Case("qwen2.5-1.5b", 2, 2048),
        [Case("qwen2.5-1.5b", 4, 2048), Case("qwen2.5-1.5b", 1, 4096), Case("qwen2.5-3b", 2, 2048)],
    ),
    (Case("llama-3.2-1b", 2, 2048), [Case("llama-3.2-1b", 4, 2048), Case("llama-3.2-1b", 1, 4096)]),
)


def model_path(name: str, folder: Path) -> str:
    """A preset name as is; a tiny config written to `folder/name/config.json`."""
    if name not in CPU_MODELS:
        return name
    (folder / name).mkdir(parents=True, exist_ok=True)
    path = folder / name / "config.json"
    path.write_text(json.dumps(CPU_MODELS[name]))
    return str(path)


def measure(case: Case, folder: Path, precision: str, cpu: bool, profile: dict[str, Any] | None) -> Any:
    start = time.perf_counter()
    if not cpu:  # the last model's weights and optimizer state go before the next one is built
        import torch

        gc.collect()
        torch.cuda.empty_cache()
    done = measure_train_step(
        model_path(case.model, folder),
        micro_batch=case.micro_batch,
        seq_len=case.seq_len,
        precision=precision,
        steps=STEPS,
        warmup_steps=WARMUP,
        cpu_time=cpu,
        profile=profile,
    )
    print(
        f"measured {case.model} {case.micro_batch}x{case.seq_len}: step {done.point.step_seconds * 1e3:,.1f} ms, "
        f"MFU {done.point.mfu:.3f} [{time.perf_counter() - start:.0f} s]",
        flush=True,
    )
    return done


def run(
    device: str, rounds: int, folder: Path, on_group: Callable[[list[dict[str, Any]]], None] = lambda rows: None
) -> list[dict[str, Any]]:
    """The rows of every group; `on_group(rows so far)` after each group. On CUDA a group that fails (out of
    memory, say) is reported as a row with its error, and the next group runs."""
    cpu = device == "cpu"
    groups = CPU_GROUPS if cpu else CUDA_GROUPS
    rows: list[dict[str, Any]] = []
    for calibration, others in groups:
        try:
            rows.extend(run_group(calibration, others, rounds if cpu else 1, folder, cpu))
        except Exception as exc:
            if cpu:
                raise
            print(f"group {calibration}: failed: {type(exc).__name__}: {exc}", flush=True)
            rows.append({"calibrated_on": f"{calibration.model} {calibration.micro_batch}x{calibration.seq_len}"})
            rows[-1]["error"] = f"{type(exc).__name__}: {exc}"
        on_group(rows)
    return rows


def run_group(calibration: Case, others: list[Case], rounds: int, folder: Path, cpu: bool) -> list[dict[str, Any]]:
    """One group's rows. On CUDA a predicted setting that fails (out of memory, say) becomes a row with its error."""
    precision = "fp32" if cpu else "bf16-mixed"
    label = f"{calibration.model} {calibration.micro_batch}x{calibration.seq_len}"
    cal_seconds: list[float] = []
    seconds: dict[Case, list[float]] = {c: [] for c in others}
    failed: dict[Case, str] = {}
    profile: dict[str, Any] | None = None
    for _ in range(rounds):
        done = measure(calibration, folder, precision, cpu, profile)
        cal_seconds.append(done.point.step_seconds)
        profile = add_to_profile(profile, done)
        for case in others:
            try:
                seconds[case].append(measure(case, folder, precision, cpu, profile).point.step_seconds)
            except Exception as exc:
                if cpu:
                    raise
                failed[case] = f"{type(exc).__name__}: {exc}"
                print(f"{case}: failed: {failed[case]}", flush=True)
    assert profile is not None
    # The calibration the planner uses: the last round's point, its step time the median over rounds.
    point = train_steps(profile)[-1]
    ratio = statistics.median(cal_seconds) / point.step_seconds
    point = type(point)(**{**point.to_json(), "step_seconds": statistics.median(cal_seconds), "mfu": point.mfu / ratio})
    spec_device = cpu_spec(profile["cpu"]) if cpu else catalog.gpu(point.device)
    rows: list[dict[str, Any]] = []
    for case in [calibration, *others]:
        row: dict[str, Any] = {
            "device": point.device_name,
            "calibrated_on": label,
            "model": case.model,
            "micro_batch": case.micro_batch,
            "seq_len": case.seq_len,
        }
        if case in failed:
            rows.append(row | {"error": failed[case]})
            continue
        model = catalog.model(model_path(case.model, folder))
        setup = TrainSetup(micro_batch=case.micro_batch, seq_len=case.seq_len, precision=precision)
        link = "pcie" if spec_device.gpu_link == "none" else "nvlink"
        calibrated = estimate_time(model, spec_device, setup, interconnect=link, calibration=[point])
        prior = estimate_time(model, spec_device, setup, interconnect=link)
        measured = statistics.median(cal_seconds if case == calibration else seconds[case])
        rows.append(
            row
            | {
                "measured_s": measured,
                "measured_rounds": cal_seconds if case == calibration else seconds[case],
                "calibrated_s": calibrated.step_seconds,
                "calibrated_origin": calibrated.mfu_origin,
                "calibrated_error": calibrated.step_seconds / measured - 1,
                "prior_s": prior.step_seconds,
                "prior_error": prior.step_seconds / measured - 1,
            }
        )
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=("cpu", "cuda"), default="cpu")
    parser.add_argument("--rounds", type=int, default=3, help="CPU: interleaved measurements of each setting")
    parser.add_argument("--json", type=Path, help="write the rows here")
    parser.add_argument("--folder", type=Path, default=Path("/tmp/treino-train-step-calibration"))
    args = parser.parse_args()
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        print("skipped: no CUDA GPU visible to PyTorch (torch.cuda.is_available() is False)")
        return 0
    if args.device == "cpu" and torch.cuda.is_available():
        print("skipped: --device cpu times CPU steps; hide the GPUs (CUDA_VISIBLE_DEVICES=) to run it here")
        return 0

    def save(rows: list[dict[str, Any]]) -> None:
        if args.json:
            args.json.write_text(json.dumps(rows, indent=2) + "\n")

    rows = run(args.device, args.rounds, args.folder, save)
    table = Table(title=f"Step time: calibrated and prior predictions against measured ({args.device})")
    for col in ("calibrated on", "setting", "measured", "calibrated", "error", "prior", "error"):
        table.add_column(col, justify="left" if col in ("calibrated on", "setting") else "right")
    for r in rows:
        if "error" in r:
            table.add_row(r["calibrated_on"], f"{r.get('model', '')}", f"[red]{r['error'][:60]}[/]", "", "", "", "")
            continue
        style = "green" if abs(r["calibrated_error"]) <= TARGET else "red"
        origin = "" if r["calibrated_origin"] == "measured" else " (prior: no close size)"
        table.add_row(
            r["calibrated_on"],
            f"{r['model']} {r['micro_batch']}x{r['seq_len']}",
            f"{r['measured_s'] * 1e3:,.1f} ms",
            f"{r['calibrated_s'] * 1e3:,.1f} ms{origin}",
            f"[{style}]{r['calibrated_error']:+.1%}[/]",
            f"{r['prior_s'] * 1e3:,.1f} ms",
            f"{r['prior_error']:+.1%}",
        )
    console = Console(width=160)
    console.print(table)
    measured = [r for r in rows if "error" not in r]
    if measured:
        errors = [abs(r["calibrated_error"]) for r in measured]
        prior = statistics.median(abs(r["prior_error"]) for r in measured)
        console.print(
            f"calibrated: median |error| {statistics.median(errors):.1%}, max {max(errors):.1%} "
            f"(target {TARGET:.0%}); prior: median {prior:.1%}"
        )
    save(rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
