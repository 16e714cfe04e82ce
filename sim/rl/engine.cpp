#include "sim/rl/engine.h"

#include <algorithm>

#include "sim/core/assert.h"

namespace arlsim::rl {

EngineScheduler::EngineScheduler(const input::EngineSpec& spec, int64_t total_blocks)
    : spec_(spec), block_size_(spec.block_size), total_blocks_(total_blocks), free_blocks_(total_blocks) {
  for (int shift = 0; shift < 31; ++shift)
    if ((int64_t{1} << shift) == block_size_) block_shift_ = shift;
  due_.assign(static_cast<size_t>(block_size_), 0);
}

void EngineScheduler::arrive(Request r) {
  r.gen_target = std::max<int64_t>(1, r.gen_target);
  r.context = std::max<int64_t>(1, r.context);
  bool resident = false;
  if (!resident_.empty()) {
    if (const auto it = resident_.find(r.trajectory); it != resident_.end()) {
      // Its KV never left: it holds those blocks and computes only the rest of its context.
      r.resident = resident = true;
      r.computed = std::min(it->second.tokens, r.context - 1);
      r.blocks = it->second.blocks;
      r.shared_tokens = 0;
      resident_.erase(it);
    }
  }
  prefill_pending_ += r.context - r.computed;
  int64_t slot = 0;
  if (free_slots_.empty()) {
    slot = static_cast<int64_t>(slots_.size());
    slots_.push_back(r);
    grouped_admitted_.push_back(-1);
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
    slots_[static_cast<size_t>(slot)] = r;
  }
  slots_[static_cast<size_t>(slot)].state = Request::State::waiting;
  ByTrajectory& where = of(r.trajectory);
  where.slot = static_cast<int32_t>(slot);
  if (resident) waiting_.push_front(slot);  // it was running: first in line
  else waiting_.push_back(slot);
  // What admitting it will read of the prefix cache, by then gone cold: its earlier turn's cached
  // context, and its group's shared prompt.
  if (where.cached >= 0) __builtin_prefetch(&lru_[where.cached]);
  if (r.prompt_id >= 0) prompts_.prefetch(r.prompt_id);
}

EngineScheduler::TurnEndHint EngineScheduler::turn_end_hint() const {
  // After a plan of the decode group the top is live (planning pops the entries of requests
  // that left); otherwise it may be stale, which costs a hint nothing.
  if (turn_ends_.empty()) return {};
  const TurnEnd& e = turn_ends_.top();
  return {e.trajectory, &slots_[static_cast<size_t>(e.slot)], by_trajectory_.home_address(e.trajectory)};
}

std::optional<Request> EngineScheduler::find(int64_t trajectory) const {
  const int32_t slot = of(trajectory).slot;
  if (slot < 0) return std::nullopt;
  return current(slot);
}

Request EngineScheduler::current(int64_t id) const {
  Request r = slots_[static_cast<size_t>(id)];
  if (r.state == Request::State::grouped) {
    const int64_t steps = steps_ - r.synced;
    r.generated += steps;
    r.produced += steps;
    r.synced = steps_;
    // A grouped request holds exactly the blocks of its KV, plus its next token's once planned.
    r.blocks = blocks_for(r.kv_tokens() + (blocks_planned_ ? 1 : 0) - r.shared_tokens);
  }
  return r;
}

void EngineScheduler::join(int64_t id) {
  Request& r = slots_[static_cast<size_t>(id)];
  r.state = Request::State::grouped;
  grouped_admitted_[static_cast<size_t>(id)] = r.admitted;
  r.synced = steps_;
  // It needs a block at the plan of step t when its KV (beyond the shared prompt) fills whole
  // blocks: kv - shared + (t - steps_) = 0 modulo the block size.
  const int64_t key = block_offset(r.kv_tokens() - r.shared_tokens - steps_);
  r.block_key = static_cast<int32_t>(key);
  ++due_[static_cast<size_t>(key)];
  ++grouped_;
  grouped_kv_tokens_ += r.kv_tokens();
  turn_ends_.push({steps_ + r.gen_target - r.generated, r.admitted, id, r.trajectory});
}

void EngineScheduler::leave(int64_t id) {
  Request& r = slots_[static_cast<size_t>(id)];
  r = current(id);
  r.state = Request::State::decoding;
  grouped_admitted_[static_cast<size_t>(id)] = -1;
  --due_[static_cast<size_t>(r.block_key)];
  --grouped_;
  grouped_kv_tokens_ -= r.kv_tokens();
}

void EngineScheduler::dissolve() {
  for (size_t i = 0; i < static_cast<size_t>(decoding()); ++i) {
    const int64_t id = running_[i];
    if (slots_[static_cast<size_t>(id)].state != Request::State::grouped) continue;
    leave(id);
    ungrouped_.push_back(id);
  }
  turn_ends_ = {};
}

int64_t EngineScheduler::shareable_prompt(const Request& r) const {
  // Whole blocks of the prompt, leaving at least its last token to compute.
  return whole_blocks(std::min(r.prompt_tokens, r.context - 1)) * block_size_;
}

void EngineScheduler::unref_prompt(int64_t prompt_id) {
  SharedPrompt& sp = *prompt(prompt_id);
  if (--sp.refs == 0) {
    sp.lru = lru_push(cache_entry(true, prompt_id, sp.tokens, sp.blocks, 0, prompt_id));
    cached_blocks_ += sp.blocks;
  }
}

void EngineScheduler::cache_context(const Request& r) {
  // An older entry of this trajectory (one its turn could not use) gives way to the new one.
  ByTrajectory& where = of(r.trajectory);
  if (where.cached >= 0) {
    cached_blocks_ -= lru_[where.cached].blocks;
    free_blocks_ += lru_[where.cached].blocks;
    lru_.erase(where.cached);
  }
  where.cached = lru_push(cache_entry(false, r.trajectory, r.kv_tokens(), r.blocks, r.shared_tokens, r.prompt_id));
  cached_blocks_ += r.blocks;
}

bool EngineScheduler::seed_resident(int64_t trajectory, int64_t tokens) {
  if (tokens <= 0 || resident_.contains(trajectory)) return false;
  const int64_t blocks = blocks_for(tokens);
  if (blocks > free_blocks_) return false;
  free_blocks_ -= blocks;
  resident_[trajectory] = {tokens, blocks};
  return true;
}

bool EngineScheduler::evict(int64_t want) {
  if (lru_.empty()) return false;
  const int32_t first = lru_.front();
  CacheEntry& entry = lru_.at(first);
  if (!entry.prompt && entry.blocks > want) {
    // vLLM frees a request's blocks last one first, so eviction takes a cached context's tail
    // and leaves its prefix a cache hit.
    entry.blocks -= static_cast<int32_t>(want);
    entry.tokens = static_cast<int32_t>(std::min<int64_t>(entry.tokens, entry.shared_tokens + entry.blocks * block_size_));
    cached_blocks_ -= want;
    free_blocks_ += want;
    return true;
  }
  const CacheEntry e = entry;
  lru_.erase(first);
  if (e.prompt) {
    prompts_.erase(e.key);
  } else {
    of(e.key).cached = -1;
    forget(e.key);
  }
  cached_blocks_ -= e.blocks;
  free_blocks_ += e.blocks;
  // The next entry to go is read ahead, with where its trajectory is found: by the time the cache
  // runs short again, other engines have run and both would be cold.
  if (!lru_.empty()) {
    const CacheEntry& next = lru_[lru_.front()];
    if (!next.prompt) by_trajectory_.prefetch(next.key);
  }
  return true;
}

bool EngineScheduler::allocate(int64_t blocks) {
  if (blocks <= 0) return true;
  if (free_blocks_ + cached_blocks_ < blocks) return false;
  while (free_blocks_ < blocks) evict(blocks - free_blocks_);
  free_blocks_ -= blocks;
  stats_.peak_blocks_used = std::max(stats_.peak_blocks_used, used_blocks());
  return true;
}

void EngineScheduler::preempt(int64_t id) {
  Request& r = slots_[static_cast<size_t>(id)];
  ARLSIM_ASSERT(r.state != Request::State::grouped);  // the group is dissolved before anyone can be
  if (r.state == Request::State::prefilling) --prefilling_;
  else ungrouped_.erase(std::find(ungrouped_.begin(), ungrouped_.end(), id));
  r.state = Request::State::waiting;
  // Recomputation: everything generated so far joins the context to prefill again. With prefix
  // caching the released blocks keep their hashes (vLLM frees them into the evictable pool), so
  // what survives until the request is admitted again is a cache hit, not recomputed.
  r.dropped = r.kv_tokens();
  if (spec_.prefix_caching && r.blocks > 0) cache_context(r);
  else free_blocks_ += r.blocks;
  if (r.shared_tokens > 0) unref_prompt(r.prompt_id);
  prefill_pending_ -= r.context - r.computed;
  r.context += r.generated;
  r.gen_target -= r.generated;
  r.generated = 0;
  r.computed = 0;
  r.blocks = 0;
  r.shared_tokens = 0;
  prefill_pending_ += r.context;
  running_.erase(std::find(running_.begin(), running_.end(), id));
  waiting_.push_front(id);
  ++stats_.preemptions;
}

EngineScheduler::Reuse EngineScheduler::probe_cache(const Request& r) const {
  Reuse u;
  if (r.resident) {  // its own KV, held in use since it arrived (seed_resident)
    u.kind = Reuse::Kind::resident;
    u.computed = r.computed;
    u.blocks = r.blocks;
    return u;
  }
  if (!spec_.prefix_caching) return u;
  // The trajectory's own context from an earlier turn on this engine (whose prompt blocks, if it
  // shared its group's, must still be cached: a prefix with a hole is no hit)...
  if (const int32_t cached = of(r.trajectory).cached; cached >= 0) {
    const CacheEntry& e = lru_[cached];
    const SharedPrompt* sp = prompt(e.prompt_id);
    const bool whole = e.shared_tokens == 0 || (sp && sp->tokens == e.shared_tokens);
    if (whole) {
      u.kind = Reuse::Kind::context;
      u.computed = std::min<int64_t>(e.tokens, r.context - 1);  // the last token is always computed
      u.blocks = e.blocks;
      u.shared_tokens = e.shared_tokens;
      u.leaves_cache = e.blocks + (e.shared_tokens > 0 && sp->refs == 0 ? sp->blocks : 0);
      return u;
    }
  }
  // ...or, for a first turn, the full blocks of its group's prompt.
  const int64_t shared = shareable_prompt(r);
  if (shared == 0) return u;  // (a later turn: no lookup)
  const SharedPrompt* sp = prompt(r.prompt_id);
  if (!sp || sp->tokens > shared) return u;
  u.kind = Reuse::Kind::prompt;
  u.computed = u.shared_tokens = sp->tokens;
  u.leaves_cache = sp->refs == 0 ? sp->blocks : 0;
  return u;
}

void EngineScheduler::commit_reuse(Request& r, const Reuse& u) {
  if (u.kind == Reuse::Kind::context) {
    int32_t& cached = of(r.trajectory).cached;
    lru_.erase(cached);
    cached = -1;
  }
  if (u.shared_tokens > 0) {
    SharedPrompt& sp = *prompt(r.prompt_id);
    if (sp.refs++ == 0) lru_.erase(sp.lru);
  }
  cached_blocks_ -= u.leaves_cache;
  prefill_pending_ -= u.computed - r.computed;
  r.computed = u.computed;
  r.blocks = u.blocks;
  r.shared_tokens = u.shared_tokens;
}

void EngineScheduler::plan(Planned& p) {
  p.chunks.clear();
  p.decodes.clear();
  p.batch.prefill.clear();
  p.batch.decode_seqs = 0;
  p.batch.decode_kv_tokens = 0;
  p.batch.decode_rows_per_seq = 1;
  p.skippable = 0;
  int64_t budget = spec_.max_num_batched_tokens;
  const int64_t preemptions_before = stats_.preemptions;
  int64_t min_remaining = INT64_MAX;  // iterations until the first decoding request ends its turn
  if (plan_decode_group(p, budget, min_remaining)) {
    plan_in_order(p, static_cast<size_t>(decoding()), budget, min_remaining);
  } else {
    dissolve();
    plan_in_order(p, 0, budget, min_remaining);
  }
  // As vLLM V1, an iteration that had to preempt admits nobody.
  if (stats_.preemptions == preemptions_before) admit(p, budget);
  // A window needs a composition that cannot change: not after a preemption, which skipped
  // admission this time only.
  if (p.chunks.empty() && p.batch.decode_seqs > 0 && (stats_.preemptions == preemptions_before || waiting_.empty()))
    p.skippable = window_iterations(p, min_remaining);
}

bool EngineScheduler::plan_decode_group(Planned& p, int64_t& budget, int64_t& min_remaining) {
  const int64_t decoders = decoding();
  if (decoders == 0) return true;
  if (decoders > budget) return false;  // the last ones in order would go without a token
  // Every decoding request gets its token; the blocks they need must fit all together (then the
  // one-by-one allocations in order would all have succeeded, evicting the same cache entries).
  int64_t need = grouped_ > 0 ? blocks_due(steps_) : 0;
  for (int64_t id : ungrouped_) {
    const Request& r = slots_[static_cast<size_t>(id)];
    need += std::max<int64_t>(0, blocks_for(r.kv_tokens() + 1 - r.shared_tokens) - r.blocks);
  }
  if (need > free_blocks_ + cached_blocks_) return false;
  allocate(need);
  blocks_planned_ = true;
  size_t kept = 0;
  for (int64_t id : ungrouped_) {
    Request& r = slots_[static_cast<size_t>(id)];
    const int64_t blocks = blocks_for(r.kv_tokens() + 1 - r.shared_tokens);
    r.blocks = std::max(r.blocks, blocks);
    if (r.blocks == blocks) {
      join(id);
      continue;
    }
    ungrouped_[kept++] = id;  // holds more blocks than its KV needs: followed on its own
    p.decodes.push_back(id);
    min_remaining = std::min(min_remaining, r.gen_target - r.generated);
    p.batch.decode_kv_tokens += r.kv_tokens();
  }
  ungrouped_.resize(kept);
  while (!turn_ends_.empty() && !live(turn_ends_.top())) turn_ends_.pop();
  if (!turn_ends_.empty()) min_remaining = std::min(min_remaining, turn_ends_.top().step - steps_);
  p.batch.decode_seqs = decoders;
  p.batch.decode_kv_tokens += grouped_kv_tokens_;
  budget -= decoders;
  return true;
}

void EngineScheduler::plan_in_order(Planned& p, size_t first, int64_t& budget, int64_t& min_remaining) {
  for (size_t i = first; i < running_.size();) {
    const int64_t id = running_[i];
    Request& r = slots_[static_cast<size_t>(id)];
    int64_t tokens = r.prefilling() ? std::min(r.context - r.computed, budget) : (budget > 0 ? 1 : 0);
    if (tokens == 0) {
      ++i;
      continue;
    }
    const int64_t need = blocks_for(r.kv_tokens() + tokens - r.shared_tokens) - r.blocks;
    bool self_preempted = false;
    while (!allocate(need)) {
      const int64_t victim = running_.back();
      preempt(victim);
      if (victim == id) {
        self_preempted = true;
        break;
      }
    }
    if (self_preempted) break;  // it was the last running request
    r.blocks += std::max<int64_t>(0, need);
    budget -= tokens;
    if (r.prefilling()) {
      p.chunks.emplace_back(id, tokens);
      p.batch.prefill.push_back({tokens, r.computed, r.computed + tokens >= r.context});
    } else {
      p.decodes.push_back(id);
      min_remaining = std::min(min_remaining, r.gen_target - r.generated);
      ++p.batch.decode_seqs;
      p.batch.decode_kv_tokens += r.kv_tokens();
    }
    ++i;
  }
}

void EngineScheduler::admit(Planned& p, int64_t& budget) {
  while (!waiting_.empty() && static_cast<int64_t>(running_.size()) < spec_.max_num_seqs && budget > 0) {
    const int64_t id = waiting_.front();
    Request& r = slots_[static_cast<size_t>(id)];
    // A waiting request holds nothing: what the prefix cache offers is claimed only on admission,
    // and a request that cannot be admitted leaves the cache as it was. Reusing cached blocks pins
    // them; when the chunk's new blocks do not fit beside them the request waits, first in line,
    // as vLLM V1's scheduler leaves it (it does not start afresh, which would evict its own prefix
    // and, with long prompts, preempt itself again and again). Admission stays monotone in the
    // free space.
    const bool alone = running_.empty() && p.batch.decode_seqs == 0 && p.chunks.empty();
    auto fits = [&](const Reuse& u, int64_t& tokens, int64_t& need) {
      const int64_t remaining = r.context - u.computed;
      tokens = spec_.chunked_prefill ? std::min(remaining, budget) : remaining;
      need = blocks_for(u.computed + tokens - u.shared_tokens) - u.blocks;
      // Without chunked prefill a prompt must fit the budget whole (or run alone).
      if (!spec_.chunked_prefill && remaining > budget && !alone) return false;
      return need <= 0 || free_blocks_ + cached_blocks_ - u.leaves_cache >= need;
    };
    const Reuse u = probe_cache(r);
    int64_t tokens = 0, need = 0;
    if (!fits(u, tokens, need)) break;
    commit_reuse(r, u);
    allocate(need);
    if (u.kind == Reuse::Kind::resident) stats_.resident_tokens += r.computed;
    else stats_.cached_tokens += r.computed;
    r.resident = false;
    stats_.recomputed_tokens += std::max<int64_t>(0, r.dropped - r.computed);
    r.dropped = 0;
    r.blocks += std::max<int64_t>(0, need);
    budget -= tokens;
    waiting_.pop_front();
    r.state = Request::State::prefilling;
    r.admitted = admissions_++;
    running_.push_back(id);
    ++prefilling_;
    p.chunks.emplace_back(id, tokens);
    p.batch.prefill.push_back({tokens, r.computed, r.computed + tokens >= r.context});
  }
}

int64_t EngineScheduler::group_blocks(int64_t iterations) const {
  if (grouped_ == 0 || iterations <= 1) return 0;
  int64_t need = whole_blocks(iterations - 1) * grouped_;  // each needs one per block_size steps
  // The rest, step by step: the key due at step t is -t modulo the block size.
  size_t key = static_cast<size_t>(block_offset(-steps_));
  for (int64_t j = 1, rest = block_offset(iterations - 1); j <= rest; ++j) {
    key = key == 0 ? static_cast<size_t>(block_size_) - 1 : key - 1;
    need += due_[key];
  }
  return need;
}

int64_t EngineScheduler::window_iterations(const Planned& p, int64_t k) const {
  // Until the first request ends its turn (k), and while the cache can grow every decoding
  // request without preempting anyone. Over k iterations a request needs at most
  // ceil(k / block_size) + 1 more blocks: when even that fits, no request needs a look.
  int64_t available = free_blocks_ + cached_blocks_;
  // A waiting head that would reuse cached blocks it does not fit beside may fit once an
  // allocation evicts them, taken without its hit (evicting moves blocks from cached to free and
  // leaves their sum), as iterating shows at the next admission: when it could, the window stops
  // before it would evict anything.
  if (!waiting_.empty() && static_cast<int64_t>(running_.size()) < spec_.max_num_seqs) {
    const Request& head = slots_[static_cast<size_t>(waiting_.front())];
    const Reuse u = probe_cache(head);
    const int64_t budget = spec_.max_num_batched_tokens - p.batch.decode_seqs;
    if ((u.kind == Reuse::Kind::context || u.kind == Reuse::Kind::prompt) && u.leaves_cache > 0 && budget > 0 &&
        (spec_.chunked_prefill || head.context <= budget)) {
      const int64_t tokens = spec_.chunked_prefill ? std::min(head.context, budget) : head.context;
      if (free_blocks_ + cached_blocks_ + 2 >= blocks_for(tokens)) available = free_blocks_;  // +2: rounding
    }
  }
  const int64_t d = p.batch.decode_seqs;
  if (k <= available && d * (blocks_for(k) + 1) <= available) return k;
  auto extra_blocks = [&](int64_t iterations) {
    int64_t extra = group_blocks(iterations);
    for (int64_t id : p.decodes) {
      const Request& r = slots_[static_cast<size_t>(id)];
      extra += blocks_for(r.kv_tokens() + iterations - r.shared_tokens) - r.blocks;
    }
    return extra;
  };
  if (extra_blocks(k) <= available) return k;
  int64_t lo = 1, hi = k;  // extra_blocks(1) == 0 <= available: the plan allocated it
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (extra_blocks(mid) <= available) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

void EngineScheduler::complete(const Planned& p, int64_t iterations, std::vector<int64_t>& finished,
                               std::vector<int64_t>& first_tokens) {
  ARLSIM_ASSERT(iterations == 1 || p.chunks.empty());
  for (const auto& [id, tokens] : p.chunks) {
    Request& r = slots_[static_cast<size_t>(id)];
    r.computed += tokens;
    prefill_pending_ -= tokens;
    stats_.prefill_tokens += tokens;
    if (r.computed >= r.context) {
      // The first of those still prefilling starts decoding (see the class comment).
      ARLSIM_ASSERT(prefilling_ > 0 && running_[running_.size() - static_cast<size_t>(prefilling_)] == id);
      --prefilling_;
      r.state = Request::State::decoding;
      ungrouped_.push_back(id);
      // The iteration that completes a prompt samples its first token.
      r.generated += 1;
      r.produced += 1;
      if (!r.first_token_seen) {
        r.first_token_seen = true;
        first_tokens.push_back(r.trajectory);
      }
      if (r.shared_tokens == 0 && spec_.prefix_caching && r.prompt_tokens >= block_size_ && r.prompt_id >= 0 &&
          !prompt(r.prompt_id)) {
        // Its prompt's full blocks become the group's shared prefix.
        const int64_t shared = shareable_prompt(r);
        if (shared > 0) {
          SharedPrompt sp;
          sp.tokens = shared;
          sp.blocks = whole_blocks(shared);
          sp.refs = 1;
          prompts_[r.prompt_id] = sp;
          r.blocks -= sp.blocks;
          r.shared_tokens = shared;
        }
      }
      if (r.generated >= r.gen_target) finished.push_back(r.trajectory);
    }
  }
  // Decoding requests end their turn in the running order.
  group_finished_.clear();
  for (int64_t id : p.decodes) {
    Request& r = slots_[static_cast<size_t>(id)];
    if (iterations > 1) {
      const int64_t need = blocks_for(r.kv_tokens() + iterations - r.shared_tokens) - r.blocks;
      const bool ok = allocate(need);
      ARLSIM_ASSERT(ok);
      r.blocks += std::max<int64_t>(0, need);
    }
    r.generated += iterations;
    r.produced += iterations;
    ARLSIM_ASSERT(r.generated <= r.gen_target);
    if (r.generated >= r.gen_target) group_finished_.push_back(id);
  }
  if (grouped_ > 0) {
    // The plan gave the group its blocks for the first iteration; the others need theirs now.
    const bool ok = allocate(group_blocks(iterations));
    ARLSIM_ASSERT(ok);
    grouped_kv_tokens_ += iterations * grouped_;
  }
  steps_ += iterations;
  blocks_planned_ = false;
  while (!turn_ends_.empty() && turn_ends_.top().step <= steps_) {
    const TurnEnd e = turn_ends_.top();
    turn_ends_.pop();
    if (!live(e)) continue;
    ARLSIM_ASSERT(e.step == steps_);
    group_finished_.push_back(e.slot);
  }
  std::sort(group_finished_.begin(), group_finished_.end(), [&](int64_t a, int64_t b) {
    return slots_[static_cast<size_t>(a)].admitted < slots_[static_cast<size_t>(b)].admitted;
  });
  for (int64_t id : group_finished_) finished.push_back(slots_[static_cast<size_t>(id)].trajectory);
  stats_.iterations += iterations;
}

Request EngineScheduler::release(int64_t trajectory) {
  ByTrajectory& where = of(trajectory);
  const int64_t id = where.slot;
  ARLSIM_ASSERT(id >= 0);
  where.slot = -1;
  free_slots_.push_back(id);
  switch (slots_[static_cast<size_t>(id)].state) {
    case Request::State::grouped:
      ARLSIM_ASSERT(!blocks_planned_);  // a request leaves between iterations
      leave(id);
      break;
    case Request::State::decoding: ungrouped_.erase(std::find(ungrouped_.begin(), ungrouped_.end(), id)); break;
    case Request::State::prefilling: --prefilling_; break;
    case Request::State::waiting: break;
  }
  Request r = slots_[static_cast<size_t>(id)];
  prefill_pending_ -= r.context - r.computed;
  running_.erase(std::find(running_.begin(), running_.end(), id));
  if (spec_.prefix_caching) {
    cache_context(r);
  } else {
    free_blocks_ += r.blocks;
    forget(trajectory);
  }
  if (r.shared_tokens > 0) unref_prompt(r.prompt_id);
  return r;
}

}  // namespace arlsim::rl
