// The command line of `tandem run` (exec/run_main.cc), shared by the launcher and its workers.
#pragma once

#include <string>
#include <vector>

namespace tandem::exec {

struct RunArgs {
  std::string scenario;
  std::vector<std::string> sets;  // --set overrides, then cluster.gpus from -n
  int ranks = 0;                  // -n; 0: cluster.gpus
  std::string driver = "host";
  int steps = 5;
  std::string trace_path;
  bool json = false;
  double timeout_s = 60;
  bool worker = false;  // hidden: this process is one rank under mpirun
  int cores = 0;         // hidden: online cores the launcher saw (0: not told)
  int blas_threads = 0;  // hidden: BLAS threads per rank the launcher set
};

// Where the ranks of a host run go: cores of this machine, BLAS threads per rank (cores / ranks,
// at least 1, so that ranks x threads <= cores whenever ranks <= cores) and mpirun's binding
// ("core" when every rank has a core of its own, "none" when ranks share cores).
struct CorePlacement {
  int cores = 1;
  int blas_threads = 1;
  const char* bind = "none";
};
CorePlacement core_placement_for(int ranks, int cores);
// Cores this process may run on (sched_getaffinity), at least 1.
int online_cores();

// One rank of `tandem run` under mpirun, with either driver (exec/rank_worker.cc): trains, gathers to rank 0, prints. Returns the exit code; a
// failure on any rank aborts the job (MPI_Abort) with a message naming the rank.
int run_rank_worker(const RunArgs& args);

}  // namespace tandem::exec
