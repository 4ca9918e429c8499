// The heaviest closed set of a directed graph.
//
// A set C of nodes is closed when every edge u -> v ("u requires v") with u in C has v in C. Of all
// closed sets (the empty one included), max_closure_weight returns the largest total weight. It is
// the classic reduction to a minimum s-t cut (Picard, "Maximal closure of a graph and applications
// to combinatorial problems", Management Science 22(11), 1976): the source feeds each node of
// positive weight with that weight, each node of negative weight drains its weight to the sink, a
// requirement is an edge of infinite capacity, and the answer is the sum of the positive weights
// less the maximum flow. The flow is Dinic's, with an iterative search (chains of requirements run
// to hundreds of thousands of nodes: no recursion).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace tandem {

// weight[v] for nodes 0 .. weight.size()-1; needs: (u, v) pairs, u requires v. Throws Error on
// a node out of range or when the weights' magnitudes overflow int64. closed, when given, receives
// one such heaviest set (closed[v] != 0 for its members).
int64_t max_closure_weight(const std::vector<int64_t>& weight, const std::vector<std::pair<uint32_t, uint32_t>>& needs,
                           std::vector<char>* closed = nullptr);

}  // namespace tandem
