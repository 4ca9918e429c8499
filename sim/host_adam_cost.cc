#include "sim/host_adam_cost.h"

#include <algorithm>

namespace tandem::sim {

int ranks_on_node(const ClusterSpec& c) { return std::max(1, std::min(c.gpus_per_node, c.gpus > 0 ? c.gpus : c.gpus_per_node)); }

HostAdamTime host_adam_time(const ClusterSpec& c, int ranks, double elements, double bytes) {
  HostAdamTime t;
  const double r = std::max(1, ranks);
  t.memory_s = bytes / (c.host_memory_bandwidth_gbps * 1e9 / r);
  if (c.host_cores > 0 && c.host_core_ghz > 0 && c.host_simd_fp32_lanes > 0) {
    const double threads = std::max(1.0, double(c.host_cores) / r);
    const double vectors = elements / double(c.host_simd_fp32_lanes);
    t.compute_s = vectors * kHostAdamOpsPerVector / (threads * c.host_core_ghz * 1e9);
  }
  return t;
}

}  // namespace tandem::sim
