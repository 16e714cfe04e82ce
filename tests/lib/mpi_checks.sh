# Helpers for the tests that run a command under Open MPI's mpirun and compare it with one
# process: source it after setting $arlsim. Skips the test (exit 77) without mpirun; sets $tmp
# (removed on exit), $passed, $failed and same().
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
same() {  # same NAME FILE1 FILE2: byte-identical files
  if cmp -s "$2" "$3"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $1"; diff "$2" "$3" | head -20; fi
}
