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
  std::string probe_path;  // hidden: probe the collectives instead of training (exec/collective_probe.h)
  std::string state_probe_path;  // --probe-state: the machine state probe alone (exec/state_probe.h)
};

// Where the ranks of a host run go: cores of this machine, BLAS threads per rank (always one: the
// calibration profile's kernel times are one thread's, and a lone rank's second OpenBLAS thread
// made the tiny GPT 8-22 % slower on this 2-core machine, not faster; docs/exec.md, "BLAS threads
// per rank") and mpirun's binding ("core", one core per rank, when every rank has a core of its
// own, "none" when ranks share cores).
//
// A rank whose cores are its own polls without yielding while it waits (MPI, the step barrier):
// on a machine with other work, sched_yield hands the core to another process for a time slice
// (measured: TP=2 all-reduces of the tiny GPT took 92 ms each at load 11 with yields, the
// kernels of the step 21 ms; docs/exec.md, "Where the time goes"). Ranks that share cores yield,
// so that the rank a message waits on gets to run.
struct CorePlacement {
  int cores = 1;
  int blas_threads = 1;
  const char* bind = "none";
  int cores_per_rank = 1;  // mpirun --map-by slot:PE=N: the cores each rank is bound to (bind "core")
  bool yield_when_idle = true;
};
CorePlacement core_placement_for(int ranks, int cores);
// Whether a rank of `ranks` on `cores` with `blas_threads` each yields while it waits: unless
// ranks x threads fit the cores (each rank polls on cores of its own).
bool yields_when_idle(int ranks, int cores, int blas_threads);
// Cores this process may run on (sched_getaffinity), at least 1.
int online_cores();

// One rank of `tandem run` under mpirun, with either driver (exec/rank_worker.cc): trains, gathers to rank 0, prints. Returns the exit code; a
// failure on any rank aborts the job (MPI_Abort) with a message naming the rank.
int run_rank_worker(const RunArgs& args);

}  // namespace tandem::exec
