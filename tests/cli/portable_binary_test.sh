#!/usr/bin/env bash
# The simulator needs no AVX-512 where the build machine has it: only the CPU backend's kernels are
# built for the build machine's vector units (-march=native: calib/cpu, runtime/cpu). A standard-
# library template instantiated in one of those files can become the one copy the linker keeps for
# the whole program (std::mt19937's generator once did, so the trace generator needed AVX-512).
# Fails when a standard-library function of the binary uses an AVX-512 register or instruction,
# unless it is instantiated for those files' own types (Eigen's, the CPU device's and backend's,
# a file's anonymous namespace), which no other code calls. It checks the standard library's
# instantiations and AVX-512 alone: what a build machine with AVX2 alone leaks goes unseen.
# Skipped (77) where objdump is missing or the machine is not x86-64.
# Usage: portable_binary_test.sh ARLSIM
set -euo pipefail
bin="${1:?usage: portable_binary_test.sh ARLSIM}"
[ "$(uname -m)" = x86_64 ] || { echo "not x86-64: skipped"; exit 77; }
command -v objdump >/dev/null || { echo "objdump not found: skipped"; exit 77; }
found=$(objdump -d --no-show-raw-insn "$bin" | awk '
  /^[0-9a-f]+ <.*>:$/ {
    fn = $2
    std = (fn ~ /^<_Z(N|NK)?St/ || fn ~ /^<_ZSt/) && fn !~ /Eigen|3cpu|CpuDevice|CpuBackend|CpuBuffer|_GLOBAL__N_/
    next
  }
  std && /zmm|%[xy]mm(1[6-9]|2[0-9]|3[01])|\{%k[0-7]\}|%k[0-7]|vpternlog|vmovdqu(8|16|32|64)|vpbroadcast[bwdq] +%[re]|vpro[lr][dq]|vperm[it]2/ { n[fn]++ }
  END { for (f in n) print n[f], f }')
if [ -n "$found" ]; then
  echo "standard-library functions built with AVX-512 (instructions, function):"
  echo "$found" | sort -rn | head -20
  exit 1
fi
echo "no standard-library function uses AVX-512"
