#!/usr/bin/env bash
# How far the planner's analytic composition of a run is from the event simulator's, on every
# shipped scenario: with the scenario's own layouts and with the layouts `arlsim plan` adopts
# (target: within 10%). Prints a table; numbers to read, not a pass/fail test.
# Usage: tests/bench/agreement.sh [BUILD_DIR]
set -euo pipefail
build=${1:-build}
printf '%-22s %14s %14s %8s %14s %14s %8s\n' scenario "configured an." "simulated" diff "adopted an." "simulated" diff
for scenario in default earl-testbed disaggregated-async dapo-math-32b swe-agent; do
  "$build/app/arlsim" plan "$scenario" --json | python3 -c '
import json, sys
name = sys.argv[1]
a = json.load(sys.stdin)["agreement"]
c = a["configured"]
def diff(x, y):
    return "-" if x is None or not y else "%+.1f%%" % (100 * (x / y - 1))
def num(x):
    return "-" if x is None else "%.1f" % x
print("%-22s %14s %14s %8s %14s %14s %8s" % (name, num(c["analytic_s"]), num(c["simulated_s"]), diff(c["analytic_s"], c["simulated_s"]),
                                            num(a["analytic_s"]), num(a["simulated_s"]), diff(a["analytic_s"], a["simulated_s"])))
' "$scenario"
done
