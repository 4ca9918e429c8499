#include "shared/roofline_cost.h"

#include <algorithm>

#include "shared/error.h"
#include "shared/host_copy_rate.h"

namespace tandem {
namespace {

double positive(double v, const char* field) {
  if (!(v > 0)) throw Error(std::string("roofline cost: cluster.") + field + " must be positive");
  return v;
}

}  // namespace

TaskCost roofline_cost(const Schedule& s) {
  const ClusterSpec& c = s.scenario().cluster;
  const double hbm_bytes_s = positive(c.hbm_bandwidth_gbps, "hbm_bandwidth_gbps") * 1e9;
  positive(c.pcie_bandwidth_gbps, "pcie_bandwidth_gbps");
  // A host copy's share of its PCIe switch uplink and host memory with the node's GPUs copying
  // at once (shared/host_copy_rate.h), at the peak figures.
  const double pcie_bytes_s = host_copy_bytes_per_s(c, copying_gpus_per_node(c, s.world_size()));
  const double nvlink_bytes_s = positive(c.nvlink_bandwidth_gbps, "nvlink_bandwidth_gbps") * 1e9;
  const double launch_s = c.kernel_launch_us * 1e-6;
  const int per_node = std::max(1, c.gpus_per_node);
  const double nic_bytes_s = c.nic_bandwidth_gbps * 1e9;
  // latency + bytes / bandwidth of a transfer that spans nodes or not.
  auto transfer_s = [=](int64_t bytes, bool across_nodes) {
    if (!across_nodes) return c.nvlink_latency_us * 1e-6 + double(bytes) / nvlink_bytes_s;
    return c.nic_latency_us * 1e-6 + double(bytes) / positive(nic_bytes_s, "nic_bandwidth_gbps");
  };
  return [&s, c, hbm_bytes_s, pcie_bytes_s, launch_s, per_node, transfer_s](int rank, const Program&,
                                                                          const Task& t) -> double {
    if (const Compute* k = std::get_if<Compute>(&t.op)) {
      const double flops_s = positive(c.peak_tflops(k->dtype), "peak_*_tflops") * 1e12;
      return std::max(k->matmul_flops() / flops_s, k->bytes_moved() / hbm_bytes_s) + launch_s;
    }
    if (const Collective* k = std::get_if<Collective>(&t.op)) {
      const std::vector<int>& members = s.group(k->group).ranks;
      const int node = s.device_of(rank) / per_node;
      const bool across = std::any_of(members.begin(), members.end(),
                                      [&](int r) { return s.device_of(r) / per_node != node; });
      return transfer_s(k->bytes, across);
    }
    if (const SendRecv* m = std::get_if<SendRecv>(&t.op))
      return transfer_s(m->bytes, s.device_of(rank) / per_node != s.device_of(m->peer) / per_node);
    if (const Copy* k = std::get_if<Copy>(&t.op)) {
      if (k->direction == CopyDirection::kD2D) return 2.0 * double(k->bytes) / hbm_bytes_s;
      return c.pcie_latency_us * 1e-6 + double(k->bytes) / pcie_bytes_s;
    }
    return 0.0;
  };
}

}  // namespace tandem
