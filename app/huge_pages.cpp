// A large run keeps a gigabyte of state (a million trajectories, thousands of engines' requests)
// and touches it at random, one event at a time: with 4 KiB pages nearly every access also misses
// the TLB. glibc's malloc can ask the kernel for transparent huge pages for its heap and its
// mappings (the glibc.malloc.hugetlb tunable, glibc 2.35 on), which kernels configured with
// transparent_hugepage=madvise, Debian's default, otherwise never give a program that does not
// ask. Tunables are read when the process starts, so the program re-executes itself once with the
// tunable set. On 1,000,000 trajectories in one step (tests/bench/scale_bench.sh) it took the run
// from 45.6 s to 37.2 s on a 2-vCPU VM, at the same peak memory.
#include "app/huge_pages.h"

#include <cstdlib>
#include <string>

#include <unistd.h>

namespace arlsim::app {

void use_huge_pages(char** argv) {
#if defined(__GLIBC__) && defined(__linux__)
  const char* set = std::getenv("GLIBC_TUNABLES");
  const std::string before = set ? set : "";
  if (before.find("glibc.malloc.hugetlb") != std::string::npos) return;  // said already (or by the re-executed self)
  const std::string tunables = before.empty() ? "glibc.malloc.hugetlb=1" : before + ":glibc.malloc.hugetlb=1";
  if (setenv("GLIBC_TUNABLES", tunables.c_str(), 1) != 0) return;
  execv("/proc/self/exe", argv);
  // Not re-executed (no /proc): go on as started, the variable as it was.
  if (set) setenv("GLIBC_TUNABLES", before.c_str(), 1);
  else unsetenv("GLIBC_TUNABLES");
#else
  (void)argv;
#endif
}

}  // namespace arlsim::app
