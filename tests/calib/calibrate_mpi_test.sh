#!/usr/bin/env bash
# `mpirun -n N arlsim calibrate`: the processes measure collectives among themselves across their
# machines (inter-node points, the hop between nodes, the NIC's efficiency from --nic), rank 0 its
# device, and rank 0 writes one profile that `arlsim check` accepts. Two processes on this machine
# count as two machines by their ARLSIM_NODE_NAME (MPI's shared memory carries them, so the
# figures are not a network's: the test checks the plumbing and the profile, not the rates).
# Skipped (77) without Open MPI's mpirun.
# Usage: calibrate_mpi_test.sh ARLSIM
set -uo pipefail
arlsim=$1
source "$(dirname "$0")/../lib/mpi_checks.sh"
check_status() {  # check_status NAME WANT GOT
  if [ "$3" -eq "$2" ]; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $1: status $3, expected $2"; cat "$tmp/err"; fi
}
contains() {  # contains NAME FILE TEXT
  if grep -qF -- "$3" "$2"; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL $1: '$3' not in $2"; cat "$2"; fi
}
args=(calibrate --backend cpu --quick --ops gemm,memory,collective,p2p)
# Both processes on one machine: nothing between machines to measure.
timeout 120 mpirun -n 2 "$arlsim" "${args[@]}" --out "$tmp/one-machine.json" >/dev/null 2>"$tmp/err"
check_status one-machine 2 $?
contains one-machine-why "$tmp/err" "all 2 processes run on one machine: start them on several"
# Machines with different numbers of processes.
timeout 120 mpirun -n 2 -x ARLSIM_NODE_NAME=a "$arlsim" "${args[@]}" --out "$tmp/uneven.json" : \
  -n 1 -x ARLSIM_NODE_NAME=b "$arlsim" "${args[@]}" --out "$tmp/uneven.json" >/dev/null 2>"$tmp/err"
check_status uneven 2 $?
contains uneven-why "$tmp/err" "the machines run different numbers of processes (a: 2, b: 1)"
# Nothing to measure between machines.
timeout 120 mpirun -n 1 -x ARLSIM_NODE_NAME=a "$arlsim" calibrate --backend cpu --quick --ops gemm,memory --out "$tmp/x.json" : \
  -n 1 -x ARLSIM_NODE_NAME=b "$arlsim" calibrate --backend cpu --quick --ops gemm,memory --out "$tmp/x.json" >/dev/null 2>"$tmp/err"
check_status no-collectives 2 $?
contains no-collectives-why "$tmp/err" "--ops has neither collective nor p2p"
# The CUDA backend: each process's GPU in one NCCL communicator; without a GPU (or without the
# backend in the build) rank 0 stops every process with status 2, saying why. (Not where a GPU is
# visible: there it would measure.)
if ! { command -v nvidia-smi >/dev/null && nvidia-smi -L 2>/dev/null | grep -q GPU; }; then
  timeout 120 mpirun -n 1 -x ARLSIM_NODE_NAME=a "$arlsim" calibrate --backend cuda --quick --out "$tmp/cuda.json" : \
    -n 1 -x ARLSIM_NODE_NAME=b "$arlsim" calibrate --backend cuda --quick --out "$tmp/cuda.json" >/dev/null 2>"$tmp/err"
  check_status cuda-without-gpu 2 $?
  contains cuda-without-gpu-why "$tmp/err" "arlsim calibrate: --backend cuda"
fi
# --nic alone: its efficiency needs machines to measure between.
"$arlsim" "${args[@]}" --nic "10 Gbps" --out "$tmp/x.json" >/dev/null 2>"$tmp/err"
check_status nic-alone 2 $?
contains nic-alone-why "$tmp/err" "--nic: the NIC's efficiency comes from collectives across machines"
"$arlsim" "${args[@]}" --nic "fast" --out "$tmp/x.json" >/dev/null 2>"$tmp/err"
check_status nic-bad 2 $?
contains nic-bad-why "$tmp/err" "--nic:"
# Two machines of one process each: one profile, written by rank 0, with the inter-node points.
timeout 300 mpirun -n 1 -x ARLSIM_NODE_NAME=a "$arlsim" "${args[@]}" --nic "10 Gbps" --out "$tmp/two.json" : \
  -n 1 -x ARLSIM_NODE_NAME=b "$arlsim" "${args[@]}" --nic "10 Gbps" --out "$tmp/two.json" >"$tmp/out" 2>"$tmp/err"
check_status two-machines 0 $?
contains two-machines-said "$tmp/err" "collectives among 2 processes on 2 machines through MPI collectives"
"$arlsim" check "$tmp/two.json" >/dev/null 2>"$tmp/err"
check_status two-machines-checks 0 $?
if python3 - "$tmp/two.json" <<'PY'; then passed=$((passed + 1)); else failed=$((failed + 1)); echo "FAIL two-machines-profile"; fi
import json, sys
p = json.load(open(sys.argv[1]))
inter = [c for c in p["collectives"] if c["scope"] == "inter_node"]
assert sorted(c["op"] for c in inter) == sorted(["all_reduce", "all_gather", "reduce_scatter", "all_to_all", "broadcast", "send_recv"]), inter
assert all(c["ranks"] == 2 and c["nodes"] == 2 for c in inter), inter
assert p["nic"] == "1.25 GB/s" and 0 < p["efficiency"]["nic"] <= 1, (p.get("nic"), p["efficiency"])
table = p["calibration"]["tables"]["collective_inter_node"]
assert table["fabric"].startswith("MPI collectives") and len(table["rows"]) >= 10 * 2, table
assert all(r["nodes"] == 2 and r["busbw_gbps"] > 0 for r in table["rows"])
assert "inter-node collectives: 2 processes on 2 machines" in p["provenance"]["notes"]
PY
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
