#!/usr/bin/env bash
# The CPU validation loop on the shipped scenario, as its targets ask: calibrate this machine
# (calibrate --backend cpu --quick, in the same run), predict scenarios/cpu-validate.json with the
# profile, execute it on CPU threads, and print the per-stage and per-activity-kind errors next to
# the targets (median |stage error| <= 10%, median |activity-kind error| <= 15%, no checksum
# failure). Runs it `runs` times (default 3) to show how much the figures move. Numbers to read,
# not a pass/fail test.
# Usage: tests/bench/validate_runtime.sh [BUILD_DIR] [RUNS]
set -euo pipefail
build="${1:-build}"
runs="${2:-3}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) hardware threads"
for i in $(seq 1 "$runs"); do
  "$build/app/arlsim" validate scenarios/cpu-validate.json --backend cpu --out "$tmp/run$i" --json >"$tmp/run$i.json" 2>/dev/null
  python3 "$(dirname "$0")/validation_report.py" "$tmp/run$i.json" "run $i"
done
