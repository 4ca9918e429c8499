#include "search/comm_cost.h"

#include <algorithm>

#include "sim/platform_builder.h"
#include "sim/simulation.h"

namespace tandem::search {

sim::FabricModel fabric_of(const ClusterSpec& cl) {
  // The simulator's fabric (sim/simulation.cc), with the cluster's node layout for the platform's.
  return sim::fabric_model(cl, sim::SimOptions{}.efficiency, cl.gpus_per_node,
                           std::max(1, cl.nics_per_node));  // as Platform::nics_per_node()
}

CommCost::CommCost(const ClusterSpec& cluster) : fabric_(fabric_of(cluster)), tuner_(fabric_, false) {}

double CommCost::collective_s(CollectiveOp op, const std::vector<int>& members, double bytes) {
  if (members.size() < 2 || bytes <= 0) return 0;
  const sim::TunedCollective tune = tuner_.choose(op, members, bytes);
  const sim::CollectivePlan plan =
      sim::plan_collective(op, members, 0, bytes, tune.algorithm, sim::Granularity::kPhase, fabric_);
  return sim::uncontended_time(plan, fabric_, tune.cost);
}

double CommCost::strided_s(CollectiveOp op, int count, int stride, double bytes) {
  members_.resize(size_t(count));
  for (int i = 0; i < count; ++i) members_[size_t(i)] = i * stride;
  return collective_s(op, members_, bytes);
}

double CommCost::p2p_s(int src, int dst, double bytes) {
  if (bytes <= 0) return 0;
  const sim::TunedCollective tune = tuner_.choose_p2p(src, dst, bytes);
  return sim::uncontended_time(sim::plan_p2p(src, dst, bytes), fabric_, tune.cost);
}

}  // namespace tandem::search
