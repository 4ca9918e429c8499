#include "search/comm_cost.h"

#include <algorithm>

#include "sim/simulation.h"

namespace tandem::search {

sim::FabricModel fabric_of(const ClusterSpec& cl) {
  // As sim/simulation.cc (run_here) builds it.
  const sim::NetworkEfficiency eff = sim::SimOptions{}.efficiency;
  sim::FabricModel fabric;
  fabric.gpus_per_node = cl.gpus_per_node;
  fabric.nics_per_node = std::max(1, cl.nics_per_node);  // as Platform::nics_per_node()
  fabric.nvlink_bytes_s = cl.nvlink_bandwidth_gbps * 1e9 * eff.nvlink;
  fabric.nic_bytes_s = cl.nic_bandwidth_gbps * 1e9 * eff.nic;
  fabric.nvlink_latency_s = cl.nvlink_latency_us * 1e-6;
  fabric.nic_latency_s = cl.nic_latency_us * 1e-6;
  fabric.nvls = cl.gpu_name.find("H100") != std::string::npos || cl.gpu_name.find("H200") != std::string::npos ||
                cl.gpu_name.find("H800") != std::string::npos;
  return fabric;
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
