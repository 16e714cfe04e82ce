#!/usr/bin/env bash
# Peak memory of `arlsim simulate --out` against the number of steps: the default scenario with
# its generated trace run step by step (every step simulated), without an output folder, and with
# the timeline at each detail level. The timeline is written while the run goes, so the columns
# with --out should stay within a few MiB of the run's own (which grows with the trace it holds).
# Numbers to read, not a pass/fail test.
# Usage: tests/bench/timeline_memory.sh [BUILD_DIR] [STEPS...]   (default: 100 300 1000)
set -euo pipefail
build="${1:-build}"
shift || true
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(100 300 1000)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
peak() {  # peak MiB of one run: peak STEPS [ARGS...]
  local n=$1
  shift
  /usr/bin/time -f "%M" -o "$tmp/rss" "$build/app/arlsim" simulate default --set /trace/generate/steps="$n" \
    --set /trace/generate/every=1 --set /steps="$n" "$@" >/dev/null
  awk '{ printf "%.0f", $1 / 1024 }' "$tmp/rss"
}
printf '%6s  %14s  %14s  %14s  %14s  %12s\n' steps "no --out MiB" "stages MiB" "engines MiB" "full MiB" "full file MB"
for n in "${steps[@]}"; do
  none=$(peak "$n")
  stages=$(peak "$n" --out "$tmp/s" --timeline-detail stages)
  engines=$(peak "$n" --out "$tmp/e" --timeline-detail engines)
  full=$(peak "$n" --out "$tmp/f" --timeline-detail full)
  size=$(stat -c %s "$tmp/f/timeline.json")
  printf '%6s  %14s  %14s  %14s  %14s  %12.0f\n' "$n" "$none" "$stages" "$engines" "$full" "$(echo "$size / 1000000" | bc -l)"
  rm -rf "$tmp/s" "$tmp/e" "$tmp/f"
done
