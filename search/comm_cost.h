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
  double p2p_s(int src, int dst, double bytes);
  // A host copy (offload) of `bytes` from one GPU while every GPU of its node copies too: bytes at
  // its share of its PCIe link, switch uplink and host memory (shared/host_copy_rate.h, derated as
  // sim::Platform derates them) plus the link's latency.
  double copy_s(double bytes) const;

 private:
  double pcie_bytes_s_ = 0, pcie_latency_s_ = 0;
  sim::FabricModel fabric_;
  sim::NcclTuner tuner_;
};

}  // namespace tandem::search
