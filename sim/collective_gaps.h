// The time since each replayed rank's previous collective ended, on the host platform: for the
// collectives' costs (sim/host_collective_model.h: a collective's time grows with it) and for the
// ranks' drift apart (sim/rank_speed_lag.h: it grows with the time since the members last met);
// docs/exec.md, session 17. Why a class of its own: the replay (sim/replay_engine.cc) notes each
// collective's end here (groups of two ranks or more: a rank alone meets nobody) and reads a new
// one's gap from it at launch; both models read the one record.
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
  // The latest of the members' previous collective ends (0: none had one): when they were last
  // all in step.
  double latest_end_s(const std::vector<Party>& members) const {
    double t = 0;
    for (const Party& p : members) t = std::max(t, last_end_[size_t(p.unit)]);
    return t;
  }
  void ended(const std::vector<Party>& members, double now) {
    for (const Party& p : members) last_end_[size_t(p.unit)] = now;
  }

 private:
  std::vector<double> last_end_;  // by unit
};

}  // namespace tandem::sim
