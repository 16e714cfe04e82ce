// One inference engine (a vLLM/SGLang-style server on tp x pp GPUs) as the rollout sees it:
// continuous batching over waiting and running queues, a KV cache in blocks, chunked prefill,
// prefix caching, and preemption by recomputation when the cache is full.
//
// Each iteration the scheduler (vLLM V1's policy) first serves the running requests in order —
// one token for a decoding request, the next prefill chunk for one still prefilling — then admits
// waiting requests first come, first served, within max_num_seqs and a budget of
// max_num_batched_tokens. When a running request needs a block and none is free, cached
// prefixes are evicted (least recently used first), and then the most recently admitted request
// is preempted: it loses its private KV and waits at the front of the queue to be recomputed.
//
// Prefix caching keeps the blocks of a request whose turn ended (awaiting its tool) evictable
// rather than free; when the trajectory's next turn arrives on the same engine its cached
// context is reused. The full blocks of a prompt are shared by the requests of its group.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <deque>
#include <optional>
#include <queue>
#include <unordered_map>
#include <vector>

#include "sim/core/assert.h"
#include "sim/core/int_map.h"
#include "sim/model/inference.h"
#include "sim/input/workload.h"

namespace arlsim::rl {

// A request of one turn of a trajectory, as the engine tracks it.
struct Request {
  // The fields every iteration touches come first, in one cache line.
  int64_t context = 0;        // tokens the turn's generation starts from
  int64_t computed = 0;       // tokens of that context whose KV is resident
  int64_t gen_target = 0;     // tokens to generate in this turn
  int64_t generated = 0;      // since the request was last (re)started
  int64_t produced = 0;       // tokens sampled in this turn, across preemptions
  int64_t shared_tokens = 0;  // prompt tokens served by the group's shared blocks
  int64_t blocks = 0;         // private blocks held
  int64_t trajectory = 0;
  int64_t prompt_id = -1;     // the group, as a small dense index (negative: shares no prompt)
  int64_t prompt_tokens = 0;  // the group's shared prompt (turn 0 only)
  bool first_token_seen = false;
  bool resident = false;  // its context's KV stayed on the engine across a weight update (seed_resident)

  // The scheduler's bookkeeping (see EngineScheduler's decode group).
  enum class State : uint8_t { waiting, prefilling, decoding, grouped };
  State state = State::waiting;
  int32_t block_key = 0;  // grouped: the decode steps, modulo the block size, at which it needs a block
  int64_t admitted = 0;   // admission number: running requests are served in this order
  int64_t synced = 0;     // grouped: the decode step at which generated and produced were exact
  int64_t dropped = 0;    // KV tokens a preemption released: computed again unless the cache kept them

  int64_t kv_tokens() const { return computed + generated; }
  int64_t remaining() const { return (context - computed) + (gen_target - generated); }
  bool prefilling() const { return computed < context; }
};

// What the scheduler put into one iteration. Every decoding request in batch.decode_seqs decodes
// one token; `decodes` names those outside the decode group.
struct Planned {
  model::IterationBatch batch;
  std::vector<std::pair<int64_t, int64_t>> chunks;  // (slot, tokens) of prefill chunks
  std::vector<int64_t> decodes;                      // slots decoding one token, outside the group
  // A decode-only batch whose composition cannot change before a request ends its turn or the
  // cache runs out: it may run this many iterations as one window (0 = no window).
  int64_t skippable = 0;
};

struct EngineStats {
  int64_t preemptions = 0;
  int64_t recomputed_tokens = 0;  // KV the preemptions released and the cache lost, prefilled again (vLLM's recompute mode)
  int64_t iterations = 0;
  int64_t prefill_tokens = 0;
  int64_t cached_tokens = 0;  // prompt and context tokens served from the prefix cache
  int64_t resident_tokens = 0;  // context tokens whose KV stayed across a weight update (seed_resident)
  int64_t peak_blocks_used = 0;
};

//
// Most of an engine's running requests are decoding, and in an iteration where every one of them
// gets its token and its next block, they only advance together. They form the decode group: the
// scheduler keeps their sum of KV lengths, how many need a block at each decode step (a request
// needs one every block_size steps), and when each ends its turn, and brings a request's own
// fields up to date only when it leaves the group. Planning and completing an iteration then cost
// the requests that change rather than all running ones. An iteration where a decoding request
// could go without its token or its block (a full token budget, a full cache) is planned request
// by request as described above, after the group is dissolved; requests join it again at their
// next plan. Requests still prefilling always follow the decoding ones in the running order:
// a request is admitted behind all others, and one whose chunk leaves it short of its context
// used up the iteration's budget, so no one behind it was served.
class EngineScheduler {
 public:
  EngineScheduler(const input::EngineSpec& spec, int64_t total_blocks);

  // A request arrives (a trajectory has at most one request on an engine at a time).
  void arrive(Request r);
  // Plans the next iteration into `p` (allocating blocks, preempting when needed); `p`'s buffers
  // are reused, so that planning allocates nothing in the steady state.
  void plan(Planned& p);
  // Applies `iterations` iterations of the last plan; returns the trajectories whose turn ended
  // (their generation is complete) and those whose request produced its first token.
  void complete(const Planned& p, int64_t iterations, std::vector<int64_t>& finished,
                std::vector<int64_t>& first_tokens);
  // Finished requests leave; with prefix caching their blocks stay as an evictable cache entry.
  Request release(int64_t trajectory);

  bool idle() const { return running_.empty() && waiting_.empty(); }
  size_t running() const { return running_.size(); }
  size_t waiting() const { return waiting_.size(); }
  // Prompt and context tokens still to prefill: what a router can know of an engine's work (how
  // many tokens each request will generate is known to nobody until it stops).
  int64_t pending_prefill_tokens() const { return prefill_pending_; }
  int64_t total_blocks() const { return total_blocks_; }
  int64_t used_blocks() const { return total_blocks_ - free_blocks_ - cached_blocks_; }
  const EngineStats& stats() const { return stats_; }
  // Where the trajectory's entry is looked up, to prefetch when it may soon arrive: valid until
  // the next trajectory is added or forgotten (a stale address costs a hint nothing).
  const void* entry_address(int64_t trajectory) const { return by_trajectory_.home_address(trajectory); }
  // What completing the plan in flight reads first that has gone cold since: the request of the
  // grouped turn that ends first (the last plan's window ends there unless an arrival cuts it),
  // and its entry by trajectory. Addresses to prefetch, valid until the scheduler next changes;
  // trajectory -1 when no grouped turn is pending.
  struct TurnEndHint {
    int64_t trajectory = -1;
    const void* request = nullptr;
    const void* entry = nullptr;
  };
  TurnEndHint turn_end_hint() const;
  // The size of an entry of the cache's LRU ring, for memory estimates.
  static constexpr size_t cache_entry_bytes() { return sizeof(CacheEntry); }
  // The trajectory's request on this engine, brought up to date, or nothing.
  std::optional<Request> find(int64_t trajectory) const;
  // Continuous generation that keeps the KV cache across a weight update: `tokens` of the
  // trajectory's context are already on this engine (its request was running here when the step
  // before ended). Their blocks stay in use (neither free nor evictable), and when its request
  // arrives it waits at the head of the queue and computes only what follows, as a request that
  // kept running would. False (and nothing held) when the blocks are not free.
  bool seed_resident(int64_t trajectory, int64_t tokens);

 private:
  // Block arithmetic is a shift and a mask when the block size is a power of two (the usual case):
  // a 64-bit division costs tens of cycles, and planning and completing an iteration do several.
  int64_t blocks_for(int64_t tokens) const {
    return block_shift_ >= 0 ? (tokens + block_size_ - 1) >> block_shift_ : (tokens + block_size_ - 1) / block_size_;
  }
  int64_t whole_blocks(int64_t tokens) const {  // tokens >= 0
    return block_shift_ >= 0 ? tokens >> block_shift_ : tokens / block_size_;
  }
  int64_t block_offset(int64_t x) const {  // x modulo the block size, in [0, block size) for any x
    return block_shift_ >= 0 ? x & (block_size_ - 1) : (x % block_size_ + block_size_) % block_size_;
  }
  bool allocate(int64_t blocks);
  // Frees up to `want` cached blocks from the least recently used entry: a context entry loses
  // its last blocks first and keeps its prefix, a shared prompt goes whole. False: nothing cached.
  bool evict(int64_t want);
  // A request's blocks become its trajectory's cache entry (evictable), replacing an older one.
  void cache_context(const Request& r);
  void preempt(int64_t id);
  // Planning: the decoding requests at once (false when one of them could go without its token
  // or its block), or the running requests one by one from running_[first].
  bool plan_decode_group(Planned& p, int64_t& budget, int64_t& min_remaining);
  void plan_in_order(Planned& p, size_t first, int64_t& budget, int64_t& min_remaining);
  void admit(Planned& p, int64_t& budget);
  // The decode group: a request joins it after a plan gave it its block for the next token;
  // leave() brings its fields up to date and takes it out; dissolve() does so for all.
  void join(int64_t id);
  void leave(int64_t id);
  void dissolve();
  Request current(int64_t id) const;  // a request with its group progress applied
  int64_t blocks_due(int64_t step) const { return due_[static_cast<size_t>(block_offset(-step))]; }
  int64_t decoding() const { return static_cast<int64_t>(running_.size()) - prefilling_; }
  // What the prefix cache can give a request being admitted, and the blocks that leave the
  // evictable cache if it takes them.
  struct Reuse {
    enum class Kind { none, context, prompt, resident } kind = Kind::none;
    int64_t computed = 0, blocks = 0, shared_tokens = 0, leaves_cache = 0;
  };
  Reuse probe_cache(const Request& r) const;
  void commit_reuse(Request& r, const Reuse& u);
  int64_t window_iterations(const Planned& p, int64_t first_turn_end) const;
  // The blocks the grouped requests need, beyond those the plan of this step gave them, to run
  // `iterations` steps from it: by the due counts, whatever the group's size.
  int64_t group_blocks(int64_t iterations) const;

  input::EngineSpec spec_;
  int64_t block_size_;
  int block_shift_ = -1;  // log2 of the block size when it is a power of two
  int64_t total_blocks_;
  int64_t free_blocks_;
  int64_t cached_blocks_ = 0;
  // Requests live in slots; the queues and plans hold slot numbers.
  std::vector<Request> slots_;
  std::vector<int64_t> free_slots_;
  // Per trajectory seen here: its request's slot and its cached context's entry (-1: none). A hash
  // map with its entries inline, as lookups happen on every arrival, admission and turn end (a
  // sorted vector cost a dozen cache misses per lookup and a shift of half of it per insert); it
  // holds only this engine's trajectories (see forget()), so that memory grows with what engines
  // hold, not with engines x trajectories.
  struct ByTrajectory {
    int32_t slot = -1;
    int32_t cached = -1;
  };
  core::IntMap<ByTrajectory> by_trajectory_;
  // References stay valid until the next trajectory is added or forgotten.
  ByTrajectory& of(int64_t trajectory) { return by_trajectory_[trajectory]; }
  ByTrajectory of(int64_t trajectory) const {
    const ByTrajectory* where = by_trajectory_.find(trajectory);
    return where ? *where : ByTrajectory{};
  }
  void forget(int64_t trajectory) {  // once it has neither a request nor a cached context here
    const ByTrajectory* where = by_trajectory_.find(trajectory);
    if (where && where->slot < 0 && where->cached < 0) by_trajectory_.erase(trajectory);
  }
  std::vector<int64_t> running_;  // decoding requests, then `prefilling_` still prefilling
  int64_t prefilling_ = 0;
  int64_t admissions_ = 0;
  std::deque<int64_t> waiting_;
  // The decode group. `steps_` counts the engine's decode steps; a grouped request has received a
  // token at each since it was synced. `blocks_planned_`: the plan of step steps_ gave the group
  // its blocks (between plan and complete).
  int64_t steps_ = 0;
  bool blocks_planned_ = false;
  int64_t grouped_ = 0;
  int64_t grouped_kv_tokens_ = 0;
  std::vector<int64_t> due_;  // by block key: grouped requests needing a block at those steps
  struct TurnEnd {
    int64_t step, admitted, slot, trajectory;
    bool operator>(const TurnEnd& o) const { return step != o.step ? step > o.step : admitted > o.admitted; }
  };
  // When grouped requests end their turn; entries of requests that left are skipped when met.
  std::priority_queue<TurnEnd, std::vector<TurnEnd>, std::greater<>> turn_ends_;
  bool live(const TurnEnd& e) const { return grouped_admitted_[static_cast<size_t>(e.slot)] == e.admitted; }
  // Per slot: the admission number of its request while grouped, else -1. What live() asks of a
  // request, apart from it: a grouped request's own fields stay cold between its joining and
  // leaving, and the check comes at every plan.
  std::vector<int64_t> grouped_admitted_;
  std::vector<int64_t> ungrouped_;  // decoding requests outside the group
  std::vector<int64_t> group_finished_;  // scratch
  // Evictable cache entries in LRU order: a trajectory's context, or a prompt's shared blocks.
  // 32-bit fields (trajectories, prompts, one engine's tokens and blocks all count below 2^31),
  // so that eviction, which reads the entries in order, finds the next one or two on the line it
  // has just read: an engine's entries are cold by the time its cache runs short again.
  struct CacheEntry {
    int32_t key = 0;
    int32_t tokens = 0;
    int32_t blocks = 0;
    int32_t shared_tokens = 0;  // a context entry that starts with its group's prompt blocks
    int32_t prompt_id = 0;
    bool prompt = false;
    bool erased = false;  // (a hole the front skips)
  };
  static CacheEntry cache_entry(bool prompt, int64_t key, int64_t tokens, int64_t blocks, int64_t shared_tokens,
                                int64_t prompt_id) {
    const auto narrow = [](int64_t v) {
      ARLSIM_ASSERT(v >= INT32_MIN && v <= INT32_MAX);
      return static_cast<int32_t>(v);
    };
    return {narrow(key), narrow(tokens), narrow(blocks), narrow(shared_tokens), narrow(prompt_id), prompt, false};
  }
  // The LRU order is the order of insertion (an entry that is used leaves, and comes back at the
  // end), so the list is a queue in a ring buffer: eviction reads its front, which is contiguous
  // and cheap to read ahead, and erasing an entry elsewhere leaves a hole, touching no neighbour.
  // Entries are named by position, which only grows; holes are squeezed out when the ring is
  // full of them, and `moved` is told each entry's new position.
  class Lru {
   public:
    bool empty() const { return head_ == tail_; }
    int32_t front() const { return static_cast<int32_t>(head_); }
    const CacheEntry& operator[](int32_t i) const { return ring_[static_cast<size_t>(i) & mask_]; }
    CacheEntry& at(int32_t i) { return ring_[static_cast<size_t>(i) & mask_]; }
    template <class Moved>
    int32_t push_back(const CacheEntry& e, Moved&& moved) {
      if (tail_ - head_ == ring_.size()) make_room(moved);
      ARLSIM_ASSERT(tail_ < static_cast<size_t>(INT32_MAX));
      ring_[tail_ & mask_] = e;
      ++live_;
      return static_cast<int32_t>(tail_++);
    }
    void erase(int32_t i) {
      CacheEntry& e = at(i);
      ARLSIM_ASSERT(!e.erased && static_cast<size_t>(i) >= head_ && static_cast<size_t>(i) < tail_);  // erased once
      e.erased = true;
      --live_;
      while (head_ < tail_ && ring_[head_ & mask_].erased) ++head_;
    }

   private:
    template <class Moved>
    void make_room(Moved& moved) {
      if (2 * live_ <= ring_.size() && !ring_.empty()) {
        // Half holes: the live entries close up behind the front, in order.
        size_t to = head_;
        for (size_t from = head_; from < tail_; ++from) {
          const CacheEntry& e = ring_[from & mask_];
          if (e.erased) continue;
          if (to != from) {
            ring_[to & mask_] = e;
            moved(e, static_cast<int32_t>(to));
          }
          ++to;
        }
        tail_ = to;
        return;
      }
      // Mostly live: a ring twice as large, every entry at its own position.
      std::vector<CacheEntry> old(std::max<size_t>(4, 2 * ring_.size()));
      old.swap(ring_);
      const size_t old_mask = mask_;
      mask_ = ring_.size() - 1;
      for (size_t i = head_; i < tail_; ++i) ring_[i & mask_] = old[i & old_mask];
    }
    std::vector<CacheEntry> ring_;
    size_t mask_ = 0;
    size_t head_ = 0, tail_ = 0;  // positions: the entries are those in [head_, tail_), less the holes
    size_t live_ = 0;
  };
  // An entry's position changed: what names it follows.
  void lru_moved(const CacheEntry& e, int32_t to) {
    if (e.prompt) prompts_.find(e.key)->lru = to;
    else by_trajectory_.find(e.key)->cached = to;
  }
  int32_t lru_push(const CacheEntry& e) {
    return lru_.push_back(e, [this](const CacheEntry& m, int32_t to) { lru_moved(m, to); });
  }
  void unref_prompt(int64_t prompt_id);
  int64_t shareable_prompt(const Request& r) const;
  Lru lru_;  // contexts by trajectory (by_trajectory_), prompts by group (prompts_)
  struct SharedPrompt {
    int64_t blocks = 0;
    int64_t tokens = 0;
    int32_t refs = 0;
    int32_t lru = -1;  // its entry in lru_ when refs == 0
  };
  // By prompt id, the prompts whose shared blocks this engine holds (an evicted prompt leaves).
  // A map, not a vector by id: each of many engines sees a few of a step's prompts, and a vector
  // as long as the largest id on every engine took gigabytes at 50,000 engines. Entries inline
  // (see core::IntMap): admission looks a prompt up for nearly every request it admits.
  core::IntMap<SharedPrompt> prompts_;
  struct Resident {
    int64_t tokens = 0, blocks = 0;
  };
  std::unordered_map<int64_t, Resident> resident_;  // by trajectory, until its request arrives
  SharedPrompt* prompt(int64_t id) { return id >= 0 ? prompts_.find(id) : nullptr; }
  const SharedPrompt* prompt(int64_t id) const { return id >= 0 ? prompts_.find(id) : nullptr; }
  EngineStats stats_;
  int64_t prefill_pending_ = 0;
};

}  // namespace arlsim::rl
