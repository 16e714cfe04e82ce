# Helpers for the end-to-end shell tests: source it after setting $tmp (a scratch folder).
# Each check adds to $passed or $failed; finish with `report`.
passed=0
failed=0

expect() {  # expect NAME EXPECTED_STATUS COMMAND...: runs COMMAND, output in $tmp/out and $tmp/err
  local name="$1" want="$2"
  shift 2
  "$@" >"$tmp/out" 2>"$tmp/err"
  local got=$?
  if [ "$got" -eq "$want" ]; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name: exit $got, expected $want"
    sed 's/^/  out: /' "$tmp/out" | head -5
    sed 's/^/  err: /' "$tmp/err" | head -5
  fi
}

contains() {  # contains NAME FILE TEXT
  if grep -qF -- "$3" "$2"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $1: '$3' not in $2:"
    head -5 "$2" | sed 's/^/  /'
  fi
}

same() {  # same NAME FILE1 FILE2: byte-identical files
  if cmp -s "$2" "$3"; then
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $1: $2 and $3 differ"
    diff "$2" "$3" | head -10
  fi
}

report() {  # prints the closing line; returns non-zero when anything failed
  echo "$passed passed, $failed failed"
  [ "$failed" -eq 0 ]
}

skip_without_gpu() {  # skip_without_gpu STATUS ERRFILE: exit 77 (CTest's skip) when a CUDA command found no GPU
  if [ "$1" -eq 2 ] && grep -qE "no CUDA device|not part of this build|without the CUDA toolkit|not installed beside" "$2"; then
    echo "skipped: $(cat "$2")"
    exit 77
  fi
}
