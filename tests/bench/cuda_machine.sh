#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: the whole loop of calibration and validation in one run.
#   1. calibrate the first GPU (calibrate --backend cuda; --quick when CUDA_MACHINE_QUICK=1) into
#      OUTDIR/measured.json;
#   2. compare it, table by table, with a shipped datasheet profile (calibrate compare);
#   3. validate the shipped one-GPU scenario (scenarios/gpu-validate.json, step 1, at --scale
#      CUDA_MACHINE_SCALE, default 1: the whole step, about 35 s on an H200; 0.25 runs 7 of its 28
#      layers, 2 of 8 prompts, a quarter of every sequence) with the measured profile, then with
#      the shipped one (with CUDA_MACHINE_MORE=1 also gpu-validate-4b.json and gpu-validate-moe.json
#      with the measured profile): predicted and measured per stage, per activity kind and per kind of kernel
#      (every kernel shape in validate*/kernels.csv), checksums of every buffer. A one-GPU calibration measures no NIC, so the measured profile is
#      given the NIC rate CUDA_MACHINE_NIC (default 400 Gbps, one ConnectX-7 port per GPU).
# Writes everything under OUTDIR (gpu.txt, measured.json, compare.txt, validate.json,
# validate-shipped.json, their folders, *.err) and prints a short table last. Numbers to read, not a pass/fail test; each step has a time
# limit (seconds, CUDA_MACHINE_LIMIT, default 240) so that a hang cannot hold the machine.
# Usage: tests/bench/cuda_machine.sh BUILD_DIR OUTDIR [SHIPPED_PROFILE]
set -u
build="${1:?usage: cuda_machine.sh BUILD_DIR OUTDIR [SHIPPED_PROFILE]}"
out="${2:?usage: cuda_machine.sh BUILD_DIR OUTDIR [SHIPPED_PROFILE]}"
shipped="${3:-calib/profiles/h200-sxm.json}"
limit="${CUDA_MACHINE_LIMIT:-240}"
arlsim="$build/app/arlsim"
mkdir -p "$out"

if command -v nvidia-smi >/dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,clocks.mem,power.limit,temperature.gpu \
    --format=csv >"$out/gpu.txt" 2>&1
  cat "$out/gpu.txt"
fi

step() {  # step NAME COMMAND...: runs it under the time limit, stdout and stderr to OUTDIR/NAME.*
  local name="$1" start status
  shift
  start=$(date +%s%N)
  timeout "$limit" "$@" >"$out/$name.out" 2>"$out/$name.err"
  status=$?
  printf '%-10s exit %3d in %6d ms\n' "$name" "$status" "$((($(date +%s%N) - start) / 1000000))" | tee -a "$out/steps.txt"
  if [ "$status" -ne 0 ]; then tail -5 "$out/$name.err"; fi
  return "$status"
}

scale="${CUDA_MACHINE_SCALE:-1}"
quick=()
[ "${CUDA_MACHINE_QUICK:-0}" = 1 ] && quick=(--quick)
step calibrate "$arlsim" calibrate --backend cuda "${quick[@]}" --out "$out/measured.json"
if [ -f "$out/measured.json" ]; then
  step check "$arlsim" check "$out/measured.json"
  step compare "$arlsim" calibrate compare "$shipped" "$out/measured.json" && cp "$out/compare.out" "$out/compare.txt"
  step validate "$arlsim" validate scenarios/gpu-validate.json --backend cuda --profile "$out/measured.json" \
    --set "/cluster/network/nic_bandwidth=\"${CUDA_MACHINE_NIC:-400 Gbps}\"" --steps 1:1 --scale "$scale" \
    --out "$out/validate" --json && cp "$out/validate.out" "$out/validate.json"
  # The other shapes, when asked for (CUDA_MACHINE_MORE=1): scenarios/gpu-validate-4b.json and
  # gpu-validate-moe.json, with the same profile, as validate-4b and validate-moe.
  if [ "${CUDA_MACHINE_MORE:-0}" = 1 ]; then
    for shape in 4b moe; do
      step "validate-$shape" "$arlsim" validate "scenarios/gpu-validate-$shape.json" --backend cuda \
        --profile "$out/measured.json" --set "/cluster/network/nic_bandwidth=\"${CUDA_MACHINE_NIC:-400 Gbps}\"" \
        --steps 1:1 --scale "$scale" --out "$out/validate-$shape" --json &&
        cp "$out/validate-$shape.out" "$out/validate-$shape.json"
    done
  fi
fi
step validate-shipped "$arlsim" validate scenarios/gpu-validate.json --backend cuda --profile "$shipped" --steps 1:1 --scale "$scale" \
  --out "$out/validate-shipped" --json && cp "$out/validate-shipped.out" "$out/validate-shipped.json"

for v in validate validate-4b validate-moe validate-shipped; do
  [ -f "$out/$v.json" ] || continue
  python3 "$(dirname "$0")/validation_report.py" "$out/$v.json" "$v"
done
