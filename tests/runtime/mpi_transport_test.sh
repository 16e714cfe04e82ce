#!/usr/bin/env bash
# mpi_transport_test under `mpirun -n 3`. Skipped (77) without Open MPI's mpirun.
# Usage: mpi_transport_test.sh PATH/TO/mpi_transport_test
set -u
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
# Under AddressSanitizer: Open MPI's own allocations (its operation tables, its plugins, unloaded
# before they can be named) are reported as leaks at exit; they are not this program's.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
timeout 120 mpirun -n 3 "$1"
