#!/usr/bin/env bash
# EARL's rollout comparison (arXiv 2510.05943): Qwen2.5-72B on H100s, one TP4 engine (4 GPUs)
# against one TP8 engine (8 GPUs), for 8, 32 and 128 responses of 1K to 32K tokens of context
# (a 512-token prompt, the rest generated), all submitted at once. Prints the simulated makespans,
# TP8's speed in tokens per GPU-second relative to TP4's (EARL's selector ranks layouts by tokens
# per GPU per second; positive: TP8 faster), and each engine's preemptions.
# Usage: tests/bench/earl_tp_crossover.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
stage=scenarios/stages/rollout-qwen2.5-72b-earl.json
field() { python3 -c "import json,sys; print(json.load(sys.stdin)['$1'])"; }
printf '%-10s %-8s %10s %10s %12s %10s %10s\n' responses context "TP4 (s)" "TP8 (s)" "TP8 vs TP4" "TP4 pre." "TP8 pre."
for n in 8 32 128; do
  for ctx in 1024 2048 4096 8192 16384 32768; do
    common=(--json --set /requests/count=$n --set /requests/input_tokens/mean=512 --set /requests/output_tokens/mean=$((ctx - 512)))
    tp4=$("$build/app/arlsim" estimate "$stage" "${common[@]}" --set /engines=1)
    tp8=$("$build/app/arlsim" estimate "$stage" "${common[@]}" --set /engine/tp=8 --set /engines=1)
    t4=$(field makespan_s <<<"$tp4")
    t8=$(field makespan_s <<<"$tp8")
    p4=$(field preemptions <<<"$tp4")
    p8=$(field preemptions <<<"$tp8")
    # Tokens per GPU-second: the same tokens over 4 x t4 and 8 x t8 GPU-seconds.
    rel=$(python3 -c "print(f'{(4 * $t4 / (8 * $t8) - 1) * 100:+.1f}%')")
    printf '%-10s %-8s %10.1f %10.1f %12s %10s %10s\n' "$n" "$ctx" "$t4" "$t8" "$rel" "$p4" "$p8"
  done
done
