#include "exec/step_stats.h"

#include <algorithm>
#include <cmath>

namespace tandem::exec {
namespace {

double quantile(const std::vector<double>& sorted, double p) {
  if (sorted.empty()) return 0;
  const double pos = p * double(sorted.size() - 1);
  const size_t lo = size_t(std::floor(pos));
  const size_t hi = std::min(lo + 1, sorted.size() - 1);
  return sorted[lo] + (pos - double(lo)) * (sorted[hi] - sorted[lo]);
}

}  // namespace

StepSpread step_spread(const std::vector<double>& step_s) {
  StepSpread s;
  s.first_step = step_s.size() > 1 ? 1 : 0;
  std::vector<double> v(step_s.begin() + s.first_step, step_s.end());
  s.count = int(v.size());
  if (v.empty()) return s;
  double sum = 0;
  for (double x : v) sum += x;
  s.mean_s = sum / double(v.size());
  std::sort(v.begin(), v.end());
  s.min_s = v.front();
  s.max_s = v.back();
  s.q1_s = quantile(v, 0.25);
  s.median_s = quantile(v, 0.5);
  s.q3_s = quantile(v, 0.75);
  s.representative = s.first_step;
  for (int i = s.first_step; i < int(step_s.size()); ++i)
    if (std::abs(step_s[size_t(i)] - s.median_s) < std::abs(step_s[size_t(s.representative)] - s.median_s))
      s.representative = i;
  return s;
}

}  // namespace tandem::exec
