#include "runtime/backend.h"

#include <boost/crc.hpp>

namespace arlsim::runtime {

uint32_t checksum(const void* data, size_t bytes) {
  boost::crc_32_type crc;
  crc.process_bytes(data, bytes);
  return crc.checksum();
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
