#include "runtime/backend.h"

#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <exception>
#include <system_error>
#include <thread>
#include <vector>

#include "runtime/pattern.h"

namespace arlsim::runtime {

void hold(double seconds, bool busy) {
  using Clock = std::chrono::steady_clock;
  const auto end = Clock::now() + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(std::max(0.0, seconds)));
  constexpr auto kSpinTail = std::chrono::milliseconds(1);
  if (!busy && end - Clock::now() > kSpinTail) std::this_thread::sleep_until(end - kSpinTail);
  while (Clock::now() < end) {
  }
}

uint32_t checksum(const void* data, size_t bytes) { return checksum_more(0, data, bytes); }

uint32_t checksum_more(uint32_t crc, const void* data, size_t bytes) {
  return static_cast<uint32_t>(crc32_z(crc, static_cast<const Bytef*>(data), bytes));
}

namespace {
// `piece(first, count)` over `threads` contiguous pieces of `n` items (fewer when pieces would be
// under 1 Mi items), the pieces' results in order. A piece that throws (memory) has its exception
// rethrown here once every thread has ended; a thread that cannot start leaves its piece to this one.
template <typename F>
std::vector<uint32_t> in_pieces(size_t n, unsigned threads, F&& piece) {
  const size_t most = std::max<size_t>(1, n / (size_t{1} << 20));
  const size_t count = std::max<size_t>(1, std::min<size_t>(threads, most)), each = (n + count - 1) / count;
  std::vector<uint32_t> results(count, 0);
  std::vector<std::exception_ptr> failed(count);
  auto run = [&](size_t i) {
    try {
      const size_t first = std::min(n, i * each);
      results[i] = piece(first, std::min(each, n - first));
    } catch (...) {
      failed[i] = std::current_exception();
    }
  };
  std::vector<std::thread> workers;
  size_t started = 1;
  try {
    for (; started < count; ++started) workers.emplace_back(run, started);
  } catch (const std::system_error&) {
  }
  for (size_t i = started; i < count; ++i) run(i);
  run(0);
  for (auto& w : workers) w.join();
  for (const auto& e : failed)
    if (e) std::rethrow_exception(e);
  return results;
}

uint32_t joined(const std::vector<uint32_t>& crcs, size_t n, size_t item_bytes) {
  const size_t each = (n + crcs.size() - 1) / crcs.size();
  uint32_t crc = crcs.front();
  for (size_t i = 1; i < crcs.size(); ++i) {
    const size_t items = std::min(each, n - std::min(n, i * each));
    crc = static_cast<uint32_t>(crc32_combine(crc, crcs[i], static_cast<z_off_t>(items * item_bytes)));
  }
  return crc;
}
}  // namespace

uint32_t checksum(const void* data, size_t bytes, unsigned threads) {
  const auto* b = static_cast<const unsigned char*>(data);
  return joined(in_pieces(bytes, threads, [&](size_t first, size_t count) { return checksum(b + first, count); }), bytes, 1);
}

uint32_t pattern_checksum(size_t floats, uint64_t seed, unsigned threads) {
  return joined(in_pieces(floats, threads,
                          [&](size_t first, size_t count) {
                            std::vector<float> block(std::min<size_t>(count, size_t{1} << 16));
                            uint32_t crc = 0;
                            for (size_t at = 0; at < count; at += block.size()) {
                              const size_t n = std::min(block.size(), count - at);
                              for (size_t i = 0; i < n; ++i) block[i] = pattern_value(first + at + i, seed);
                              crc = checksum_more(crc, block.data(), n * sizeof(float));
                            }
                            return crc;
                          }),
                floats, sizeof(float));
}

void fill_pattern_host(float* out, size_t floats, uint64_t seed, unsigned threads) {
  in_pieces(floats, threads, [&](size_t first, size_t count) {
    for (size_t i = first; i < first + count; ++i) out[i] = pattern_value(i, seed);
    return uint32_t{0};
  });
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
