#!/usr/bin/env bash
# Issue 18's GPU checks on a lent machine (the device tool's nvidia-h200), as two prepared commands that each end
# within BUDGET seconds (default 530, for a run's timeout_s of 540):
#     bash benchmarks/device_check.sh 1    # the unmeasured targets: kernel table, calibrated step time, MLA, trace
#     bash benchmarks/device_check.sh 2    # FP8 (torchao), the planner against real steps, treino bench --train-step
# Part 1 matters most: run it first; run part 2 only if the device time left allows (benchmarks/results/README.md).
# Each stage has its own timeout, cut to what is left of BUDGET (a stage with under 20 s left is skipped), and
# writes its JSON under $OUT as it goes; everything printed goes to $OUT/log.txt and each stage's exit code and
# seconds to $OUT/stages.tsv, so a stopped run still returns what finished. At most 7 files under $OUT (the tool
# returns 8). The "expected" durations are estimates for an H200 (imports of torch and transformers included),
# not yet seen on one: part 1 about 250-300 s, part 2 about 250-300 s, each at most BUDGET.
# Wheels: benchmarks/device_wheels.sh (run here) puts what the machine lacks (pydantic, torchao, this checkout's
# transformers) in benchmarks/build/wheels, which the run must `carry`; without pydantic nothing can run, so the
# script stops (exit 3) after its preflight, some 20 s in. Without a GPU (here, on CPU) it runs the same stages
# as a dry run, each capped at STAGE_CAP seconds (default 30): the CUDA scripts skip in a line, the others start
# their CPU paths (CLI_MODEL=a tiny config.json runs part 2's CLI stage on the CPU too).
#     PYTHON=.venv/bin/python OUT=/tmp/out bash benchmarks/device_check.sh 1
set -u
part=${1:-1}
case $part in 1 | 2) ;; *) echo "usage: bash benchmarks/device_check.sh 1|2" >&2; exit 2 ;; esac
cd "$(dirname "$0")/.." || exit 2
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
BUDGET=${BUDGET:-530}
PY=${PYTHON:-python3}
LOG=$OUT/log.txt
export OUT PY
log() { echo "$*" | tee -a "$LOG"; }

# -- setup (expected 20-30 s): wheels, environment, machine -------------------------------------------------------
wheels=${WHEELS:-benchmarks/build/wheels}
if [ -z "${NO_WHEELS:-}" ] && ls "$wheels"/*.whl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$wheels"/*.whl 2>&1 | tee -a "$LOG"
  export PYTHONPATH=/tmp/site
  # The carried transformers (this checkout's pin) only where it imports with the machine's other packages.
  if ls -d /tmp/site/transformers >/dev/null 2>&1 && ! "$PY" -c 'import transformers' >>"$LOG" 2>&1; then
    rm -rf /tmp/site/transformers /tmp/site/transformers-*.dist-info
    log "the carried transformers does not import here (see above): the machine's own is used"
  fi
else
  log "no wheels in $wheels (benchmarks/device_wheels.sh makes them; carry that folder)"
fi
export PYTHONPATH=$PWD/src:$PWD:${PYTHONPATH:-} PYTHONUNBUFFERED=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export TOKENIZERS_PARALLELISM=false
{
  echo "== device_check.sh part $part, $(date -u +%FT%TZ), budget $BUDGET s"
  nvidia-smi --query-gpu=name,memory.total,driver_version,power.limit,clocks.max.sm --format=csv 2>&1
  nproc
  free -g | head -2
} | tee -a "$LOG"
# Versions, then the preflight: treino and the tests' helpers must import (else exit 3), and is there a GPU?
pre=$(timeout 90 "$PY" - 2>&1 <<'PY'
import importlib
for name in ("torch", "transformers", "pydantic", "torchao", "triton"):
    try:
        mod = importlib.import_module(name)
        print(name, getattr(mod, "__version__", "?"), getattr(mod, "__file__", ""))
    except Exception as exc:
        print(name, "not importable:", type(exc).__name__, str(exc).splitlines()[0] if str(exc) else "")
import torch
import tests.plan.families
import treino.catalog
print("cuda", int(torch.cuda.is_available()))
PY
)
rc=$?
log "$pre"
cuda=$(echo "$pre" | sed -n 's/^cuda //p')
if [ "$rc" != 0 ]; then
  log "preflight failed (rc=$rc): treino does not import (pydantic missing? run benchmarks/device_wheels.sh here" \
    "and carry benchmarks/build/wheels); stopping before the stages"
  exit 3
fi
cap=0
if [ "$cuda" != 1 ]; then
  cap=${STAGE_CAP:-30}
  log "no CUDA device: dry run, each stage capped at $cap s"
fi
treino() { "$PY" -c 'import sys; sys.argv[0] = "treino"; from treino.cli.app import main; main()' "$@"; }

# stage NAME TIMEOUT COMMAND...: runs COMMAND under `timeout`, cut to what is left of BUDGET (less the 10 s that
# `timeout -k` may wait before it kills); output to the log.
stage() {
  local name=$1 limit=$2 left
  shift 2
  left=$((BUDGET - SECONDS - 15))
  [ "$cap" -gt 0 ] && [ "$limit" -gt "$cap" ] && limit=$cap
  [ "$limit" -gt "$left" ] && limit=$left
  if [ "$limit" -lt 20 ]; then
    log "== $name: skipped, $left s left of the budget"
    printf '%s\tskipped\t0\t%s\n' "$name" "$left" >>"$OUT/stages.tsv"
    return
  fi
  log "== $name (timeout $limit s, $(date -u +%T))"
  local start=$SECONDS
  timeout -k 10 "$limit" "$@" 2>&1 | tee -a "$LOG"
  local rc=${PIPESTATUS[0]}
  log "== $name: rc=$rc in $((SECONDS - start)) s$([ "$rc" = 124 ] && echo ' (timed out)')"
  printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$((SECONDS - start))" "$limit" >>"$OUT/stages.tsv"
}

if [ "$part" = 1 ]; then
  # Expected ~30-60 s: 54 SDPA kernel choices, a dropout mask, 16 small models with dropout under MemTracker.
  stage kernels 90 "$PY" benchmarks/attention_kernels.py --json "$OUT/attention_kernels.json"
  # Expected ~90 s: 7 measurements, qwen2.5-1.5b (calibration) -> 1.5b x3 settings and qwen2.5-3b, llama-3.2-1b
  # (calibration) -> 1b x2 settings; bf16-mixed, 9 steps each. Issue 18 item 6's <= 10 % target.
  stage train_step 190 "$PY" benchmarks/train_step_calibration.py --device cuda --json "$OUT/train_step.json"
  # Expected ~20-40 s: MLA's SDPA kernel (3 dtypes) and 12 small DeepSeek-V3 steps under MemTracker.
  stage mla 60 "$PY" benchmarks/mla_kernel_check.py --json "$OUT/mla_kernel.json"
  # Expected ~60-90 s: 44 cases (11 families x tied/untied x 32k fp32 / 256k bf16), trace vs a real CUDA step.
  stage trace 150 "$PY" benchmarks/trace_parity.py --cuda --json "$OUT/trace_parity.json"
else
  # Expected ~90-150 s with per-layer compilation (bf16 and float8 runs of llama-3.2-1b, 4 x 2048); one line
  # and no Python at all where torchao does not import.
  if "$PY" -c 'from torchao.float8 import convert_to_float8_training' >/dev/null 2>&1; then
    stage fp8 230 "$PY" benchmarks/fp8_check.py --json "$OUT/fp8.json"
  else
    log "== fp8: skipped: torchao is not importable here (carry benchmarks/build/wheels from device_wheels.sh)"
    printf 'fp8\tskipped\t0\t0\n' >>"$OUT/stages.tsv"
  fi
  # Expected ~60-90 s: 6 cases of 0.5-3B models, predicted vs measured memory and step time.
  stage plan_check 150 "$PY" benchmarks/gpu_plan_check.py --json "$OUT/plan_check.json"
  # Expected ~60-80 s: the CLI path of item 6 end to end: the GPU's figures into a profile, `--train-step` of a
  # 3B model saved into it, the calibrated plan of twice the batch, then that batch measured (its step_seconds).
  cli() {
    local model=${CLI_MODEL:-llama-3.2-3b} gpu=h200-sxm
    treino bench --only gpu --json --save "$OUT/profile.json" >"$OUT/bench_gpu.json" || return
    [ "$cuda" = 1 ] || { [ -n "${CLI_MODEL:-}" ] && gpu=cpu; } || { echo "no CUDA: --train-step skipped"; return; }
    treino bench --train-step --model "$model" -b 2 -s 2048 --save "$OUT/profile.json" || return
    treino plan train --model "$model" --gpu $gpu -b 4 -s 2048 --profile "$OUT/profile.json" --json \
      >"$OUT/plan_train.json" || return
    "$PY" -c 'import json, sys; t = json.load(open(sys.argv[1]))["time"]; print("plan:", t)' "$OUT/plan_train.json"
    treino bench --train-step --model "$model" -b 4 -s 2048
  }
  stage cli 120 bash -c "cuda=$cuda; $(declare -f treino cli); cli"
fi
log "== part $part done in $SECONDS s"
cat "$OUT/stages.tsv"
