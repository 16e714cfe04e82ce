// Processes sharing a sweep when the program runs under mpirun (Open MPI's, from Debian); one
// process alone otherwise, with nothing started. Rank 0 hands out tasks by index as the other
// ranks ask for them (a master-worker queue: the costs of candidates vary a lot) and runs tasks
// itself on a second thread; results come back to rank 0 as text. MPI calls stay on the main
// thread (MPI_THREAD_FUNNELED).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace arlsim::app {

class TaskFarm {
 public:
  // Starts MPI when the environment says mpirun launched this process; alone otherwise. A
  // program built without MPI under mpirun knows its rank from the environment: the ranks but 0
  // then do nothing, and rank 0 runs the whole sweep alone.
  TaskFarm();
  ~TaskFarm();
  TaskFarm(const TaskFarm&) = delete;
  TaskFarm& operator=(const TaskFarm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  bool distributed() const { return size_ > 1; }

  // Runs task(i) once for every i < n, across the processes; on rank 0 returns every result by
  // index and fills owner[i] with the rank that ran i; elsewhere returns nothing. A task that
  // throws ends every process (abort).
  std::vector<std::string> map(size_t n, const std::function<std::string(size_t)>& task, std::vector<int>& owner);
  // Rank 0 names `indices` with `owner` (map's); every rank runs task(i) for those it owns, and
  // rank 0 gets the results in the order of `indices`. The other ranks pass anything: rank 0's
  // lists reach them.
  std::vector<std::string> run_on_owners(const std::vector<size_t>& indices, const std::vector<int>& owner,
                                         const std::function<std::string(size_t)>& task);
  // Collective operations every process calls in the same order (alone: nothing to exchange).
  // `bytes` as `root` has it, on every process.
  void broadcast(std::string& bytes, int root);
  // `items` as `root` has them, on every process (map's results to all, say).
  void broadcast(std::vector<std::string>& items, int root);
  // Every process's `mine`, by rank, on every process.
  std::vector<std::string> all_gather(const std::string& mine);
  // This process's index among those on its machine (the local rank Open MPI, PMIx, MPICH or
  // Slurm gives it; 0 when alone).
  int local_rank() const;
  // Ends every process with `status` after printing `message` (a rank that fails must not leave
  // the others waiting for it). Alone, prints and exits.
  [[noreturn]] void abort(const std::string& message, int status);

 private:
  int rank_ = 0, size_ = 1;
  bool started_ = false;
};

// Whether mpirun (or another process manager) launched this process with others.
bool launched_by_mpirun();
// This process's rank as the process manager's environment gives it (before MPI starts); 0 when
// not launched by one, or when it does not say.
int rank_from_environment();
// How many processes of this launch share this machine and work, as the process manager's
// environment says (Open MPI's local size); 1 when not launched by one, when it does not say, or
// in a build without MPI (whose processes but rank 0 do nothing).
int processes_on_this_machine();

}  // namespace arlsim::app
