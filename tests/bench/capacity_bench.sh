#!/usr/bin/env bash
# Capacity planning at the design's scale: 3 GPU types x 8 cluster sizes (1 to 128 nodes of 8) x
# colocated and disaggregated placements x every layout, over a 200-step trace of EARL's testbed
# (Qwen2.5-72B, contexts to 32K). Target: under 30 s on 2 cores. Prints the wall time and the
# configurations that can run; then, where Open MPI's mpirun is installed, the same sweep over 2
# processes of 1 thread: its time, its speed-up over one process of 1 thread, and whether its
# output is byte-identical to the single process's.
# Usage: tests/bench/capacity_bench.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(capacity earl-testbed --gpus h100-sxm,h200-sxm,a100-sxm-80g --nodes 1..128
      --set /trace/generate/steps=200 --set /trace/generate/every=1 --set /steps=200 --json)
timed() {  # timed OUT COMMAND...: wall seconds
  local out=$1
  shift
  local start end
  start=$(date +%s.%N)
  "$@" >"$out"
  end=$(date +%s.%N)
  echo "$end - $start" | bc -l
}
wall=$(timed "$tmp/two-threads.json" "$build/app/arlsim" "${args[@]}" --threads 2)
python3 - "$tmp/two-threads.json" "$wall" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"capacity: {len(r)} configurations ({sum(x['feasible'] for x in r)} can run, "
      f"{sum(x['pareto'] for x in r)} on the Pareto frontier, {sum(x['confirmed'] for x in r)} confirmed by the "
      f"event simulator) over 200 steps in {float(sys.argv[2]):.1f} s (target 30 s, 2 threads)")
PY
if command -v mpirun >/dev/null; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  one=$(timed "$tmp/one-thread.json" "$build/app/arlsim" "${args[@]}" --threads 1)
  mpi=$(timed "$tmp/mpi.json" mpirun -n 2 --oversubscribe "$build/app/arlsim" "${args[@]}" --threads 1)
  same=no
  cmp -s "$tmp/mpi.json" "$tmp/one-thread.json" && cmp -s "$tmp/mpi.json" "$tmp/two-threads.json" && same=yes
  printf 'mpirun -n 2: %.1f s against %.1f s for one process of 1 thread (speed-up %.2fx); output byte-identical: %s\n' \
    "$mpi" "$one" "$(echo "$one / $mpi" | bc -l)" "$same"
fi
