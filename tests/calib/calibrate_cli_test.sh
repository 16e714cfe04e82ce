#!/usr/bin/env bash
# `arlsim calibrate` end to end: the CPU backend's quick sweep writes a profile that `check`
# accepts and `estimate` uses; `compare` reads two profiles; bad options exit 2 with the reason.
# Usage: calibrate_cli_test.sh PATH/TO/arlsim
set -u
arlsim="$1"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
source "$(dirname "$0")/../lib/checks.sh"

expect calibrate-cpu-quick 0 "$arlsim" calibrate --backend cpu --quick --out "$tmp/cpu.json"
contains calibrate-wrote "$tmp/out" "wrote $tmp/cpu.json"
contains calibrate-points "$tmp/out" "156 GEMM points"
contains calibrate-nothing-excluded "$tmp/out" "0 excluded"
expect calibrate-check 0 "$arlsim" check "$tmp/cpu.json"
contains calibrate-check-measured "$tmp/out" "measured"
contains calibrate-check-fp32 "$tmp/out" "fp32"
contains calibrate-provenance "$tmp/cpu.json" '"kind": "measured"'
contains calibrate-command "$tmp/cpu.json" "arlsim calibrate --backend cpu --quick --out"
contains calibrate-jitter "$tmp/cpu.json" '"median_jitter"'
contains calibrate-decode-table "$tmp/cpu.json" '"decode_attention": ['
contains calibrate-decode-fits "$tmp/cpu.json" '"worst_residual"'

# The measured profile predicts this machine: a small fp32 training iteration on one "GPU".
cat >"$tmp/stage.json" <<JSON
{
  "format": "arlsim-stage/1",
  "kind": "train",
  "model": "qwen2.5-7b",
  "gpu": "$tmp/cpu.json",
  "dtype": "fp32",
  "gpus_per_node": 1,
  "layout": { "tp": 1, "dp": 1 },
  "micro_batch": 1,
  "global_batch": 1,
  "seq_len": 256,
  "recompute": "none"
}
JSON
expect calibrate-estimate 0 "$arlsim" estimate "$tmp/stage.json" --json
contains calibrate-estimate-iteration "$tmp/out" '"iteration_s"'
contains calibrate-estimate-grid "$tmp/out" '"gemms_in_measured_grid"'

expect calibrate-compare 0 "$arlsim" calibrate compare h100-sxm "$tmp/cpu.json"
contains calibrate-compare-header "$tmp/out" "B / A"
contains calibrate-compare-gemm "$tmp/out" "GEMM"
contains calibrate-compare-collectives "$tmp/out" "all_reduce intra_node ring x2"
contains calibrate-compare-decode "$tmp/out" "decode attention, achieved"
contains calibrate-compare-decode-batch "$tmp/out" "batch 16"
contains calibrate-compare-memory "$tmp/out" "memory-bound kernels by size, achieved"
contains calibrate-compare-memory-size "$tmp/out" "  1 MiB"
contains calibrate-compare-memory-kind "$tmp/out" "memory-bound kernels by kind, streaming"
contains calibrate-compare-memory-norm "$tmp/out" "  norm"

# A profile with an fp8 grid of its own: compare prints that dtype's GEMMs too, priced with it.
sed 's/"efficiency": {/"efficiency": { "gemm_by_dtype": { "fp8": [ {"m": 2048, "n": 2048, "k": 13312, "efficiency": 0.6} ] },/' \
  "$(dirname "$0")/../../calib/profiles/h100-sxm.json" >"$tmp/h100-fp8.json"
expect calibrate-fp8-check 0 "$arlsim" check "$tmp/h100-fp8.json"
expect calibrate-compare-fp8 0 "$arlsim" calibrate compare h100-sxm "$tmp/h100-fp8.json"
contains calibrate-compare-fp8-section "$tmp/out" "GEMM fp8, achieved"
contains calibrate-compare-fp8-ratio "$tmp/out" "0.760"

# A profile without attention compares, saying what it cannot.
expect calibrate-partial 0 "$arlsim" calibrate --backend cpu --quick --ops gemm,memory --out "$tmp/gm.json"
expect calibrate-compare-partial 0 "$arlsim" calibrate compare h100-sxm "$tmp/gm.json"
contains calibrate-compare-partial-why "$tmp/out" "GEMM fp32: not compared: gm lacks attention"

# Bad options: exit 2, the reason, no file.
expect calibrate-bad-op 2 "$arlsim" calibrate --backend cpu --ops gemm,tensor-cores --out "$tmp/x.json"
contains calibrate-bad-op-list "$tmp/err" 'unknown measurement "tensor-cores"; valid: gemm, attention, memory, launch, collective, p2p, host'
expect calibrate-no-gemm 2 "$arlsim" calibrate --backend cpu --ops memory,launch --out "$tmp/x.json"
contains calibrate-no-gemm-why "$tmp/err" "--ops must include gemm"
expect calibrate-bad-backend 2 "$arlsim" calibrate --backend tpu --out "$tmp/x.json"
contains calibrate-bad-backend-why "$tmp/err" 'unknown backend "tpu"'
expect calibrate-no-out 2 "$arlsim" calibrate --backend cpu
expect calibrate-unwritable 2 "$arlsim" calibrate --backend cpu --quick --ops gemm,memory --out "$tmp/no/such/dir/p.json"
contains calibrate-unwritable-why "$tmp/err" "cannot write"
expect calibrate-out-folder 2 "$arlsim" calibrate --backend cpu --quick --ops gemm,memory --out "$tmp/"
contains calibrate-out-folder-why "$tmp/err" "it is a folder; give a file name"
if [ -e "$tmp/x.json" ] || [ -e "$tmp/no/such/dir/p.json" ]; then
  failed=$((failed + 1)); echo "FAIL calibrate-no-file: a refused run left a file"
else
  passed=$((passed + 1))
fi
expect calibrate-bad-ranks 2 "$arlsim" calibrate --backend cpu --ranks 1 --out "$tmp/x.json"
contains calibrate-bad-ranks-why "$tmp/err" "--ranks must be between 2 and"
# Four ranks on this machine's cores: collectives of 2 and 4 threads, the oversubscription noted.
expect calibrate-ranks 0 "$arlsim" calibrate --backend cpu --quick --ops gemm,memory,collective --ranks 4 --out "$tmp/r4.json"
contains calibrate-ranks-4 "$tmp/r4.json" '"ranks": 4'
contains calibrate-ranks-busbw "$tmp/r4.json" '"busbw_gbps"'
expect calibrate-compare-missing 2 "$arlsim" calibrate compare h100-sxm "$tmp/none.json"
expect calibrate-compare-usage 2 "$arlsim" calibrate compare h100-sxm

report
