// A command's memory budget. Every command that may allocate in proportion to its input (ranks x
// tasks, trace events) estimates what it will need before it allocates and refuses, with the
// estimate and the flag that raises the limit, when the estimate is over the budget. The budget
// is `--max-memory GIB` where a program takes it, else half of this machine's physical memory.
#pragma once

#include <cstdint>
#include <string>

namespace tandem {

// Half of the physical memory (sysconf), at least 1 GiB.
int64_t default_max_memory_bytes();

struct ResourceLimit {
  int64_t max_memory_bytes = default_max_memory_bytes();
  // The flag a user gives to raise the limit, named in the refusal.
  std::string flag = "--max-memory";
  // Wall-time budget of a simulation in seconds (`--max-time`, sim/sim_time_estimate.h); 0: none.
  // One hour by default: a run longer than that is rarely meant on one machine.
  double max_time_s = 3600;
};

// Throws Error (bad input) when estimate_bytes > limit.max_memory_bytes:
//   "<what> needs about <X> GiB of memory (<how>), more than the limit of <Y> GiB; raise it with
//    --max-memory GIB or make the run smaller".
// `how` says what the estimate counts ("4096 ranks x 180000 tasks x 48 B").
void check_memory_estimate(int64_t estimate_bytes, const std::string& what, const std::string& how,
                           const ResourceLimit& limit);

// Multiplication and addition of sizes that refuse (Error, bad input, naming `what`) instead of
// overflowing int64: for the planner's and the estimators' arithmetic on user-given counts.
int64_t checked_mul(int64_t a, int64_t b, const char* what);
int64_t checked_add(int64_t a, int64_t b, const char* what);

}  // namespace tandem
