// Where the ranks of a host run go (exec/run_args.h).
#include <sched.h>

#include <algorithm>
#include <cstdint>

#include "exec/run_args.h"

namespace tandem::exec {

CorePlacement core_placement_for(int ranks, int cores) {
  CorePlacement p;
  p.cores = std::max(1, cores);
  // One BLAS thread per rank, whatever the spare cores (exec/run_args.h): a calibration profile's
  // kernel times are a rank's one-thread times, and they hold for a run of any rank count only if
  // every run gives its ranks the same thread count (docs/exec.md, "BLAS threads per rank").
  p.blas_threads = 1;
  p.bind = ranks <= p.cores ? "core" : "none";
  p.cores_per_rank = 1;
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
