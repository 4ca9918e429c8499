// The time since each replayed rank's previous collective ended, for the host platform's
// collective costs (sim/host_collective_model.h: a collective's time grows with it, docs/exec.md,
// session 17). Why a class of its own: the replay (sim/replay_engine.cc) notes each collective's
// end here and reads a new one's gap from it at launch, two lines there.
//
// The gap of a collective: the largest over its members of (the member's arrival - the end of its
// own previous collective; the replay's start for its first). Each rank's own idle time counts:
// with one rank 2 ms late while the other polls, the 836.5 KiB reduce-scatter took 116-123 us,
// near the 126-127 us with both ranks 2 ms idle, not the 100-108 us of neither (session 17, 3.).
#pragma once

#include <algorithm>
#include <vector>

#include "sim/net_op.h"

namespace tandem::sim {

class CollectiveGaps {
 public:
  explicit CollectiveGaps(size_t units) : last_end_(units, 0.0) {}
  double gap_s(const std::vector<Party>& members) const {
    double gap = 0;
    for (const Party& p : members) gap = std::max(gap, p.issued_s - last_end_[size_t(p.unit)]);
    return gap;
  }
  void ended(const std::vector<Party>& members, double now) {
    for (const Party& p : members) last_end_[size_t(p.unit)] = now;
  }

 private:
  std::vector<double> last_end_;  // by unit
};

}  // namespace tandem::sim
