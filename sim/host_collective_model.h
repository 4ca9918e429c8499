// How long a collective of the host driver takes on this machine, for the collectives a
// calibration profile's measured run did not hold (sim/compute_cost_model.h, CalibrationTable):
// from the profile's collective probe (exec/collective_probe.h: the same MPI calls timed over
// 8 B..4 MiB per op and group size, under the run's placement) where it has the op and group
// size, else from the size law over the run's own collectives (sim/host_compute_model.h,
// SizeLaw: per op, else all ops pooled). The run's own shapes are looked up before this model.
//
// Between probed sizes the time is interpolated linearly in (log bytes, log time), which is exact
// for a power law between neighbours and follows the bend from the latency-bound to the
// bandwidth-bound regime; below the smallest probed size the smallest's time (the latency floor);
// above the largest, that time scaled by bytes (the bandwidth regime: the largest probed size,
// 4 MiB, moves at the copy bandwidth, a constant per byte).
//
// A collective's time grows with the time since its ranks' previous collective (docs/exec.md,
// session 17: the state its previous call left warm decays), so the probe times each size also
// after gaps (traces/calibration/collective_probe_table.h, kProbedGapsS: 0 to 8 ms). The time at a
// gap: the size interpolation above at each probed gap, then linear in the gap between the two
// probed gaps around it, clamped to the smallest and the largest probed gap. A probe without gaps
// (written before them) has gap 0 only: every gap gets its time, as before.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <utility>
#include <vector>

#include "calibration.pb.h"
#include "shared/schedule.h"
#include "sim/host_compute_model.h"

namespace tandem::sim {

struct ProbedCollective {
  CollectiveOp op = CollectiveOp::kAllReduce;
  int group_size = 0;
  int64_t bytes = 0;
  double time_s = 0;
  double gap_s = 0;  // the ranks' time since their previous collective (0: back to back)
};

// The profile's collective_probe entries, or its shared_collective_probe's (ranks sharing cores).
std::vector<ProbedCollective> probed_collectives(const proto::CalibrationProfile& profile, bool shared = false);
// The mean over the measured run's collective instances of a member's wait for the last arrival
// (CollectiveTime.mean_wait_s weighted by samples; 0 without collectives). Ranks that do the same
// work still arrive apart, by the noise of their kernels (measured, tiny GPT TP=2 at load 19: the
// 16 KiB all-reduce 21 us from the last arrival, 50 us on average over both members); the
// simulator's ranks are identical, so a host profile's collective costs that wait too: a measured
// shape its own, the others this mean.
double mean_collective_wait_s(const proto::CalibrationProfile& profile);

class HostCollectiveModel {
 public:
  HostCollectiveModel() = default;
  // `measured`: per op, the run's (bytes, time, weight) points; `probe`: the probed points.
  HostCollectiveModel(const std::map<int, std::vector<std::array<double, 3>>>& measured,
                      const std::vector<ProbedCollective>& probe, double wait_s = 0);
  // Seconds (the wait included) after `gap_s` since the ranks' previous collective; negative when
  // neither the probe nor the run's collectives go on.
  double time_s(CollectiveOp op, int group_size, int64_t bytes, double gap_s = 0) const;
  // Without the wait: from the probe (interpolated in the gap), else the size law (no gap).
  double transfer_s(CollectiveOp op, int group_size, int64_t bytes, double gap_s = 0) const;
  bool probed(CollectiveOp op, int group_size) const { return probe_.count({int(op), group_size}) > 0; }
  // The wait every time_s holds (the constructor's wait_s: the profile's mean_collective_wait_s).
  double wait_s() const { return wait_s_; }

 private:
  std::map<int, SizeLaw> by_op_;
  SizeLaw pooled_;
  double wait_s_ = 0;
  using Sizes = std::vector<std::pair<double, double>>;  // sorted (bytes, s)
  static double at_bytes(const Sizes& pts, int64_t bytes);
  std::map<std::pair<int, int>, std::map<double, Sizes>> probe_;  // (op, group size) -> gap -> sizes
};

}  // namespace tandem::sim
