#!/usr/bin/env bash
# `arlsim validate --backend cuda` on a GPU machine: the shipped one-GPU scenario's first step, at
# a tenth of its size (--scale 0.1, so that the test stays short), predicted with the shipped H100
# profile, executed on the GPU (cuBLAS, NCCL, pinned copies), and
# compared; the report is well formed and no checksum failed. Not the timings
# (tests/bench/validate_runtime.sh prints those). Without a GPU, or without the CUDA runtime
# module, it exits 77, which CTest reports as skipped.
# Usage: validate_cuda_test.sh PATH/TO/arlsim
set -u
arlsim="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$arlsim" validate scenarios/gpu-validate.json --backend cuda --profile calib/profiles/h100-sxm.json --steps 1:1 --scale 0.1 \
  --out "$tmp/v" --json >"$tmp/out" 2>"$tmp/err"
status=$?
source "$(dirname "$0")/../lib/checks.sh"
skip_without_gpu "$status" "$tmp/err"
if [ "$status" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-cuda: exit $status"; cat "$tmp/err"; fi
if python3 - "$tmp/out" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL validate-cuda-report"; fi
import json, math, sys
r = json.load(open(sys.argv[1]))
names = {s["stage"] for s in r["stages"]}
assert {"rollout", "old_logprob", "ref_logprob", "train", "weight_sync"} <= names, names
for row in r["stages"] + r["activities"]:
    assert all(math.isfinite(row[k]) for k in ("predicted_s", "measured_s", "error")), row
    assert row["measured_s"] > 0, row
assert r["checksum_failures"] == 0 and r["bytes_verified"] > 0
PY
report
