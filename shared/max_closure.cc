#include "shared/max_closure.h"

#include <algorithm>
#include <limits>
#include <queue>

#include "shared/error.h"
#include "shared/resource_limit.h"

namespace tandem {
namespace {

// A flow network in adjacency arrays; edge e and its reverse are e and e ^ 1.
class FlowNetwork {
 public:
  explicit FlowNetwork(size_t nodes) : first_(nodes, kNone) {}

  void add_edge(uint32_t from, uint32_t to, int64_t capacity) {
    push(from, to, capacity);
    push(to, from, 0);
  }

  int64_t max_flow(uint32_t source, uint32_t sink) {
    int64_t total = 0;
    while (levels(source, sink)) {
      current_ = first_;
      while (const int64_t f = augment(source, sink)) total += f;
    }
    return total;
  }

  // The nodes the source still reaches through edges with capacity left: after a maximum flow,
  // the source side of a minimum cut.
  std::vector<char> reached_from(uint32_t source) {
    levels(source, source);
    std::vector<char> reached(first_.size());
    for (size_t v = 0; v < first_.size(); ++v) reached[v] = level_[v] >= 0;
    return reached;
  }

 private:
  static constexpr uint32_t kNone = std::numeric_limits<uint32_t>::max();
  struct Edge {
    uint32_t to, next;
    int64_t capacity;
  };

  void push(uint32_t from, uint32_t to, int64_t capacity) {
    edges_.push_back({to, first_[from], capacity});
    first_[from] = uint32_t(edges_.size() - 1);
  }

  // Breadth-first levels over edges with capacity left; whether the sink is reached.
  bool levels(uint32_t source, uint32_t sink) {
    level_.assign(first_.size(), -1);
    std::queue<uint32_t> q;
    level_[source] = 0;
    q.push(source);
    while (!q.empty()) {
      const uint32_t u = q.front();
      q.pop();
      for (uint32_t e = first_[u]; e != kNone; e = edges_[e].next)
        if (edges_[e].capacity > 0 && level_[edges_[e].to] < 0) {
          level_[edges_[e].to] = level_[u] + 1;
          q.push(edges_[e].to);
        }
    }
    return level_[sink] >= 0;
  }

  // One augmenting path along increasing levels, found depth first without recursion (current_
  // remembers each node's next edge to try; a node with none left leaves the level graph).
  int64_t augment(uint32_t source, uint32_t sink) {
    path_.clear();
    uint32_t u = source;
    for (;;) {
      if (u == sink) {
        int64_t f = std::numeric_limits<int64_t>::max();
        for (uint32_t e : path_) f = std::min(f, edges_[e].capacity);
        for (uint32_t e : path_) edges_[e].capacity -= f, edges_[e ^ 1].capacity += f;
        return f;
      }
      uint32_t& e = current_[u];
      while (e != kNone && !(edges_[e].capacity > 0 && level_[edges_[e].to] == level_[u] + 1)) e = edges_[e].next;
      if (e != kNone) {
        path_.push_back(e);
        u = edges_[e].to;
        continue;
      }
      level_[u] = -1;  // a dead end
      if (path_.empty()) return 0;
      u = edges_[path_.back() ^ 1].to;  // back to the edge's tail
      path_.pop_back();
      current_[u] = edges_[current_[u]].next;
    }
  }

  std::vector<uint32_t> first_, current_, path_;
  std::vector<int> level_;
  std::vector<Edge> edges_;
};

}  // namespace

int64_t max_closure_weight(const std::vector<int64_t>& weight, const std::vector<std::pair<uint32_t, uint32_t>>& needs,
                           std::vector<char>* closed) {
  const size_t n = weight.size();
  if (n + 2 > std::numeric_limits<uint32_t>::max()) throw Error("max closure: too many nodes");
  const uint32_t source = uint32_t(n), sink = uint32_t(n + 1);
  int64_t positive = 0, magnitude = 0;
  for (int64_t w : weight) {
    if (w == std::numeric_limits<int64_t>::min()) throw Error("max closure: a weight overflows");
    magnitude = checked_add(magnitude, w < 0 ? -w : w, "max closure weights");
    if (w > 0) positive += w;
  }
  // No cut crosses an edge of this capacity: it exceeds every cut made of weight edges.
  const int64_t infinite = checked_add(magnitude, 1, "max closure weights");
  FlowNetwork net(n + 2);
  for (size_t v = 0; v < n; ++v) {
    if (weight[v] > 0) net.add_edge(source, uint32_t(v), weight[v]);
    if (weight[v] < 0) net.add_edge(uint32_t(v), sink, -weight[v]);
  }
  for (const auto& [u, v] : needs) {
    if (u >= n || v >= n) throw Error("max closure: a requirement names a node out of range");
    net.add_edge(u, v, infinite);
  }
  const int64_t best = positive - net.max_flow(source, sink);
  if (closed) {
    *closed = net.reached_from(source);
    closed->resize(n);
  }
  return best;
}

}  // namespace tandem
