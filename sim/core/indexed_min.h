// A value per index 0..n-1 and the index of the least value (ties: the lowest index), kept as the
// values change: an update costs O(log n), the query O(1). Routers ask for the least-loaded of
// tens of thousands of engines at every first turn while only a few engines change in between.
// Backed by Boost.Heap's mutable d-ary heap, whose handles let one entry be updated in place.
#pragma once

#include <cstddef>
#include <vector>

#include <boost/heap/d_ary_heap.hpp>

namespace arlsim::core {

template <class Key>
class IndexedMin {
 public:
  explicit IndexedMin(size_t n = 0, const Key& initial = {}) { reset(n, initial); }
  // The handles point into this heap: a copy would update another's.
  IndexedMin(const IndexedMin&) = delete;
  IndexedMin& operator=(const IndexedMin&) = delete;

  void reset(size_t n, const Key& initial = {}) {
    heap_.clear();
    handles_.clear();
    keys_.assign(n, initial);
    handles_.reserve(n);
    for (size_t i = 0; i < n; ++i) handles_.push_back(heap_.push(Node{initial, i}));
  }
  size_t size() const { return keys_.size(); }
  bool empty() const { return keys_.empty(); }
  const Key& operator[](size_t i) const { return keys_[i]; }
  void set(size_t i, const Key& key) {
    if (!(key < keys_[i]) && !(keys_[i] < key)) return;
    keys_[i] = key;
    heap_.update(handles_[i], Node{key, i});
  }
  // The index of the least value; the structure must not be empty.
  size_t min_index() const { return heap_.top().index; }

 private:
  struct Node {
    Key key;
    size_t index;
  };
  // The heap keeps its greatest element on top: "greater" here means a smaller key, then a lower
  // index, so the top is the least value at the lowest index.
  struct RanksBelow {
    bool operator()(const Node& a, const Node& b) const {
      if (b.key < a.key) return true;
      if (a.key < b.key) return false;
      return a.index > b.index;
    }
  };
  using Heap = boost::heap::d_ary_heap<Node, boost::heap::arity<4>, boost::heap::mutable_<true>,
                                       boost::heap::compare<RanksBelow>>;
  Heap heap_;
  std::vector<Key> keys_;
  std::vector<typename Heap::handle_type> handles_;
};

}  // namespace arlsim::core
