// The bandwidth one GPU's copy to or from the host gets when `copying` GPUs of its node copy at
// the same moment, each in one direction (data-parallel ranks step in lockstep, so their offload
// copies coincide): the least of its own PCIe link, its share of its PCIe switch's uplink (the
// switch's GPUs that copy, at most cluster.gpus_per_pcie_switch of them) and its share of the
// node's host memory bandwidth. The same links the simulator builds (sim/platform_builder.cc,
// docs/offload.md "PCIe and host memory"), for the estimates that price a copy without it: the
// search's (search/comm_cost.cc) and the roofline cost (shared/roofline_cost.cc).
// `pcie_efficiency` derates the PCIe link and the uplink as the simulator's platform does (1 for
// the roofline's peak figures); host memory is not derated there either.
#pragma once

#include "shared/scenario.h"

namespace tandem {

// Bytes per second; 0 when the cluster has no PCIe figure.
double host_copy_bytes_per_s(const ClusterSpec& cluster, int copying, double pcie_efficiency = 1.0);

// The GPUs of one node that copy at once in a run of `world_size` ranks: every GPU of the node
// (the fewest of gpus_per_node and world_size).
int copying_gpus_per_node(const ClusterSpec& cluster, int world_size);

}  // namespace tandem
