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
  python3 - "$tmp/run$i.json" "$i" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"\nrun {sys.argv[2]}: predicted {r['predicted_total_s']:.3f} s, measured {r['measured_total_s']:.3f} s")
for key, rows in (("stage", r["stages"]), ("kind", r["activities"])):
    for row in rows:
        print(f"  {row[key]:<12} predicted {row['predicted_s']:9.4f} s  measured {row['measured_s']:9.4f} s  {100 * row['error']:+8.1f}%")
print(f"  median |stage error|    {100 * r['median_abs_stage_error']:5.1f}%  (target <= 10%)   worst {100 * r['worst_abs_stage_error']:.1f}%")
print(f"  median |activity error| {100 * r['median_abs_activity_error']:5.1f}%  (target <= 15%)   worst {100 * r['worst_abs_activity_error']:.1f}%")
print(f"  {r['bytes_verified'] / 2**20:.1f} MiB moved with checksums, {r['checksum_failures']} checksum failures (target 0)")
k = r["kernels_measured_s"]
print("  measured kernel time: " + ", ".join(f"{n} {v:.3f} s" for n, v in k.items()))
PY
done
