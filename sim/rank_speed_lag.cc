#include "sim/rank_speed_lag.h"

#include <algorithm>

namespace tandem::sim {

RankSpeedLag::RankSpeedLag(double spread, double wait_s) : half_spread_(spread / 2), wait_s_(wait_s) {}

double RankSpeedLag::delay_s(const std::vector<Party>& members, double now, const CollectiveGaps& gaps) const {
  double first = members.front().issued_s, last = first;
  for (const Party& p : members) first = std::min(first, p.issued_s), last = std::max(last, p.issued_s);
  const double since = gaps.latest_end_s(members);
  return std::max(0.0, half_spread_ * std::max(0.0, now - since) - (last - first) / 2 - wait_s_);
}

}  // namespace tandem::sim
