// Collectives decomposed into flows the way NCCL runs them, so that SimGrid's flow model (not a
// formula) decides what happens when they meet other traffic.
//
// A plan is a sequence of phases; a phase is a set of concurrent flows followed by a latency
// (counted in NVLink and network hops, priced by the protocol). A phase starts when the previous
// one has finished on every member (a ring moves at the pace of its slowest link).
//
// Algorithms (n members, B = Collective::bytes, nccl-tests convention):
//  - ring: all-reduce 2(n-1) steps of B/n, all-gather and reduce-scatter n-1 steps of B/n.
//    Within a node the ring is one cycle over NVLink. A group spanning N nodes with k members on
//    each runs C channels, C = the distinct NICs of a node's members (one ring per rail), channel c
//    carrying B/C, built as NCCL's ring search builds it (src/graph/search.cc at v2.18.3-1: "NET n
//    -> GPU a -> GPU b -> .. -> GPU x -> NET n", :600, the same NIC both ways unless crossNic,
//    :448): it enters a node at the first member on the channel's NIC (its local GPU), visits the
//    other members over NVLink (k-1 hops) and leaves from the last, x. x is a member that reaches
//    the NIC over PCIe (the same NIC, or the same PCIe switch: `gpus_per_pcie_switch`; NCCL's
//    typeInter PIX/PXB, tried before PXN) when there is one, so that the channel crosses k-1 NVLink
//    hops; otherwise x relays through the entry GPU over NVLink (PXN, paths.cc:583-597: GPU ->
//    NIC direction only) and the channel crosses k. Uncontended all-reduce time is
//    2(n-1)/n * B / bw + 2(n-1) * latency with bw the bottleneck per channel.
//  - tree (all-reduce across nodes): NCCL's double binary tree over the nodes (even channels use
//    the heap tree, odd channels its mirror), a chain inside each node; reduce up and broadcast
//    down pipelined in one phase; latency 2(depth * network hop + (k-1) * NVLink hop). At least
//    two channels, so that the data is split over both trees of the pair.
//  - NVLS (NVLink SHARP, NVSwitch gen 3 on Hopper; all-reduce inside a node): every member
//    pushes B into the switch, which reduces, and pulls B back: one phase in which each GPU's
//    NVLink port carries B each way (B / bw + 2 hops), half the ring's 2(n-1)/n B.
//  - broadcast and reduce: a pipelined chain from (to) the root: B / bw + (n-1) hops.
//  - all-to-all: every member sends B/n to every other member at once: (n-1)/n * B / bw + 1 hop.
//  - p2p: one flow of B + 1 hop.
// Granularity: `kStep` gives each ring step its own phase (2(n-1) phases for an all-reduce: for
// validation at small scale); `kPhase` merges a ring's steps into one phase of flows carrying the
// whole volume with the latency of all its steps (for scale). Trees, chains, all-to-all and p2p
// have one phase in both.
#pragma once

#include <cstdint>
#include <vector>

#include "shared/schedule.h"

namespace tandem::sim {

enum class Algorithm : uint8_t { kRing, kTree, kChain, kDirect, kNvls };
enum class Protocol : uint8_t { kLL, kLL128, kSimple };
enum class Granularity : uint8_t { kStep, kPhase };
const char* to_string(Algorithm a);
const char* to_string(Protocol p);

// What the decomposition needs to know about the cluster: its shape and effective link figures.
struct FabricModel {
  int gpus_per_node = 8;
  int nics_per_node = 8;
  // GPUs under one PCIe switch with their NICs (ClusterSpec::gpus_per_pcie_switch; 0 or 1: each GPU
  // alone): a ring channel may leave a node from a GPU that shares its entry GPU's switch.
  int gpus_per_pcie_switch = 0;
  double nvlink_bytes_s = 0;  // effective, per direction
  double nic_bytes_s = 0;
  double nvlink_latency_s = 0;
  double nic_latency_s = 0;
  bool nvls = false;  // NVSwitch with in-switch reduction (Hopper)
  // What NCCL's tuning model (sim/nccl_tuner_model.h) reads of the machine: the GPUs' compute
  // capability (70 Volta, 80 Ampere, 90 Hopper) and whether the host CPUs are AMD x86.
  int compute_capability = 80;
  bool cpu_amd = false;

  int node_of(int gpu) const { return gpu / gpus_per_node; }
  int nic_index(int gpu) const {
    return node_of(gpu) * nics_per_node + (gpu % gpus_per_node) * nics_per_node / gpus_per_node;
  }
  // Whether `gpu` reaches the NIC of `entry` (same node) over PCIe, without an NVLink relay.
  bool pcie_reaches_nic_of(int gpu, int entry) const {
    if (nic_index(gpu) == nic_index(entry)) return true;
    const int per_switch = gpus_per_pcie_switch;
    return per_switch >= 2 && (gpu % gpus_per_node) / per_switch == (entry % gpus_per_node) / per_switch;
  }
};

struct Flow {
  int src = 0;  // GPU (global rank); the fabric follows: NVLink within a node, the NICs across
  int dst = 0;
  double bytes = 0;
};

struct CommPhase {
  std::vector<Flow> flows;
  int nvlink_hops = 0;
  int network_hops = 0;
};

// NCCL moves a collective through its pipeline (ring steps, tree levels, chain links) in chunks,
// so the last bytes trail the first by `pipeline_depth` stages, each holding one chunk: a fill
// and drain time of pipeline_depth * min(step_bytes, window) / bandwidth on the slowest link
// class the pipeline crosses (pipeline_fill_s). step_bytes is what one stage passes on per
// step when the message is small (a ring step's B/n); the window (ProtocolCost) caps it for
// large messages, where NCCL's per-channel buffers bound the bytes in flight.
struct CollectivePlan {
  Algorithm algorithm = Algorithm::kRing;
  std::vector<CommPhase> phases;
  int pipeline_depth = 0;
  double step_bytes = 0;
  bool crosses_network = false;
};

// The plan of one collective on `members` (global ranks, group order; `root` indexes them).
// Throws Error for an algorithm that does not apply (tree for anything but a multi-node all-reduce).
CollectivePlan plan_collective(CollectiveOp op, const std::vector<int>& members, int root, double bytes,
                               Algorithm algorithm, Granularity granularity, const FabricModel& fabric);
CollectivePlan plan_p2p(int src, int dst, double bytes);

// The channels of the ring plan_collective builds on `members`: across nodes with the same members
// on each, the distinct NICs of a node's members (one ring per rail); otherwise 1.
int ring_channels(const std::vector<int>& members, const FabricModel& fabric);

// Per-protocol pricing of a plan (NCCL's protocols): flow bytes are divided by `efficiency`;
// each hop costs the link latency plus `hop_s`; `base_s` is paid once per collective.
struct ProtocolCost {
  double efficiency = 1.0;
  double nvlink_hop_s = 0;
  double network_hop_s = 0;
  double base_s = 0;
  double fill_window_bytes = 0;  // 0: no pipeline fill (the ideal alpha-beta model)
};

// The pipeline fill and drain time of a plan (see CollectivePlan), paid once per collective.
double pipeline_fill_s(const CollectivePlan& plan, const FabricModel& fabric, const ProtocolCost& proto);

// Time of a plan that meets no other traffic: for each phase, the most loaded link's bytes over
// its bandwidth (max-min sharing of a symmetric phase drains every flow by then), plus its hops.
double uncontended_time(const CollectivePlan& plan, const FabricModel& fabric, const ProtocolCost& proto);

}  // namespace tandem::sim
