#include "sim/host_collective_model.h"

#include <algorithm>
#include <cmath>
#include <iterator>

namespace tandem::sim {

std::vector<ProbedCollective> probed_collectives(const proto::CalibrationProfile& profile, bool shared) {
  std::vector<ProbedCollective> out;
  for (const proto::CollectiveProbe& c : shared ? profile.shared_collective_probe() : profile.collective_probe())
    out.push_back({static_cast<CollectiveOp>(c.op()), int(c.group_size()), c.bytes(), c.time_s(), c.gap_s()});
  return out;
}

double mean_collective_wait_s(const proto::CalibrationProfile& profile) {
  double sum = 0, n = 0;
  for (const proto::CollectiveTime& c : profile.collectives()) {
    sum += c.mean_wait_s() * c.samples();
    n += c.samples();
  }
  return n > 0 ? sum / n : 0;
}

HostCollectiveModel::HostCollectiveModel(const std::map<int, std::vector<std::array<double, 3>>>& measured,
                                         const std::vector<ProbedCollective>& probe, double wait_s)
    : wait_s_(wait_s) {
  std::vector<std::array<double, 3>> pooled;
  for (const auto& [op, points] : measured) {
    by_op_[op] = fit_size_law(points);
    pooled.insert(pooled.end(), points.begin(), points.end());
  }
  pooled_ = fit_size_law(pooled);
  for (const ProbedCollective& p : probe)
    if (p.bytes > 0 && p.time_s > 0 && p.gap_s >= 0)
      probe_[{int(p.op), p.group_size}][p.gap_s].push_back({double(p.bytes), p.time_s});
  for (auto& [key, by_gap] : probe_)
    for (auto& [gap, points] : by_gap) {
      std::sort(points.begin(), points.end());
      // One time per size (the first, should a profile repeat one).
      points.erase(std::unique(points.begin(), points.end(),
                               [](const auto& a, const auto& b) { return a.first == b.first; }),
                   points.end());
    }
}

double HostCollectiveModel::time_s(CollectiveOp op, int group_size, int64_t bytes, double gap_s) const {
  const double t = transfer_s(op, group_size, bytes, gap_s);
  return t < 0 ? t : t + wait_s_;
}

double HostCollectiveModel::at_bytes(const Sizes& pts, int64_t bytes) {
  const double b = std::max(double(bytes), 1.0);
  if (b <= pts.front().first) return pts.front().second;
  if (b >= pts.back().first) return pts.back().second * b / pts.back().first;
  const auto hi = std::lower_bound(pts.begin(), pts.end(), std::make_pair(b, 0.0));
  const auto lo = hi - 1;
  if (hi->first == b) return hi->second;
  const double w = std::log(b / lo->first) / std::log(hi->first / lo->first);
  return std::exp((1 - w) * std::log(lo->second) + w * std::log(hi->second));
}

double HostCollectiveModel::transfer_s(CollectiveOp op, int group_size, int64_t bytes, double gap_s) const {
  if (auto it = probe_.find({int(op), group_size}); it != probe_.end()) {
    const std::map<double, Sizes>& by_gap = it->second;
    const auto hi = by_gap.lower_bound(gap_s);  // the first probed gap >= gap_s
    if (hi == by_gap.begin()) return at_bytes(hi->second, bytes);
    if (hi == by_gap.end()) return at_bytes(std::prev(hi)->second, bytes);
    const auto lo = std::prev(hi);
    const double w = (gap_s - lo->first) / (hi->first - lo->first);
    return (1 - w) * at_bytes(lo->second, bytes) + w * at_bytes(hi->second, bytes);
  }
  if (auto f = by_op_.find(int(op)); f != by_op_.end() && f->second.shapes > 0) return f->second.time_s(double(bytes));
  return pooled_.time_s(double(bytes));
}

}  // namespace tandem::sim
