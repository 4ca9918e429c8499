#include "sim/nccl_tuner_model.h"

#include <algorithm>
#include <cstdint>

namespace tandem::sim {

namespace {

// Every table below is NVIDIA/nccl src/graph/tuning.cc at v2.18.3-1, cited by line.
// NCCL's algorithm rows: 0 tree, 1 ring, 4 NVLS (2, 3 CollNet and 5 NVLS tree are not modelled).
int row_of(Algorithm a) {
  switch (a) {
    case Algorithm::kTree: return 0;
    case Algorithm::kNvls: return 4;
    default: return 1;  // ring; kChain = NCCL's ring broadcast/reduce
  }
}

// tuning.cc:56-59, us: baseLat[algorithm][LL, LL128, Simple].
constexpr double kBaseLat[6][3] = {{6.8, 14.0, 0}, {6.6, 14.0, 8.4}, {6.8, 14.0, 0},
                                   {6.8, 14.0, 0}, {0, 0, 23.0},     {0, 0, 23.0}};
// tuning.cc:65-78, us: hwLat[NVLINK | PCI | NET][algorithm][protocol].
constexpr int kHwNvlink = 0, kHwNet = 2;
constexpr double kHwLat[3][6][3] = {
    {{.6, 1.25, 4}, {.6, 1.9, 3.4}, {0, 0, 8.0}, {0, 0, 4.75}, {0, 0, 0}, {0, 0, 0}},
    {{1.0, 1.9, 6}, {1.0, 2.5, 5.7}, {0, 0, 8.0}, {0, 0, 8.0}, {0, 0, 0}, {0, 0, 0}},
    {{5.0, 8.5, 14}, {2.7, 4.0, 14.0}, {0, 0, 10.7}, {0, 0, 14}, {0, 0, 18}, {0, 0, 19}}};
// tuning.cc:86-106, GB/s: [compute-capability or CPU index][N1, N2, N4].
constexpr double kLlMaxBws[3][3] = {{39.0, 39.0, 20.4}, {87.7, 22.5, 19.0}, {87.7, 22.5, 19.0}};
constexpr double kPerChMaxRingLL128Bws[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 36.7}};
constexpr double kPerChMaxTreeLL128Bws[3][3] = {{20.0, 20.0, 20.0}, {20.0, 20.0, 20.0}, {36.7, 36.7, 29.0}};
constexpr double kPerChMaxTreeBws[3][3] = {{26.5, 18.5, 10.0}, {24.0, 23.6, 17.8}, {38.7, 41.4, 36.0}};
// tuning.cc:375-379: treeCorrectionFactor[protocol][log2(bytes / 64)], powers of two 64 B..256 MB.
constexpr double kTreeCorrection[3][23] = {
    {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0, 1.0, 1.0},
    {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .6, .6, .6, .8, .9, .9, .9, .9, 1.0, 1.0},
    {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9, .9}};

// src/include/utils.h:40-44 at v2.18.3-1.
int64_t log2i(int64_t n) {
  int64_t l = 0;
  while (n >>= 1) ++l;
  return l;
}

}  // namespace

NcclModelEntry nccl_model_entry(CollectiveOp op, Algorithm a, Protocol p, const NcclModelShape& s) {
  NcclModelEntry e;
  const int nRanks = s.ranks, nNodes = std::max(1, s.nodes);
  if (nRanks <= 1 || a == Algorithm::kDirect) return e;
  const bool all_reduce = op == CollectiveOp::kAllReduce;
  const bool rs_ag = op == CollectiveOp::kReduceScatter || op == CollectiveOp::kAllGather;
  // Broadcast, reduce, reduce-scatter and all-gather have the ring only (tuning.cc:166-169);
  // NVLS is Simple only (tuning.cc:172).
  if (!all_reduce && (a == Algorithm::kTree || a == Algorithm::kNvls)) return e;
  if (a == Algorithm::kNvls && p != Protocol::kSimple) return e;
  const int ai = row_of(a), pi = static_cast<int>(p);
  const bool ring = ai == 1, tree = ai == 0, simple = p == Protocol::kSimple;

  // tuning.cc:139-148.
  const int cc = s.compute_capability >= 90 ? 2 : s.compute_capability >= 80 ? 1 : 0;
  const int index2 = nNodes <= 2 ? nNodes - 1 : 2;
  const int index1 = nNodes == 1 ? cc : s.cpu_amd ? 1 : 0;
  const double llMaxBw = kLlMaxBws[index1][index2];
  const double perChMaxTreeBw = kPerChMaxTreeBws[cc][index2];
  const double perChMaxRingLL128Bw = kPerChMaxRingLL128Bws[cc][index2];
  const double perChMaxTreeLL128Bw = kPerChMaxTreeLL128Bws[cc][index2];
  const double ppn = static_cast<double>(nRanks) / nNodes;  // tuning.cc:151
  const int hw = nNodes == 1 ? kHwNvlink : kHwNet;           // tuning.cc:154-155 (NVLink inside nodes)

  // tuning.cc:158-163.
  const int nsteps = all_reduce ? 2 * (nRanks - 1) : rs_ag ? nRanks - 1 : nRanks;
  const int nInterSteps = all_reduce ? (nNodes > 1 ? 2 * nNodes : 0) : rs_ag ? nNodes - 1 : nNodes;

  // tuning.cc:174-183: model refinements of the bus bandwidth.
  const double nCh = s.channels;
  double busBw = s.bus_bw_gbs;
  if (ring && p == Protocol::kLL)
    busBw = std::min(llMaxBw, busBw * ((nNodes > 1 || all_reduce || op == CollectiveOp::kReduce) ? 1.0 / 4.0 : 1.0 / 3.0));
  if (ring && p == Protocol::kLL128) busBw = std::min(busBw * (ppn < 2 ? 0.7 : 0.92), nCh * perChMaxRingLL128Bw);
  if (tree) busBw = std::min(busBw * .92, nCh * perChMaxTreeBw);
  if (tree && p == Protocol::kLL) busBw = std::min(busBw * 1.0 / 3.8, llMaxBw);
  if (tree && p == Protocol::kLL128)
    busBw = std::min(busBw * (nNodes == 1 ? 7.0 / 9.0 : 120.0 / 128.0), nCh * perChMaxTreeLL128Bw);

  // tuning.cc:195-200: bus bandwidth to algorithm bandwidth.
  const double ratio = ring ? static_cast<double>(nRanks) / nsteps : a == Algorithm::kNvls ? 5.0 / 6.0 : .5;
  e.bw_gbs = busBw * ratio;

  // tuning.cc:202-238: latencies (graph latencyInter 0: see the header).
  e.lat_us = kBaseLat[ai][pi];
  double intraLat = kHwLat[kHwNvlink][ai][pi];
  const double interLat = kHwLat[kHwNet][ai][pi];
  if (ring) {
    const double lat = kHwLat[hw][ai][pi];
    if (op == CollectiveOp::kReduce || op == CollectiveOp::kBroadcast) {
      e.lat_us += lat;  // sameChannels (tuning.cc:211-212)
    } else {
      double netOverhead = 0;  // tuning.cc:218-224 (getNetOverhead, tuning.cc:111-118: Intel 1 us, AMD 2 us)
      if (nNodes > 1) {
        netOverhead = s.cpu_amd ? 2.0 : 1.0;
        if (simple) netOverhead *= 3;
      }
      intraLat = std::max(intraLat, netOverhead);
      e.lat_us += (nsteps - nInterSteps) * intraLat + nInterSteps * interLat;
    }
  } else if (tree) {
    e.lat_us += 2 * ((nRanks / nNodes - 1) * intraLat + static_cast<double>(log2i(nNodes)) * interLat);
  } else if (a == Algorithm::kNvls) {
    if (nNodes > 1) e.lat_us += kHwLat[kHwNet][ai][pi];
  }
  return e;
}

double nccl_model_time_us(CollectiveOp op, Algorithm a, Protocol p, const NcclModelShape& s, double bytes) {
  const NcclModelEntry e = nccl_model_entry(op, a, p, s);
  double bw = e.bw_gbs, lat = e.lat_us;
  if (!(bw > 0)) return -1.0;
  const int64_t nBytes = static_cast<int64_t>(bytes);
  // tuning.cc:387-388.
  const int64_t logSize = log2i(nBytes >> 6);
  if (a == Algorithm::kTree && logSize < 23) bw *= kTreeCorrection[static_cast<int>(p)][logSize];
  // tuning.cc:390-393: the ring's plateau (minCompCap < 80 ? 1.9 : 1.4).
  if (a == Algorithm::kRing && p == Protocol::kSimple && s.nodes > 1 && op == CollectiveOp::kAllReduce &&
      nBytes / (int64_t(std::max(1, s.channels)) * s.ranks) >= 64)
    lat *= s.compute_capability < 80 ? 1.9 : 1.4;
  return lat + static_cast<double>(nBytes) / (1000 * bw);  // tuning.cc:396, latCount 1
}

}  // namespace tandem::sim
