#!/usr/bin/env bash
# Capacity planning at the design's scale: 3 GPU types x 8 cluster sizes (1 to 128 nodes of 8) x
# colocated and disaggregated placements x every layout, over a 200-step trace of EARL's testbed
# (Qwen2.5-72B, contexts to 32K). Target: under 30 s on 2 cores. Prints the wall time and the
# configurations that can run.
# Usage: tests/bench/capacity_bench.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
start=$(date +%s.%N)
"$build/app/arlsim" capacity earl-testbed --gpus h100-sxm,h200-sxm,a100-sxm-80g --nodes 1..128 \
  --set /trace/generate/steps=200 --set /trace/generate/every=1 --set /steps=200 --threads 2 --json >"$out"
end=$(date +%s.%N)
python3 - "$out" "$start" "$end" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
wall = float(sys.argv[3]) - float(sys.argv[2])
print(f"capacity: {len(r)} configurations ({sum(x['feasible'] for x in r)} can run, "
      f"{sum(x['pareto'] for x in r)} on the Pareto frontier) over 200 steps in {wall:.1f} s (target 30 s, 2 threads)")
PY
