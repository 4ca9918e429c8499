// Where the ranks of a host run go (exec/run_args.h).
#include <sched.h>

#include <algorithm>

#include "exec/run_args.h"

namespace tandem::exec {

CorePlacement core_placement_for(int ranks, int cores) {
  CorePlacement p;
  p.cores = std::max(1, cores);
  p.blas_threads = std::max(1, p.cores / std::max(1, ranks));
  p.bind = ranks <= p.cores ? "core" : "none";
  return p;
}

int online_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) != 0) return 1;
  return std::max(1, CPU_COUNT(&set));
}

}  // namespace tandem::exec
