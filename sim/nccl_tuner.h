// Algorithm and protocol choice the way NCCL's tuner makes it (NVIDIA/nccl src/graph/tuning.cc):
// price every applicable (algorithm, protocol) pair with the same cost formula and take the
// cheapest. The formula is uncontended_time() of the collective's phase-level plan with NCCL's
// per-protocol base latency per collective (each hop costs the cluster's link latency, which
// the presets define to include NCCL's per-step cost) and bandwidth efficiencies (LL: half the
// link, 8-byte lines carry 4 bytes of data and 4 of flag; LL128: 120 of every 128 bytes; Simple: all). The choice therefore depends on size and group
// shape (members, nodes, members per node) like NCCL's.
//
// `ideal` prices with no protocol at all (efficiency 1, no base or hop cost beyond the link
// latency): the plain alpha-beta closed forms the tests check.
#pragma once

#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "sim/collective_algorithms.h"
#include "sim/nccl_tuner_model.h"

namespace tandem::sim {

struct TunedCollective {
  Algorithm algorithm = Algorithm::kRing;
  Protocol protocol = Protocol::kSimple;
  ProtocolCost cost;
};

class NcclTuner {
 public:
  NcclTuner(const FabricModel& fabric, bool ideal, std::optional<Algorithm> force_algorithm = std::nullopt,
            std::optional<Protocol> force_protocol = std::nullopt);

  TunedCollective choose(CollectiveOp op, const std::vector<int>& members, double bytes);
  TunedCollective choose_p2p(int src, int dst, double bytes);
  ProtocolCost cost_of(Algorithm a, Protocol p) const;

 private:
  NcclModelShape model_shape(const std::vector<int>& members, int n, int nodes) const;

  FabricModel fabric_;
  bool ideal_;
  std::optional<Algorithm> force_algorithm_;
  std::optional<Protocol> force_protocol_;
  std::map<std::tuple<int, int, int, int, double, int>, TunedCollective> cache_;
  // model_shape per group shape (members, nodes, members a node, first member's local index): it
  // plans and times the group's ring, which the size-keyed cache_ would redo for every size.
  std::map<std::tuple<int, int, int, int>, NcclModelShape> shape_cache_;
};

}  // namespace tandem::sim
