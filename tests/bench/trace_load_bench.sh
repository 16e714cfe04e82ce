#!/usr/bin/env bash
# Measures loading a large trace: 200 steps x 8,192 trajectories x 8 turns (about 13 M turns,
# 1.2 GB of JSONL; the trace of simulate_bench.sh). Generates it with `arlsim trace gen` (kept in DIR for later runs), then prints
# the load time and peak memory of trace_load_bench, and the time of `arlsim trace stats`, which
# streams the file. Numbers to read, not a pass/fail test.
# Usage: tests/bench/trace_load_bench.sh [BUILD_DIR] [DIR]   (defaults: build, a temporary directory)
set -euo pipefail
source "$(dirname "$0")/bench_trace.sh"
trace="$dir/step-1024.jsonl"  # the same file as simulate_bench.sh's 200 steps
bench_trace "$trace" 200 "linear 4K..16K"
echo "file size         $(( $(stat -c %s "$trace") / 1048576 )) MiB"
"$build/tests/trace_load_bench" "$trace"
start=$(date +%s%N)
"$build/app/arlsim" trace stats --json "$trace" >/dev/null
echo "trace stats       $(seconds_since "$start") s (streaming, one step in memory)"
