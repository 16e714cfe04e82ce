#!/usr/bin/env bash
# mpi_transport_test under `mpirun -n 3`. Skipped (77) without Open MPI's mpirun.
# Usage: mpi_transport_test.sh PATH/TO/mpi_transport_test
set -u
command -v mpirun >/dev/null || { echo "no mpirun: skipped"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
timeout 120 mpirun -n 3 "$1"
