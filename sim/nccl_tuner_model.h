// NCCL 2.18's own cost model of a collective (NVIDIA/nccl src/graph/tuning.cc at tag v2.18.3-1:
// ncclTopoTuneModel, lines 120-242, and ncclTopoGetAlgoTime, lines 373-398), which NCCL uses to
// choose the algorithm and protocol of every collective (src/enqueue.cc:1161-1180 at the same tag:
// the smallest time >= 0 wins, algorithms in NCCL's order tree, ring, ..., NVLS). NcclTuner
// chooses with it and then times the chosen plan physically (sim/nccl_tuner.h): this file decides,
// it does not time.
//
// What the model needs from the topology (NCCL's graph search, src/graph/search.cc) comes from
// tandem's fabric instead (NcclTuner says how): the bus bandwidth nChannels * bw of the group and
// the channel count. The rest is tuning.cc's tables and formulas, with the machine's settings:
// - compute capability from the GPU (sm 70 / 80 / 90: tuning.cc:139's Volta/Ampere/Hopper index);
// - CPU vendor (netOverhead tuning.cc:111-118, llMaxBws row tuning.cc:144): Intel unless told;
// - intra-node links NVLink (hwLat row NVLINK, tuning.cc:154); network latency 0 (graph
//   latencyInter = net->net.latency, search.cc:522, which the IB plugin leaves 0: net_ib.cc:332);
// - the tree graph's pattern is the balanced tree (init.cc:884), so no .85 (tuning.cc:183);
// - LL128 enabled (tuning.cc:282-294: NVLink inside the node, NIC under the GPU's PCIe switch);
// - one operation per launch (numPipeOps 1: no aggregation).
#pragma once

#include "shared/schedule.h"
#include "sim/collective_algorithms.h"

namespace tandem::sim {

struct NcclModelShape {
  int ranks = 0;              // nRanks
  int nodes = 1;              // nNodes
  int channels = 1;           // graphs[a]->nChannels (and comm->nChannels)
  double bus_bw_gbs = 0;      // graphs[a]->nChannels * bw, GB/s (10^9 bytes/s)
  int compute_capability = 80;  // minCompCap = maxCompCap: 70, 80, 90
  bool cpu_amd = false;       // NCCL_TOPO_CPU_VENDOR_AMD (x86)
};

// NCCL's bandwidth (comm->bandwidths, GB/s) and latency (comm->latencies, us) of one
// (collective, algorithm, protocol) from ncclTopoTuneModel. Algorithm kChain stands for NCCL's
// ring broadcast/reduce (the only algorithm NCCL gives them, tuning.cc:166-167), priced as a ring
// whose channels are the same on every node (sameChannels, the first thing the search tries:
// search.cc:812-813). Bandwidth 0 where NCCL gives none (kDirect: NCCL tunes no all-to-all).
struct NcclModelEntry {
  double bw_gbs = 0;
  double lat_us = 0;
};
NcclModelEntry nccl_model_entry(CollectiveOp op, Algorithm a, Protocol p, const NcclModelShape& s);

// ncclTopoGetAlgoTime: the tree's correction by size, the multi-node ring/Simple all-reduce latency
// plateau (x1.4 from sm 80 on, x1.9 below), time = lat + bytes / (1000 * bw), microseconds.
// Negative where NCCL gives the pair no bandwidth (NCCL skips it).
double nccl_model_time_us(CollectiveOp op, Algorithm a, Protocol p, const NcclModelShape& s, double bytes);

}  // namespace tandem::sim
