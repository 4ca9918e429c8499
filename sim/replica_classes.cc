#include "sim/replica_classes.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "shared/rank_grid.h"

namespace tandem::sim {

namespace {

// A replica's colour signature: its class, then the sorted (label, direction, class of the other
// end) of every edge at it.
using Signature = std::pair<int, std::vector<std::tuple<uint64_t, int, int>>>;

std::vector<Signature> signatures(const std::vector<int>& classes, const std::vector<ReplicaEdge>& edges) {
  std::vector<Signature> sig(classes.size());
  for (size_t d = 0; d < classes.size(); ++d) sig[d].first = classes[d];
  for (const ReplicaEdge& e : edges) {
    sig[size_t(e.src)].second.emplace_back(e.label, 0, classes[size_t(e.dst)]);
    sig[size_t(e.dst)].second.emplace_back(e.label, 1, classes[size_t(e.src)]);
  }
  for (Signature& s : sig) std::sort(s.second.begin(), s.second.end());
  return sig;
}

}  // namespace

std::vector<int> equitable_classes(int replicas, const std::vector<ReplicaEdge>& edges, int rounds) {
  std::vector<int> classes(size_t(std::max(0, replicas)), 0);
  int count = replicas > 0 ? 1 : 0;
  // Colour refinement: split every class by its members' signatures until no class splits. Each
  // round either adds a class or stops, so at most `replicas` rounds; the result is the coarsest
  // equitable partition (the stable colouring refines every equitable one).
  for (int round = 0;; ++round) {
    if (round >= rounds) return classes;
    const std::vector<Signature> sig = signatures(classes, edges);
    std::map<const Signature*, int, bool (*)(const Signature*, const Signature*)> ids(
        [](const Signature* a, const Signature* b) { return *a < *b; });
    std::vector<int> next(classes.size());
    for (size_t d = 0; d < classes.size(); ++d) {
      auto [it, fresh] = ids.emplace(&sig[d], int(ids.size()));
      next[d] = it->second;
    }
    const int c = int(ids.size());
    classes = std::move(next);  // numbered in the order of first replica
    if (c == count) return classes;
    count = c;
  }
}

bool is_equitable(const std::vector<int>& classes, const std::vector<ReplicaEdge>& edges) {
  const std::vector<Signature> sig = signatures(classes, edges);
  std::map<int, size_t> first;  // class -> a member
  for (size_t d = 0; d < classes.size(); ++d) {
    auto [it, fresh] = first.emplace(classes[d], d);
    if (!fresh && sig[it->second].second != sig[d].second) return false;
  }
  return true;
}

void add_plan_edges(const CollectivePlan& plan, uint32_t plan_id, const RankGrid& grid, std::vector<ReplicaEdge>& out) {
  const uint64_t positions = uint64_t(grid.pp()) * uint64_t(grid.tp()) * uint64_t(grid.sp());
  auto position = [&](const RankCoord& c) { return (uint64_t(c.pp) * grid.tp() + c.tp) * grid.sp() + c.sp; };
  for (size_t ph = 0; ph < plan.phases.size(); ++ph)
    for (const Flow& f : plan.phases[ph].flows) {
      const RankCoord a = grid.coord(f.src), b = grid.coord(f.dst);
      const uint64_t where = position(a) * positions + position(b);
      // (plan_id, phase) < 2^32 and where < 2^32: FoldPlanner::choose_class_fold keeps them so.
      out.push_back({a.dp, b.dp, (((uint64_t(plan_id) << 16) | uint64_t(ph)) << 32) | where});
    }
}

}  // namespace tandem::sim
