// A consumer of Chakra traces with ASTRA-sim's issue rules, without time, to check that an export
// cannot deadlock in it (issue 19). The rules, from astra-sim/workload/Workload.cc and
// HardwareResource.cc: a node is ready when its data_deps and ctrl_deps are done; a rank keeps at
// most one communication node (collective, send or receive) in flight and issues the ready one of
// lowest id when none is; a send completes on its own (the analytical network delivers it
// whether or not the receive is posted); a receive completes once a send with its (src, dst, tag)
// was issued; a collective completes once every rank of its group has issued it (the k-th
// collective of a group on one rank meets the k-th on the others); other nodes complete one
// round after they are ready (kernels take time: a rank picks its next communication among the
// nodes ready before they end). The replay runs until nothing changes; a node left undone is a
// deadlock.
#pragma once

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "chakra_test_util.h"

namespace tandem::testing {

struct OneInFlightOutcome {
  bool completed = false;
  std::string problem;  // the first stuck rank and node, or a mismatch between group members
};

inline OneInFlightOutcome replay_one_in_flight(const std::vector<EtFile>& ranks,
                                               const std::map<std::string, std::vector<int>>& groups,
                                               bool use_ctrl_deps = true) {
  using ChakraProtoMsg::Node;
  const int world = int(ranks.size());
  struct Rank {
    std::unordered_map<uint64_t, size_t> at;  // node id -> index
    std::vector<char> done, issued;
    long busy = -1;                   // index of the communication node in flight
    std::map<std::string, int> seq;   // collectives issued per group
    std::string busy_group;
    int busy_seq = -1;
  };
  std::vector<Rank> st(world);
  for (int r = 0; r < world; ++r) {
    for (size_t i = 0; i < ranks[r].nodes.size(); ++i) st[r].at[ranks[r].nodes[i].id()] = i;
    st[r].done.assign(ranks[r].nodes.size(), 0);
    st[r].issued.assign(ranks[r].nodes.size(), 0);
  }
  OneInFlightOutcome out;
  auto ready = [&](int r, const Node& n) {
    auto dep_done = [&](uint64_t d) {
      auto it = st[r].at.find(d);
      if (it == st[r].at.end()) throw std::runtime_error("rank " + std::to_string(r) + " node " +
                                                         std::to_string(n.id()) + " depends on no node " + std::to_string(d));
      return bool(st[r].done[it->second]);
    };
    for (uint64_t d : n.data_deps())
      if (!dep_done(d)) return false;
    if (use_ctrl_deps)
      for (uint64_t d : n.ctrl_deps())
        if (!dep_done(d)) return false;
    return true;
  };
  std::map<std::tuple<int, int, int>, int> posted;  // sends issued, by (src, dst, tag)
  for (bool changed = true; changed;) {
    changed = false;
    for (int r = 0; r < world; ++r) {
      Rank& s = st[r];
      const auto& nodes = ranks[r].nodes;
      // Communication first, then the compute that was ready: a kernel takes time, so a
      // communication node waiting on it is not ready yet when the rank picks its next one.
      std::vector<size_t> finishing;
      for (size_t i = 0; i < nodes.size(); ++i)
        if (!s.done[i] && !is_comm_node(nodes[i]) && ready(r, nodes[i])) finishing.push_back(i);
      while (s.busy < 0) {
        long pick = -1;
        for (size_t i = 0; i < nodes.size(); ++i)
          if (!s.issued[i] && is_comm_node(nodes[i]) && ready(r, nodes[i]) &&
              (pick < 0 || nodes[i].id() < nodes[size_t(pick)].id()))
            pick = long(i);
        if (pick < 0) break;
        const Node& n = nodes[size_t(pick)];
        s.issued[size_t(pick)] = changed = true;
        if (n.type() == ChakraProtoMsg::COMM_SEND_NODE) {
          ++posted[{attr(n, "comm_src").int32_val(), attr(n, "comm_dst").int32_val(), attr(n, "comm_tag").int32_val()}];
          s.done[size_t(pick)] = true;  // eager: the next one may issue
        } else {
          s.busy = pick;
          if (n.type() == ChakraProtoMsg::COMM_COLL_NODE) {
            s.busy_group = attr(n, "pg_name").string_val();
            s.busy_seq = s.seq[s.busy_group]++;
          }
        }
      }
      for (size_t i : finishing) s.done[i] = changed = true;
    }
    for (int r = 0; r < world; ++r) {
      Rank& s = st[r];
      if (s.busy < 0) continue;
      const Node& n = ranks[r].nodes[size_t(s.busy)];
      if (n.type() == ChakraProtoMsg::COMM_RECV_NODE) {
        auto it = posted.find({attr(n, "comm_src").int32_val(), attr(n, "comm_dst").int32_val(), attr(n, "comm_tag").int32_val()});
        if (it != posted.end() && it->second > 0) {
          --it->second;
          s.done[size_t(s.busy)] = changed = true;
          s.busy = -1;
        }
        continue;
      }
      auto g = groups.find(s.busy_group);
      if (g == groups.end() || !std::count(g->second.begin(), g->second.end(), r)) {
        out.problem = "rank " + std::to_string(r) + " node " + n.name() + ": group " + s.busy_group +
                      " is not in comm_groups.json or lacks the rank";
        return out;
      }
      bool all = true;
      for (int m : g->second) {
        const Rank& o = st[size_t(m)];
        all = all && o.busy >= 0 && ranks[m].nodes[size_t(o.busy)].type() == ChakraProtoMsg::COMM_COLL_NODE &&
              o.busy_group == s.busy_group && o.busy_seq == s.busy_seq;
      }
      if (!all) continue;
      for (int m : g->second) {
        Rank& o = st[size_t(m)];
        const Node& mn = ranks[m].nodes[size_t(o.busy)];
        if (attr(mn, "comm_type").int64_val() != attr(n, "comm_type").int64_val() ||
            attr(mn, "comm_size").int64_val() != attr(n, "comm_size").int64_val()) {
          out.problem = "group " + s.busy_group + " collective " + std::to_string(s.busy_seq) + ": rank " +
                        std::to_string(r) + " issues " + n.name() + ", rank " + std::to_string(m) + " " + mn.name();
          return out;
        }
      }
      for (int m : g->second) {
        Rank& o = st[size_t(m)];
        o.done[size_t(o.busy)] = true;
        o.busy = -1;
      }
      changed = true;
    }
  }
  for (int r = 0; r < world; ++r)
    for (size_t i = 0; i < ranks[r].nodes.size(); ++i)
      if (!st[r].done[i]) {
        const long b = st[r].busy;
        out.problem = "deadlock: rank " + std::to_string(r) + " stops at node " + std::to_string(ranks[r].nodes[i].id()) +
                      " (" + ranks[r].nodes[i].name() + ")" +
                      (b >= 0 ? ", in flight: " + ranks[r].nodes[size_t(b)].name() : std::string());
        return out;
      }
  out.completed = true;
  return out;
}

}  // namespace tandem::testing
