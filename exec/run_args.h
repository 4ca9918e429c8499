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
};

// One rank of `tandem run` under mpirun, with either driver (exec/rank_worker.cc): trains, gathers to rank 0, prints. Returns the exit code; a
// failure on any rank aborts the job (MPI_Abort) with a message naming the rank.
int run_rank_worker(const RunArgs& args);

}  // namespace tandem::exec
