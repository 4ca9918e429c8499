#include "sim/rank_speed_lag.h"

#include <algorithm>

namespace tandem::sim {

RankSpeedLag::RankSpeedLag(size_t units, double spread, double wait_s)
    : half_spread_(spread / 2), wait_s_(wait_s), last_sync_(units, 0.0) {}

double RankSpeedLag::delay_s(const std::vector<Party>& members, double now) const {
  double first = members.front().issued_s, last = first, since = 0;
  for (const Party& p : members) {
    first = std::min(first, p.issued_s), last = std::max(last, p.issued_s);
    since = std::max(since, last_sync_[p.unit]);
  }
  return std::max(0.0, half_spread_ * std::max(0.0, now - since) - (last - first) / 2 - wait_s_);
}

void RankSpeedLag::synchronised(const std::vector<Party>& members, double now) {
  for (const Party& p : members) last_sync_[p.unit] = now;
}

}  // namespace tandem::sim
