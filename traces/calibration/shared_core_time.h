// The time a rank's span of work would have taken with a core to itself, in a run whose ranks
// shared the machine's cores.
//
// Why: `tandem run` on the host backend runs each rank as one MPI process whose kernels, Allocs
// and Frees run on its own BLAS threads (exec/core_placement.cc). When ranks x threads exceed the
// cores, the ranks are unbound and yield while they wait, so a kernel timed in such a run holds
// the time its rank was descheduled for another busy rank. The simulator shares the cores itself
// (sim/host_core_share.h), so the calibration profile must hold each span's time alone, taken
// out with the simulator's law:
//
//   with C cores and B BLAS threads per rank, a rank that is busy at time t runs at the rate
//   min(1, C / (B x n(t))), n(t) the number of ranks busy at t (the rank itself included; a rank
//   waiting on a collective or idle demands nothing: it yields).
//
// A span [from, to] of a busy rank therefore did the work of alone(from, to) = the integral of that
// rate over [from, to]. A rank counts once at t, however many of its own spans hold t (they are
// merged). When n(t) x B <= C everywhere the ranks never shared a core: alone is the span itself,
// exactly (to - from, no rounding), so that a run that fit its cores calibrates as before.
#pragma once

#include <utility>
#include <vector>

namespace tandem {

// A span of time [first, second], in seconds of the run's one time origin (trace.proto).
using TimeSpan = std::pair<double, double>;

class SharedCoreTime {
 public:
  // `busy[r]`: rank r's busy spans (any order; they may overlap); `cores` C and
  // `threads_per_rank` B of the run's placement. C or B <= 0 (unknown): nothing is taken out.
  SharedCoreTime(const std::vector<std::vector<TimeSpan>>& busy, int cores, int threads_per_rank);

  // The integral over [from, to] (from <= to) of min(1, C / (B x max(1, n(t)))): a span of a busy
  // rank counts that rank in n(t) already; a span outside every rank's busy spans counts the rank
  // that asks (n = 1). O(log of the number of spans).
  double alone(double from, double to) const;
  // Whether the ranks ever shared the cores (some n(t) x B > C): otherwise alone(from, to) == to - from.
  bool shared() const { return shared_; }

 private:
  // The integral of the rate from times_.front() to t.
  double integral_to(double t) const;

  double outside_rate_ = 1;      // min(1, C / B): n = 1
  bool shared_ = false;
  std::vector<double> times_;    // breakpoints, ascending: n(t) is constant on [times_[i], times_[i+1])
  std::vector<double> rates_;    // the rate on [times_[i], times_[i+1]); the last: outside_rate_
  std::vector<double> prefix_;   // the integral of the rate from times_[0] to times_[i]
};

}  // namespace tandem
