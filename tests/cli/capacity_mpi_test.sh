#!/usr/bin/env bash
# `mpirun -n N arlsim capacity ...` gives byte for byte the single process's output (table, --json,
# and report.html with --out), for 2 and 3 processes. Skipped (77) without Open MPI's mpirun.
# Usage: capacity_mpi_test.sh ARLSIM
set -uo pipefail
arlsim=$1
source "$(dirname "$0")/../lib/mpi_checks.sh"
compare_with_mpirun capacity default --nodes 1,2,4 --deadline 1h --budget 60
same capacity-json "$tmp/one-out/capacity.json" "$tmp/mpi-out/capacity.json"
# Configurations too big to simulate in --max-memory: said the same way by every process count.
"$arlsim" capacity default --nodes 1,2 --max-memory 1MiB --threads 1 >"$tmp/one-memory.txt"
timeout 120 mpirun -n 2 "$arlsim" capacity default --nodes 1,2 --max-memory 1MiB --threads 1 >"$tmp/mpi-memory.txt"
same capacity-memory "$tmp/one-memory.txt" "$tmp/mpi-memory.txt"
grep -q "memory = not run whole" "$tmp/one-memory.txt" && passed=$((passed + 1)) || { failed=$((failed + 1)); echo "FAIL capacity-memory-said"; }
# Bad input stops every process with status 2.
timeout 120 mpirun -n 2 "$arlsim" capacity default --steps 0 >/dev/null 2>"$tmp/err"
status=$?
if [ "$status" -eq 2 ] && grep -q -- "--steps must be 1 to 100000000" "$tmp/err"; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL bad-input: status $status"; cat "$tmp/err"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
