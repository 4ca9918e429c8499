// The job's answer to a stall (docs/exec.md, Faults): a rank whose watchdog fires prints its own
// wait, sends what it waits on to every other rank over a communicator of its own, collects the
// reports of the other stalled ranks for a grace period (a stopped rank sends none), and the
// lowest reporting rank prints which rank stopped making progress (exec/stall_verdict.h) and
// aborts the job with exit code 4; the others abort after a further grace period if the job is
// still alive then.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace tandem::exec {

class StallExchange {
 public:
  // Collective over MPI_COMM_WORLD (a dup of it carries the reports). grace_s: how long a stalled
  // rank listens for the others' reports.
  explicit StallExchange(double grace_s);
  ~StallExchange();
  StallExchange(const StallExchange&) = delete;
  StallExchange& operator=(const StallExchange&) = delete;

  // Never returns: the job ends with exit code 4 (ErrorKind::kStalled).
  [[noreturn]] void report_and_abort(const std::string& wait, const std::vector<int>& waits_on);

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, world_ = 1;
  double grace_s_;
};

// The grace period for a --timeout: half of it, within [1, 10] seconds.
double stall_grace_s(double timeout_s);

}  // namespace tandem::exec
