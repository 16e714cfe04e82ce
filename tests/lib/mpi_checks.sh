# Helpers for the tests that run a command under Open MPI's mpirun and compare it with one
# process: source it after setting $arlsim. Skips the test (exit 77) without mpirun; sets $tmp
# (removed on exit), $passed, $failed and same().
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Under AddressSanitizer: Open MPI keeps its own allocations to the end, which LeakSanitizer reports.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
same() {  # same NAME FILE1 FILE2: byte-identical files
  if cmp -s "$2" "$3"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $1"; diff "$2" "$3" | head -20; fi
}

# compare_with_mpirun ARGS...: "$arlsim" ARGS alone and under mpirun -n 2 and 3 give the same
# table and --json; with --out, the same report.html (the folders stay as $tmp/one-out and
# $tmp/mpi-out for the caller's own files).
compare_with_mpirun() {
  "$arlsim" "$@" >"$tmp/one.txt" || echo "FAIL single table"
  "$arlsim" "$@" --json >"$tmp/one.json" || echo "FAIL single json"
  "$arlsim" "$@" --out "$tmp/one-out" >/dev/null || echo "FAIL single out"
  local n
  for n in 2 3; do
    timeout 300 mpirun -n $n "$arlsim" "$@" >"$tmp/mpi$n.txt" || echo "FAIL mpirun -n $n table"
    same "table-$n" "$tmp/one.txt" "$tmp/mpi$n.txt"
    timeout 300 mpirun -n $n "$arlsim" "$@" --json >"$tmp/mpi$n.json" || echo "FAIL mpirun -n $n json"
    same "json-$n" "$tmp/one.json" "$tmp/mpi$n.json"
  done
  timeout 300 mpirun -n 2 "$arlsim" "$@" --out "$tmp/mpi-out" >/dev/null || echo "FAIL mpirun out"
  same report "$tmp/one-out/report.html" "$tmp/mpi-out/report.html"
}
