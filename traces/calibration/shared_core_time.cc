#include "traces/calibration/shared_core_time.h"

#include <algorithm>

namespace tandem {
namespace {

// `spans` sorted and merged: a rank counts once wherever its own spans overlap.
std::vector<TimeSpan> merged(std::vector<TimeSpan> spans) {
  std::sort(spans.begin(), spans.end());
  std::vector<TimeSpan> out;
  for (const TimeSpan& s : spans) {
    if (!(s.second > s.first)) continue;  // empty: demands nothing
    if (!out.empty() && s.first <= out.back().second) out.back().second = std::max(out.back().second, s.second);
    else out.push_back(s);
  }
  return out;
}

}  // namespace

SharedCoreTime::SharedCoreTime(const std::vector<std::vector<TimeSpan>>& busy, int cores, int threads_per_rank) {
  if (cores <= 0 || threads_per_rank <= 0) return;  // unknown: rate 1 everywhere
  const double c = cores, b = threads_per_rank;
  auto rate = [&](int n) { return std::min(1.0, c / (b * double(std::max(1, n)))); };
  outside_rate_ = rate(1);
  // n(t) steps up at each merged span's start and down at its end.
  std::vector<std::pair<double, int>> steps;
  for (const std::vector<TimeSpan>& rank : busy)
    for (const TimeSpan& s : merged(rank)) steps.push_back({s.first, +1}), steps.push_back({s.second, -1});
  std::sort(steps.begin(), steps.end());
  int n = 0;
  for (size_t i = 0; i < steps.size();) {
    const double t = steps[i].first;
    for (; i < steps.size() && steps[i].first == t; ++i) n += steps[i].second;
    if (!times_.empty()) prefix_.push_back(prefix_.back() + rates_.back() * (t - times_.back()));
    else prefix_.push_back(0);
    times_.push_back(t);
    rates_.push_back(rate(n));
    if (rate(n) < 1) shared_ = true;
  }
  if (outside_rate_ < 1) shared_ = true;
}

double SharedCoreTime::integral_to(double t) const {
  // Before the first breakpoint the rate is outside_rate_ (negative: t before it).
  if (times_.empty() || t <= times_.front()) return outside_rate_ * (t - (times_.empty() ? 0 : times_.front()));
  const size_t i = size_t(std::upper_bound(times_.begin(), times_.end(), t) - times_.begin()) - 1;
  return prefix_[i] + rates_[i] * (t - times_[i]);
}

double SharedCoreTime::alone(double from, double to) const {
  if (!shared_) return to - from;
  return integral_to(to) - integral_to(from);
}

}  // namespace tandem
