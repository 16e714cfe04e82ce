#!/usr/bin/env bash
# Golden outputs: each shipped scenario's summary.json must stay byte-identical. After an intended
# change to the simulator, regenerate them and review the difference:
#   tests/golden/golden_test.sh build/app/arlsim --update && git diff tests/golden
set -u
arlsim="$1"
update="${2:-}"
dir="$(dirname "$0")"
status=0
passed=0
failed=0
for scenario in default earl-testbed disaggregated-async dapo-math-32b swe-agent; do
  expected="$dir/$scenario.summary.json"
  actual=$(mktemp)
  if ! "$arlsim" simulate "$scenario" --json >"$actual"; then
    echo "FAIL $scenario: arlsim simulate exited with an error"
    failed=$((failed + 1))
    status=1
  elif [ "$update" = "--update" ]; then
    cp "$actual" "$expected"
    passed=$((passed + 1))
  elif cmp -s "$actual" "$expected"; then
    passed=$((passed + 1))
  else
    echo "FAIL $scenario: summary.json differs from $expected"
    diff "$expected" "$actual" | head -20
    failed=$((failed + 1))
    status=1
  fi
  rm -f "$actual"
done
echo "$passed passed, $failed failed"
exit $status
