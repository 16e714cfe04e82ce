#!/usr/bin/env bash
# `arlsim calibrate --backend cuda` on a GPU machine: a quick sweep of GEMMs, streaming kernels,
# launches and host copies writes a profile that checks, with nominal peaks from the device.
# Without a GPU (or without the CUDA backend) it exits 77, which CTest reports as skipped.
# Usage: calibrate_cuda_test.sh PATH/TO/arlsim
set -u
arlsim="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$arlsim" calibrate --backend cuda --quick --ops gemm,memory,launch,host --out "$tmp/gpu.json" >"$tmp/out" 2>"$tmp/err"
status=$?
source "$(dirname "$0")/../lib/checks.sh"
skip_without_gpu "$status" "$tmp/err"
if [ "$status" -eq 0 ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL calibrate-cuda: exit $status"; cat "$tmp/err"; fi
expect calibrate-cuda-check 0 "$arlsim" check "$tmp/gpu.json"
contains calibrate-cuda-measured "$tmp/gpu.json" '"kind": "measured"'
contains calibrate-cuda-bf16 "$tmp/gpu.json" '"bf16"'
contains calibrate-cuda-host "$tmp/gpu.json" '"host_link"'
report
