// Collective and point-to-point times as the simulator prices a collective that meets no other
// traffic (its closed form, sim/flow_launcher.cc): NCCL's algorithm and protocol choice
// (sim/nccl_tuner.h), the phase-level plan (sim/collective_algorithms.h, plan_collective) and
// uncontended_time(), on the fabric model sim/simulation.cc builds from the cluster with the
// default achievable link efficiencies (SimOptions::efficiency).
#pragma once

#include <vector>

#include "shared/scenario.h"
#include "shared/schedule.h"
#include "sim/collective_algorithms.h"
#include "sim/nccl_tuner.h"

namespace tandem::search {

// The fabric model of sim/simulation.cc for `cluster` (link efficiencies of SimOptions{}).
sim::FabricModel fabric_of(const ClusterSpec& cluster);

class CommCost {
 public:
  explicit CommCost(const ClusterSpec& cluster);
  // Seconds for `op` moving `bytes` (nccl-tests size) among `members` (global ranks).
  double collective_s(CollectiveOp op, const std::vector<int>& members, double bytes);
  // Members 0, stride, 2*stride, ... (count of them): a data-parallel group of the rank grid.
  double strided_s(CollectiveOp op, int count, int stride, double bytes);
  double p2p_s(int src, int dst, double bytes);

 private:
  sim::FabricModel fabric_;
  sim::NcclTuner tuner_;
  std::vector<int> members_;
};

}  // namespace tandem::search
