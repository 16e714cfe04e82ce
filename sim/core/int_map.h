// A hash map from non-negative 64-bit integers to small values, stored inline: open addressing
// with linear probing in one array, so that a lookup reads one cache line (rarely two) where a
// node-based map reads a bucket and then a node elsewhere in memory, and a sorted vector reads a
// dozen lines and moves half of itself on an insert. Erasing shifts the entries that probed past
// the hole back into it (no tombstones), so the table stays as small as what it holds. Written
// here: Debian's Boost (1.74) predates boost::unordered_flat_map (1.81).
//
// References to values stay valid until the next insert or erase, either of which may move them.
// Iteration order is not offered: nothing that shapes results may depend on where keys hash to.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sim/core/assert.h"

namespace arlsim::core {

template <class Value>
class IntMap {
 public:
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }

  // The key's value, or null.
  Value* find(int64_t key) {
    ARLSIM_ASSERT(key >= 0);  // negative keys mark empty slots
    if (size_ == 0) return nullptr;
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }
  const Value* find(int64_t key) const { return const_cast<IntMap*>(this)->find(key); }

  // Starts loading where the key's lookup begins.
  void prefetch(int64_t key) const {
    if (!slots_.empty()) __builtin_prefetch(&slots_[home(key)]);
  }
  // Where the key's lookup begins (null when empty), to prefetch later: valid until the next
  // insert or erase.
  const void* home_address(int64_t key) const { return slots_.empty() ? nullptr : &slots_[home(key)]; }

  // The key's value, inserted as Value{} when absent.
  Value& operator[](int64_t key) {
    ARLSIM_ASSERT(key >= 0);
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (size_t i = home(key);; i = (i + 1) & mask_) {
      Slot& s = slots_[i];
      if (s.key == key) return s.value;
      if (s.key == kEmpty) {
        s.key = key;
        s.value = Value{};
        ++size_;
        return s.value;
      }
    }
  }

  // Removes the key if present.
  void erase(int64_t key) {
    ARLSIM_ASSERT(key >= 0);
    if (size_ == 0) return;
    size_t i = home(key);
    while (slots_[i].key != key) {
      if (slots_[i].key == kEmpty) return;
      i = (i + 1) & mask_;
    }
    // Backward-shift deletion: an entry further along the run moves into the hole unless its home
    // lies cyclically within (hole, entry], where the hole would cut it off from its home.
    for (size_t j = (i + 1) & mask_;; j = (j + 1) & mask_) {
      if (slots_[j].key == kEmpty) break;
      const size_t h = home(slots_[j].key);
      const bool stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
      if (stays) continue;
      slots_[i] = slots_[j];
      i = j;
    }
    slots_[i].key = kEmpty;
    --size_;
  }

 private:
  static constexpr int64_t kEmpty = -1;
  struct Slot {
    int64_t key = kEmpty;
    Value value{};
  };
  size_t home(int64_t key) const {
    // Fibonacci hashing: keys in arithmetic progression (one engine's share of trajectories
    // dealt round-robin) spread over the table instead of colliding.
    return static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    const size_t capacity = old.empty() ? 4 : 2 * old.size();  // small at first: 50,000 engines hold few
    slots_.assign(capacity, Slot{});
    mask_ = capacity - 1;
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    size_ = 0;
    for (const Slot& s : old)
      if (s.key != kEmpty) (*this)[s.key] = s.value;
  }

  std::vector<Slot> slots_;
  size_t mask_ = 0;
  int shift_ = 64;
  size_t size_ = 0;
};

}  // namespace arlsim::core
