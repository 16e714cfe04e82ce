#!/usr/bin/env bash
# One RL step at the planner's largest scales (the default scenario, Qwen3-8B, stretched): 100,000
# GPUs (12,500 nodes of 8, TP2 engines: 50,000 of them) with 50,000 trajectories, sticky and
# least-loaded routing (which asks for the least-loaded of the 50,000 at every turn), and 1,000,000
# trajectories on 1,000 GPUs. Prints wall time and peak memory of each `arlsim simulate` run
# (trace generation included), and the peak memory simulate estimates before it runs (and refuses
# a run whose estimate exceeds the memory available). Targets: each under 10 s and 4 GB on one
# core. Numbers to read, not a pass/fail test.
# Usage: tests/bench/scale_bench.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
measure() {  # measure LABEL ARGS...
  local label=$1
  shift
  local start
  start=$(date +%s.%N)
  /usr/bin/time -f "%M" -o "$tmp/rss" "$build/app/arlsim" simulate default --steps 1:1 "$@" >/dev/null
  local took estimate
  took=$(echo "$(date +%s.%N) - $start" | bc -l)
  # simulate's own estimate, which it checks against the memory available before it runs: the
  # generated trace's first (refused below it before the trace is drawn), then the run's whole
  # figure once the trace is read (asked with a limit just above the trace's).
  local trace_bytes
  trace_bytes=$("$build/app/arlsim" simulate default --steps 1:1 "$@" --max-memory 1B 2>&1 |
    grep -o 'needs about [0-9.]* [KMG]iB' | head -1 | sed 's/needs about //' |
    awk '{ m = ($2 == "KiB") ? 1024 : ($2 == "MiB") ? 1048576 : 1073741824; printf "%.0f", ($1 + 0.01) * m * 1.01 + 1 }' || true)
  estimate=$("$build/app/arlsim" simulate default --steps 1:1 "$@" --max-memory "${trace_bytes:-1}" 2>&1 |
    grep -o 'needs about [0-9.]* [KMG]iB' | sed 's/needs about //' || true)
  printf '%-50s %7.1f s   peak memory %6.0f MiB (estimated %s)\n' "$label" "$took" \
    "$(awk '{ print $1 / 1024 }' "$tmp/rss")" "$estimate"
}
measure "100,000 GPUs, 50,000 trajectories" --set /cluster/nodes=12500 --set /policy/train/tp=8 \
  --set /policy/train/dp=12500 --set /workload/prompts_per_step=3125 --set /workload/samples_per_prompt=16 \
  --set /workload/mini_batches=1
measure "100,000 GPUs, 50,000 trajectories, least-loaded" --set /cluster/nodes=12500 --set /policy/train/tp=8 \
  --set /policy/train/dp=12500 --set /workload/prompts_per_step=3125 --set /workload/samples_per_prompt=16 \
  --set /workload/mini_batches=1 --set '/policy/routing="least-loaded"'
measure "1,000 GPUs, 1,000,000 trajectories" --set /cluster/nodes=125 --set /policy/train/dp=500 \
  --set /workload/prompts_per_step=62500 --set /workload/samples_per_prompt=16 --set /workload/mini_batches=1
