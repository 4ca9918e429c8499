// The modeled cluster as a SimGrid platform, built in code from a ClusterSpec (no XML).
//
// Every GPU is a set of network endpoints, one per fabric it can reach, so that a flow's route is
// chosen by which endpoints it joins (no multi-fabric routing tables):
//   gpu<r>.nvl   in its node's NVSwitch star: own up/down link at NVLink bandwidth (per direction)
//   gpu<r>.pcie  in its node's PCIe star: own up/down link to the host CPU (cpu<n>); with
//                cluster.gpus_per_pcie_switch > 1 also its switch's uplink (shared by the switch's
//                GPUs, one link per direction), and with cluster.host_memory_bandwidth_gbps the
//                node's host memory (one link for both directions, shared by every copy of the node)
//   gpu<r>.host_adam  with cluster.host_memory_bandwidth_gbps: where the rank's host Adam streams
//                its memory traffic from (sim/host_adam_cost.h): its share of the node's host
//                memory (bandwidth / ranks of the node, the cores it has), then the node's host
//                memory link, which the node's copies cross too; a flow to cpu<n>
//   nic<n>.<k>   the k-th NIC of node n in the inter-node fabric: own up/down link to its leaf
// GPU g of a node uses NIC g * nics_per_node / gpus_per_node (one per GPU on DGX-style nodes).
// The inter-node fabric is a two-level tree: leaves group `nodes_per_leaf` nodes (fat-tree: all
// NICs of those nodes; rail-optimized: the NICs of one rail), and each leaf's aggregate uplink to a
// non-blocking spine has (NICs on the leaf * NIC bandwidth / oversubscription) per direction. With
// oversubscription 1 the leaf level cannot be a bottleneck and is left out (one star).
//
// Links have zero latency: SimGrid's CM02 model shares a bottleneck in inverse proportion to path
// latency, so latency is added by the replay as a delay instead (SimGrid 3.32 manual, "Configuring SimGrid": network/model CM02; tested in tests/sim/collective_closed_form_test.cc).
// Link bandwidths are the datasheet figures times the achievable efficiency of the fabric
// (NetworkEfficiency, fit in docs/sim.md).
#pragma once

#include <vector>

#include "shared/scenario.h"
#include "sim/collective_algorithms.h"

namespace simgrid::s4u {
class Host;
}

namespace tandem::sim {

struct NetworkEfficiency {
  double nvlink = 1.0;
  double nic = 1.0;
  double pcie = 1.0;
};

// The fabric the collective planner and the NCCL tuner see (sim/collective_algorithms.h): the
// cluster's link figures derated by `eff`, NVLink SHARP (NVLS) on Hopper switches. The simulator
// passes its platform's node layout; the search's analytical estimate the cluster's.
FabricModel fabric_model(const ClusterSpec& cluster, const NetworkEfficiency& eff, int gpus_per_node,
                         int nics_per_node);

struct FabricShape {
  int nodes_per_leaf = 0;  // 0: 32 NIC ports per leaf (fat-tree) or 32 nodes per rail leaf
};

class Platform {
 public:
  // Builds the platform inside the current SimGrid engine (created, not yet running).
  Platform(const ClusterSpec& cluster, int world_size, const NetworkEfficiency& eff, const FabricShape& shape);

  simgrid::s4u::Host* driver() const { return driver_; }
  simgrid::s4u::Host* nvl(int gpu) const { return nvl_[gpu]; }
  simgrid::s4u::Host* pcie(int gpu) const { return pcie_[gpu]; }
  simgrid::s4u::Host* cpu_of(int gpu) const { return cpu_[node_of(gpu)]; }
  simgrid::s4u::Host* nic_of(int gpu) const { return nic_[nic_index(gpu)]; }
  // The rank's host Adam memory traffic starts here (null: the cluster gives no host memory figure).
  simgrid::s4u::Host* host_adam(int gpu) const { return host_adam_.empty() ? nullptr : host_adam_[gpu]; }

  int gpus_per_node() const { return gpn_; }
  int nics_per_node() const { return nics_; }
  int node_of(int gpu) const { return gpu / gpn_; }
  int local_of(int gpu) const { return gpu % gpn_; }
  // Global NIC index of a GPU's NIC.
  int nic_index(int gpu) const { return node_of(gpu) * nics_ + local_of(gpu) * nics_ / gpn_; }
  bool same_node(int a, int b) const { return node_of(a) == node_of(b); }
  // Every route is two links of its own ends (NVLink or PCIe port, NIC up and down): no leaf
  // uplink is shared between NICs.
  bool private_routes() const { return !leaves_; }
  // Whether the platform of `world_size` GPUs has leaf switches (oversubscribed, with more nodes
  // than one leaf holds): the rule the constructor builds by, for estimates made before it.
  static bool has_leaves(const ClusterSpec& cluster, int world_size, const FabricShape& shape);

 private:
  int gpn_ = 8;
  bool leaves_ = false;
  int nics_ = 1;
  simgrid::s4u::Host* driver_ = nullptr;
  std::vector<simgrid::s4u::Host*> nvl_, pcie_, cpu_, nic_, host_adam_;
};

}  // namespace tandem::sim
