#!/usr/bin/env bash
# Simulation speed of whole RL steps: one step, and 200 steps, of 1,024 GPUs with 8,192
# trajectories x 8 turns and contexts up to 32K (tests/bench/step-1024.json). Generates the trace
# with `arlsim trace gen` first (kept in DIR for later runs), then prints wall time and peak
# memory of `arlsim simulate` (trace loading included: 3-6 s of the 200-step run). Targets:
# one step under 0.5 s, 200 steps under a minute, memory under 2 GB. Numbers to read, not a
# pass/fail test.
# Usage: tests/bench/simulate_bench.sh [BUILD_DIR] [DIR]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/bench_trace.sh"
trace="$dir/step-1024.jsonl"   # 200 steps, mean response growing 4K -> 16K
last="$dir/step-1024-last.jsonl"  # one step as long as the run's last
bench_trace "$trace" 200 "linear 4K..16K"
bench_trace "$last" 1 "16K"
measure() {  # measure LABEL ARGS...: wall seconds and peak RSS of one arlsim run
  local label="$1"
  shift
  local start
  start=$(date +%s%N)
  /usr/bin/time -f "%M" -o "$dir/rss" "$build/app/arlsim" simulate "$here/step-1024.json" "$@" >/dev/null
  printf '%-22s %8s s   peak memory %6.0f MiB\n' "$label" "$(seconds_since "$start")" \
    "$(awk '{ print $1 / 1024 }' "$dir/rss")"
}
measure "1 step (contexts to 32K)" --trace "$last"
measure "200 steps" --trace "$trace"
