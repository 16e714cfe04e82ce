// Loads a trace file into memory and prints the time it took, the peak resident memory of the
// process and what was read. Run by trace_load_bench.sh on a generated 13 M-turn trace; a
// measurement to read, not a test with a threshold.
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "sim/trace/reader.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: trace_load_bench TRACE.jsonl\n");
    return 2;
  }
  const auto start = std::chrono::steady_clock::now();
  arlsim::parse::Diagnostics diag;
  const auto trace = arlsim::trace::load_trace(argv[1], diag);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (!trace) {
    std::fputs(arlsim::parse::format_all(diag).c_str(), stderr);
    return 2;
  }
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  std::printf("trajectories      %zu\n", trace->size());
  std::printf("turns             %zu\n", trace->turn_count());
  std::printf("load time         %.2f s\n", seconds);
  std::printf("peak RSS          %.0f MiB\n", static_cast<double>(usage.ru_maxrss) / 1024.0);
  std::printf("trace storage     %.0f MiB (%zu bytes per turn)\n",
              static_cast<double>(trace->storage_bytes()) / (1024.0 * 1024.0), sizeof(arlsim::trace::Turn));
  return 0;
}
