#!/usr/bin/env bash
# `mpirun -n N arlsim plan ...` gives byte for byte the single process's output (table, --json and
# the plan.json of --out), for 2 and 3 processes, the confirmation runs and the two replays shared
# out; a scenario that cannot be planned stops with status 2 and its message. Skipped (77) without
# Open MPI's mpirun.
# Usage: plan_mpi_test.sh ARLSIM
set -uo pipefail
arlsim=$1
source "$(dirname "$0")/../lib/mpi_checks.sh"
ran() {  # ran NAME COMMAND...: the command must succeed
  local name=$1
  shift
  if "$@"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $name"; fi
}
for scenario in earl-testbed default; do
  ran "$scenario-single-table" "$arlsim" plan "$scenario" >"$tmp/one.txt"
  ran "$scenario-single-json" "$arlsim" plan "$scenario" --json >"$tmp/one.json"
  ran "$scenario-single-out" "$arlsim" plan "$scenario" --out "$tmp/one-plan.json" >/dev/null
  # Confirmation runs to share out: at least one.
  ran "$scenario-confirmations" grep -Eq "[1-9][0-9]* rollout runs to confirm" "$tmp/one.txt"
  for n in 2 3; do
    ran "$scenario-mpirun-$n-table" timeout 300 mpirun -n $n "$arlsim" plan "$scenario" >"$tmp/mpi.txt"
    same "$scenario-table-$n" "$tmp/one.txt" "$tmp/mpi.txt"
    ran "$scenario-mpirun-$n-json" timeout 300 mpirun -n $n "$arlsim" plan "$scenario" --json >"$tmp/mpi.json"
    same "$scenario-json-$n" "$tmp/one.json" "$tmp/mpi.json"
  done
  ran "$scenario-mpirun-out" timeout 300 mpirun -n 2 "$arlsim" plan "$scenario" --out "$tmp/mpi-plan.json" >/dev/null
  same "$scenario-plan-json" "$tmp/one-plan.json" "$tmp/mpi-plan.json"
done
# Bad input: status 2 and the message, as alone.
"$arlsim" plan default --steps x >/dev/null 2>"$tmp/one-err"
timeout 120 mpirun -n 2 "$arlsim" plan default --steps x >/dev/null 2>"$tmp/err"
status=$?
if [ "$status" -eq 2 ] && grep -q -- "--steps expects A:B" "$tmp/err"; then passed=$((passed + 1)); else
  failed=$((failed + 1)); echo "FAIL bad-steps: status $status"; cat "$tmp/err"; fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
