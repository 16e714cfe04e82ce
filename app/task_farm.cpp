#include "app/task_farm.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>

#include "app/commands.h"
#include "sim/core/time.h"

#ifdef ARLSIM_WITH_MPI_FARM
#include <mpi.h>
#endif

namespace arlsim::app {

bool launched_by_mpirun() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_SIZE"}) {
    const char* value = std::getenv(v);
    if (value && *value) return true;
  }
  return false;
}

int rank_from_environment() {
  if (!launched_by_mpirun()) return 0;
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* value = std::getenv(v); value && *value) return std::atoi(value);
  return 0;
}

int processes_on_this_machine() {
#ifdef ARLSIM_WITH_MPI_FARM
  if (!launched_by_mpirun()) return 1;
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_SIZE", "PMIX_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMI_LOCAL_SIZE"})
    if (const char* value = std::getenv(v); value && *value) return std::max(1, std::atoi(value));
#endif
  // Without MPI the processes of an mpirun but rank 0 do nothing (TaskFarm): rank 0 has it all.
  return 1;
}

int TaskFarm::local_rank() const {
  if (size_ <= 1) return 0;
  for (const char* v : {"OMPI_COMM_WORLD_LOCAL_RANK", "PMIX_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK", "SLURM_LOCALID"})
    if (const char* value = std::getenv(v); value && *value) return std::atoi(value);
  return rank_;
}

void TaskFarm::broadcast(std::vector<std::string>& items, int root) {
  std::string all;  // each item as its length, ':' and its bytes
  for (const auto& item : items) all += std::to_string(item.size()) + ":" + item;
  broadcast(all, root);
  items.clear();
  for (size_t at = 0; at < all.size();) {
    const size_t colon = all.find(':', at);
    const size_t size = std::stoull(all.substr(at, colon - at));
    items.push_back(all.substr(colon + 1, size));
    at = colon + 1 + size;
  }
}

#ifndef ARLSIM_WITH_MPI_FARM

TaskFarm::TaskFarm() {
  if (!launched_by_mpirun()) return;
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* value = std::getenv(v); value && *value) {
      rank_ = std::atoi(value);
      break;
    }
  if (rank_ == 0) std::fprintf(stderr, "arlsim: built without MPI: rank 0 runs the whole sweep alone, the other ranks nothing\n");
}
TaskFarm::~TaskFarm() = default;

std::vector<std::string> TaskFarm::map(size_t n, const std::function<std::string(size_t)>& task, std::vector<int>& owner) {
  std::vector<std::string> out;
  if (rank_ != 0) return out;
  out.resize(n);
  owner.assign(n, 0);
  for (size_t i = 0; i < n; ++i) out[i] = task(i);
  return out;
}

std::vector<std::string> TaskFarm::run_on_owners(const std::vector<size_t>& indices, const std::vector<int>&,
                                                 const std::function<std::string(size_t)>& task) {
  std::vector<std::string> out;
  if (rank_ != 0) return out;
  for (size_t i : indices) out.push_back(task(i));
  return out;
}

void TaskFarm::abort(const std::string& message, int status) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::exit(status);
}

void TaskFarm::broadcast(std::string&, int) {}
std::vector<std::string> TaskFarm::all_gather(const std::string& mine) { return {mine}; }

#else

void TaskFarm::broadcast(std::string& bytes, int root) {
  if (!started_) return;
  int64_t n = static_cast<int64_t>(bytes.size());
  MPI_Bcast(&n, 1, MPI_INT64_T, root, MPI_COMM_WORLD);
  bytes.resize(static_cast<size_t>(n));
  MPI_Bcast(bytes.data(), static_cast<int>(n), MPI_CHAR, root, MPI_COMM_WORLD);
}

std::vector<std::string> TaskFarm::all_gather(const std::string& mine) {
  if (!started_) return {mine};
  const int n = static_cast<int>(mine.size());
  std::vector<int> counts(static_cast<size_t>(size_)), offsets(static_cast<size_t>(size_));
  MPI_Allgather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, MPI_COMM_WORLD);
  int total = 0;
  for (size_t r = 0; r < counts.size(); ++r) {
    offsets[r] = total;
    total += counts[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), counts.data(), offsets.data(), MPI_CHAR, MPI_COMM_WORLD);
  std::vector<std::string> out;
  for (size_t r = 0; r < counts.size(); ++r)
    out.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(counts[r])));
  return out;
}

namespace {

constexpr int kResultTag = 1, kTaskTag = 2, kOwnedTag = 3;

// A message: the task's index (8 bytes, -1 for none) and its result.
std::string pack(int64_t index, const std::string& payload) {
  std::string m(sizeof index, '\0');
  std::memcpy(m.data(), &index, sizeof index);
  return m + payload;
}

std::string receive(int source, int tag, int& from, int64_t& index) {
  MPI_Status st;
  MPI_Probe(source, tag, MPI_COMM_WORLD, &st);
  int count = 0;
  MPI_Get_count(&st, MPI_CHAR, &count);
  std::string m(static_cast<size_t>(count), '\0');
  MPI_Recv(m.data(), count, MPI_CHAR, st.MPI_SOURCE, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  from = st.MPI_SOURCE;
  std::memcpy(&index, m.data(), sizeof index);
  return m.substr(sizeof index);
}

void send(int to, int tag, const std::string& m) {
  MPI_Send(m.data(), static_cast<int>(m.size()), MPI_CHAR, to, tag, MPI_COMM_WORLD);
}

}  // namespace

TaskFarm::TaskFarm() {
  if (!launched_by_mpirun()) return;
  // Rank 0's main thread waits for requests while its second thread runs tasks: polling without
  // yielding would take a core from that thread (or from another rank) when the machine has no
  // spare one. Open MPI yields while idle with this; a value the user set is kept.
  setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
  int provided = 0;
  MPI_Init_thread(nullptr, nullptr, MPI_THREAD_FUNNELED, &provided);
  started_ = true;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
}

TaskFarm::~TaskFarm() {
  if (started_) MPI_Finalize();
}

void TaskFarm::abort(const std::string& message, int status) {
  std::fprintf(stderr, "%s\n", message.c_str());
  std::fflush(stderr);
  if (started_) MPI_Abort(MPI_COMM_WORLD, status);
  std::exit(status);
}

namespace {
// A task's result, or the abort of every process when it throws.
std::string run_task(TaskFarm& farm, const std::function<std::string(size_t)>& task, size_t i) {
  try {
    return task(i);
  } catch (const std::bad_alloc&) {
    // As one process reports it: a request too large for the machine, not a fault.
    farm.abort("arlsim: out of memory on rank " + std::to_string(farm.rank()) +
                   ": an allocation failed; ask for less at once (fewer steps, trajectories or candidates)",
               2);
  } catch (const SimTimeOutOfRange& e) {
    farm.abort(std::string("arlsim: ") + e.what() + kClockAdvice, 2);  // as one process reports it
  } catch (const std::exception& e) {
    farm.abort("arlsim: internal error on rank " + std::to_string(farm.rank()) + ": " + e.what(), 1);
  }
}
}  // namespace

std::vector<std::string> TaskFarm::map(size_t n, const std::function<std::string(size_t)>& task, std::vector<int>& owner) {
  std::vector<std::string> out;
  if (rank_ != 0) {
    send(0, kResultTag, pack(-1, ""));  // ready
    for (;;) {
      int64_t index = -1;
      MPI_Recv(&index, 1, MPI_INT64_T, 0, kTaskTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (index < 0) return out;
      send(0, kResultTag, pack(index, run_task(*this, task, static_cast<size_t>(index))));
    }
  }
  out.resize(n);
  owner.assign(n, 0);
  std::mutex m;
  size_t next = 0;
  const auto take = [&]() -> int64_t {
    std::lock_guard<std::mutex> lock(m);
    return next < n ? static_cast<int64_t>(next++) : -1;
  };
  // Rank 0's own share runs beside the queue, which this thread serves; a failure there is
  // reported from this thread (MPI is called from it only) once the queue is done.
  std::string failure;
  bool beyond_clock = false;
  std::thread local([&] {
    try {
      for (int64_t i; (i = take()) >= 0;) out[static_cast<size_t>(i)] = task(static_cast<size_t>(i));
    } catch (const std::exception& e) {
      std::lock_guard<std::mutex> lock(m);
      failure = e.what();
      beyond_clock = dynamic_cast<const SimTimeOutOfRange*>(&e) != nullptr;
      next = n;  // nothing more for anyone
    }
  });
  for (int active = size_ - 1; active > 0;) {
    int from = 0;
    int64_t index = -1;
    std::string result = receive(MPI_ANY_SOURCE, kResultTag, from, index);
    if (index >= 0) {
      out[static_cast<size_t>(index)] = std::move(result);
      owner[static_cast<size_t>(index)] = from;
    }
    const int64_t next_task = take();
    MPI_Send(&next_task, 1, MPI_INT64_T, from, kTaskTag, MPI_COMM_WORLD);
    if (next_task < 0) --active;
  }
  local.join();
  if (beyond_clock) abort("arlsim: " + failure + kClockAdvice, 2);
  if (!failure.empty()) abort("arlsim: internal error on rank 0: " + failure, 1);
  return out;
}

std::vector<std::string> TaskFarm::run_on_owners(const std::vector<size_t>& indices, const std::vector<int>& owner,
                                                 const std::function<std::string(size_t)>& task) {
  // Rank 0's list of (index, owner) to everyone.
  std::vector<int64_t> pairs;
  if (rank_ == 0)
    for (size_t i : indices) pairs.insert(pairs.end(), {static_cast<int64_t>(i), owner[i]});
  int64_t count = static_cast<int64_t>(pairs.size());
  MPI_Bcast(&count, 1, MPI_INT64_T, 0, MPI_COMM_WORLD);
  pairs.resize(static_cast<size_t>(count));
  MPI_Bcast(pairs.data(), static_cast<int>(count), MPI_INT64_T, 0, MPI_COMM_WORLD);
  std::vector<std::string> out;
  if (rank_ != 0) {
    for (size_t k = 0; k < pairs.size(); k += 2)
      if (pairs[k + 1] == rank_) send(0, kOwnedTag, pack(pairs[k], run_task(*this, task, static_cast<size_t>(pairs[k]))));
    return out;
  }
  out.resize(pairs.size() / 2);
  size_t remote = 0;
  for (size_t k = 0; k < pairs.size(); k += 2) {
    if (pairs[k + 1] == 0) out[k / 2] = run_task(*this, task, static_cast<size_t>(pairs[k]));
    else ++remote;
  }
  for (; remote > 0; --remote) {
    int from = 0;
    int64_t index = -1;
    std::string result = receive(MPI_ANY_SOURCE, kOwnedTag, from, index);
    for (size_t k = 0; k < pairs.size(); k += 2)
      if (pairs[k] == index) out[k / 2] = std::move(result);
  }
  return out;
}

#endif

}  // namespace arlsim::app
