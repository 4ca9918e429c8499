#include "search/comm_cost.h"

#include <algorithm>

#include "shared/host_copy_rate.h"
#include "sim/platform_builder.h"
#include "sim/simulation.h"

namespace tandem::search {

sim::FabricModel fabric_of(const ClusterSpec& cl) {
  // The simulator's fabric (sim/simulation.cc), with the cluster's node layout for the platform's.
  return sim::fabric_model(cl, sim::SimOptions{}.efficiency, cl.gpus_per_node,
                           std::max(1, cl.nics_per_node));  // as Platform::nics_per_node()
}

CommCost::CommCost(const ClusterSpec& cluster)
    : pcie_bytes_s_(host_copy_bytes_per_s(cluster, copying_gpus_per_node(cluster, cluster.gpus),
                                          sim::SimOptions{}.efficiency.pcie)),
      pcie_latency_s_(cluster.pcie_latency_us * 1e-6),
      fabric_(fabric_of(cluster)),
      tuner_(fabric_, false) {}

double CommCost::copy_s(double bytes) const {
  if (bytes <= 0 || !(pcie_bytes_s_ > 0)) return 0;
  return bytes / pcie_bytes_s_ + pcie_latency_s_;
}

double CommCost::collective_s(CollectiveOp op, const std::vector<int>& members, double bytes) {
  if (members.size() < 2 || bytes <= 0) return 0;
  const sim::TunedCollective tune = tuner_.choose(op, members, bytes);
  const sim::CollectivePlan plan =
      sim::plan_collective(op, members, 0, bytes, tune.algorithm, sim::Granularity::kPhase, fabric_);
  return sim::uncontended_time(plan, fabric_, tune.cost);
}

double CommCost::p2p_s(int src, int dst, double bytes) {
  if (bytes <= 0) return 0;
  const sim::TunedCollective tune = tuner_.choose_p2p(src, dst, bytes);
  return sim::uncontended_time(sim::plan_p2p(src, dst, bytes), fabric_, tune.cost);
}

}  // namespace tandem::search
