#include "sim/lane_quotient.h"

#include <algorithm>
#include <tuple>

namespace tandem::sim {

// A phase's flows are whole orbits when, grouped by their representative (the flow moved back by
// the element of G that brings its source to a representative GPU: source, destination, bytes),
// every group holds the same number c of flows moved by each of the |G| elements. The j-th flow
// of each element then stands with the j-th of the identity, the representative.
std::shared_ptr<const LaneQuotientPlan> lane_quotient(const CollectivePlan& plan, const FoldPlanner& layout,
                                                      const Platform& platform, bool tp_only) {
  const int moves = layout.lane_moves(tp_only);
  auto out = std::make_shared<LaneQuotientPlan>();
  struct Entry {
    int src, dst;
    double bytes;
    int move;
    uint32_t flow;
    auto key() const { return std::tie(src, dst, bytes, move, flow); }
  };
  std::vector<Entry> entries;
  for (const CommPhase& p : plan.phases) {
    LaneQuotientPhase& q = out->phases.emplace_back();
    entries.clear();
    entries.reserve(p.flows.size());
    for (uint32_t i = 0; i < p.flows.size(); ++i) {
      const Flow& f = p.flows[i];
      const int move = layout.move_of(f.src, tp_only);
      entries.push_back({layout.move_back(f.src, move, tp_only), layout.move_back(f.dst, move, tp_only), f.bytes, move,
                         i});
    }
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.key() < b.key(); });
    q.rep_of_flow.assign(p.flows.size(), LaneQuotientPhase::kNotRep);
    std::vector<std::pair<uint32_t, std::vector<uint32_t>>> orbits;  // representative flow, members
    for (size_t begin = 0; begin < entries.size();) {
      size_t end = begin;
      const Entry& e = entries[begin];
      while (end < entries.size() && entries[end].src == e.src && entries[end].dst == e.dst &&
             entries[end].bytes == e.bytes)
        ++end;
      // [begin, end): one representative key, sorted by move then flow.
      if ((end - begin) % size_t(moves)) return nullptr;
      const size_t c = (end - begin) / size_t(moves);
      for (size_t j = 0; j < c; ++j) {
        std::vector<uint32_t> members;
        members.reserve(size_t(moves));
        for (int m = 0; m < moves; ++m) {
          const Entry& x = entries[begin + size_t(m) * c + j];
          if (x.move != m) return nullptr;
          members.push_back(x.flow);
        }
        orbits.emplace_back(members.front(), std::move(members));
      }
      // A group whose moves are not each c times: caught above (a move out of place).
      begin = end;
    }
    std::sort(orbits.begin(), orbits.end());
    q.offsets.push_back(0);
    for (auto& [rep, members] : orbits) {
      const Flow& f = p.flows[rep];
      // The representative's destination link: that of the representative of the orbit of its
      // destination GPU, on the flow's own fabric.
      const int dst = layout.orbit_rep(f.dst, tp_only);
      const bool local = platform.same_node(f.src, f.dst);
      if (local && !platform.same_node(f.src, dst)) return nullptr;
      q.rep_of_flow[rep] = uint32_t(q.reps.size());
      q.reps.push_back(rep);
      q.rep_dst.push_back(dst);
      q.members.insert(q.members.end(), members.begin(), members.end());
      q.offsets.push_back(uint32_t(q.members.size()));
    }
  }
  return out;
}

}  // namespace tandem::sim
