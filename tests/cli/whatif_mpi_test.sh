#!/usr/bin/env bash
# `mpirun -n N arlsim whatif ...` gives byte for byte the single process's output (table, --json,
# report.html and variants.json with --out, the analytic runs), for 2 and 3 processes; a variant
# that cannot run stops every process with status 2 and its message. Skipped (77) without Open
# MPI's mpirun.
# Usage: whatif_mpi_test.sh ARLSIM
set -uo pipefail
arlsim=$1
source "$(dirname "$0")/../lib/mpi_checks.sh"
args=(whatif default --vary /policy/rollout/tp=1,2,4 --vary '/policy/routing="sticky","least-loaded"' --set /steps=2)
compare_with_mpirun "${args[@]}"
"$arlsim" "${args[@]}" --analytic >"$tmp/one-analytic.txt" || echo "FAIL single analytic"
same variants-json "$tmp/one-out/variants.json" "$tmp/mpi-out/variants.json"
timeout 300 mpirun -n 2 "$arlsim" "${args[@]}" --analytic >"$tmp/mpi-analytic.txt" || echo "FAIL mpirun analytic"
same analytic "$tmp/one-analytic.txt" "$tmp/mpi-analytic.txt"
# A variant that cannot run: status 2, its message, from every process count.
"$arlsim" whatif default --vary /policy/rollout/tp=1,3 --set /steps=2 >/dev/null 2>"$tmp/one-err"
timeout 120 mpirun -n 2 "$arlsim" whatif default --vary /policy/rollout/tp=1,3 --set /steps=2 >/dev/null 2>"$tmp/err"
status=$?
if [ "$status" -eq 2 ] && grep -q "variant /policy/rollout/tp=3:" "$tmp/err"; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL bad-variant: status $status"; cat "$tmp/err"; fi
head -n "$(wc -l <"$tmp/one-err")" "$tmp/err" >"$tmp/err-head"  # mpirun adds its own notes after
same bad-variant-message "$tmp/one-err" "$tmp/err-head"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
