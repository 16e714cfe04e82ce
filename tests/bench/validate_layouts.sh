#!/usr/bin/env bash
# The CPU validation loop over the layouts the runtime executes beyond the shipped scenario's
# tp 1 x dp 2: pipeline stages (tp 1 x pp 2, 1F1B, and interleaved with vpp 2), Ulysses context parallelism (tp 1 x cp 2), a
# mixture-of-experts variant of the model (8 experts, top-2, as Qwen3-MoE configures them) with
# and without expert parallelism (ep 2 over the two data-parallel ranks) and under ZeRO-3 (its
# experts gathered over their data-parallel group), a small DeepSeek-V3-shaped model (multi-head
# latent attention, MoE layers after a dense one), hybrid sharding (ZeRO-1 and ZeRO-3 in shard
# groups of one rank), a layout switch before step 2 (engines of tp 2, training tp 2 x dp 1, a
# switch overhead of 0.2 s) and a partial rollout (half the trajectories end a step's rollout).
# Calibrates this machine once (calibrate --backend cpu --quick), then predicts and executes each
# variant of scenarios/cpu-validate.json with that profile and prints each stage's signed error
# ((predicted - measured) / measured) and the median |stage error|. Numbers to read, not a
# pass/fail test.
# Usage: tests/bench/validate_layouts.sh [BUILD_DIR]
set -euo pipefail
build="${1:-build}"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo "machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) hardware threads"
"$build/app/arlsim" calibrate --backend cpu --quick --ranks 2 --out "$tmp/profile.json" >/dev/null 2>&1
no_overlap='/policy/train/overlap={"param_gather": false, "grad_reduce": false}'
run() {  # run LABEL OVERRIDES...
  local label=$1
  shift
  "$build/app/arlsim" validate scenarios/cpu-validate.json --backend cpu --profile "$tmp/profile.json" "$@" --json \
    >"$tmp/out.json" 2>/dev/null
  python3 - "$tmp/out.json" "$label" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
cells = "  ".join(f"{s['stage']} {100 * s['error']:+.1f}%" for s in r["stages"] if s["stage"] != "dispatch")
print(f"{sys.argv[2]:<28} {cells}  | median {100 * r['median_abs_stage_error']:.1f}%, "
      f"{r['checksum_failures']} checksum failures")
PY
}
run "tp 1 x dp 2 (as shipped)"
run "tp 1 x pp 2" --set /policy/train/pp=2 --set /policy/train/dp=1
run "tp 1 x pp 2 x vpp 2" --set /policy/train/pp=2 --set /policy/train/vpp=2 --set /policy/train/dp=1 \
  --set '/policy/train/overlap={"p2p": false}'
run "tp 1 x cp 2 (Ulysses)" --set /policy/train/cp=2 --set /policy/train/dp=1 --set '/policy/train/cp_kind="ulysses"'
moe='/model="tests/runtime/models/tiny-qwen3-moe.json"'
run "MoE, 8 experts top-2" --set "$moe"
run "MoE, ep 2" --set "$moe" --set /policy/train/ep=2
run "MoE, ZeRO-3" --set "$moe" --set /policy/train/zero=3 --set "$no_overlap"
mla='/model="tests/runtime/models/tiny-deepseek-v3.json"'
run "MLA (DeepSeek-V3-shaped)" --set "$mla"
run "ZeRO-1, shard groups of 1" --set /policy/train/shard_group=1
run "ZeRO-3, shard groups of 1" --set /policy/train/zero=3 --set /policy/train/shard_group=1 --set "$no_overlap"
run "layout switch at step 2" --set /policy/switch_overhead=0.2s \
  --set '/policy/schedule=[{"steps": "2:", "rollout": {"tp": 2}, "train": {"tp": 2, "dp": 1}}]'
run "partial rollout 0.5" --set '/policy/sync={"mode": "sync", "partial_rollout": 0.5}'
