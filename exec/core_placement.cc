// Where the ranks of a host run go (exec/run_args.h).
#include <sched.h>

#include <algorithm>
#include <cstdint>

#include "exec/run_args.h"

namespace tandem::exec {

CorePlacement core_placement_for(int ranks, int cores) {
  CorePlacement p;
  p.cores = std::max(1, cores);
  p.blas_threads = std::max(1, p.cores / std::max(1, ranks));
  p.bind = ranks <= p.cores ? "core" : "none";
  // A rank's BLAS threads need cores of their own: bound to one core, a rank's second thread
  // (OpenBLAS spins after each GEMM) took time slices from its main thread on that core.
  p.cores_per_rank = ranks <= p.cores ? p.blas_threads : 1;
  p.yield_when_idle = yields_when_idle(ranks, p.cores, p.blas_threads);
  return p;
}

bool yields_when_idle(int ranks, int cores, int blas_threads) {
  return cores <= 0 || int64_t(std::max(1, ranks)) * std::max(1, blas_threads) > cores;
}

int online_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace tandem::exec
