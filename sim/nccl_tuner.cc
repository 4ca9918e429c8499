#include "sim/nccl_tuner.h"

#include <algorithm>
#include <set>

#include "sim/nccl_tuner_model.h"

namespace tandem::sim {

namespace {

// NCCL's base latency per collective (src/graph/tuning.cc, NCCL 2.18), microseconds;
// index [tree, ring][LL, LL128, Simple]. NCCL's per-hop figures are not added: the cluster
// presets' link latencies already include the per-step software cost (scenarios/clusters/*).
constexpr double kBaseLatUs[2][3] = {{6.8, 14.0, 0.0}, {6.6, 14.0, 8.4}};
constexpr double kProtocolEfficiency[3] = {0.5, 120.0 / 128.0, 1.0};
// NVLS reaches 480 GB/s all-reduce bus bandwidth on 8 H200 at 16 GiB (traces/reference/
// nccl_allreduce_8xh200.tsv, header): algbw 480 / (2*7/8) = 274 GB/s of the 450 GB/s port, i.e.
// 0.61 of the datasheet, against the 0.80 the NVLink links carry: the switch reduction runs at
// 0.765 of the link rate.
constexpr double kNvlsEfficiency = 0.61 / 0.80;
constexpr double kNvlsBaseLatUs = 23.0;  // NCCL 2.18 tuning.cc baseLat, NVLS / Simple
// Bytes a pipeline stage holds in flight when the message is large (CollectivePlan): fit on the
// nccl-tests all-reduce curves of traces/reference/ as a whole (docs/sim.md, "pipeline fill").
constexpr double kFillWindowBytes = 3e6;

}  // namespace

NcclTuner::NcclTuner(const FabricModel& fabric, bool ideal, std::optional<Algorithm> force_algorithm,
                     std::optional<Protocol> force_protocol)
    : fabric_(fabric), ideal_(ideal), force_algorithm_(force_algorithm), force_protocol_(force_protocol) {}

ProtocolCost NcclTuner::cost_of(Algorithm a, Protocol p) const {
  ProtocolCost c;
  if (ideal_) return c;
  const int ai = a == Algorithm::kTree ? 0 : 1;
  const int pi = static_cast<int>(p);
  c.efficiency = kProtocolEfficiency[pi];
  c.base_s = kBaseLatUs[ai][pi] * 1e-6;
  c.fill_window_bytes = kFillWindowBytes;
  return c;
}

TunedCollective NcclTuner::choose_p2p(int src, int dst, double bytes) {
  TunedCollective best;
  best.algorithm = Algorithm::kDirect;
  std::vector<Protocol> protos = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};
  if (ideal_) protos = {Protocol::kSimple};
  if (force_protocol_) protos = {*force_protocol_};
  const CollectivePlan plan = plan_p2p(src, dst, bytes);
  double best_t = -1;
  for (Protocol p : protos) {
    ProtocolCost c = cost_of(Algorithm::kRing, p);
    c.base_s = 0;  // a send/recv pays its hop, not a collective launch
    const double t = uncontended_time(plan, fabric_, c);
    if (best_t < 0 || t < best_t) best_t = t, best.protocol = p, best.cost = c;
  }
  return best;
}

NcclModelShape NcclTuner::model_shape(const std::vector<int>& members, int n, int nodes) const {
  NcclModelShape s;
  s.ranks = n;
  s.nodes = nodes;
  s.compute_capability = fabric_.compute_capability;
  s.cpu_amd = fabric_.cpu_amd;
  // nChannels: across nodes, one channel per rail the ring crosses (NCCL's ring search on nodes
  // with a NIC per GPU finds one channel per NIC: 8 x 24 GB/s on DGX A100, which it does not
  // duplicate below 25 GB/s a channel, search.cc:970 at v2.18.3-1); inside one node, one per member (the
  // channel count NCCL forces for NVLS, search.cc:836).
  s.channels = nodes > 1 ? ring_channels(members, fabric_) : n;
  // nChannels * bw: the bus bandwidth of the group's physical ring, i.e. its all-reduce phase
  // plan timed with no latency and no protocol: busBw = 2(n-1)/n * B / time. NCCL's searches give
  // the ring, the tree and NVLS the same per-GPU bandwidth on NVSwitch nodes with a NIC per GPU,
  // so one figure serves every algorithm (docs/sim.md, "Tuner").
  FabricModel bare = fabric_;
  bare.nvlink_latency_s = bare.nic_latency_s = 0;
  constexpr double kBytes = 1e9;
  const CollectivePlan ring =
      plan_collective(CollectiveOp::kAllReduce, members, 0, kBytes, Algorithm::kRing, Granularity::kPhase, bare);
  const double t = uncontended_time(ring, bare, ProtocolCost{});
  s.bus_bw_gbs = t > 0 ? 2.0 * (n - 1) / n * kBytes / t / 1e9 : 0;
  return s;
}

TunedCollective NcclTuner::choose(CollectiveOp op, const std::vector<int>& members, double bytes) {
  std::set<int> nodes;
  for (int g : members) nodes.insert(fabric_.node_of(g));
  const int n = static_cast<int>(members.size());
  const int N = static_cast<int>(nodes.size());
  bool uniform = true;
  std::map<int, int> per_node;
  for (int g : members) ++per_node[fabric_.node_of(g)];
  for (auto& [node, k] : per_node) uniform = uniform && k == per_node.begin()->second;
  const auto key = std::make_tuple(static_cast<int>(op), n, N, uniform ? per_node.begin()->second : -1, bytes,
                                   members.front() % fabric_.gpus_per_node);
  if (auto it = cache_.find(key); it != cache_.end()) return it->second;

  std::vector<Algorithm> algos;
  switch (op) {
    case CollectiveOp::kAllReduce:
      algos = {Algorithm::kRing};
      if (N > 1 && uniform) algos.push_back(Algorithm::kTree);
      if (N == 1 && fabric_.nvls && !ideal_) algos.push_back(Algorithm::kNvls);
      break;
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter: algos = {Algorithm::kRing}; break;
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce: algos = {Algorithm::kChain}; break;
    case CollectiveOp::kAllToAll: algos = {Algorithm::kDirect}; break;
  }
  if (force_algorithm_ && std::find(algos.begin(), algos.end(), *force_algorithm_) != algos.end())
    algos = {*force_algorithm_};
  std::vector<Protocol> protos = {Protocol::kLL, Protocol::kLL128, Protocol::kSimple};
  if (ideal_) protos = {Protocol::kSimple};
  if (force_protocol_) protos = {*force_protocol_};

  TunedCollective best;
  auto timing_cost = [&](Algorithm a, Protocol p) {
    ProtocolCost c = cost_of(a, p);
    if (a == Algorithm::kNvls && !ideal_) c.efficiency = kNvlsEfficiency, c.base_s = kNvlsBaseLatUs * 1e-6;
    return c;
  };
  if (!ideal_ && op != CollectiveOp::kAllToAll) {
    // NCCL's choice from NCCL's model (sim/nccl_tuner_model.h), in NCCL's order (tree, ring,
    // NVLS: enqueue.cc:1165-1179 at v2.18.3-1), the first of equal times kept.
    // The shape depends on the group alone (the key's last four parts), not on the op or the size.
    const auto shape_key = std::make_tuple(std::get<1>(key), std::get<2>(key), std::get<3>(key), std::get<5>(key));
    auto shape_it = shape_cache_.find(shape_key);
    if (shape_it == shape_cache_.end()) shape_it = shape_cache_.emplace(shape_key, model_shape(members, n, N)).first;
    const NcclModelShape& shape = shape_it->second;
    std::vector<Algorithm> order;
    for (Algorithm a : {Algorithm::kTree, Algorithm::kRing, Algorithm::kChain, Algorithm::kNvls})
      if (std::find(algos.begin(), algos.end(), a) != algos.end()) order.push_back(a);
    double best_t = -1;
    bool any = false;
    for (Algorithm a : order) {
      for (Protocol p : protos) {
        if (a == Algorithm::kNvls && p != Protocol::kSimple) continue;
        const double t = nccl_model_time_us(op, a, p, shape, bytes);
        if (!any) best = {a, p, timing_cost(a, p)}, any = true;  // a forced pair NCCL's model disables
        if (t >= 0 && (best_t < 0 || t < best_t)) best_t = t, best = {a, p, timing_cost(a, p)};
      }
    }
  } else {
    // `ideal` (and all-to-all, which NCCL runs as send/receive pairs outside tuning.cc): the
    // cheapest phase plan, uncontended.
    double best_t = -1;
    for (Algorithm a : algos) {
      const CollectivePlan plan = plan_collective(op, members, 0, bytes, a, Granularity::kPhase, fabric_);
      for (Protocol p : protos) {
        if (a == Algorithm::kNvls && p != Protocol::kSimple) continue;
        const ProtocolCost c = timing_cost(a, p);
        const double t = uncontended_time(plan, fabric_, c);
        if (best_t < 0 || t < best_t) best_t = t, best = {a, p, c};
      }
    }
  }
  cache_.emplace(key, best);
  return best;
}

}  // namespace tandem::sim
