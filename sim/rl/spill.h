// Records that a run keeps aside until it places them (a step's rollout parts, while the step
// graph of the whole run is built), in a temporary file so that memory does not grow with the
// steps. Trivially copyable records only; memory when no file can be had.
#pragma once

#include <cstddef>
#include <cstdio>
#include <type_traits>
#include <vector>

#include "sim/core/assert.h"

namespace arlsim::rl {

template <typename T>
class Spill {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  struct Range {
    long offset = -1;  // in the file; -1: in memory (`kept`)
    size_t count = 0, kept = 0;
  };
  Spill() : file_(std::tmpfile()) {}
  ~Spill() {
    if (file_) std::fclose(file_);
  }
  Spill(const Spill&) = delete;
  Spill& operator=(const Spill&) = delete;
  Range put(const T* data, size_t count) {
    Range r;
    r.count = count;
    if (count == 0) return r;  // nothing to keep (and no buffer to pass to the C library)
    if (file_ && std::fseek(file_, 0, SEEK_END) == 0) {
      const long at = std::ftell(file_);
      if (at >= 0 && std::fwrite(data, sizeof(T), count, file_) == count) {
        r.offset = at;
        return r;
      }
    }
    r.kept = kept_.size();
    kept_.emplace_back(data, data + count);
    return r;
  }
  // Appends the range's records to `out` (and frees what memory held them).
  void take(const Range& r, std::vector<T>& out) {
    if (r.count == 0) return;
    if (r.offset < 0) {
      out.insert(out.end(), kept_[r.kept].begin(), kept_[r.kept].end());
      kept_[r.kept] = {};
      return;
    }
    const size_t at = out.size();
    out.resize(at + r.count);
    const bool ok = std::fseek(file_, r.offset, SEEK_SET) == 0 && std::fread(out.data() + at, sizeof(T), r.count, file_) == r.count;
    ARLSIM_ASSERT(ok);  // what this run wrote to its own temporary file reads back
  }

 private:
  std::FILE* file_;
  std::vector<std::vector<T>> kept_;
};

}  // namespace arlsim::rl
