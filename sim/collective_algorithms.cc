#include "sim/collective_algorithms.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "shared/error.h"

namespace tandem::sim {

const char* to_string(Algorithm a) {
  switch (a) {
    case Algorithm::kRing: return "ring";
    case Algorithm::kTree: return "tree";
    case Algorithm::kChain: return "chain";
    case Algorithm::kDirect: return "direct";
    case Algorithm::kNvls: return "nvls";
  }
  return "?";
}

const char* to_string(Protocol p) {
  switch (p) {
    case Protocol::kLL: return "LL";
    case Protocol::kLL128: return "LL128";
    case Protocol::kSimple: return "Simple";
  }
  return "?";
}

namespace {

// Members grouped by node, in node order, each node's members in rank order.
struct NodeLayout {
  std::vector<std::vector<int>> nodes;
  bool uniform = true;  // every node holds the same number of members
  int channels = 1;     // distinct NICs of a node's members (uniform layouts only)
};

NodeLayout layout_of(const std::vector<int>& members, const FabricModel& f) {
  std::vector<int> sorted = members;
  std::sort(sorted.begin(), sorted.end());
  NodeLayout l;
  for (int g : sorted) {
    if (l.nodes.empty() || f.node_of(l.nodes.back().front()) != f.node_of(g)) l.nodes.emplace_back();
    l.nodes.back().push_back(g);
  }
  for (const auto& n : l.nodes) l.uniform = l.uniform && n.size() == l.nodes.front().size();
  if (l.uniform && l.nodes.size() > 1) {
    std::vector<int> nics;
    for (int g : l.nodes.front()) nics.push_back(f.nic_index(g));
    std::sort(nics.begin(), nics.end());
    l.channels = static_cast<int>(std::unique(nics.begin(), nics.end()) - nics.begin());
  }
  return l;
}

void add_flow(CommPhase& p, int src, int dst, double bytes) {
  if (src != dst && bytes > 0) p.flows.push_back({src, dst, bytes});
}

// The flows of one ring pass in which every edge carries `bytes` in total (all channels).
CommPhase ring_pass(const NodeLayout& l, double bytes, const FabricModel& f) {
  CommPhase p;
  if (l.nodes.size() == 1) {
    const auto& m = l.nodes.front();
    for (size_t i = 0; i < m.size(); ++i) add_flow(p, m[i], m[(i + 1) % m.size()], bytes);
    return p;
  }
  if (!l.uniform) {  // one flat ring in rank order
    std::vector<int> all;
    for (const auto& n : l.nodes) all.insert(all.end(), n.begin(), n.end());
    for (size_t i = 0; i < all.size(); ++i) add_flow(p, all[i], all[(i + 1) % all.size()], bytes);
    return p;
  }
  const int C = l.channels;
  const int N = static_cast<int>(l.nodes.size());
  const double per_channel = bytes / C;
  // Entry and exit of channel c on node j (NCCL's ring graph, see the header): the first member
  // on the node's c-th NIC enters; the exit is the first member after it, in rank order from it,
  // that reaches that NIC over PCIe; none: the entry's own NIC through an NVLink relay (PXN).
  auto entry_of = [&](int j, int c) {
    const auto& m = l.nodes[size_t(j)];
    std::vector<int> nics;
    for (int g : m)
      if (std::find(nics.begin(), nics.end(), f.nic_index(g)) == nics.end()) nics.push_back(f.nic_index(g));
    const int nic = nics[size_t(c) % nics.size()];
    for (size_t i = 0; i < m.size(); ++i)
      if (f.nic_index(m[i]) == nic) return i;
    return size_t{0};
  };
  for (int c = 0; c < C; ++c) {
    for (int j = 0; j < N; ++j) {
      const auto& m = l.nodes[size_t(j)];
      const size_t k = m.size();
      const size_t e = entry_of(j, c);
      size_t x = e;
      for (size_t t = 1; t < k && x == e; ++t)
        if (f.pcie_reaches_nic_of(m[(e + t) % k], m[e])) x = (e + t) % k;
      // The visiting order: the entry, the others in rank order from it, the exit last.
      std::vector<int> order{m[e]};
      for (size_t t = 1; t < k; ++t)
        if ((e + t) % k != x) order.push_back(m[(e + t) % k]);
      if (x != e) order.push_back(m[x]);
      for (size_t t = 0; t + 1 < order.size(); ++t) add_flow(p, order[t], order[t + 1], per_channel);
      if (x == e && k > 1) add_flow(p, order.back(), m[e], per_channel);  // PXN: relay through the entry
      const int leaves = x == e ? m[e] : m[x];
      add_flow(p, leaves, l.nodes[size_t((j + 1) % N)][entry_of((j + 1) % N, c)], per_channel);
    }
  }
  return p;
}

int ring_hops(const NodeLayout& l, int steps, CommPhase& p) {
  if (l.nodes.size() > 1) p.network_hops += steps;
  else p.nvlink_hops += steps;
  return steps;
}

int floor_log2(int x) {
  int d = 0;
  while (x > 1) x >>= 1, ++d;
  return d;
}

}  // namespace

int ring_channels(const std::vector<int>& members, const FabricModel& fabric) {
  return members.size() > 1 ? layout_of(members, fabric).channels : 1;
}

CollectivePlan plan_p2p(int src, int dst, double bytes) {
  CollectivePlan plan;
  plan.algorithm = Algorithm::kDirect;
  plan.phases.emplace_back();
  plan.phases[0].flows.push_back({src, dst, bytes});
  return plan;
}

CollectivePlan plan_collective(CollectiveOp op, const std::vector<int>& members, int root, double bytes,
                               Algorithm algorithm, Granularity granularity, const FabricModel& f) {
  CollectivePlan plan;
  plan.algorithm = algorithm;
  const int n = static_cast<int>(members.size());
  if (n <= 1 || bytes <= 0) return plan;
  const NodeLayout l = layout_of(members, f);
  const int N = static_cast<int>(l.nodes.size());

  auto hop_kind = [&](CommPhase& p, int a, int b) {
    if (f.node_of(a) == f.node_of(b)) ++p.nvlink_hops;
    else ++p.network_hops;
  };

  switch (op) {
    case CollectiveOp::kAllReduce:
    case CollectiveOp::kAllGather:
    case CollectiveOp::kReduceScatter: {
      if (algorithm == Algorithm::kTree) {
        if (op != CollectiveOp::kAllReduce || N < 2 || !l.uniform)
          throw Error("sim: the tree algorithm applies to all-reduce across nodes with the same members per node");
        CommPhase p;
        // At least two channels, so that the data is split over both trees of the pair.
        const int C = std::max(2, l.channels);
        const int k = static_cast<int>(l.nodes.front().size());
        const double per_channel = bytes / C;
        for (int c = 0; c < C; ++c) {
          for (int j = 0; j < N; ++j) {
            const auto& m = l.nodes[j];
            for (int t = 0; t + 1 < k; ++t) {  // chain up and down inside the node
              add_flow(p, m[(c + t + 1) % k], m[(c + t) % k], per_channel);
              add_flow(p, m[(c + t) % k], m[(c + t + 1) % k], per_channel);
            }
            // Heap tree over node indices; odd channels use the mirror tree (double binary tree).
            const int pos = (c % 2 == 0) ? j : N - 1 - j;
            if (pos == 0) continue;
            const int parent_pos = (pos - 1) / 2;
            const int parent = (c % 2 == 0) ? parent_pos : N - 1 - parent_pos;
            add_flow(p, m[c % k], l.nodes[parent][c % k], per_channel);
            add_flow(p, l.nodes[parent][c % k], m[c % k], per_channel);
          }
        }
        p.network_hops = 2 * floor_log2(N);
        p.nvlink_hops = 2 * (k - 1);
        plan.phases.push_back(std::move(p));
        // Up the chain and tree, then down: every level holds a chunk of the channel's data.
        plan.pipeline_depth = 2 * (floor_log2(N) + k - 1) - 1;
        plan.step_bytes = per_channel;
        plan.crosses_network = true;
        return plan;
      }
      if (algorithm == Algorithm::kNvls) {
        if (op != CollectiveOp::kAllReduce || N != 1)
          throw Error("sim: NVLS applies to all-reduce inside one node");
        // Port loads of the switch reduction: B up and B down on every member's NVLink.
        CommPhase p;
        const auto& m = l.nodes.front();
        for (size_t i = 0; i < m.size(); ++i) add_flow(p, m[i], m[(i + 1) % m.size()], bytes);
        p.nvlink_hops = 2;
        plan.phases.push_back(std::move(p));
        // Each member reduces its slice B/n in the switch and multicasts it back; the slices go
        // through one after another, so the last trails the first by n-1 of them.
        plan.pipeline_depth = n - 1;
        plan.step_bytes = bytes / n;
        return plan;
      }
      if (algorithm != Algorithm::kRing) throw Error("sim: all-reduce, all-gather and reduce-scatter run as ring or tree");
      const int steps = op == CollectiveOp::kAllReduce ? 2 * (n - 1) : n - 1;
      const double chunk = bytes / n;
      plan.pipeline_depth = steps - 1;
      plan.step_bytes = chunk;
      plan.crosses_network = N > 1;
      if (granularity == Granularity::kPhase) {
        CommPhase p = ring_pass(l, chunk * steps, f);
        ring_hops(l, steps, p);
        plan.phases.push_back(std::move(p));
      } else {
        const CommPhase step = ring_pass(l, chunk, f);
        for (int s = 0; s < steps; ++s) {
          CommPhase p = step;
          ring_hops(l, 1, p);
          plan.phases.push_back(std::move(p));
        }
      }
      return plan;
    }
    case CollectiveOp::kBroadcast:
    case CollectiveOp::kReduce: {
      if (root < 0 || root >= n) throw Error("sim: broadcast/reduce root " + std::to_string(root) + " outside its group");
      plan.algorithm = Algorithm::kChain;
      CommPhase p;
      for (int i = 0; i + 1 < n; ++i) {
        const int a = members[(root + i) % n], b = members[(root + i + 1) % n];
        if (op == CollectiveOp::kBroadcast) add_flow(p, a, b, bytes);
        else add_flow(p, b, a, bytes);
        hop_kind(p, a, b);
      }
      plan.pipeline_depth = n - 2;
      plan.step_bytes = bytes;
      plan.crosses_network = p.network_hops > 0;
      plan.phases.push_back(std::move(p));
      return plan;
    }
    case CollectiveOp::kAllToAll: {
      plan.algorithm = Algorithm::kDirect;
      CommPhase p;
      for (int a : members)
        for (int b : members) add_flow(p, a, b, bytes / n);
      if (N > 1) p.network_hops = 1;
      else p.nvlink_hops = 1;
      plan.phases.push_back(std::move(p));
      return plan;
    }
  }
  return plan;
}

double pipeline_fill_s(const CollectivePlan& plan, const FabricModel& f, const ProtocolCost& proto) {
  if (plan.pipeline_depth <= 0 || proto.fill_window_bytes <= 0) return 0;
  const double bw = (plan.crosses_network ? f.nic_bytes_s : f.nvlink_bytes_s) * proto.efficiency;
  // A connection holds at most NCCL_STEPS (8) chunks in flight (NCCL's FIFO depth), so a longer
  // pipeline (a ring over many nodes) does not trail by more than that.
  constexpr int kNcclSteps = 8;
  return std::min(plan.pipeline_depth, kNcclSteps) * std::min(plan.step_bytes, proto.fill_window_bytes) / bw;
}

double uncontended_time(const CollectivePlan& plan, const FabricModel& f, const ProtocolCost& proto) {
  double total = plan.phases.empty() ? 0.0 : proto.base_s + pipeline_fill_s(plan, f, proto);
  // Link ids: 4 per GPU or NIC: nvlink up/down, nic up/down.
  std::unordered_map<int64_t, double> load;
  for (const CommPhase& p : plan.phases) {
    load.clear();
    double worst = 0;
    for (const Flow& fl : p.flows) {
      int64_t up, down;
      double bw;
      if (f.node_of(fl.src) == f.node_of(fl.dst)) {
        up = int64_t(fl.src) * 4, down = int64_t(fl.dst) * 4 + 1, bw = f.nvlink_bytes_s;
      } else {
        up = int64_t(f.nic_index(fl.src)) * 4 + 2, down = int64_t(f.nic_index(fl.dst)) * 4 + 3, bw = f.nic_bytes_s;
      }
      const double t = fl.bytes / (bw * proto.efficiency);
      worst = std::max({worst, load[up] += t, load[down] += t});
    }
    total += worst + p.nvlink_hops * (f.nvlink_latency_s + proto.nvlink_hop_s) +
             p.network_hops * (f.nic_latency_s + proto.network_hop_s);
  }
  return total;
}

}  // namespace tandem::sim
