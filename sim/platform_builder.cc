#include "sim/platform_builder.h"

#include <algorithm>
#include <string>

#include <simgrid/s4u.hpp>

#include "shared/error.h"
#include "sim/host_adam_cost.h"
#include "sim/replay_progress.h"

namespace tandem::sim {
namespace sg = simgrid::s4u;

namespace {

constexpr double kGB = 1e9;

// A star-zone member with its own up and down links (full duplex).
void attach(sg::NetZone* zone, simgrid::kernel::routing::NetPoint* np, const std::string& name, double bw_bytes_s) {
  sg::Link* up = zone->create_link(name + ".up", bw_bytes_s)->set_latency(0)->seal();
  sg::Link* down = zone->create_link(name + ".down", bw_bytes_s)->set_latency(0)->seal();
  zone->add_route(np, nullptr, nullptr, nullptr, {sg::LinkInRoute(up)}, false);
  zone->add_route(nullptr, np, nullptr, nullptr, {sg::LinkInRoute(down)}, false);
}

// A GPU's PCIe port: its own up and down links, then (when the cluster says so) its switch's
// uplink to the CPU and the node's host memory, which every copy of the node reads or writes
// (docs/offload.md, "PCIe and host memory").
void attach_pcie(sg::NetZone* zone, simgrid::kernel::routing::NetPoint* np, const std::string& name, double bw_bytes_s,
                 const std::vector<sg::Link*>& to_host, const std::vector<sg::Link*>& from_host) {
  sg::Link* up = zone->create_link(name + ".up", bw_bytes_s)->set_latency(0)->seal();
  sg::Link* down = zone->create_link(name + ".down", bw_bytes_s)->set_latency(0)->seal();
  std::vector<sg::LinkInRoute> up_route{sg::LinkInRoute(up)}, down_route;
  for (sg::Link* l : to_host) up_route.emplace_back(l);
  for (sg::Link* l : from_host) down_route.emplace_back(l);
  down_route.emplace_back(down);
  zone->add_route(np, nullptr, nullptr, nullptr, up_route, false);
  zone->add_route(nullptr, np, nullptr, nullptr, down_route, false);
}

}  // namespace

FabricModel fabric_model(const ClusterSpec& cl, const NetworkEfficiency& eff, int gpus_per_node, int nics_per_node) {
  FabricModel fabric;
  fabric.gpus_per_node = gpus_per_node;
  fabric.nics_per_node = nics_per_node;
  fabric.gpus_per_pcie_switch = cl.gpus_per_pcie_switch;
  fabric.nvlink_bytes_s = cl.nvlink_bandwidth_gbps * 1e9 * eff.nvlink;
  fabric.nic_bytes_s = cl.nic_bandwidth_gbps * 1e9 * eff.nic;
  fabric.nvlink_latency_s = cl.nvlink_latency_us * 1e-6;
  fabric.nic_latency_s = cl.nic_latency_us * 1e-6;
  fabric.nvls = cl.gpu_name.find("H100") != std::string::npos || cl.gpu_name.find("H200") != std::string::npos ||
                cl.gpu_name.find("H800") != std::string::npos;
  // NCCL's model distinguishes sm 70 / 80 / 90 (sim/nccl_tuner_model.h); a name that is none of
  // these takes Ampere's row, the generation of the presets' A100. The CPU vendor: the cluster's
  // host_cpu_vendor (NCCL's AMD branches are x86 AMD only; Intel and Arm share the other).
  if (fabric.nvls) fabric.compute_capability = 90;
  else if (cl.gpu_name.find("V100") != std::string::npos) fabric.compute_capability = 70;
  fabric.cpu_amd = cl.host_cpu_vendor == CpuVendor::kAmd;
  return fabric;
}

namespace {

// Nodes under one leaf: the fabric shape's, or 32 NIC ports per fat-tree leaf, 32 nodes per rail leaf.
int nodes_per_leaf(const ClusterSpec& c, const FabricShape& shape) {
  if (shape.nodes_per_leaf > 0) return shape.nodes_per_leaf;
  return c.inter_node_topology == Topology::kRailOptimized ? 32 : std::max(1, 32 / std::max(1, c.nics_per_node));
}

}  // namespace

bool Platform::has_leaves(const ClusterSpec& c, int world_size, const FabricShape& shape) {
  const int gpn = std::max(1, c.gpus_per_node);
  const int nodes = (world_size + gpn - 1) / gpn;
  return nodes > 1 && c.oversubscription > 1.0 && nodes > nodes_per_leaf(c, shape);
}

Platform::Platform(const ClusterSpec& c, int world_size, const NetworkEfficiency& eff, const FabricShape& shape) {
  if (c.gpus_per_node <= 0) throw Error("sim: cluster.gpus_per_node must be positive");
  gpn_ = c.gpus_per_node;
  const int nodes = (world_size + gpn_ - 1) / gpn_;
  nics_ = std::max(1, c.nics_per_node);
  if (nodes > 1 && c.nic_bandwidth_gbps <= 0) throw Error("sim: a multi-node cluster needs cluster.nic_bandwidth_gbps > 0");
  if (c.nvlink_bandwidth_gbps <= 0) throw Error("sim: cluster.nvlink_bandwidth_gbps must be positive");
  if (c.pcie_bandwidth_gbps <= 0) throw Error("sim: cluster.pcie_bandwidth_gbps must be positive");

  sg::NetZone* root = sg::create_star_zone("tandem");
  driver_ = root->create_host("driver", 1.0);

  // A platform of 10^5 GPUs takes seconds to build: a progress line on a terminal (nothing
  // otherwise), every 256 nodes.
  ReplayProgress progress;
  const auto tick = [&](int n, const char* part) {
    if (progress.on() && (n & 255) == 0)
      progress.tick(std::string("building the platform: ") + part + " " + std::to_string(n) + " of " +
                    std::to_string(nodes));
  };
  nvl_.resize(world_size);
  pcie_.resize(world_size);
  // Every node's NVSwitch and PCIe stars are one star zone: a star routes a flow over its source's
  // up link and its destination's down link, so the routes are those of one zone per node (the
  // replay never joins endpoints of two nodes in it). One zone, not one per node, because SimGrid
  // 3.32 checks each new link's and host's name by a search of every zone: with a zone per node,
  // building the platform took time quadratic in the nodes (GPT-3 175B on 4096 GPUs: a quarter of
  // the run; docs/sim.md "Speed of pure data parallelism").
  // GPUs l, l+1, ... of a node with l a multiple of gps share a PCIe switch (0 or 1: none shared).
  const int gps = c.gpus_per_pcie_switch;
  const double uplink = c.pcie_switch_uplink_gbps > 0 ? c.pcie_switch_uplink_gbps : c.pcie_bandwidth_gbps;
  sg::NetZone* node = sg::create_star_zone("nodes");
  node->set_parent(root);
  for (int n = 0; n < nodes; ++n) {
    tick(n, "node");
    sg::Host* cpu = node->create_host("cpu" + std::to_string(n), 1.0);
    cpu_.push_back(cpu);
    // Host memory: one link for both directions (DRAM bandwidth is shared by reads and writes).
    sg::Link* memory = nullptr;
    if (c.host_memory_bandwidth_gbps > 0)
      memory = node->create_link("cpu" + std::to_string(n) + ".memory", c.host_memory_bandwidth_gbps * kGB)
                   ->set_latency(0)
                   ->seal();
    sg::Link *switch_up = nullptr, *switch_down = nullptr;
    for (int l = 0; l < gpn_; ++l) {
      const int g = n * gpn_ + l;
      if (g >= world_size) break;
      const std::string name = "gpu" + std::to_string(g);
      nvl_[g] = node->create_host(name + ".nvl", 1.0);
      attach(node, nvl_[g]->get_netpoint(), name + ".nvlink", c.nvlink_bandwidth_gbps * kGB * eff.nvlink);
      pcie_[g] = node->create_host(name + ".pcie", 1.0);
      std::vector<sg::Link*> to_host, from_host;
      if (gps > 1) {
        if (l % gps == 0) {
          const std::string sw = "node" + std::to_string(n) + ".pcie_switch" + std::to_string(l / gps);
          switch_up = node->create_link(sw + ".up", uplink * kGB * eff.pcie)->set_latency(0)->seal();
          switch_down = node->create_link(sw + ".down", uplink * kGB * eff.pcie)->set_latency(0)->seal();
        }
        to_host.push_back(switch_up);
        from_host.push_back(switch_down);
      }
      if (memory) {
        to_host.push_back(memory);
        from_host.insert(from_host.begin(), memory);
      }
      attach_pcie(node, pcie_[g]->get_netpoint(), name + ".pcie", c.pcie_bandwidth_gbps * kGB * eff.pcie, to_host,
                  from_host);
      if (memory) {
        // The host Adam's memory traffic: the rank's share of the node's memory (as
        // sim/host_adam_cost.h divides it: every rank of the node steps at once), then the
        // node's memory link, shared with every copy of the node.
        if (host_adam_.empty()) host_adam_.resize(world_size, nullptr);
        host_adam_[g] = node->create_host(name + ".host_adam", 1.0);
        sg::Link* share = node->create_link(name + ".host_adam",
                                            c.host_memory_bandwidth_gbps * kGB / ranks_on_node(c))
                              ->set_latency(0)
                              ->seal();
        node->add_route(host_adam_[g]->get_netpoint(), nullptr, nullptr, nullptr,
                        {sg::LinkInRoute(share), sg::LinkInRoute(memory)}, false);
      }
    }
  }
  node->seal();

  if (nodes > 1) {
    const double nic_bw = c.nic_bandwidth_gbps * kGB * eff.nic;
    sg::NetZone* fabric = sg::create_star_zone("fabric");
    fabric->set_parent(root);
    const bool rail = c.inter_node_topology == Topology::kRailOptimized;
    const int per_leaf = nodes_per_leaf(c, shape);
    const bool leaves = has_leaves(c, world_size, shape);
    nic_.resize(static_cast<size_t>(nodes) * nics_);
    leaves_ = leaves;
    if (!leaves) {
      for (int i = 0; i < nodes * nics_; ++i) {
        if (i % nics_ == 0) tick(i / nics_, "NICs of node");
        nic_[i] = fabric->create_host("nic" + std::to_string(i / nics_) + "." + std::to_string(i % nics_), 1.0);
        attach(fabric, nic_[i]->get_netpoint(), "nic" + std::to_string(i), nic_bw);
      }
    } else {
      // Leaves: fat-tree leaf l holds nodes [l*per_leaf, (l+1)*per_leaf); rail-optimized leaf
      // (group, k) holds NIC k of the nodes of one group.
      const int groups = (nodes + per_leaf - 1) / per_leaf;
      const int rails = rail ? nics_ : 1;
      for (int grp = 0; grp < groups; ++grp) {
        for (int k = 0; k < rails; ++k) {
          sg::NetZone* leaf = sg::create_star_zone("leaf" + std::to_string(grp) + "." + std::to_string(k));
          leaf->set_parent(fabric);
          auto* gw = leaf->create_router("leaf" + std::to_string(grp) + "." + std::to_string(k) + ".sw");
          int ports = 0;
          for (int n = grp * per_leaf; n < std::min(nodes, (grp + 1) * per_leaf); ++n) {
            if (k == 0) tick(n, "NICs of node");
            for (int j = 0; j < nics_; ++j) {
              if (rail && j != k) continue;
              const int i = n * nics_ + j;
              nic_[i] = leaf->create_host("nic" + std::to_string(n) + "." + std::to_string(j), 1.0);
              attach(leaf, nic_[i]->get_netpoint(), "nic" + std::to_string(i), nic_bw);
              ++ports;
            }
          }
          leaf->seal();
          const std::string up = "leaf" + std::to_string(grp) + "." + std::to_string(k) + ".uplink";
          const double up_bw = ports * nic_bw / c.oversubscription;
          sg::Link* l_up = fabric->create_link(up + ".up", up_bw)->set_latency(0)->seal();
          sg::Link* l_down = fabric->create_link(up + ".down", up_bw)->set_latency(0)->seal();
          fabric->add_route(leaf->get_netpoint(), nullptr, gw, nullptr, {sg::LinkInRoute(l_up)}, false);
          fabric->add_route(nullptr, leaf->get_netpoint(), nullptr, gw, {sg::LinkInRoute(l_down)}, false);
        }
      }
    }
    fabric->seal();
  }
  root->seal();
}

}  // namespace tandem::sim
