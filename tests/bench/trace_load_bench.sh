#!/usr/bin/env bash
# Measures loading a large trace: 200 steps x 8,192 trajectories x 8 turns (about 13 M turns,
# 1.3 GB of JSONL). Generates it with `arlsim trace gen` (kept in DIR for later runs), then prints
# the load time and peak memory of trace_load_bench, and the time of `arlsim trace stats`, which
# streams the file. Numbers to read, not a pass/fail test.
# Usage: tests/bench/trace_load_bench.sh [BUILD_DIR] [DIR]   (defaults: build, a temporary directory)
set -euo pipefail
build="${1:-build}"
dir="${2:-}"
if [ -z "$dir" ]; then
  dir=$(mktemp -d)
  trap 'rm -rf "$dir"' EXIT
fi
trace="$dir/trace-13m.jsonl"
seconds_since() { awk -v s="$1" -v e="$(date +%s%N)" 'BEGIN { printf "%.2f", (e - s) / 1e9 }'; }
if [ ! -s "$trace" ]; then
  echo "generating $trace ..."
  start=$(date +%s%N)
  "$build/app/arlsim" trace gen --steps 200 --prompts-per-step 512 --group-size 16 \
    --turns-mean 8 --turns-min 8 --turns-max 8 --response-mean "linear 4K..16K" --response-limit 32K \
    --tool "python: dist=lognormal mean=0.8s sigma=0.6" --out "$trace"
  echo "generation        $(seconds_since "$start") s"
fi
echo "file size         $(( $(stat -c %s "$trace") / 1048576 )) MiB"
"$build/tests/trace_load_bench" "$trace"
start=$(date +%s%N)
"$build/app/arlsim" trace stats --json "$trace" >/dev/null
echo "trace stats       $(seconds_since "$start") s (streaming, one step in memory)"
