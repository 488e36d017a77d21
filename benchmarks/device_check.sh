#!/usr/bin/env bash
# One prepared run on a lent GPU machine (the device tool): `treino bench --json --save` and the planner
# against real CUDA training steps. Writes everything under $OUT. Python deps missing there travel as wheels in
# .whl (see ../.library/device/README.md); torch and transformers are the machine's own.
set -u
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
if [ -z "${NO_WHEELS:-}" ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=$PWD/src:${PYTHONPATH:-} PYTHONUNBUFFERED=1
treino() { python3 -c 'from treino.cli.app import main; main()' "$@"; }
{ nvidia-smi; python3 -c 'import torch, transformers; print(torch.__version__, transformers.__version__)'; nproc; free -g; df -h /tmp .; } > "$OUT/machine.txt" 2>&1
date -u +%FT%TZ > "$OUT/when.txt"
s=$SECONDS
timeout 300 bash -c "$(declare -f treino); treino bench ${BENCH_ARGS:-} --json --save '$OUT/profile.json' --path $PWD" \
  > "$OUT/bench.json" 2> "$OUT/bench.err"; echo "bench rc=$? in $((SECONDS - s)) s"
python3 - "$OUT/bench.json" <<'PY' || true
import json, sys
from rich.console import Console
from treino.bench.report import table, verdict_lines
r = json.load(open(sys.argv[1])); c = Console(width=160)
c.print(table(r))
for line in verdict_lines(r): c.print(line, highlight=False)
PY
s=$SECONDS
timeout 200 python3 benchmarks/gpu_plan_check.py --json "$OUT/plan_check.json" 2>&1 | tee "$OUT/plan_check.txt"
echo "plan check in $((SECONDS - s)) s"
timeout 120 python3 benchmarks/attention_kernels.py 2>&1 | tee "$OUT/attention_kernels.txt"
timeout 120 python3 benchmarks/mla_kernel_check.py 2>&1 | tee "$OUT/mla_kernel_check.txt"
treino plan train --model llama-3.1-8b --gpu h200-sxm --profile "$OUT/profile.json" --tokens 1e9 2>&1 | tail -25
# NCCL code path smoke test: one rank per visible GPU (busbw is 0 by definition on one rank; algbw still moves).
timeout 90 python3 -c '
import torch
from treino.bench.collectives import run_collectives
n = torch.cuda.device_count()
r = run_collectives("nccl", n, (8 * 1024, 1 << 20, 1 << 26, 1 << 28), 5)
print("nccl", n, "rank(s): correct", r.correct, "max error", r.max_abs_error)
for x in r.results: print(x.op, x.bytes, round(x.algbw_gb_s, 1), round(x.busbw_gb_s, 1), x.latency_us)
' 2>&1 | tee "$OUT/nccl.txt"
# Calibrated step time (issue 18 item 6): `treino bench --train-step` on a 1.5B model, then the planner's calibrated
# prediction for twice the batch, twice the sequence and the 3B model of the family, against real steps.
s=$SECONDS
timeout 300 python3 benchmarks/train_step_calibration.py --device cuda --json "$OUT/train_step.json" 2>&1 | tee "$OUT/train_step.txt"
echo "train-step calibration in $((SECONDS - s)) s"
