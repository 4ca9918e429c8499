#include "shared/host_copy_rate.h"

#include <algorithm>

namespace tandem {

double host_copy_bytes_per_s(const ClusterSpec& c, int copying, double eff) {
  if (!(c.pcie_bandwidth_gbps > 0)) return 0;
  const int n = std::max(1, copying);
  double gbps = c.pcie_bandwidth_gbps * eff;
  if (c.gpus_per_pcie_switch > 1) {
    const double uplink = c.pcie_switch_uplink_gbps > 0 ? c.pcie_switch_uplink_gbps : c.pcie_bandwidth_gbps;
    gbps = std::min(gbps, uplink * eff / std::min(c.gpus_per_pcie_switch, n));
  }
  if (c.host_memory_bandwidth_gbps > 0) gbps = std::min(gbps, c.host_memory_bandwidth_gbps / n);
  return gbps * 1e9;
}

int copying_gpus_per_node(const ClusterSpec& c, int world_size) {
  return std::max(1, std::min(c.gpus_per_node, world_size));
}

}  // namespace tandem
