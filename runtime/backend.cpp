#include "runtime/backend.h"

#include <zlib.h>

namespace arlsim::runtime {

uint32_t checksum(const void* data, size_t bytes) { return checksum_more(0, data, bytes); }

uint32_t checksum_more(uint32_t crc, const void* data, size_t bytes) {
  return static_cast<uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), bytes));
}

void KernelSeconds::add(Kernel::Kind kind, double s) {
  switch (kind) {
    case Kernel::Kind::gemm: gemm += s; break;
    case Kernel::Kind::attention: attention += s; break;
    case Kernel::Kind::decode_attention: decode_attention += s; break;
    case Kernel::Kind::memory: memory += s; break;
    case Kernel::Kind::collective: collective += s; break;
    case Kernel::Kind::copy: copy += s; break;
    case Kernel::Kind::wait: wait += s; break;
  }
}

KernelSeconds& KernelSeconds::operator+=(const KernelSeconds& o) {
  gemm += o.gemm;
  attention += o.attention;
  decode_attention += o.decode_attention;
  memory += o.memory;
  collective += o.collective;
  copy += o.copy;
  wait += o.wait;
  return *this;
}

void add_busy(std::vector<BusySpan>& spans, double start, double end, int8_t phase) {
  if (!spans.empty() && start - spans.back().end <= 1e-12 && spans.back().phase == phase) {
    spans.back().end = end;
    return;
  }
  spans.push_back({start, end, phase});
}

}  // namespace arlsim::runtime
